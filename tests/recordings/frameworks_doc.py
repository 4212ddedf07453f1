"""docs/frameworks.md, generated from the recordings: what the engine reads of each real framework.

    python -m tests.recordings.frameworks_doc        # rewrites docs/frameworks.md (a test checks it is current)

Each row is one framework and version; each cell says how the engine did on the recordings where that
aspect shows (the jobset-kept bundle of each run: every pod and log kept), with the scenarios behind it:
✔ right on all of them, ◐ on some, ✘ on none, — not recorded.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.recordings.bundles import FW_PACKAGE, OUT, all_runs, bundle_id, models_for
from tests.recordings.judge import judge

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "frameworks.md"
ASPECTS = ("progress", "saves", "partial saves", "resume", "SIGTERM", "crash while loading", "killed: last step")
CLASS_ASPECT = {
    "progress-not-read": "progress", "last-step-short": "progress", "last-step-beyond-truth": "progress",
    "phantom-steps": "progress", "phantom-attempt": "progress",
    "saves-not-read": "saves", "save-not-in-truth": "saves",
    "partial-save-counted": "partial saves",
    "resume-not-read": "resume", "wrong-resume-step": "resume", "resume-called-fresh": "resume",
    "fresh-not-read": "resume", "fresh-called-resumed": "resume",
    "sigterm-exit-zero": "SIGTERM",
    "load-crash-not-seen": "crash while loading",
    "last-step-not-a-bound": "killed: last step",
}  # fmt: skip
RULE_ASPECT = {
    "fresh-start-after-restart": "resume", "resumed-older-checkpoint": "resume", "lexical-checkpoint-sort": "resume",
    "ckpt-dir-changed": "resume", "partial-latest-checkpoint": "partial saves", "final-checkpoint-missing": "SIGTERM",
    "resume-crashed": "crash while loading", "no-checkpoint-before-interruption": "saves",
}  # fmt: skip


def aspect_of(miss: str) -> str:
    if miss.startswith("finding:"):
        if miss.endswith(":fail-must-not-fail"):  # a `not_fail` rule failed: a killed attempt taken for a stopped one
            return "killed: last step"
        return RULE_ASPECT.get(miss.split(":")[1], "resume")
    if miss.startswith("ending-"):
        return "SIGTERM" if "terminated" in miss else "crash while loading" if "crashed" in miss else "progress"
    return CLASS_ASPECT.get(miss, "progress")


def applies(run: dict[str, Any], aspect: str) -> bool:
    atts = run["attempts"]
    if aspect == "progress":
        return any(a["steps"] for a in atts)
    if aspect == "saves":
        return any(a["saves_complete"] for a in atts)
    if aspect == "partial saves":
        return any(a["saves_partial"] for a in atts)
    if aspect == "resume":
        return len(atts) > 1
    if aspect == "SIGTERM":
        return any((a["fault"] or {}).get("signal") == "SIGTERM" for a in atts)
    if aspect == "crash while loading":
        return any(a["crashed_while_loading"] for a in atts)
    return any(a["ended_by"] == "killed" and a["steps"] for a in atts)


def row_key(run: dict[str, Any]) -> tuple[str, str]:
    pkg = FW_PACKAGE.get(run["framework"], "")
    ver = str(run["versions"].get(pkg) or re.sub(r"^[a-z]+-", "", run["id"].split("-" + run["scenario"])[0]))
    ranks = int(run.get("ranks") or 1)
    return run["framework"], ver + (f", {ranks} ranks (torchrun)" if ranks > 1 else "")


def name_of(run: dict[str, Any]) -> str:
    return run["scenario"] + (f"-{run['variant']}" if run.get("variant") else "")


def generate(judged: dict[str, list[str]] | None = None) -> str:
    runs = all_runs()
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in runs:
        r["variant"] = r["id"].split(r["scenario"], 1)[1].lstrip("-")
        rows.setdefault(row_key(r), []).append(r)
    judged = judged if judged is not None else {}
    out = [HEAD]
    out.append("| framework | version | " + " | ".join(ASPECTS) + " |")
    out.append("|---|---|" + "---|" * len(ASPECTS))
    details = []
    for (fw, ver), rs in rows.items():
        cells = []
        for aspect in ASPECTS:
            rel = [r for r in rs if applies(r, aspect)]
            if not rel:
                cells.append("—")
                continue
            bad = []
            for r in rel:
                b = bundle_id(r, "jobset-kept") if "jobset-kept" in models_for(r) else bundle_id(r, models_for(r)[0])
                misses = judged[b] if b in judged else judge(OUT / b)[0]
                judged[b] = misses
                unread = aspect == "killed: last step" and "progress-not-read" in misses  # nothing to bound
                if unread or any(aspect_of(m) == aspect for m in misses):
                    bad.append(name_of(r))
            mark = "✔" if not bad else ("✘" if len(bad) == len(rel) else "◐")
            listed = f" (missed: {', '.join(bad)})" if bad and mark == "◐" else ""
            cells.append(f"{mark} {len(rel) - len(bad)}/{len(rel)}{listed}")
        out.append(f"| {fw} | {ver} | " + " | ".join(cells) + " |")
        details.append(f"\n### {fw} {ver}\n")
        for r in rs:
            v = ", ".join(f"{k} {val}" for k, val in r["versions"].items())
            ends = " → ".join(f"{a['ended_by']} ({a['exit_code']})" for a in r["attempts"])
            details.append(f"- [`{r['id']}`](../recordings/{r['id']}/run.yaml): {r['description']}. {ends}. ({v})")
    out.append("")
    out.append("Cells: ✔ the engine got that aspect right on every recording where it shows, ◐ on some, ✘ on none,")
    out.append("— no recording shows it; n/m = right/recordings; ◐ names the scenarios missed. Judged on the")
    out.append("jobset-kept bundle of each run (every pod and log kept); tests/recordings/judge.py says what counts.")
    out.append("A second take (`-take2`: a re-recording that behaved differently, recordings/README.md")
    out.append("\"Takes\") counts as a recording of its own.")
    out.append("")
    out += envs_section()
    out.append("\n## Recordings\n")
    out += details
    obs = observations()
    if obs:
        out.append("\n## What the runs showed\n")
        out.append(obs)
    return "\n".join(out).rstrip() + "\n"


HEAD = """# Frameworks: what ckpt-doctor reads of them, from real runs

