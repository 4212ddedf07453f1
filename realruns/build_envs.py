"""Build the realruns venvs (outside git, under realruns/.venvs/) and measure each: install time and disk.

CPU-only: torch is installed first from the local +cpu wheel, and every later install runs under
constraints.txt, so that nothing resolves the CUDA build. Figures go to recordings/envs.yaml.

    python realruns/build_envs.py [NAME...]      # default: every env; an env already built is kept
    python realruns/build_envs.py --force NAME   # rebuild it
    python realruns/build_envs.py --torch-builds # compare the CPU-only torch with the default (CUDA) one
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENVS = HERE / ".venvs"
CONSTRAINTS = HERE / "constraints.txt"
TORCH = "torch==2.13.0+cpu"
PYTHON = os.environ.get("REALRUNS_PYTHON", "python3.11")

# name -> (torch?, requirement files, extra pip steps)
ENVS: dict[str, dict] = {
    "hf4": {"torch": True, "reqs": ["hf4.txt"], "after": [["--no-build-isolation", "deepspeed==0.19.8"]],
            "frameworks": "transformers 4.57, Lightning 2.5, accelerate 1.10, DeepSpeed 0.19"},
    "hf5": {"torch": True, "reqs": ["hf5.txt"], "after": [],
            "frameworks": "transformers 5.24, Lightning 2.6 + rich, accelerate 1.15, torch DCP"},
    "jax": {"torch": False, "reqs": ["jax.txt"], "after": [], "frameworks": "JAX + Orbax"},
    "tune": {"torch": True, "reqs": ["torchtune.txt"], "after": [], "frameworks": "torchtune"},
}
ENVS_YAML = HERE.parent / "recordings" / "envs.yaml"


def du(path: Path) -> int:
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, check=True).stdout
    return int(out.split()[0])


def pip(venv: Path, *args: str) -> None:
    py = str(venv / "bin" / "python")
    cmd = ["nice", "-n", "10", py, "-m", "pip", "install", "-q", "-c", str(CONSTRAINTS), *args]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


IMAGE_PREFIX = "/opt/venv"  # where an image would have it; the recorder bind-mounts the venv there


def as_opt_venv(venv: Path) -> None:
    """Point the venv's console scripts (torchrun, accelerate, deepspeed...) at /opt/venv/bin/python, so that
    inside the container they run from the image's path and no host path shows in a recorded log."""
    for p in (venv / "bin").iterdir():
        if not p.is_file() or p.is_symlink():
            continue
        data = p.read_bytes()
        head = f"#!{venv}/bin/python".encode()
        if data.startswith(head):
            p.write_bytes(f"#!{IMAGE_PREFIX}/bin/python".encode() + data[len(head):])


def build(name: str, force: bool) -> dict:
    spec = ENVS[name]
    venv = VENVS / name
    stamp = VENVS / f"{name}.json"
    if stamp.exists() and not force:
        as_opt_venv(venv)
        return json.loads(stamp.read_text())
    if venv.exists():
        shutil.rmtree(venv)
    t0 = time.monotonic()
    subprocess.run([PYTHON, "-m", "venv", str(venv)], check=True)
    pip(venv, "--upgrade", "pip")
    if spec["torch"]:
        pip(venv, TORCH)
    for req in spec["reqs"]:
        pip(venv, "-r", str(HERE / "requirements" / req))
    for extra in spec["after"]:
        pip(venv, *extra)
    seconds = time.monotonic() - t0
    as_opt_venv(venv)
    frozen = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "freeze"], capture_output=True, text=True,
                            check=True).stdout.split()
    out = {"name": name, "install_seconds": round(seconds, 1), "disk_bytes": du(venv), "packages": frozen}
    if spec["torch"]:
        torch_dir = next((venv / "lib").glob("python3*/site-packages/torch"))
        out["torch_bytes"] = du(torch_dir)
    if name == "hf4":
        # DeepSpeed's CPU comm op is JIT-compiled on first use, keyed by its source paths: build it once where the
        # recordings run it (the venv at /opt/venv, in the container shim), not inside a recorded attempt
        t1 = time.monotonic()
        scratch = VENVS / "jit-scratch"
        scratch.mkdir(exist_ok=True)
        code = "import deepspeed; deepspeed.init_distributed(dist_backend='gloo')"
        subprocess.run(["nice", "-n", "10", sys.executable, str(HERE / "harness" / "container.py"),
                        str(scratch / "status.jsonl"), "/", f"{venv}:{IMAGE_PREFIX}", "--",
                        f"{IMAGE_PREFIX}/bin/python", "-c", code], check=False, timeout=3600,
                       env={"PATH": f"{IMAGE_PREFIX}/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"),
                            "RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1",
                            "MASTER_PORT": "29531"})  # fmt: skip
        out["deepspeed_jit_seconds"] = round(time.monotonic() - t1, 1)
    stamp.write_text(json.dumps(out, indent=1))
    return out


TORCH_DEFAULT = "torch"  # what a plain `pip install torch` resolves: the CUDA build with its nvidia-* wheels
TORCH_STAMP = VENVS / "torch-builds.json"


