"""Every way out of ckpt-doctor, run against the planted-secret corpus: what each one wrote, byte for byte.

`run_all(workdir)` builds the corpus incident, writes it as a hand-made bundle, serves it from the fake API
server, and runs: `collect` (and `collect --follow`) to an archive, `diagnose` of the hand-made bundle, of the
collected bundle and of the live cluster in every output format, `lint` of the manifests in every format and
`lint --fix`, `explain-error` in every format, `report` when it exists, the app's export and screenshot
(headless), and the error lines of a cluster that cannot be reached. It returns {surface: bytes written}
(stdout, stderr and every file) and the corpus. Used by tests/security/test_leaks.py, and on its own
(`python -m tests.security.surfaces`) to count leaks of any checkout: the report's before/after figures.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tarfile
from pathlib import Path
from typing import Any

from tests.clirun import run_cli
from tests.drill.execws import handler as exec_handler
from tests.fakeapi.server import FakeKube
from tests.security.corpus import CK, NAME, NS, Corpus, build, explain_text, kubeconfig, leaks, lint_manifest

FORMATS = ("text", "json", "markdown", "sarif", "junit")


def _files(root: Path) -> bytes:
    out = b""
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.is_symlink():
            out += p.read_bytes()
    return out


def _archive(path: Path) -> bytes:
    out = b""
    with tarfile.open(path) as tar:
        for m in tar.getmembers():
            if m.isfile():
                f = tar.extractfile(m)
                assert f is not None
                out += f.read()
    return out


def _cli(argv: list[str]) -> tuple[int, bytes]:
    got = run_cli(argv)
    return got.rc, (got.out + got.err).encode("utf-8", "surrogateescape")


def manifests(c: Corpus, root: Path) -> Path:
    """The TrainJob, runtime and ConfigMap as the files a user would lint."""
    import json

    root.mkdir(parents=True, exist_ok=True)
    objs, _ = c.scenario.objects()
    for o in objs:
        if o["kind"] in ("TrainJob", "TrainingRuntime", "ConfigMap"):
            clean = {k: v for k, v in o.items() if k != "status"}
            (root / f"{o['kind'].lower()}-{o['metadata']['name']}.json").write_text(json.dumps(clean, indent=2))
    (root / "trainjob-overrides.yaml").write_text(lint_manifest(c))
    return root


async def _app_exports(bundle: Path, out: Path) -> bytes:
    from ckpt_doctor.tui.app import DoctorApp
    from ckpt_doctor.tui.target import Target

    out.mkdir(parents=True, exist_ok=True)
    app = DoctorApp(Target(bundle=bundle, trainjob=f"{NS}/{NAME}"), export_dir=out)
    async with app.run_test(size=(160, 50)) as pilot:
        for _ in range(400):
            await pilot.pause()
            await app.workers.wait_for_complete()
            if app.view is not None and app.view.diag is not None:
                break
        else:
            raise AssertionError("the app never showed the diagnosis")
        app.action_export_report()
        await pilot.pause()
        await app.workers.wait_for_complete()  # the export writes in a worker
        for key in ("o", "f", "l", "e"):  # overview, findings, logs, events: what a screenshot may show
            try:
                await pilot.press(key)
                await pilot.pause()
                app.action_screenshot()
            except Exception:  # a key this version does not have
                pass
    return _files(out)


def _with_listing(bundle: Path, c: Corpus) -> None:
    """The hand-made bundle carries the checkpoint listing (and df, and DeepSpeed's `latest`) of the running pod."""
    pod = c.scenario.pod_names()[-1][0]
    d = bundle / "checkpoints" / pod
    (d / "node").mkdir(parents=True)
    (d / "node.txt").write_text(f"# dir: {CK}\n# at: 2026-11-30T10:00:00Z\n" + c.listing)
    (d / "node.df").write_text(c.df)
    (d / "node" / "latest").write_bytes(c.latest)


def _exec(c: Corpus) -> Any:
    """What exec answers in the trainer container: the listing, df, and `latest` (the commands --inspect-checkpoints
    runs)."""

    def run(ns: str, pod: str, container: str, argv: list[str]) -> tuple[int, bytes]:
        prog = argv[0] if argv else ""
        if prog == "find":
            return 0, c.listing.encode()
        if prog == "df":
            return 0, c.df.encode()
        if prog == "head" and argv[-1].endswith("/latest"):
            return 0, c.latest
        return 127, b"not found\n"

    return run


def run_all(work: Path) -> tuple[dict[str, bytes], Corpus]:
    c = build()
    work.mkdir(parents=True, exist_ok=True)
    bundle = c.scenario.write(work / "handmade")
    _with_listing(bundle, c)
    out: dict[str, bytes] = {}
    for fmt in FORMATS:
        out[f"diagnose --bundle (hand-made) -o {fmt}"] = _cli(["diagnose", "--bundle", str(bundle), "-o", fmt, "-v"])[1]
    with FakeKube() as kube:
        kube.load_bundle(bundle)
        kube.upgrade = exec_handler(kube, _exec(c))
        kc = kubeconfig(work / "kubeconfig", kube.url, c)
        live = ["--kubeconfig", str(kc)]
        tgz = work / "collected.tar.gz"
        _rc, text = _cli(["collect", NAME, "-o", str(tgz), "--inspect-checkpoints", *live])
        out["collect"] = text + (_archive(tgz) if tgz.exists() else b"")
        follow = work / "followed"
        _rc, text = _cli(["collect", NAME, "--follow", "-o", str(follow), "--inspect-checkpoints", *live])
        out["collect --follow"] = text + (_files(follow) if follow.exists() else b"")
        if tgz.exists():
            for fmt in FORMATS:
                out[f"diagnose --bundle (collected) -o {fmt}"] = _cli(
                    ["diagnose", "--bundle", str(tgz), "-o", fmt, "-v"]
                )[1]
        for fmt in FORMATS:
            out[f"diagnose live -o {fmt}"] = _cli(["diagnose", NAME, "-o", fmt, "-v", "-q", "--inspect-checkpoints",
                                                   *live])[1]  # fmt: skip
        out["error: unreachable cluster"] = _cli(["diagnose", NAME, "--context", "broken", *live])[1]
        out["error: collect, unreachable cluster"] = _cli(
            ["collect", NAME, "-o", str(work / "x.tgz"), "--context", "broken", *live]
        )[1]
    man = manifests(c, work / "manifests")
    for fmt in ("text", "json", "sarif", "junit"):
        out[f"lint -o {fmt}"] = _cli(["lint", str(man), "-o", fmt, "-v"])[1]
    fixme = work / "fixme"
    shutil.copytree(man, fixme)
    out["lint --fix --dry-run"] = _cli(["lint", str(fixme), "--fix", "--dry-run"])[1]  # the diff, before the fix
    out["lint --fix"] = _cli(["lint", str(fixme), "--fix"])[1]
    text = explain_text(c)
    for fmt in ("text", "json", "markdown"):
        out[f"explain-error -o {fmt}"] = _cli(["explain-error", "-o", fmt, text])[1]
    help_text = run_cli(["--help"]).out
    if " report " in help_text or "\n    report" in help_text:
        for fmt in ("markdown", "html"):
            out[f"report -o {fmt}"] = _cli(["report", "--bundle", str(bundle), "-o", fmt, "-q"])[1]
    try:
        out["app: export and screenshots"] = asyncio.run(_app_exports(bundle, work / "exports"))
    except Exception as e:
        out["app: export and screenshots"] = f"not run: {type(e).__name__}: {e}".encode()
    return out, c


def by_class(outs: dict[str, bytes], c: Corpus, surface: str = "collect") -> str:
    """Leaks through one surface (collect: the bundle and what it printed) per kind and finer class."""
    from collections import Counter

    hits = leaks(outs.get(surface, b""), c.plants)
    planted = Counter((p.kind, p.cls) for p in c.plants)
    leaked = Counter((p.kind, p.cls) for p in hits)
    lines = [f"{surface}: {len(hits)} of {len(c.plants)} placements leaked"]
    lines.append(f"  {'kind':12} {'class':20} leaked/planted")
    for (kind, cls), n in sorted(planted.items()):
        lines.append(f"  {kind:12} {cls or '-':20} {leaked[(kind, cls)]}/{n}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import tempfile

    work = Path(tempfile.mkdtemp(prefix="ckpt-leaks-"))
    try:
        outs, c = run_all(work)
        leaked: set[str] = set()
        print(f"{'surface':44} leaks  (where/kind of each leaked secret)")
        for k, v in outs.items():
            hits = leaks(v, c.plants)
            leaked |= {p.secret for p in hits}
            kinds = ", ".join(sorted({f"{p.where}/{p.kind}" for p in hits}))
            print(f"{k:44} {len(hits):5}  {kinds[:150]}")
        print(f"distinct planted secrets leaked anywhere: {len(leaked)} of {len(c.plants)}")
        print(by_class(outs, c))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

