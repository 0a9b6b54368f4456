"""The two halves of a user's run joined by compile id: a TORCH_TRACE log (what was compiled)
and a profiler trace of the same rank (what ran). `Torch-Compiled Region: 0/1` in the profile is
the log's `frame_id/frame_compile_id` 0/1 of the same process, so the ids must agree; ids seen in
one file and not in the other say which half is missing something (a frame compiled but not run
in the profiled steps, or a profile from another run or rank).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from advisor.core.artifacts import Capture
from advisor.core.errors import AdvisorError, one_line
from advisor.measure.capture import build_capture
from advisor.measure.traces.kineto import KinetoProfile
from advisor.measure.traces.torch_trace import TraceLog

_Ranked = TypeVar("_Ranked", TraceLog, KinetoProfile)


@dataclass(frozen=True)
class TraceJoin:
    """A log and a profile of one rank, and how their compile ids match."""

    rank: int | None
    log: TraceLog
    profile: KinetoProfile
    capture: Capture  # what the log's records give (`build_capture`)
    matched: tuple[str, ...]  # compiled in the log and run in the profile
    # compiled with a graph in the log, never run in the profiled steps
    only_in_log: tuple[str, ...]
    # run in the profile, never compiled in the log: the files are not of the same run
    only_in_profile: tuple[str, ...]
    # in the log without a region of their own (skipped frames, resume frames with no graph)
    without_region: tuple[str, ...]

    @property
    def consistent(self) -> bool:
        """Every region the profile ran was compiled in this log."""
        return not self.only_in_profile


def join_by_compile_id(log: TraceLog, profile: KinetoProfile) -> TraceJoin:
    """Pair one rank's log and profile by compile id (ranks must agree where both are known)."""
    if log.rank is not None and profile.rank is not None and log.rank != profile.rank:
        raise AdvisorError(
            f"TORCH_TRACE log {one_line(log.path)} is rank {log.rank} but profiler trace "
            f"{one_line(profile.path)} is rank {profile.rank}"
        )
    capture = build_capture(list(log.records))
    with_region = [f.compile_id for f in capture.frames if not f.skipped and f.ops is not None]
    ran = profile.compile_ids
    return TraceJoin(
        rank=log.rank if log.rank is not None else profile.rank,
        log=log,
        profile=profile,
        capture=capture,
        matched=tuple(c for c in with_region if c in ran),
        only_in_log=tuple(c for c in with_region if c not in ran),
        only_in_profile=tuple(c for c in ran if capture.frame(c) is None),
        without_region=tuple(
            f.compile_id for f in capture.frames if f.compile_id not in with_region
        ),
    )


def pair_by_rank(
    logs: tuple[TraceLog, ...], profiles: tuple[KinetoProfile, ...]
) -> tuple[TraceJoin, ...]:
    """Each rank's log joined with that rank's profile. A single log and a single profile pair
    whatever their ranks say (a job run without torchrun names no rank); otherwise a rank
    found on one side only is an error naming it."""
    if len(logs) == 1 and len(profiles) == 1:
        return (join_by_compile_id(logs[0], profiles[0]),)
    by_rank_logs = by_rank(logs, "TORCH_TRACE log")
    by_rank_profiles = by_rank(profiles, "profiler trace")
    missing = sorted(set(by_rank_logs) ^ set(by_rank_profiles))
    if missing:
        sides = ", ".join(
            f"rank {r} has {'no profile' if r in by_rank_logs else 'no TORCH_TRACE log'}"
            for r in missing
        )
        raise AdvisorError(f"the logs and the profiles do not cover the same ranks: {sides}")
    return tuple(
        join_by_compile_id(by_rank_logs[r], by_rank_profiles[r]) for r in sorted(by_rank_logs)
    )


def by_rank(
    items: Iterable[_Ranked], what: str, unnamed: str = "pair it by hand"
) -> dict[int, _Ranked]:
    """The files by the rank each names; one line for a file naming none (`unnamed`: what to
    do then) or two naming the same one."""
    out: dict[int, _Ranked] = {}
    for item in items:
        if item.rank is None:
            raise AdvisorError(f"{what} {one_line(item.path)} names no rank: {unnamed}")
        if item.rank in out:
            raise AdvisorError(
                f"two {what}s for rank {item.rank}: {one_line(out[item.rank].path)} and "
                f"{one_line(item.path)}"
            )
        out[item.rank] = item
    return out
