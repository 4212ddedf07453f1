"""Write every story of tests/stories.py into examples/<name>/ (run: python -m tests.make_examples)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from tests.stories import STORIES

ROOT = Path(__file__).resolve().parent.parent / "examples"


def write_all(root: Path = ROOT) -> list[Path]:
    out = []
    for story in STORIES:
        d = root / story.name
        if d.exists():
            shutil.rmtree(d)
        story.build().write(d)
        (d / "README.md").write_text(
            f"# {story.name}\n\n{story.summary}\n\n"
            f"Expected failing rules: {', '.join(story.expect) or 'none'}.\n\n"
            f"Try: `ckpt-doctor diagnose --bundle examples/{story.name}`\n"
        )
        out.append(d)
    return out


if __name__ == "__main__":
    for d in write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT):
        print(d)
