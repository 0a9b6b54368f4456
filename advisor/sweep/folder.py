"""A sweep folder on disk: its index.json, the typed reports it names, its zoo files.

Every error is one line (an `AdvisorError`); a target's report that cannot be read is not an
error but a "missing" row of the zoo, with the loader's one-line reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from advisor.core.errors import AdvisorError
from advisor.core.files import parse_file, read_text
from advisor.core.model import Report
from advisor.render.report_io import load_report
from advisor.sweep.aggregate import Zoo, build_zoo, zoo_from_json
from advisor.sweep.runner import INDEX_FILE

ZOO_FILES = ("sweep.json", "sweep.md", "sweep.html")


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from a file; a one-line AdvisorError otherwise."""
    if not path.is_file():
        raise AdvisorError(f"not found: {path}")
    text = read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AdvisorError(f"cannot read {path}: {exc}") from None
    if not isinstance(data, dict):
        raise AdvisorError(f"{path} is not a JSON object")
    return data


def read_index(folder: Path) -> dict[str, Any]:
    if not (folder / INDEX_FILE).is_file():
        raise AdvisorError(f"{folder} is not a sweep folder (no {INDEX_FILE})")
    return read_json(folder / INDEX_FILE)


def index_targets(index: dict[str, Any]) -> list[dict[str, Any]]:
    """The index's target records that have a name."""
    targets = index.get("targets")
    if not isinstance(targets, list):
        return []
    return [t for t in targets if isinstance(t, dict) and isinstance(t.get("name"), str)]


def load_reports(folder: Path, index: dict[str, Any]) -> tuple[dict[str, Report], dict[str, str]]:
    """The reports the index names, by target name, and why each unreadable one is."""
    reports: dict[str, Report] = {}
    errors: dict[str, str] = {}
    for record in index_targets(index):
        path = record.get("report")
        if not isinstance(path, str) or not path:
            continue
        try:
            reports[record["name"]] = load_report(folder / path)
        except AdvisorError as exc:
            errors[record["name"]] = str(exc)
    return reports, errors


def load_zoo(folder: Path) -> Zoo:
    """A Zoo from a sweep folder's index.json and the report.json files it names."""
    index = read_index(folder)
    reports, errors = load_reports(folder, index)
    return build_zoo(index, reports, errors)


def read_zoo(where: str | Path) -> Zoo:
    """A Zoo from a sweep.json, or from a sweep folder (its sweep.json, else built from its
    index and reports)."""
    path = Path(where)
    if path.is_dir() and not (path / "sweep.json").is_file():
        return load_zoo(path)
    file = path / "sweep.json" if path.is_dir() else path
    if not file.is_file():
        raise AdvisorError(f"not found: {file}")
    return parse_file(file, zoo_from_json)


def zoo_files(zoo: Zoo) -> dict[str, str]:
    """sweep.json, sweep.md and sweep.html (the renderers, matplotlib included, load here)."""
    from advisor.sweep.render import render_html, render_json, render_markdown

    texts = (render_json(zoo), render_markdown(zoo), render_html(zoo))
    return dict(zip(ZOO_FILES, texts, strict=True))
