"""The files a user's own run left, as the `Measurements` record the judge reads
(`advisor trace`): the capture from the TORCH_TRACE log, the default mode's profile from the
profiler trace, and a default mode whose times are the profiled steps' own.

Nothing here was run, so the record says so wherever the judge or a reader could take it for a
measurement: `Settings.protocol` is "files" (the judge marks every action an estimate, the
report's harness line says what the numbers are), the profile has no unprofiled timing
(`ProfileTrace.unprofiled_us` stays empty: the judge then takes the step time the profile
gives, profiler overhead included, as the reference), there is no eager or fullgraph mode and
no what-if, and notes say which half is missing and which `advisor run` command would measure
the savings. One rank is read into one record; several ranks are chosen from, not merged yet.
"""

from __future__ import annotations

import fnmatch
import os
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from advisor.core import stats
from advisor.core.artifacts import Capture, Measurements
from advisor.core.errors import AdvisorError, one_line
from advisor.core.model import Environment, ModeResult, Note, Settings, WorkloadInfo
from advisor.core.options import FILES_PROTOCOL
from advisor.measure.capture import build_capture
from advisor.measure.traces.join import by_rank, join_by_compile_id
from advisor.measure.traces.kineto import KinetoProfile, read_kineto
from advisor.measure.traces.torch_trace import LOG_GLOB, TraceLog, read_torch_trace

# The files cannot name the script that ran the job (the log interns file names in records the
# reader drops), so the command that would measure a saving names it for the user to fill in.
SCRIPT_PLACEHOLDER = "YOUR_SCRIPT.py"
ARGS_PLACEHOLDER = "YOUR_ARGS"
# Compiled functions whose name does not pick one callable of a script (`--callable NAME`
# matches a callable's name, a module's class name for a compiled module).
_UNNAMEABLE = frozenset({"forward", "__call__", "<lambda>"})

_Ranked = TypeVar("_Ranked", TraceLog, KinetoProfile)


@dataclass(frozen=True)
class FileInputs:
    """What was read for the rank judged: its log and its profile (either may be missing)."""

    log: TraceLog | None
    profile: KinetoProfile | None
    sources: tuple[str, ...] = ()  # the paths as given, in order
    ranks: tuple[int, ...] = ()  # every rank the files given hold
    step_name: str | None = None  # the user's step record (`--step`); None: ProfilerStep#N


def read_files(
    paths: Sequence[str], step_name: str | None = None, rank: int | None = None
) -> FileInputs:
    """Read the paths given: a folder (or a `dedicated_log_torch_trace_*.log` file) is the
    TORCH_TRACE side, any other file a profiler trace (one per rank). Every problem is one
    `AdvisorError` line, raised before anything is written."""
    trace_dirs, profile_paths = _classify(paths)
    if step_name is not None and not profile_paths:
        raise AdvisorError(
            "--step names the step's span in a profiler trace, and no profiler trace was given"
        )
    logs = read_torch_trace(trace_dirs[0]) if trace_dirs else ()
    profiles = tuple(read_kineto(p, step_name=step_name) for p in profile_paths)
    ranks = tuple(sorted({x.rank for x in (*logs, *profiles) if x.rank is not None}))
    chosen = rank if rank is not None else (ranks[0] if ranks else None)
    return FileInputs(
        log=_of_rank(logs, chosen, rank is not None, "TORCH_TRACE log", ranks),
        profile=_of_rank(profiles, chosen, rank is not None, "profiler trace", ranks),
        sources=tuple(str(p) for p in paths),
        ranks=ranks,
        step_name=step_name,
    )


def _classify(paths: Sequence[str]) -> tuple[list[str], list[str]]:
    """The TORCH_TRACE folder (at most one) and the profiler traces among the paths."""
    trace_dirs: list[str] = []
    profiles: list[str] = []
    for given in paths:
        path = Path(given)
        if path.is_dir() or (path.is_file() and fnmatch.fnmatch(path.name, LOG_GLOB)):
            trace_dirs.append(given)
        elif path.is_file():
            profiles.append(given)
        else:
            raise AdvisorError(f"no such TORCH_TRACE folder or profiler trace: {one_line(given)}")
    if len(trace_dirs) > 1:
        # every process of one job writes into the one folder TORCH_TRACE names
        raise AdvisorError(
            f"give one TORCH_TRACE folder (got {one_line(trace_dirs[0])} and "
            f"{one_line(trace_dirs[1])}); its logs cover every rank"
        )
    return trace_dirs, profiles


def _of_rank(
    items: Sequence[_Ranked],
    rank: int | None,
    asked: bool,
    what: str,
    ranks: tuple[int, ...],
) -> _Ranked | None:
    """The item of `rank`. A lone item is taken whatever rank it names unless a rank was asked
    for (a job run without torchrun names none; `join_by_compile_id` still checks that a log
    and a profile that both name one agree)."""
    if not items:
        return None
    if len(items) == 1 and (not asked or items[0].rank in (None, rank)):
        return items[0]
    ranked = by_rank(items, what, unnamed="give one per run")
    if rank not in ranked:
        known = ", ".join(str(r) for r in ranks) or "none"
        raise AdvisorError(f"no {what} for rank {rank} (ranks in the files: {known})")
    return ranked[rank]


