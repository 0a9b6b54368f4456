"""Before/after comparison of two reports, with honest significance.

For each mode measured in both runs: the medians, their ratio with a 95% interval and a p-value.
Where both runs were replicated (the default protocol), from the processes: Welch's t on the log
process medians (`advisor.core.replication.run_ratio`); else a bootstrap interval over the raw
samples of each run and a two-sided Mann-Whitney U test. Those see only the noise inside each
run; two runs minutes apart also differ because the machine
drifts (other work, clocks, caches), by more than either run's interval. So a change is called
significant only when all of these hold:
- p < alpha, and the interval of the ratio excludes 1 (the statistics);
- |ratio - 1| > `min_effect` (default 5%: smaller changes are not worth a claim);
- for runs of the quick protocol (one process), |ratio - 1| > the between-run noise: each
  run's samples are kept in timing order, so its drift is the range of the medians of
  `stats.EPOCHS` consecutive epochs (as a fraction of its median). The range of four values
  is about two standard deviations of them; the root sum of squares of the two runs' drifts,
  about 2.9 standard deviations of a run's median if runs vary as much as epochs do, is then
  close to the 95% bound (2.8) of the difference of two runs.
For replicated runs each process median is first read over the machine's speed in its wave (the
metronome arm, `advisor.measure.metronome`), so that a machine running slower during one run is
not read as the target's change; Welch's interval then holds the spread between processes plus
the run-level spread no process shows (`policy.run_spread`, measured from A/A pairs here), and
the drift test is not applied on top of it.
Breaks are matched by their identity (`advisor.core.identity`: registry code, file, line and
source, loosest last: a break whose line or folder moved is kept, not removed and added), so a
report says which breaks a change removed, added or kept. Differences in environment (torch,
device) are flagged: a comparison across machines measures the machines too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.core import identity, policy, replication, stats
from advisor.core.identity import BreakIdentity
from advisor.core.model import LatencyStats, Note, Replication, Report, WorkloadInfo
from advisor.core.paths import common_folder

# 2: BreakDelta carries its identity (was a string key); 3: the run-level spreads applied
COMPARE_SCHEMA_VERSION = 3


@dataclass(frozen=True)
class ModeDelta:
    mode: str
    before_ms: float | None
    after_ms: float | None
    ratio: float | None = None  # after / before (below 1 is faster)
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    significant: bool = False
    verdict: str = "n/a"  # "faster", "slower", "no significant change", "n/a"
    before_n: int = 0
    after_n: int = 0
    noise: float | None = None  # between-run noise, a fraction (see the module docstring)
    # why it is not significant: "p" (p >= alpha), "interval" (it includes no change),
    # "min_effect", "noise"; "" when significant or not compared
    reason: str = ""
    # how the interval and p were taken: "processes" (Welch's t on the process medians of two
    # replicated runs) or "samples" (bootstrap and Mann-Whitney over the pooled samples)
    method: str = "samples"


@dataclass(frozen=True)
class BreakDelta:
    identity: BreakIdentity  # the after run's (the before run's for a removed break)
    status: str  # "removed", "added", "kept"
    before_cost_ms: float | None = None
    after_cost_ms: float | None = None
    moved_from: BreakIdentity | None = None  # a kept break's identity before, where it moved


@dataclass(frozen=True)
class Comparison:
    before: WorkloadInfo
    after: WorkloadInfo
    modes: tuple[ModeDelta, ...]
    breaks: tuple[BreakDelta, ...]
    warnings: tuple[Note, ...] = ()
    alpha: float = policy.COMPARE_ALPHA
    min_effect: float = policy.COMPARE_MIN_EFFECT
    # the run-level spreads added to each side (eager's, a compiled mode's), as applied
    run_spreads: tuple[float, float] = (policy.RUN_SPREAD_EAGER, policy.RUN_SPREAD_COMPILED)
    schema_version: int = COMPARE_SCHEMA_VERSION


@dataclass(frozen=True)
class Rule:
    """What a change must beat to be called significant."""

    alpha: float = policy.COMPARE_ALPHA
    min_effect: float = policy.COMPARE_MIN_EFFECT
    seed: int = 0
    every_cpu: bool = False  # a run's torch threads took every CPU of its machine


def compare_reports(
    before: Report,
    after: Report,
    alpha: float = policy.COMPARE_ALPHA,
    min_effect: float = policy.COMPARE_MIN_EFFECT,
    seed: int = 0,
) -> Comparison:
    every_cpu = before.environment.every_cpu or after.environment.every_cpu
    rule = Rule(alpha, min_effect, seed, every_cpu=every_cpu)
    warnings: list[Note] = []
    for label, b, a in (
        ("torch", before.environment.torch, after.environment.torch),
        ("device", before.environment.device_name, after.environment.device_name),
        ("threads", before.environment.cpu_threads, after.environment.cpu_threads),
    ):
        if b != a:
            warnings.append(Note("environment_differs", label, detail=f"{b} vs {a}"))
    warnings += _busy_warnings(before, after)
    if rule.every_cpu:
        spread = {"spread": policy.RUN_SPREAD_EVERY_CPU}
        warnings.append(Note("every_cpu", "", values=spread))
    modes = []
    for name in ("eager", "default", "fullgraph"):
        mb, ma = before.mode(name), after.mode(name)
        if mb is None and ma is None:
            continue
        lb, la = (mb.latency if mb else None), (ma.latency if ma else None)
        modes.append(mode_delta(name, lb, la, rule))
        warnings += _noise_warnings(name, ("before", lb), ("after", la))
    relative = relative_deltas(before, after, rule)
    if _moved_together(modes):
        warnings.append(Note("moved_together"))
    modes += relative
    small = [d.mode for d in modes if 0 < min(d.before_n, d.after_n) < 8]
    if small:
        warnings.append(Note("few_samples", ", ".join(small), values={"below": 8}))
    return Comparison(
        before.workload,
        after.workload,
        tuple(modes),
        _break_deltas(before, after),
        tuple(warnings),
        alpha,
        min_effect,
        (_spread(rule, "eager"), _spread(rule, "default")),
    )


RELATIVE_SUFFIX = " / eager"


def relative_deltas(before: Report, after: Report, rule: Rule) -> list[ModeDelta]:
    """Each compiled mode's change measured against eager in the same run (its time over
    eager's): the machine drifting between two runs moves both alike and cancels here. The
    minimum effect applies; the between-run noise does not (the drift is what cancels)."""
    eb, ea = before.mode("eager"), after.mode("eager")
    if eb is None or ea is None or not (_testable(eb.latency) and _testable(ea.latency)):
        return []
    assert eb.latency is not None and ea.latency is not None
    out = []
    for name in ("default", "fullgraph"):
        mb, ma = before.mode(name), after.mode(name)
        lb, la = (mb.latency if mb else None), (ma.latency if ma else None)
        if not (_comparable(lb, la)):
            continue
        assert lb is not None and la is not None
        ratio, low, high, p, method = _relative_test(lb, eb.latency, la, ea.latency, rule)
        before_rel = lb.median_ms / eb.latency.median_ms
        if not all(math.isfinite(v) for v in (ratio, before_rel, before_rel * ratio)):
            continue  # a median so near zero that the quotient overflows: no row to show
        reason = _why_not(ratio, low, high, p, None, rule)
        significant = reason == ""
        verdict = ("faster" if ratio < 1 else "slower") if significant else "no significant change"
        out.append(
            ModeDelta(
                name + RELATIVE_SUFFIX,
                before_rel,
                before_rel * ratio,
                ratio,
                low,
                high,
                p if method == "processes" else None,
                significant,
                verdict,
                lb.n,
                la.n,
                None,
                reason,
                method,
            )
        )
    return out


def _relative_test(
    before: LatencyStats,
    before_eager: LatencyStats,
    after: LatencyStats,
    after_eager: LatencyStats,
    rule: Rule,
) -> tuple[float, float, float, float, str]:
    """The change of a mode's time over eager's: where both runs were replicated, each wave's
    ratio (the mode's process over eager's process of the same wave) is one value and the two
    runs' values are compared by Welch's t, as `_ratio_test` does for a mode; else a bootstrap
    over the pooled samples, which sees only the noise inside each run (p is then not tested)."""
    ratios_before = _wave_ratios(before, before_eager)
    ratios_after = _wave_ratios(after, after_eager)
    if ratios_before and ratios_after:
        run = replication.run_ratio(
            ratios_before, ratios_after, 1 - rule.alpha, run_spread=_spread(rule, "relative")
        )
        if run is not None:
            return run.ratio, run.ci[0], run.ci[1], run.p_value, "processes"
    samples = (before.samples_ms, before_eager.samples_ms, after.samples_ms, after_eager.samples_ms)
    ratio, low, high = stats.relative_ratio_ci(*samples, confidence=1 - rule.alpha, seed=rule.seed)
    return ratio, low, high, 0.0, "samples"


def _wave_ratios(mode: LatencyStats, eager: LatencyStats) -> list[float]:
    """mode / eager per wave of a replicated run (the waves both timed); [] otherwise."""
    rm, re = mode.replication, eager.replication
    if rm is None or re is None or not rm.waves or not re.waves:
        return []
    eager_by_wave = dict(zip(re.waves, re.process_medians_ms, strict=False))
    return [
        m / eager_by_wave[w]
        for w, m in zip(rm.waves, rm.process_medians_ms, strict=False)
        if eager_by_wave.get(w, 0) > 0
    ]


def _moved_together(modes: list[ModeDelta]) -> bool:
    """Eager changed significantly between the runs, and the default mode the same way: the
    machine or the process moved, not only the compiled code."""
    by_mode = {d.mode: d for d in modes}
    eager, default = by_mode.get("eager"), by_mode.get("default")
    if eager is None or default is None or not eager.significant or default.ratio is None:
        return False
    assert eager.ratio is not None
    return (eager.ratio - 1) * (default.ratio - 1) > 0


def between_run_noise(before: LatencyStats, after: LatencyStats) -> float | None:
    """The root sum of squares of the two runs' drifts; None when a run has too few samples
    to split into epochs."""
    db, da = stats.drift(before.samples_ms), stats.drift(after.samples_ms)
    if db is None or da is None:
        return None
    return math.hypot(db, da)


def _busy_warnings(before: Report, after: Report) -> list[Note]:
    """A run that began on a busy machine: its speed can shift from one run to the next by more
    than any drift inside it shows (measured: A/A pairs 4x apart, reports/benchmarks/
    compare_noise/default-threads), so say so beside the verdicts."""
    out = []
    for label, report in (("before", before), ("after", after)):
        env = report.environment
        if env.load_average and env.cpu_count and env.load_average[0] > env.cpu_count:
            values = {"load": env.load_average[0], "cpus": env.cpu_count}
            out.append(Note("busy_run", label, values=values))
    return out


def _noise_warnings(name: str, *runs: tuple[str, LatencyStats | None]) -> list[Note]:
    """Per mode and run (`detail`: "before" or "after"): a median that missed its interval
    target, or too few samples to estimate the between-run noise."""
    out = []
    for label, lat in runs:
        if lat is None:
            continue
        if lat.target_met is False:
            ci = {"relative_ci": lat.relative_ci or 0.0}
            out.append(Note("interval_missed", name, values=ci, detail=label))
        if lat.samples_ms and stats.drift(lat.samples_ms) is None:
            values = {"n": lat.n, "epochs": stats.EPOCHS}
            out.append(Note("too_few_for_drift", name, values=values, detail=label))
    return out


def mode_delta(
    name: str, before: LatencyStats | None, after: LatencyStats | None, rule: Rule
) -> ModeDelta:
    if not _comparable(before, after):
        return ModeDelta(
            name,
            before.median_ms if before else None,
            after.median_ms if after else None,
            before_n=before.n if before else 0,
            after_n=after.n if after else 0,
        )
    ratio, low, high, p, method = _ratio_test(before, after, rule, name)
    # Across processes the interval already holds the spread between runs' processes; the
    # drift of pooled samples would count the machine's speed between waves a second time, so
    # a replicated row has no between-run noise (none is applied, none is shown).
    noise = between_run_noise(before, after) if method == "samples" else None
    reason = _why_not(ratio, low, high, p, noise, rule)
    significant = reason == ""
    verdict = ("faster" if ratio < 1 else "slower") if significant else "no significant change"
    return ModeDelta(
        name,
        before.median_ms,
        after.median_ms,
        ratio,
        low,
        high,
        p,
        significant,
        verdict,
        before.n,
        after.n,
        noise,
        reason,
        method,
    )


def _spread(rule: Rule, mode: str) -> float:
    return policy.run_spread(mode, rule.every_cpu)


def _ratio_test(
    before: LatencyStats, after: LatencyStats, rule: Rule, mode: str = "default"
) -> tuple[float, float, float, float, str]:
    """The ratio, its interval, p and the method: across processes where both runs were
    replicated (the blocks of one process share its state, so they are not independent), else
    from the pooled samples (bootstrap, Mann-Whitney)."""
    rb, ra = before.replication, after.replication
    if rb is not None and ra is not None:
        values, method = _process_values(rb, ra)
        run = replication.run_ratio(*values, 1 - rule.alpha, run_spread=_spread(rule, mode))
        if run is not None:
            return run.ratio, run.ci[0], run.ci[1], run.p_value, method
    ratio, low, high = stats.median_ratio_ci(
        before.samples_ms, after.samples_ms, confidence=1 - rule.alpha, seed=rule.seed
    )
    return ratio, low, high, stats.mann_whitney_p(before.samples_ms, after.samples_ms), "samples"


def _process_values(
    before: Replication, after: Replication
) -> tuple[tuple[list[float], list[float]], str]:
    """The values Welch's t compares: each process's level over the machine's speed, where both
    runs timed the metronome, so that the machine running slower in one run than in the other
    (1.5x between waves, here) is not read as the target's change: its blocks over the
    metronome's block of the same round (`Replication.over_machine`), else its median over the
    metronome's median in its wave (`machine_ms`); else the process medians as they are."""
    if _has_rounds(before) and _has_rounds(after):
        return (list(before.over_machine), list(after.over_machine)), MACHINE_METHOD
    if _has_machine(before) and _has_machine(after):
        return (_over_machine(before), _over_machine(after)), MACHINE_METHOD
    return (list(before.process_medians_ms), list(after.process_medians_ms)), "processes"


