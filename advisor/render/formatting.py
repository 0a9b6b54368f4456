"""The small formatters every renderer shares: numbers as the tables and sentences print them
(`-` where a value is missing), a source place, and the modes' display names.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial

from advisor.core.model import Location, Report
from advisor.core.paths import common_folder, display_path
from advisor.core.taxonomy import KNOB_JOIN

Display = Callable[[str | None], str]  # a path as the report shows it (see `displayer`)

MODE_LABELS = {
    "eager": "eager",
    "default": "compile (default)",
    "fullgraph": "compile (fullgraph=True)",
}


def displayer(report: Report) -> Display:
    """Paths as the report shows them: relative to the folder of the files its breaks and
    graphs are in."""
    files = [s.where.file for s in report.sites] + [g.file for g in report.graphs]
    return partial(display_path, base=common_folder(files))


def location(loc: Location | None, display: Display) -> str:
    return f"{display(loc.file)}:{loc.line}" if loc is not None else "?"


def knob_code(knob: str, prefix: str = "") -> str:
    """A knob as code; knobs set together each in their own span, joined by "and"."""
    return " and ".join(f"`{prefix}{part}`" for part in knob.split(KNOB_JOIN))


def fmt_ms(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:.1f}"
    if abs(value) >= 1:
        return f"{value:.3g}" if abs(value) < 10 else f"{value:.2f}"
    return f"{value:.4f}"


def fmt_s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def fmt_pct(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value * 100:.{digits}f}%"


def fmt_num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def fmt_bytes(value: int | None) -> str:
    if value is None:
        return "-"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


# Control characters other than newline and tab: text from a report (user code, torch messages,
# a script's own output, a report.json from anywhere) must not move a terminal's cursor or
# retitle it, wherever the report is read. Each becomes "?".
CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def without_controls(text: str) -> str:
    return CONTROL_CHARS.sub("?", text)
