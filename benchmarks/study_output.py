"""Where a study's results go: its JSON (the data the docs' figures read) and its Markdown
table, side by side under the study's folder in reports/benchmarks/, each replaced whole
(a study's outputs are regenerated from its saved runs, never appended to)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from advisor.core.files import replace_atomically


def write_study(out: Path, stem: str, data: dict[str, Any], markdown: str) -> None:
    """`out/STEM.json` and `out/STEM.md`, then the Markdown on stdout."""
    out.mkdir(parents=True, exist_ok=True)
    replace_atomically(out / f"{stem}.json", json.dumps(data, indent=1, default=str) + "\n")
    replace_atomically(out / f"{stem}.md", markdown)
    print(markdown)
