"""`advisor sweep --rejudge FOLDER`: judge every target of a saved sweep again from its
`NAME/measurements.json`, into a new folder, without measuring (and without torch).

The new folder gets each re-judged target's measurements (written first, so a judging or
rendering failure keeps them) and report files (report.json, .md, .html, trace.json), a copy of
index.json naming them, and the zoo report. Nothing is overwritten and the saved sweep is only
read. A target without measurements keeps its index status (a finished one shows as missing,
with why).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any

from advisor.core.artifacts import MEASUREMENTS_FILE
from advisor.core.errors import AdvisorError, first_line
from advisor.core.model import Report
from advisor.judge import judge_saved
from advisor.render import report_io
from advisor.sweep.aggregate import Zoo, build_zoo
from advisor.sweep.folder import index_targets, read_index, zoo_files
from advisor.sweep.runner import INDEX_FILE

NO_MEASUREMENTS = f"not re-judged: no {MEASUREMENTS_FILE}"
# One process by default: rendering each report's figures (matplotlib) is most of the time, and
# on a machine others are using (the one this was measured on) a second process did not shorten
# it; `--workers N` judges N targets at a time where CPUs are free.
DEFAULT_WORKERS = 1


@dataclass(frozen=True)
class Rejudged:
    out_dir: Path
    zoo: Zoo
    rejudged: tuple[str, ...]  # targets judged again
    failed: tuple[str, ...]  # targets with measurements that could not be judged
    without: tuple[str, ...]  # targets with no measurements.json
    wall_s: float


@dataclass(frozen=True)
class TargetOutcome:
    record: dict[str, Any]  # the target's index record in the new folder
    report: Report | None  # None: not re-judged
    had_measurements: bool


def rejudge_sweep(
    folder: Path,
    out_dir: Path | None = None,
    ignore_share: float | None = None,
    progress: Callable[[str], None] = lambda _m: None,
    workers: int | None = None,
) -> Rejudged:
    """Judge the saved sweep `folder` again into `out_dir` (default: a new folder beside it),
    `workers` targets at a time; `ignore_share` replaces each run's own."""
    started = time.monotonic()
    index = read_index(folder)
    saved = folder.resolve()
    out = out_dir or report_io.default_run_dir(saved.parent, f"{saved.name}-rejudged")
    check_new_folder(out, saved)
    records = index_targets(index)
    workers = min(workers or DEFAULT_WORKERS, os.cpu_count() or 1)
    judged = rejudge_targets(folder, out, records, ignore_share, workers)
    outcomes = {record["name"]: outcome for record, outcome in zip(records, judged, strict=True)}
    for name, outcome in outcomes.items():
        if outcome.had_measurements and outcome.report is None:
            progress(f"{name}: {outcome.record.get('error')}")
    new_index = {
        **index,
        "rejudged_from": str(saved),
        "rejudged_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "ignore_share": ignore_share,
        "targets": [o.record for o in outcomes.values()],
    }
    reports = {name: o.report for name, o in outcomes.items() if o.report is not None}
    zoo = build_zoo(new_index, reports)
    report_io.write_files(out, {INDEX_FILE: json.dumps(new_index, indent=2), **zoo_files(zoo)})
    return Rejudged(
        out_dir=out,
        zoo=zoo,
        rejudged=tuple(reports),
        failed=tuple(n for n, o in outcomes.items() if o.had_measurements and o.report is None),
        without=tuple(n for n, o in outcomes.items() if not o.had_measurements),
        wall_s=time.monotonic() - started,
    )


def check_new_folder(out: Path, saved: Path) -> None:
    """The re-judged sweep goes into a new (or empty) folder outside the saved one."""
    where = out.resolve()
    if where == saved or saved in where.parents:
        raise AdvisorError(f"--out {out} is inside the saved sweep {saved}; choose another")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise AdvisorError(f"{out} already exists and is not empty; choose another --out")
    report_io.check_writable(out, names=())


def rejudge_targets(
    folder: Path,
    out: Path,
    records: list[dict[str, Any]],
    ignore_share: float | None,
    workers: int,
) -> list[TargetOutcome]:
    """Every target's outcome, in the index's order; `workers` processes when more than one
    target has measurements (each process imports the renderers once)."""
    todo = sum((folder / str(r["name"]) / MEASUREMENTS_FILE).is_file() for r in records)
    if workers <= 1 or todo < 2:
        return [rejudge_target(folder, out, record, ignore_share) for record in records]
    with ProcessPoolExecutor(max_workers=min(workers, todo)) as pool:
        args = (repeat(folder), repeat(out), records, repeat(ignore_share))
        return list(pool.map(rejudge_target, *args))


def rejudge_target(
    folder: Path, out: Path, record: dict[str, Any], ignore_share: float | None
) -> TargetOutcome:
    """One target: judged from its measurements.json into `out/NAME/`, or why not."""
    name = record["name"]
    if name in ("", ".", "..") or "/" in name or "\\" in name:  # index.json edited by hand
        return _not_rejudged(record, f"not re-judged: {name!r} is not a folder name", False)
    saved = folder / name / MEASUREMENTS_FILE
    if not saved.is_file():
        error = NO_MEASUREMENTS if record.get("status") == "ok" else record.get("error")
        return _not_rejudged(record, error, False)
    try:
        measurements = report_io.load_measurements(saved)
    except AdvisorError as exc:
        return _not_rejudged(record, f"not re-judged: {exc}", True)
    settings = measurements.settings
    if ignore_share is not None:
        settings = dataclasses.replace(settings, ignore_share=ignore_share)
    report_io.save_measurements(measurements, out / name)  # kept whatever fails below
    try:  # an interrupted run is judged as `advisor run` judged it: what can be
        report = judge_saved(measurements, settings)
        report_io.write_files(out / name, report_io.render_files(report))
    except Exception as exc:  # a judging or rendering bug in one target must not lose the others
        why = (
            f"re-judging raised {type(exc).__name__}: {first_line(exc)} "
            f"(its measurements are saved: run advisor judge {shlex.quote(str(out / name))} "
            "to render them again)"
        )
        return _not_rejudged(record, why, True)
    return TargetOutcome({**record, "report": f"{name}/report.json"}, report, True)


def _not_rejudged(record: dict[str, Any], error: str | None, had: bool) -> TargetOutcome:
    return TargetOutcome({**record, "report": None, "error": error}, None, had)
