"""`advisor observe SCRIPT.py [-- ARGS]`: the user's job run once, as it is, leaving exactly the
files a user's own run leaves (a TORCH_TRACE folder and a torch.profiler Chrome trace of a few
warm calls of its hot compiled callable), then judged as `advisor trace` judges such files.

The run is `advisor.measure.observe_hook`'s; the files go into a hidden folder beside the report
folder first, so a run that fails (the script raises, too few calls) leaves nothing in it. Under
`torchrun` every rank runs this command: each observes its own process and moves its files into
the shared `--out` folder; rank 0 waits for the others' profiles and judges its own rank (a
report merged across ranks is not built yet, and a note says so).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor import outputs
from advisor.core import argtypes
from advisor.core.artifacts import Measurements
from advisor.core.errors import AdvisorError
from advisor.core.model import Note, Report, WorkloadInfo
from advisor.core.options import REDACT_HELP
from advisor.core.script import CompiledCallable, ScriptSpec, shown_params

if TYPE_CHECKING:
    from advisor.measure.observe_hook import Observation, ObservePlan

TRACE_DIR = "torch_trace"
RANKS_WAIT_S = 120.0  # rank 0 waits this long for the other ranks' profiles after its own run


def profile_name(rank: int) -> str:
    return f"profile_rank{rank}.json"


def add_observe_parser(sub: Any) -> None:
    observe = sub.add_parser(
        "observe",
        help="run your script once as it is, with TORCH_TRACE set and torch.profiler around a "
        "few warm calls of its hot compiled callable, and judge those files as `advisor trace` "
        "does (every saving estimated)",
    )
    observe.add_argument("script", help="path/to/script.py (its own arguments go after --)")
    observe.add_argument(
        "--callable",
        metavar="FILE:LINE|NAME",
        help="the compiled callable to profile, by where it is compiled or first called, or by "
        "name (default: the first one to reach --warmup calls)",
    )
    observe.add_argument(
        "--warmup",
        type=argtypes.int_at_least(0, "zero or more"),
        default=3,
        help="its calls before the profiled ones (the first compiles; default 3)",
    )
    observe.add_argument(
        "--steps",
        type=argtypes.int_at_least(1, "at least 1"),
        default=5,
        help="its calls to profile, each one step of the report (default 5)",
    )
    observe.add_argument(
        "--out",
        type=Path,
        help="folder for the run's files and the report (default: a new one under reports/; "
        "required under torchrun, where every rank writes there)",
    )
    observe.add_argument("--quiet", action="store_true", help="no summary on stdout")
    observe.add_argument("--redact", action="store_true", help=REDACT_HELP)


@dataclass(frozen=True)
class _Rank:
    """This process's place in a torchrun job (rank 0 of 1 when run alone)."""

    rank: int
    world: int

    @classmethod
    def from_env(cls) -> _Rank:
        try:
            return cls(int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1")))
        except ValueError as exc:
            raise AdvisorError(f"RANK or WORLD_SIZE is not a number: {exc}") from None


def cmd_observe(args: argparse.Namespace, run_dir: Path) -> tuple[Report, Path] | None:
    """Run, check, place the files, judge and write; None on a rank other than 0 (it judges
    nothing). Every failure before the report is written leaves nothing behind."""
    from advisor.measure.observe_hook import ObservePlan, observe_script
    from advisor.measure.script_target import script_spec
    from advisor.render import report_io

    spec = script_spec(args.script, tuple(args.script_args), args.callable or "")
    where = _Rank.from_env()
    if where.world > 1 and args.out is None:
        raise AdvisorError(
            f"under torchrun (WORLD_SIZE={where.world}) give --out DIR: every rank writes its "
            "files there"
        )
    out = args.out or report_io.default_run_dir(run_dir, f"{Path(spec.path).stem}-observe")
    names = (profile_name(where.rank),) + (() if where.world > 1 else (TRACE_DIR,))
    report_io.check_writable(out, (*report_io.REPORT_FILES, *names))
    staging = Path(tempfile.mkdtemp(prefix=".advisor-observe-", dir=_existing(out)))
    plan = ObservePlan(args.warmup, args.steps, str(staging / profile_name(where.rank)), spec.pick)
    placed: list[Path] = []
    made_out = not out.exists()
    try:
        _progress(f"running {Path(spec.path).name} once, {_plan_words(plan)}")
        observation = observe_script(spec, plan, staging)
        _check(spec, plan, observation)
        _place(staging, out, where.rank, placed)
        if where.rank != 0:
            _progress(f"rank {where.rank}: files written to {out}/ (rank 0 writes the report)")
            return None
        missing = _wait_for_ranks(out, where)
        measurements = _measurements(args, spec, plan, observation, out, where, missing)
    except BaseException:
        _remove(placed, out if made_out else None)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    _, written = outputs.save_and_render(measurements, measurements.settings, out, args.redact)
    return written, out


def _progress(text: str) -> None:
    print(f"advisor: {text}", file=sys.stderr, flush=True)


def _plan_words(plan: ObservePlan) -> str:
    which = f"--callable {plan.pick}" if plan.pick else "the first compiled callable to reach them"
    first, last = plan.warmup + 1, plan.warmup + plan.steps
    return f"TORCH_TRACE set and the profiler on calls {first}-{last} of {which}..."


def _existing(path: Path) -> Path:
    """The nearest folder at or above `path` that exists (the staging folder goes there: the
    same file system as the report folder, so the files move by renaming)."""
    path = path.absolute()
    while not path.exists():
        path = path.parent
    return path


def _check(spec: ScriptSpec, plan: ObservePlan, seen: Observation) -> None:
    """The script's own failure, or a run that did not reach the profiled steps: one line."""
    from advisor.measure.script_target import ScriptFailed

    name = Path(spec.path).name
    nothing = "nothing was written"
    before = "" if seen.callables else " before any compiled call"
    if seen.ended == "raised":
        message = f"{name} raised {seen.error} (exit code {seen.exit_code}){before}; {nothing}"
        raise ScriptFailed(message, seen.exit_code or 1, "")
    if seen.ended == "exited":
        message = f"{name} exited with code {seen.exit_code}{before}; {nothing}"
        raise ScriptFailed(message, seen.exit_code or 1, "")
    if not seen.callables:
        raise AdvisorError(f"{name} never called torch.compile: no compiled callable to observe")
    if plan.pick and not any(c.named(plan.pick) for c in seen.callables):
        known = ", ".join(
            f"{c.name} ({Path(c.site_file).name}:{c.site_line})" for c in seen.callables
        )
        raise AdvisorError(
            f"--callable {plan.pick} matches no compiled callable of the script ({known})"
        )
    if seen.steps < plan.steps:
        most = seen.hot or max(seen.callables, key=lambda c: c.calls)
        raise AdvisorError(
            f"{name} calls {most.name} {most.calls} times; observing it needs "
            f"{plan.warmup + plan.steps} (--warmup {plan.warmup} + --steps {plan.steps}): lower "
            "them, or give the script more iterations (its own arguments go after --)"
        )


def _place(staging: Path, out: Path, rank: int, placed: list[Path]) -> None:
    """This rank's log(s) and profile moved into the report folder, each path added to
    `placed` once it is there (so a failure half-way removes what moved)."""
    logs = sorted((staging / TRACE_DIR).glob("*")) if (staging / TRACE_DIR).is_dir() else []
    moves = [(log, out / TRACE_DIR / log.name) for log in logs]
    moves.append((staging / profile_name(rank), out / profile_name(rank)))
    clash = next((dest for _, dest in moves if dest.exists()), None)
    if clash is not None:
        raise AdvisorError(f"{clash} already exists; choose another --out (never overwritten)")
    (out / TRACE_DIR).mkdir(parents=True, exist_ok=True)
    for source, dest in moves:
        os.rename(source, dest)
        placed.append(dest)


def _remove(placed: list[Path], made: Path | None) -> None:
    """Undo `_place` (a failure after the files moved); the report folder too where this run
    made it and nothing else is in it."""
    for path in placed:
        path.unlink(missing_ok=True)
    if made is not None and made.is_dir():
        for folder in (made / TRACE_DIR, made):
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()


def _wait_for_ranks(out: Path, where: _Rank) -> tuple[int, ...]:
    """Rank 0 waits (a while) for every other rank's profile; the ranks still missing."""
    deadline = time.monotonic() + RANKS_WAIT_S
    while True:
        missing = tuple(r for r in range(where.world) if not (out / profile_name(r)).is_file())
        if not missing or time.monotonic() > deadline:
            return missing
        time.sleep(0.5)


def _measurements(
    args: argparse.Namespace,
    spec: ScriptSpec,
    plan: ObservePlan,
    seen: Observation,
    out: Path,
    where: _Rank,
    missing: tuple[int, ...],
) -> Measurements:
    """The files read as `advisor trace` reads them, named after the script, with what the
    observed run cost and the `advisor run` command that would measure the estimates."""
    from advisor.measure.observe_hook import STEP_RECORD
    from advisor.measure.traces.measurements import measurements_from_files, read_files

    profiles = sorted(str(p) for p in out.glob("profile_rank*.json"))
    inputs = read_files(
        [str(out / TRACE_DIR), *profiles],
        step_name=STEP_RECORD,
        rank=where.rank if where.world > 1 else None,
    )
    m = measurements_from_files(inputs, time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    hot = seen.hot
    assert hot is not None
    script = shlex.join([args.script, *spec.argv])
    command = shlex.join(["advisor", "run", args.script, "--callable", hot.name])
    if m.trace is not None and m.trace.device == "cuda":
        command += " --device cuda"
    command += f" -- {shlex.join(spec.argv)}" if spec.argv else ""
    notes = [replace(n, detail=command) if n.kind == "estimated_from_files" else n for n in m.notes]
    values = {
        "wall_s": round(seen.wall_s, 3),
        "warmup": float(plan.warmup),
        "steps": float(seen.steps),
        "steps_s": round(seen.steps_s, 4),
        "profile_s": round(seen.profile_s, 3),
        "export_s": round(seen.export_s, 3),
    }
    notes.insert(0, Note("observed_run", f"{hot.name} ({_site(hot)})", values, script))
    if missing:
        notes.append(Note("observed_ranks_missing", ", ".join(str(r) for r in missing)))
    workload = WorkloadInfo(hot.name, script, m.workload.device, shown_params(spec.argv))
    return replace(m, workload=workload, notes=tuple(notes))


def _site(seen: CompiledCallable, how: str = "compiled at ") -> str:
    return f"{how}{Path(seen.site_file).name}:{seen.site_line}"
