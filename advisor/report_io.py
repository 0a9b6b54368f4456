"""Where reports go on disk. Nothing here overwrites an existing file."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from pathlib import Path

from advisor.errors import AdvisorError
from advisor.model import Report, report_from_json

REPORT_FILES = ("report.json", "report.md", "report.html", "trace.json")


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
    """Fail before any measurement if writing there would overwrite something."""
    if out_dir.exists() and not out_dir.is_dir():
        raise AdvisorError(f"output path {out_dir} exists and is not a folder")
    clashes = [n for n in names if (out_dir / n).exists()]
    if clashes:
        raise AdvisorError(
            f"{out_dir} already holds {', '.join(clashes)}; "
            "choose another --out (never overwritten)"
        )


def write_files(out_dir: Path, files: Mapping[str, str | bytes]) -> list[Path]:
    """Write each file exclusively; an existing file is an error, never overwritten."""
    check_writable(out_dir, tuple(files))
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, content in files.items():
        path = out_dir / name
        mode = "xb" if isinstance(content, bytes) else "x"
        kwargs = {} if isinstance(content, bytes) else {"encoding": "utf-8"}
        try:
            with open(path, mode, **kwargs) as handle:  # type: ignore[call-overload]
                handle.write(content)
        except FileExistsError:
            raise AdvisorError(f"{path} already exists (never overwritten)") from None
        written.append(path)
    return written


def load_report(path: str | Path) -> Report:
    p = Path(path)
    if not p.exists():
        raise AdvisorError(f"report not found: {p}")
    if p.is_dir():
        p = p / "report.json"
        if not p.exists():
            raise AdvisorError(f"no report.json in {p.parent}")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AdvisorError(f"cannot read {p}: {exc}") from None
    try:
        return report_from_json(text)
    except ValueError as exc:
        raise AdvisorError(f"{p}: {exc}") from None


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


def save_report(report: Report, out_dir: Path) -> Path:
    """Write a report folder; an existing file there is an error, never overwritten."""
    write_files(out_dir, render_files(report))
    return out_dir
