"""Judge saved measurements: attribute the profile, find the root causes, cost them, decide,
rank the actions. Torch-free: a run measured on one machine is judged on another, and a rule
change is tried on old measurements without measuring again (`advisor judge`)."""

from __future__ import annotations

from dataclasses import replace

from advisor.core import policy
from advisor.core.artifacts import Capture, Measurements
from advisor.core.errors import first_line
from advisor.core.kinds import ActionKind
from advisor.core.model import Action, ModeResult, Note, Report, Settings
from advisor.core.options import FILES_PROTOCOL
from advisor.judge import cost
from advisor.judge.actions import compile_failed_actions
from advisor.judge.advise import advise, recompile_advice
from advisor.judge.attribute import attribute
from advisor.judge.splits import graph_splits


def judge(measurements: Measurements, settings: Settings | None = None) -> Report:
    """The report of `measurements`. `settings` replaces the measurement's settings (only the
    judging ones, such as `ignore_share`, change the verdicts; the rest describe the run)."""
    settings = settings or measurements.settings
    m = measurements
    report = Report(
        workload=m.workload,
        environment=m.environment,
        settings=settings,
        modes=m.modes,
        graphs=m.capture.graphs,
        sites=m.capture.sites,
        what_ifs=m.what_ifs,
        recompiles=recompile_advice(m.capture.recompiles),
        splits=graph_splits(m.capture, None, 0.0),
        ranks=m.ranks,
        step_rank=m.step_rank,
        incomplete=m.incomplete,
        created_at=m.created_at,
        wall_s=m.wall_s,
        script=m.script,
        training=m.capture.training,
        candidates=m.candidates,
    )
    notes = list(m.notes)
    default = m.mode("default")
    if m.trace is not None and default is not None and default.latency is not None:
        att = attribute(m.trace, m.capture, default.latency.median_ms)
        modes = dict_of(m.modes)
        spread = policy.saving_spread(m.environment.every_cpu)
        advice = advise(
            att, m.capture, modes, m.what_ifs, settings.ignore_share, settings.min_effect, spread
        )
        notes += [*att.notes, *advice.notes]
        report = replace(
            report,
            breaks=advice.breaks,
            ledger=advice.ledger,
            actions=_from_files(advice.actions, settings, m.capture),
            attribution=att.attribution,
            recompiles=advice.recompiles,
            splits=graph_splits(m.capture, att, cost.prices(att).graph_call_us),
        )
    else:
        report = replace(report, actions=compile_failed_actions(dict_of(m.modes)))
    return replace(report, warnings=tuple(notes))


def _from_files(
    actions: tuple[Action, ...], settings: Settings, capture: Capture
) -> tuple[Action, ...]:
    """Read from files, every saving an action holds is an estimate, whatever the judge would
    otherwise say stopped it being measured (no what-if was planned, none could fail). Without
    the compile side (a profile alone) no break is known, so "nothing to fix" is not either."""
    if settings.protocol != FILES_PROTOCOL:
        return actions
    return tuple(
        replace(a, unmeasured=FILES_PROTOCOL)
        if not a.measured and a.saving_ms is not None and a.kind != ActionKind.KEEP
        else a
        for a in actions
        if capture.frames or a.kind != ActionKind.KEEP
    )


def dict_of(modes: tuple[ModeResult, ...]) -> dict[str, ModeResult]:
    return {mode.mode: mode for mode in modes}


def judge_saved(measurements: Measurements, settings: Settings | None = None) -> Report:
    """Saved measurements judged as the run that made them was: an interrupted one
    (`incomplete`) as `judge_partial` does, what can be."""
    return (judge_partial if measurements.incomplete else judge)(measurements, settings)


def judge_partial(measurements: Measurements, settings: Settings | None = None) -> Report:
    """The report of an interrupted run. Judging half a measurement can trip over what is
    missing; then the modes measured so far are reported alone, with why."""
    try:
        return judge(measurements, settings)
    except Exception as exc:
        note = Note("partial_analysis_failed", detail=first_line(exc))
        bare = replace(
            measurements, capture=Capture(), trace=None, notes=(*measurements.notes, note)
        )
        return judge(bare, settings)