def torch_builds() -> dict:
    """Install the harness's CPU-only torch and the default one each into a throwaway venv (no other package) and
    measure the install time, the venv's disk beyond an empty venv, and what the default pulls in."""
    import tempfile

    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="torch-builds-", dir=VENVS) as tmp:
        base = Path(tmp) / "empty"
        subprocess.run([PYTHON, "-m", "venv", str(base)], check=True)
        empty = du(base)
        for label, req, constrained in (("cpu", TORCH, True), ("default", TORCH_DEFAULT, False)):
            venv = Path(tmp) / label
            subprocess.run([PYTHON, "-m", "venv", str(venv)], check=True)
            cmd = ["nice", "-n", "10", str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
            cmd += ["-c", str(CONSTRAINTS)] if constrained else []
            t0 = time.monotonic()
            print("+", " ".join([*cmd, req]), flush=True)
            subprocess.run([*cmd, req], check=True)
            seconds = time.monotonic() - t0
            frozen = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "freeze"], capture_output=True,
                                    text=True, check=True).stdout.split()  # fmt: skip
            out[label] = {"requirement": req, "install_seconds": round(seconds, 1), "disk_bytes": du(venv) - empty,
                          "torch": next((f for f in frozen if f.startswith("torch==")), ""),
                          "packages": len(frozen), "nvidia_packages": sum(f.startswith("nvidia") for f in frozen)}
            shutil.rmtree(venv)
    out["ratio"] = round(out["default"]["disk_bytes"] / out["cpu"]["disk_bytes"], 2)
    TORCH_STAMP.write_text(json.dumps(out, indent=1))
    return out


def write_envs_yaml() -> None:
    """recordings/envs.yaml: the install figures docs/frameworks.md shows (only the venvs built here)."""
    lines = ["# Written by realruns/build_envs.py: install time and disk of each realruns venv (CPU-only torch).",
             "venvs:"]  # fmt: skip
    for name, spec in ENVS.items():
        stamp = VENVS / f"{name}.json"
        if not stamp.exists():
            continue
        d = json.loads(stamp.read_text())
        lines.append(f"  {name}:")
        lines.append(f"    frameworks: {json.dumps(spec['frameworks'])}")
        for k in ("install_seconds", "disk_bytes", "torch_bytes", "deepspeed_jit_seconds"):
            if k in d:
                lines.append(f"    {k}: {d[k]}")
    if TORCH_STAMP.exists():
        t = json.loads(TORCH_STAMP.read_text())
        lines.append("torch_builds:  # torch alone in a throwaway venv: disk beyond an empty venv")
        for label in ("cpu", "default"):
            d = t[label]
            lines.append(f"  {label}:")
            for k in ("requirement", "torch", "install_seconds", "disk_bytes", "packages", "nvidia_packages"):
                lines.append(f"    {k}: {json.dumps(d[k])}")
        lines.append(f"  ratio: {t['ratio']}")
    lines += ["notes:", *(f"  - {json.dumps(n)}" for n in NOTES)]
    ENVS_YAML.write_text("\n".join(lines) + "\n")


NOTES = [
    "torch 2.13.0+cpu from the local CPU wheel, pinned by realruns/constraints.txt in every install, so no package "
    "can resolve the CUDA build; torch_builds compares it with what a plain `pip install torch` resolves here "
    "(the CUDA build with its nvidia-* wheels; the package index holds 2.14.1 for it, the CPU wheel is 2.13.0)",
    "install times are wall clock on two cores shared with other work (load average 6-11), under nice -n 10",
    "DeepSpeed 0.19 installs from its sdist (--no-build-isolation, after torch) and JIT-compiles its CPU "
    "shared-memory comm op (g++ and ninja) in init_distributed: build_envs.py builds it once (deepspeed_jit_seconds, "
    "285 s here, 1167 s under a heavier load) into ~/.cache/torch_extensions, where the recordings find it; the build "
    "is keyed by the source paths, so it is made inside the container shim with the venv at /opt/venv",
    "torchtune 0.6 has a venv definition (tune) but was not built or recorded: its recipes need tokenizer and "
    "checkpoint files from the hub, which this machine cannot reach",
]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--torch-builds", action="store_true", help="measure the CPU-only torch against the default")
    ns = ap.parse_args()
    VENVS.mkdir(exist_ok=True)
    if ns.torch_builds:
        t = torch_builds()
        print(f"torch cpu {t['cpu']['disk_bytes'] / 1e6:.0f} MB, default {t['default']['disk_bytes'] / 1e6:.0f} MB: "
              f"{t['ratio']}x", flush=True)
        write_envs_yaml()
        return 0
    failed = []
    for name in ns.names or list(ENVS):
        try:
            got = build(name, ns.force)
            print(f"{name}: {got['install_seconds']} s, {got['disk_bytes'] / 1e6:.0f} MB", flush=True)
        except subprocess.CalledProcessError as e:
            print(f"{name}: FAILED ({e})", file=sys.stderr, flush=True)
            failed.append(name)
    write_envs_yaml()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
