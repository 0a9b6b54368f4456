"""Re-judge and re-render every committed example report under reports/examples/ from its own
measurements.json, after a change to the judge or the renderers (nothing is measured again):

    .venv/bin/python scripts/rerender_examples.py

Each folder's report.json, report.md, report.html and trace.json are replaced; measurements.json
is only read. Other files there (a comparison's compare.md) are left as they are.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from advisor.judge import judge_saved
from advisor.render import report_io

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "reports" / "examples"


def rerender(folder: Path) -> None:
    measurements = report_io.load_measurements(folder)
    report = judge_saved(measurements)
    for name, text in report_io.render_files(report).items():
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".rerender-")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, folder / name)  # whole or not at all


def main() -> int:
    folders = sorted(p.parent for p in EXAMPLES.rglob("measurements.json"))
    for folder in folders:
        rerender(folder)
        print(f"re-rendered {folder.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