Generated by `python -m tests.recordings.frameworks_doc` from [`recordings/`](../recordings/README.md): real
framework runs on CPU (tiny models, injected faults, restarts with the same command, ground truth taken from
inside the process), each replayed as bundles in `make test` (tests/recordings/). Do not edit by hand.
"""


def envs_section() -> list[str]:
    f = ROOT / "recordings" / "envs.yaml"
    if not f.exists():
        return []
    envs = yaml.safe_load(f.read_text()) or {}
    out = ["## The environments (CPU-only torch)", ""]
    out.append("| venv | frameworks | install time | disk | of which torch |")
    out.append("|---|---|---|---|---|")
    for name, e in envs.get("venvs", {}).items():
        torch = f"{e['torch_bytes'] / 1e6:.0f} MB" if e.get("torch_bytes") else "—"
        size = f"{e['disk_bytes'] / 1e6:.0f} MB"
        out.append(f"| {name} | {e.get('frameworks', '')} | {e['install_seconds']:.0f} s | {size} | {torch} |")
    tb = envs.get("torch_builds")
    if tb:
        cpu, dflt = tb["cpu"], tb["default"]
        out += [
            "",
            "Torch alone, each in a throwaway venv (`python realruns/build_envs.py --torch-builds`; disk beyond an "
            "empty venv):",
            "",
            "| install | resolves | packages | of which nvidia-* | install time | disk |",
            "|---|---|---|---|---|---|",
        ]
        for label, d in (("the harness's CPU-only wheel", cpu), ("plain `pip install torch`", dflt)):
            out.append(f"| {label} | {d['torch']} | {d['packages']} | {d['nvidia_packages']} | "
                       f"{d['install_seconds']:.0f} s | {d['disk_bytes'] / 1e6:.0f} MB |")  # fmt: skip
        out += ["", f"The default (CUDA) install takes {tb['ratio']:.1f}× the disk of the CPU-only one."]
    if envs.get("notes"):
        out.append("")
        out += [f"- {n[0].upper()}{n[1:]}." for n in envs["notes"]]
    return out


def observations() -> str:
    text = (ROOT / "recordings" / "README.md").read_text()
    m = re.search(r"^## What the runs showed\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    return m.group(1).strip() if m else ""


if __name__ == "__main__":
    DOC.write_text(generate())
    print(DOC, file=sys.stderr)
