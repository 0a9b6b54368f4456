"""Where reports go on disk. Nothing here overwrites an existing file.

Every file is written whole or not at all, and never over an existing one
(`advisor.core.files.write_new`); whether a folder can take the files is checked before any
measurement.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from advisor.core.artifacts import (
    MEASUREMENTS_FILE,
    Measurements,
    measurements_from_json,
    measurements_to_json,
)
from advisor.core.errors import AdvisorError
from advisor.core.files import TEMP_PREFIX, parse_file, write_new
from advisor.core.model import Report, report_from_json

RENDERED_FILES = ("report.json", "report.md", "report.html", "trace.json")
REPORT_FILES = (*RENDERED_FILES, MEASUREMENTS_FILE)
OPEN_FIRST = "read report.html (or report.md); trace.json opens in ui.perfetto.dev"


def default_run_dir(base: Path, name: str, now: float | None = None) -> Path:
    """A new folder `base/NAME-YYYYmmdd-HHMMSS` (suffixed -2, -3... if that exists)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "run"
    candidate = base / f"{slug}-{stamp}"
    n = 2
    while candidate.exists():
        candidate = base / f"{slug}-{stamp}-{n}"
        n += 1
    return candidate


def check_writable(out_dir: Path, names: tuple[str, ...] = REPORT_FILES) -> None:
    """Fail before any measurement if writing there would overwrite something or cannot work:
    the folder (or the nearest folder above it that exists) must take a new file."""
    if out_dir.exists() and not out_dir.is_dir():
        raise AdvisorError(f"output path {out_dir} exists and is not a folder")
    clashes = [n for n in names if (out_dir / n).exists()]
    if clashes:
        raise AdvisorError(
            f"{out_dir} already holds {', '.join(clashes)}; "
            "choose another --out (never overwritten)"
        )
    _probe_writable(out_dir)


def _probe_writable(out_dir: Path) -> None:
    """Create and remove a file where the report will go (os.access is wrong for root and for
    read-only mounts, so try it)."""
    existing = out_dir
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise AdvisorError(f"cannot write to {out_dir}: {existing} is not a folder")
    try:
        fd, probe = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=existing)
    except OSError as exc:
        raise AdvisorError(f"cannot write to {out_dir}: {exc.strerror or exc}") from None
    os.close(fd)
    os.unlink(probe)


def write_files(out_dir: Path, files: Mapping[str, str | bytes]) -> list[Path]:
    """Write each file atomically and exclusively; an existing file is an error, never
    overwritten. Files written before a failure stay."""
    check_writable(out_dir, tuple(files))
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise AdvisorError(f"cannot create {out_dir}: {exc.strerror or exc}") from None
    written = []
    for name, content in files.items():
        path = out_dir / name
        write_new(path, content)
        written.append(path)
    return written


def load_report(path: str | Path) -> Report:
    """A report.json, or the one in a report folder; an AdvisorError (one line) otherwise."""
    return _load(path, "report.json", "report", report_from_json)


def load_measurements(path: str | Path) -> Measurements:
    """A measurements.json, or the one in a run folder; an AdvisorError (one line) otherwise."""
    return _load(path, MEASUREMENTS_FILE, "measurements", measurements_from_json)


T = TypeVar("T")


def _load(path: str | Path, name: str, what: str, parse: Callable[[str], T]) -> T:
    return parse_file(_file(path, name, what), parse)


def _file(path: str | Path, name: str, what: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise AdvisorError(f"{what} not found: {p}")
    if p.is_dir():
        p = p / name
        if not p.exists():
            raise AdvisorError(f"no {name} in {p.parent}")
    return p


def render_files(report: Report) -> dict[str, str]:
    """Every file of a report folder, rendered (the renderers load here, not at import)."""
    from advisor.render.html import render_html
    from advisor.render.json_report import render_json
    from advisor.render.markdown import render_markdown
    from advisor.render.trace import render_trace

    files = {
        "report.json": render_json(report),
        "report.md": render_markdown(report),
        "report.html": render_html(report),
        "trace.json": render_trace(report),
    }
    return files


def save_report(report: Report, out_dir: Path, measurements: Measurements | None = None) -> Path:
    """Write a report folder (with measurements.json when the measurements are given, written
    first, so a failure in rendering keeps them); an existing file there is an error, never
    overwritten."""
    if measurements is not None:
        save_measurements(measurements, out_dir)
    write_files(out_dir, render_files(report))
    return out_dir


def save_measurements(measurements: Measurements, out_dir: Path) -> Path:
    """measurements.json alone, before anything is judged or rendered from it."""
    write_files(out_dir, {MEASUREMENTS_FILE: measurements_to_json(measurements)})
    return out_dir / MEASUREMENTS_FILE
