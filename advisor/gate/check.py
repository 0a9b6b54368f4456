"""`advisor check`: a CI gate on what graph breaks cost, against a committed baseline
(`advisor.gate.baseline`).

A fresh report is compared with the baseline and each way it got worse is one `Finding`, a
record of the numbers behind it (`advisor.render.check` words it):

- `NewBreak`: a break the baseline does not have, costing more than `max_new_share` of the
  step (or whose cost could not be measured);
- `CostlierBreak`: a known break whose share grew by more than `max_new_share`;
- `Slower`: the default mode's median slower by more than `max_slowdown` and by more than the
  noise of either run (the larger relative IQR);
- `MoreRecompiles`: more recompiles of the default mode than the baseline had;
- `FullgraphFails`: fullgraph=True compiled in the baseline and now fails;
- `DefaultFailed`, `Mismatch`: the default mode fails, or no longer matches eager.

What got better or stayed within the limits is a note: `CheapNewBreak`, `BreakGone`,
`FullgraphCompiles`.

Breaks are matched by `advisor.core.identity` (loosest identity last). Costs are compared as
shares of the step, which travel between machines better than milliseconds; the slowdown check
compares milliseconds, so it means something only on the same kind of machine.

No torch here: it compares records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from advisor.core import identity, policy, replication
from advisor.core.model import BreakEntry, ModeError, Report
from advisor.gate.baseline import (
    Baseline,
    BaselineBreak,
    DefaultMode,
    baseline_from_report,
    breaks_of,
    gate_path,
)


@dataclass(frozen=True)
class Thresholds:
    max_new_share: float = 0.02
    max_slowdown: float = 0.10


@dataclass(frozen=True)
class Finding:
    """One way the fresh run is worse than the baseline."""

    kind: ClassVar[str] = ""

    def place(self) -> tuple[str | None, int | None]:
        """The file (as the baseline shows it) and line to annotate, where there is one."""
        return None, None


@dataclass(frozen=True)
class NewBreak(Finding):
    brk: BaselineBreak  # as the fresh run has it; cost_share None: not measured
    limit: float
    entry: BreakEntry | None  # the costed root cause (its recipe says how to fix it)
    kind: ClassVar[str] = "new_break"

    def place(self) -> tuple[str | None, int | None]:
        return self.brk.file, self.brk.line


@dataclass(frozen=True)
class CostlierBreak(Finding):
    old: BaselineBreak
    new: BaselineBreak
    limit: float
    kind: ClassVar[str] = "costlier_break"

    def place(self) -> tuple[str | None, int | None]:
        return self.new.file, self.new.line


@dataclass(frozen=True)
class DefaultFailed(Finding):
    target: str
    status: str
    kind: ClassVar[str] = "default_failed"


@dataclass(frozen=True)
class Mismatch(Finding):
    target: str
    kind: ClassVar[str] = "mismatch"


@dataclass(frozen=True)
class Slower(Finding):
    target: str
    median_ms: float
    baseline_ms: float
    change: float  # median / baseline - 1 (replicated: of the levels over the machine)
    limit: float
    noise: float  # the larger relative IQR of the two runs (0 when tested across processes)
    # replicated runs: the 95% interval of the change across processes (ratio - 1)
    interval: tuple[float, float] | None = None
    kind: ClassVar[str] = "slower"


@dataclass(frozen=True)
class MoreRecompiles(Finding):
    recompiles: int
    baseline: int
    compile_id: str | None  # the first recompile's, with its guard failure
    reason: str | None
    file: str | None  # the recompiled graph's first line
    line: int | None
    kind: ClassVar[str] = "recompiles"

    def place(self) -> tuple[str | None, int | None]:
        return self.file, self.line


@dataclass(frozen=True)
class FullgraphFails(Finding):
    error: ModeError | None
    file: str | None  # the line that breaks the graph
    line: int | None
    kind: ClassVar[str] = "fullgraph"

    def place(self) -> tuple[str | None, int | None]:
        return self.file, self.line


@dataclass(frozen=True)
class CheckNote:
    """Something that got better, or stayed within the limits."""


@dataclass(frozen=True)
class CheapNewBreak(CheckNote):
    brk: BaselineBreak
    limit: float


@dataclass(frozen=True)
class BreakGone(CheckNote):
    brk: BaselineBreak  # as the baseline has it


@dataclass(frozen=True)
class FullgraphCompiles(CheckNote):
    """fullgraph=True failed in the baseline and compiles now."""


@dataclass(frozen=True)
class CheckResult:
    findings: tuple[Finding, ...] = ()
    notes: tuple[CheckNote, ...] = ()

    @property
    def worse(self) -> bool:
        return bool(self.findings)


def check(baseline: Baseline, report: Report, thresholds: Thresholds, root: str) -> CheckResult:
    """Every way `report` is worse than `baseline`, and notes on what is better."""
    now = baseline_from_report(report, root)
    findings, notes = _check_breaks(baseline, now, report, thresholds)
    findings += _check_default(baseline.default, now.default, thresholds, report.workload.target)
    findings += _check_recompiles(baseline.default, report, root)
    findings += _check_fullgraph(baseline, report, root)
    if now.fullgraph == "ok" and baseline.fullgraph == "failed":
        notes.append(FullgraphCompiles())
    return CheckResult(tuple(findings), tuple(notes))


def _check_breaks(
    baseline: Baseline, now: Baseline, report: Report, thresholds: Thresholds
) -> tuple[list[Finding], list[CheckNote]]:
    """Findings for new and costlier breaks; notes for new cheap ones and the ones gone."""
    findings: list[Finding] = []
    notes: list[CheckNote] = []
    matching = identity.match(
        [b.identity for b in baseline.breaks], [b.identity for b in now.breaks]
    )
    entries = [entry for entry, _site in breaks_of(report)]  # in the order of now.breaks
    for old_index, new_index in matching.pairs():
        new = now.breaks[new_index]
        old = baseline.breaks[old_index] if old_index is not None else None
        finding = _break_finding(old, new, entries[new_index], thresholds.max_new_share)
        if finding is not None:
            findings.append(finding)
        elif old is None:
            notes.append(CheapNewBreak(new, thresholds.max_new_share))
    notes += [BreakGone(baseline.breaks[i]) for i in matching.gone]
    return findings, notes


def _break_finding(
    old: BaselineBreak | None, new: BaselineBreak, entry: BreakEntry | None, limit: float
) -> Finding | None:
    if old is None:
        if new.cost_share is not None and new.cost_share <= limit:
            return None
        return NewBreak(new, limit, entry)
    if new.cost_share is None or old.cost_share is None:
        return None
    if new.cost_share - old.cost_share > limit:
        return CostlierBreak(old, new, limit)
    return None


def _check_default(
    old: DefaultMode, new: DefaultMode, thresholds: Thresholds, target: str
) -> list[Finding]:
    if old.status == "ok" and new.status != "ok":
        return [DefaultFailed(target, new.status)]
    out: list[Finding] = []
    if old.matches_eager is True and new.matches_eager is False:
        out.append(Mismatch(target))
    if len(old.levels) >= 2 and len(new.levels) >= 2:
        slower = _slower_across_processes(old, new, thresholds, target)
        return out + ([slower] if slower else [])
    if old.median_ms and new.median_ms:
        change = new.median_ms / old.median_ms - 1
        noise = max(old.noise or 0.0, new.noise or 0.0)
        if change > thresholds.max_slowdown and change > noise:
            out.append(
                Slower(target, new.median_ms, old.median_ms, change, thresholds.max_slowdown, noise)
            )
    return out


def _slower_across_processes(
    old: DefaultMode, new: DefaultMode, thresholds: Thresholds, target: str
) -> Slower | None:
    """Both runs replicated: each process's level over the machine reference is one value, and
    the run is slower when Welch's t says so (p < 0.05, the interval above no change) by more
    than the limit; the machine running slower than when the baseline was made is not."""
    spread = policy.run_spread("default", old.every_cpu or new.every_cpu)
    run = replication.run_ratio(old.levels, new.levels, run_spread=spread)
    if run is None or not (old.median_ms and new.median_ms):
        return None
    change = run.ratio - 1
    significant = run.p_value < policy.COMPARE_ALPHA and run.ci[0] > 1.0
    if not (significant and change > thresholds.max_slowdown):
        return None
    interval = (run.ci[0] - 1, run.ci[1] - 1)
    limit = thresholds.max_slowdown
    return Slower(target, new.median_ms, old.median_ms, change, limit, 0.0, interval)


def _check_recompiles(old: DefaultMode, report: Report, root: str) -> list[Finding]:
    mode = report.mode("default")
    if mode is None or mode.recompiles <= old.recompiles:
        return []
    graphs = {g.compile_id: g for g in report.graphs}
    first = report.recompiles[0] if report.recompiles else None
    graph = graphs.get(first.compile_id) if first else None
    return [
        MoreRecompiles(
            mode.recompiles,
            old.recompiles,
            first.compile_id if first else None,
            first.reason if first else None,
            gate_path(graph.file, root) if graph else None,
            min(graph.lines) if graph and graph.lines else None,
        )
    ]


def _check_fullgraph(baseline: Baseline, report: Report, root: str) -> list[Finding]:
    mode = report.mode("fullgraph")
    if baseline.fullgraph != "ok" or mode is None or mode.status != "failed":
        return []
    err = mode.error
    return [
        FullgraphFails(
            err,
            gate_path(err.file, root) if err and err.file else None,
            err.line if err else None,
        )
    ]