def measurements_from_files(inputs: FileInputs, created_at: str = "") -> Measurements:
    """The record the judge reads, from one rank's log and profile (either may be missing)."""
    log, profile = inputs.log, inputs.profile
    if log is None and profile is None:
        raise AdvisorError("nothing to read: give a TORCH_TRACE folder, a profiler trace or both")
    capture = _capture(log, profile)
    torch_version = log.torch_version if log is not None and log.torch_version else ""
    trace = replace(profile.trace(), torch_version=torch_version) if profile else None
    return Measurements(
        workload=_workload(capture, inputs),
        # the files name the torch release (the log) and nothing else of the machine
        environment=Environment(torch=torch_version, python="", device_name=""),
        settings=Settings(
            protocol=FILES_PROTOCOL,
            what_if=False,
            processes=0,
            profile_calls=len(profile.steps) if profile else 0,
        ),
        modes=(_default_mode(capture, log, profile),),
        capture=capture,
        trace=trace,
        notes=_notes(inputs, capture),
        created_at=created_at,
    )


def written_at(inputs: FileInputs) -> str:
    """When the run wrote the files read (the latest modification among them), as a run's
    `created_at`: the report's "measured" time is the run's, not this reading's."""
    paths = [x.path for x in (inputs.log, inputs.profile) if x is not None]
    try:
        latest = max(os.path.getmtime(p) for p in paths)
    except (OSError, ValueError):  # gone since it was read, or nothing read
        return ""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(latest))


def _capture(log: TraceLog | None, profile: KinetoProfile | None) -> Capture:
    """The log's capture (checked against the profile where both are given), with the torch
    release the log names rather than this machine's."""
    if log is None:
        return Capture()
    if profile is None:
        capture = build_capture(list(log.records))
    else:
        joined = join_by_compile_id(log, profile)
        if not joined.matched:
            raise AdvisorError(
                f"profiler trace {one_line(profile.path)} ran no compiled region that TORCH_TRACE "
                f"log {one_line(log.path)} compiled (the profile ran "
                f"{', '.join(profile.compile_ids)}): are they of the same run and rank?"
            )
        capture = joined.capture
    return replace(capture, torch_version=log.torch_version or "")


def _default_mode(
    capture: Capture, log: TraceLog | None, profile: KinetoProfile | None
) -> ModeResult:
    """The default mode as the files show it: its latency is the profiled steps' durations
    (profiler overhead included: the files hold no unprofiled timing), its graphs and
    recompiles the log's."""
    latency = None
    if profile is not None:
        latency = stats.latency_stats([s.call.duration_us / 1e6 for s in profile.steps], 1)
    return ModeResult(
        mode="default",
        status="ok",
        latency=latency,
        recompiles=sum(not r.backend_switch for r in capture.recompiles),
        graph_count=len(capture.graphs) if log is not None else None,
    )


def _workload(capture: Capture, inputs: FileInputs) -> WorkloadInfo:
    """Named after the compiled function the log saw first, else after the profile."""
    root = _root_function(capture)
    profile = inputs.profile
    if root:
        name = root
    elif profile is not None:
        name = Path(profile.path).name.split(".")[0]
    else:
        name = "trace"
    return WorkloadInfo(
        name=name,
        target=" ".join(inputs.sources),
        device=profile.device if profile is not None else "unknown",
    )


def _root_function(capture: Capture) -> str | None:
    root = capture.frame(capture.root_compile_id) if capture.root_compile_id else None
    return root.function if root is not None and root.function else None


def measure_command(capture: Capture, profile: KinetoProfile | None) -> str:
    """The `advisor run` command that would measure the savings this record estimates: the
    user's script (named by a placeholder), the compiled callable where its name picks one, the
    device the profile ran on."""
    parts = ["advisor", "run", SCRIPT_PLACEHOLDER]
    root = _root_function(capture)
    if root and root not in _UNNAMEABLE:
        parts += ["--callable", root]
    if profile is not None and profile.device == "cuda":
        parts += ["--device", "cuda"]
    return shlex.join(parts) + f" -- {ARGS_PLACEHOLDER}"


def _notes(inputs: FileInputs, capture: Capture) -> tuple[Note, ...]:
    """What the reader of the report must know about where its numbers come from, and what a
    missing file leaves out."""
    log, profile = inputs.log, inputs.profile
    notes: list[Note] = []
    if profile is not None:
        step = inputs.step_name or "ProfilerStep#N"
        notes.append(Note("profiled_step_times", step, {"steps": float(len(profile.steps))}))
        notes.append(
            Note("estimated_from_files", detail=measure_command(capture, profile))
            if log is not None
            else Note("no_torch_trace", ", ".join(profile.compile_ids))
        )
    else:
        compile_s = sum(f.compile_s or 0.0 for f in capture.frames)
        notes.append(Note("no_profile", values={"compile_s": round(compile_s, 3)}))
    if log is not None and log.truncated:
        notes.append(Note("log_truncated", one_line(log.path)))
    if log is not None and profile is not None:
        ran = set(profile.compile_ids)
        idle = [g.compile_id for g in capture.graphs if g.compile_id not in ran]
        if idle:
            notes.append(Note("compiled_not_profiled", ", ".join(idle)))
    if len(inputs.ranks) > 1:
        rank = log.rank if log is not None else profile.rank if profile is not None else None
        values = {"ranks": float(len(inputs.ranks)), "rank": float(rank or 0)}
        notes.append(Note("ranks_not_merged", values=values))
    return tuple(notes)
