"""The report's step chart drawn by pygal (what ckpt-doctor uses) and by matplotlib (what it could use).

Run by hand; measures, in interleaved A/B pairs, a fresh interpreter that imports the library and draws
the lexical-sort-older chart to SVG (wall time, min/median/max), and the size of the SVG each writes.
matplotlib is not a dependency: point --mpl-python at an interpreter that has it (a scratch venv).

    .venv/bin/python bench/bench_chart.py [--rounds 9] [--mpl-python /tmp/venv-mpl/bin/python]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PYGAL = """
import json, sys
from ckpt_doctor.report.chart import ChartData, Drop, Series, render_svg
d = json.load(open(sys.argv[1]))
series = [Series(s["name"], i, [tuple(p) for p in s["points"]], s["estimated"]) for i, s in enumerate(d["series"])]
drops = [Drop(**x) for x in d["drops"]]
data = ChartData("Training step over time", series, [tuple(x) for x in d["saves"]], [], drops)
open(sys.argv[2], "w").write(render_svg(data))
"""

MPL = """
import json, sys
from datetime import datetime, timezone
import matplotlib
matplotlib.use("svg")
import matplotlib.pyplot as plt
import matplotlib.dates as mdates
d = json.load(open(sys.argv[1]))
plt.rcParams["svg.hashsalt"] = "ckpt"
fig, ax = plt.subplots(figsize=(9, 4.2))
dt = lambda t: datetime.fromtimestamp(t, tz=timezone.utc)
for s in d["series"]:
    ax.plot([dt(t) for t, _ in s["points"]], [v for _, v in s["points"]], label=s["name"])
ax.plot([dt(t) for t, _s, _a in d["saves"]], [s for _t, s, _a in d["saves"]], "o", ms=3, label="complete save")
for x in d["drops"]:
    ax.vlines(dt(x["t"]), x["to_step"], x["from_step"], colors="red", linestyles="dashed")
    ax.annotate(x["label"], (dt(x["t"]), x["from_step"]), xytext=(6, -12), textcoords="offset points")
ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M"))
ax.legend(); ax.set_title("Training step over time")
fig.savefig(sys.argv[2], metadata={"Date": None})
"""


def _data(path: Path) -> None:
    from ckpt_doctor.facts.timeline import timeline_of
    from ckpt_doctor.pipeline import diagnose_snapshot
    from ckpt_doctor.report.chart import chart_data
    from ckpt_doctor.sources.bundle import load_bundle

    data = chart_data(timeline_of(diagnose_snapshot(load_bundle(ROOT / "examples" / "lexical-sort-older")).facts))
    path.write_text(json.dumps(data.to_json()))


def _run(python: str, code: str, data: Path, out: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([python, "-c", code, str(data), str(out)], check=True, cwd=ROOT)
    return time.perf_counter() - t0


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--mpl-python", help="an interpreter with matplotlib installed")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        data = tmp / "data.json"
        _data(data)
        runs: dict[str, list[float]] = {"pygal": [], "matplotlib": []}
        for _ in range(args.rounds):  # interleaved pairs: a loaded machine slows both alike
            runs["pygal"].append(_run(sys.executable, PYGAL, data, tmp / "pygal.svg"))
            if args.mpl_python:
                runs["matplotlib"].append(_run(args.mpl_python, MPL, data, tmp / "mpl.svg"))
        for name, ts in runs.items():
            if not ts:
                print(f"{name:10s} not measured (no --mpl-python)")
                continue
            size = (tmp / ("pygal.svg" if name == "pygal" else "mpl.svg")).stat().st_size
            print(
                f"{name:10s} import+draw in a fresh interpreter: min {min(ts):.3f} s, median "
                f"{statistics.median(ts):.3f} s, max {max(ts):.3f} s; SVG {size} bytes"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