MACHINE_METHOD = "processes over the machine reference"


def _has_rounds(r: Replication) -> bool:
    return len(r.over_machine) == len(r.process_medians_ms) > 0 and min(r.over_machine) > 0


def _has_machine(r: Replication) -> bool:
    return len(r.machine_ms) == len(r.process_medians_ms) > 0 and min(r.machine_ms) > 0


def _over_machine(r: Replication) -> list[float]:
    return [p / m for p, m in zip(r.process_medians_ms, r.machine_ms, strict=True)]


def _comparable(before: LatencyStats | None, after: LatencyStats | None) -> bool:
    """Both testable, and the ratio of their medians is a number (a subnormal median below a
    large one overflows it to infinity)."""
    if not (_testable(before) and _testable(after)):
        return False
    assert before is not None and after is not None
    return math.isfinite(stats.median(after.samples_ms) / stats.median(before.samples_ms))


def _testable(latency: LatencyStats | None) -> bool:
    """Enough to test: two or more finite samples (a bootstrap needs two) and a positive
    median (the ratio divides by it)."""
    if latency is None or len(latency.samples_ms) < 2:
        return False
    if not all(math.isfinite(s) for s in latency.samples_ms):
        return False
    return stats.median(latency.samples_ms) > 0


def _why_not(
    ratio: float, low: float, high: float, p: float, noise: float | None, rule: Rule
) -> str:
    """The first test a change fails (see the module docstring), or "" when it passes all."""
    change = abs(ratio - 1.0)
    if p >= rule.alpha:
        return "p"
    if not (math.isfinite(low) and math.isfinite(high)) or low <= 1.0 <= high:
        return "interval"  # an interval that is not a number (too few samples) excludes nothing
    if change <= rule.min_effect:
        return "min_effect"
    if noise is not None and change <= noise:
        return "noise"
    return ""


def _break_deltas(before: Report, after: Report) -> tuple[BreakDelta, ...]:
    """The before run's breaks, removed or kept, then the ones the after run added. Each run's
    user files are shown relative to the folder holding them (the runs may sit in different
    checkouts)."""
    old, new = _identities(before), _identities(after)
    matching = identity.match(old, new)
    new_of_old = {o: n for o, n in matching.pairs() if o is not None}
    deltas = []
    for i, entry in enumerate(before.breaks):
        j = new_of_old.get(i)
        if j is None:
            deltas.append(BreakDelta(old[i], "removed", before_cost_ms=entry.cost_ms))
            continue
        moved = old[i] if old[i] != new[j] else None
        cost = after.breaks[j].cost_ms
        deltas.append(BreakDelta(new[j], "kept", entry.cost_ms, cost, moved))
    deltas += [
        BreakDelta(new[j], "added", after_cost_ms=after.breaks[j].cost_ms)
        for o, j in matching.pairs()
        if o is None
    ]
    return tuple(deltas)


def _identities(report: Report) -> list[BreakIdentity]:
    base = common_folder([e.site.where.file for e in report.breaks])
    return [BreakIdentity.of(e.site, base) for e in report.breaks]
