"""The report's harness line: how its numbers were measured (processes, rounds, blocks,
budget), worded from the run's settings and the default mode's replication record."""

from __future__ import annotations

from advisor.core import policy, replication
from advisor.core.model import Report
from advisor.core.options import FILES_PROTOCOL


def harness_text(report: Report) -> str:
    """How the report's numbers were measured, in one line (the report's "harness")."""
    st = report.settings
    if st.protocol == FILES_PROTOCOL:
        return _files_harness(report)
    if st.protocol == "replicated" and st.ranks <= 1:
        return _replicated_harness(report)
    rounds = (
        f"at least {st.repeats} interleaved rounds, then more until each median's 95% interval "
        f"is within ±{st.target_ci * 100:g}% of it"
        if st.target_ci > 0
        else f"{st.repeats} interleaved rounds"
    )
    threads = f", {st.threads} thread(s) pinned" if st.threads else ""
    text = (
        f"{st.warmup} warm-up calls, {rounds}; blocks of at least {st.min_block_s * 1e3:g} ms, "
        f"budget {st.budget_s:g} s{threads}"
    )
    if st.ranks > 1:
        limit = f", timeout {st.timeout_s:g} s" if st.timeout_s else ""
        return (
            f"{st.ranks} data-parallel ranks at once, in lockstep{limit}: {st.warmup} warm-up "
            f"calls, exactly {st.repeats} interleaved rounds of one call per block per rank "
            f"(no interval target: every rank must make the same calls){threads}"
        )
    if st.isolate:
        limit = f" (timeout {st.timeout_s:g} s)" if st.timeout_s else ""
        text += (
            f"; isolated: each mode and what-if in its own process{limit}, timed one after the "
            "other (not interleaved: drift between modes is not cancelled)"
        )
    return text


def _files_harness(report: Report) -> str:
    """Read from the files a user's own run left (`advisor trace`): nothing was timed here."""
    default = report.mode("default")
    steps = default.latency.n if default and default.latency else 0
    profiled = (
        f"the default mode's times are its {steps} profiled steps, the profiler's overhead included"
        if steps
        else "no profile, so nothing is timed"
    )
    return (
        f"read from your own run's files ({report.workload.target}): nothing was run or timed "
        f"here; {profiled}; no eager or fullgraph mode and no what-if, so every saving is an "
        "estimate"
    )


def _replicated_harness(report: Report) -> str:
    """What each compared number rests on: processes per arm and rounds per process."""
    st = report.settings
    threads = f", {st.threads} thread(s) pinned" if st.threads else ""
    default = report.mode("default")
    rep = default.latency.replication if default and default.latency else None
    rests = f"; the default mode: {rep.processes} processes x {rep.rounds} rounds" if rep else ""
    machine = ""
    if rep is not None and len(rep.machine_ms) > 1 and min(rep.machine_ms) > 0:
        moved = max(rep.machine_ms) / min(rep.machine_ms) - 1
        machine = (
            f"; the machine's own speed (a fixed reference workload timed in every wave) moved "
            f"{moved * 100:.0f}% between waves"
        )
    most = st.processes + st.settle_waves
    settle = f" (up to {most} for an unsettled saving that could lead)" if st.settle_waves else ""
    return (
        f"replicated: every arm (mode, what-if) in {st.processes} fresh worker processes of its "
        f"own{settle}, one per wave, the arms of a wave timed {_wave_rounds(report)} (order "
        f"rotating); {st.warmup} warm-up calls, blocks of at least "
        f"{st.min_block_s * 1e3:g} ms{threads}; intervals across processes, savings paired by "
        f"wave, each saving's interval where a rerun would put it ({_run_level(report)}); a "
        f"measured saving must reach {st.min_effect * 100:g}% of the "
        f"step{rests}{machine}; the profile ran in a process of its own{_pooled(st.runs)}"
    )


def _run_level(report: Report) -> str:
    """The run-level spread each saving's interval holds: once per run pooled."""
    spread = policy.saving_spread(report.environment.every_cpu) * 100
    held = f"it holds a run-level spread of ±{spread:g}% of the step, measured on a 2-CPU machine"
    runs = report.settings.runs
    return held if runs <= 1 else f"{held}, over sqrt({runs}) for {runs} runs pooled"


def _pooled(runs: int) -> str:
    if runs <= 1:
        return ""
    return (
        f"; {runs} saved runs judged together (`advisor judge RUN RUN ...`): every arm's "
        "processes pooled, the profile and capture the first run's"
    )


def _wave_rounds(report: Report) -> str:
    """The rounds of a wave, with the target its measuring read (`replication.process_target`,
    from the same run-level spread as the savings' intervals)."""
    st = report.settings
    wave_s = f"at most {st.wave_budget_s:g} s a wave"
    spread = policy.saving_spread(report.environment.every_cpu)
    target = replication.process_target(st.target_ci, spread)
    if target <= 0:
        return f"{st.repeats} interleaved rounds ({wave_s})"
    return (
        f"at least {st.repeats} interleaved rounds, then more until each median in its process "
        f"is within ±{target * 100:.1f}% ({wave_s})"
    )
