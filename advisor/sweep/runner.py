"""One sweep: decide what to run (resume), hand the jobs to an engine, keep index.json current.

index.json is replaced atomically (`advisor.core.files.replace_atomically`) after every
finished target, so a sweep stopped at any point leaves a usable index.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.core.errors import AdvisorError
from advisor.core.files import replace_atomically
from advisor.sweep.engines import Command, Job, TargetResult, advisor_command, run_local, run_ray
from advisor.sweep.manifest import Manifest, TargetSpec

INDEX_FILE = "index.json"
INDEX_VERSION = 1

Progress = Callable[[str], None]


@dataclass(frozen=True)
class SweepOptions:
    out_dir: Path
    engine: str = "local"  # local | ray
    workers: int | None = None
    ray_address: str | None = None
    timeout_s: float | None = None  # None: the manifest's
    resume: bool = False
    command: Command = advisor_command


def run_sweep(
    manifest: Manifest, options: SweepOptions, progress: Progress = lambda _m: None
) -> list[TargetResult]:
    """Run the manifest's targets into `options.out_dir`; returns one result per target."""
    out_dir = options.out_dir.resolve()
    check_out_dir(out_dir, options.resume)
    out_dir.mkdir(parents=True, exist_ok=True)
    records = initial_records(manifest, out_dir, options.resume)
    todo = [s for s in manifest.targets if records[s.name].status == "pending"]
    header = index_header(manifest, options)
    write_index(out_dir, header, records)
    timeout = options.timeout_s or manifest.timeout_s
    jobs = [Job(s, out_dir, manifest.folder, timeout, options.command) for s in todo]
    skipped = len(manifest.targets) - len(todo)
    if skipped:
        progress(f"resuming: {skipped} target(s) already have a report, {len(todo)} to run")
    meter = ProgressMeter(len(manifest.targets), skipped, progress)

    def on_result(result: TargetResult) -> None:
        records[result.name] = result
        write_index(out_dir, header, records)
        meter.finished(result)

    if not jobs:
        progress("nothing to run")
    elif options.engine == "ray":
        run_ray(jobs, options.workers, options.ray_address, on_result)
    else:
        run_local(jobs, options.workers or 1, on_result)
    return [records[s.name] for s in manifest.targets]


def check_out_dir(out_dir: Path, resume: bool) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise AdvisorError(f"output path {out_dir} exists and is not a folder")
    if not resume and out_dir.is_dir() and any(out_dir.iterdir()):
        raise AdvisorError(
            f"{out_dir} is not empty; use --resume to continue that sweep, or another --out "
            "(never overwritten)"
        )


def initial_records(manifest: Manifest, out_dir: Path, resume: bool) -> dict[str, TargetResult]:
    """Per target: its earlier result when resuming and its report is there, else pending."""
    earlier = read_index_records(out_dir) if resume else {}
    records = {}
    for spec in manifest.targets:
        done = resume and (out_dir / spec.name / "report.json").is_file()
        records[spec.name] = (
            _done_record(spec, earlier.get(spec.name)) if done else (TargetResult.pending(spec))
        )
    return records


def _done_record(spec: TargetSpec, earlier: dict[str, Any] | None) -> TargetResult:
    report = f"{spec.name}/report.json"
    if earlier and earlier.get("status") == "ok":
        fields = {f.name for f in dataclasses.fields(TargetResult)}
        kept = {k: v for k, v in earlier.items() if k in fields}
        kept["stderr_tail"] = tuple(kept.get("stderr_tail") or ())
        return dataclasses.replace(TargetResult(**kept), report=report)
    return TargetResult(spec.name, spec.target, spec.params, "ok", report=report)


def read_index_records(out_dir: Path) -> dict[str, dict[str, Any]]:
    """The records of an earlier index.json, by target name ({} when absent or unreadable)."""
    path = out_dir / INDEX_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    targets = data.get("targets") if isinstance(data, dict) else None
    if not isinstance(targets, list):
        return {}
    return {t["name"]: t for t in targets if isinstance(t, dict) and isinstance(t.get("name"), str)}


def index_header(manifest: Manifest, options: SweepOptions) -> dict[str, Any]:
    return {
        "index_version": INDEX_VERSION,
        "sweep": manifest.name,
        "manifest": str(manifest.path),
        "manifest_folder": str(manifest.folder),
        "engine": options.engine,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def write_index(out_dir: Path, header: dict[str, Any], records: dict[str, TargetResult]) -> None:
    targets = [dataclasses.asdict(r) for r in records.values()]
    counts = {
        s: sum(t["status"] == s for t in targets)
        for s in ("ok", "failed", "timeout", "crashed", "pending")
    }
    data = {
        **header,
        "updated_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "counts": counts,
        "targets": targets,
    }
    replace_atomically(out_dir / INDEX_FILE, json.dumps(data, indent=2))


class ProgressMeter:
    """Targets done/failed/total, elapsed and an estimate of the time left, one line each."""

    def __init__(self, total: int, skipped: int, progress: Progress) -> None:
        self.total, self.skipped, self.progress = total, skipped, progress
        self.done = self.failed = 0
        self.started = time.monotonic()

    def finished(self, result: TargetResult) -> None:
        self.done += 1
        self.failed += result.status != "ok"
        elapsed = time.monotonic() - self.started
        remaining = self.total - self.skipped - self.done
        left = elapsed / self.done * remaining
        what = f"{result.status} in {result.wall_s or 0:.1f} s"
        if result.status != "ok" and result.error:
            what += f" ({result.error})"
        self.progress(
            f"[{self.skipped + self.done}/{self.total}] {result.name} {what}; "
            f"{self.skipped + self.done} done ({self.failed} failed) of {self.total}, "
            f"elapsed {_clock(elapsed)}, about {_clock(left)} left"
        )


def _clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
