"""The zoo report's numbers, from typed reports: per-model summaries and zoo-wide root causes.

Pure functions on records (a `Report` per target, index.json as the runner wrote it); no torch,
no files. A `Report` is read for the zoo in `summarise_report` alone (and `_display_base` looks
at its break files). The zoo keeps facts and numbers (a model's top action is the `Action` and
the `ActionContext` its title needs); `advisor.sweep.render` writes the sentences.
"""

from __future__ import annotations

import os
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from advisor.core.identity import BreakIdentity
from advisor.core.model import Action, BreakEntry, Report
from advisor.core.paths import common_folder, display_path
from advisor.core.serial import load_versioned_json
from advisor.judge.actions import misplaced
from advisor.render.actions import ActionContext, action_context

# 2: typed records (Action + ActionContext, BreakIdentity root causes); 1 had prose titles.
SWEEP_SCHEMA = 2


@dataclass(frozen=True)
class BreakSummary:
    """One root cause of one model (a `BreakEntry`), its file as the zoo displays it."""

    gb_code: str | None  # the registry's GBxxxx (None where the registry has none)
    gb_type: str
    file: str  # package-relative (installed code) or relative to the zoo's display base
    line: int
    function: str
    source: str  # the text of the line
    occurrences_per_call: float
    cost_ms: float  # the recommended fix's saving per call
    cost_share: float | None  # cost_ms / the default-mode step
    verdict: str | None
    library: bool = False  # in code that is not the user's (`Decision.library`)

    @property
    def identity(self) -> BreakIdentity:
        return BreakIdentity.from_parts(
            self.gb_code, self.gb_type, self.file, self.line, self.source
        )


@dataclass(frozen=True)
class TopAction:
    """A model's first action and the facts of its report the action's title uses."""

    action: Action
    context: ActionContext


@dataclass(frozen=True)
class ModelSummary:
    name: str  # the sweep target's name (the workload's name when read from a report alone)
    status: str  # ok | failed | timeout | crashed | pending | missing
    workload: str | None = None
    target: str | None = None
    eager_ms: float | None = None
    default_ms: float | None = None
    fullgraph_ms: float | None = None
    speedup_default: float | None = None  # eager median / default median
    speedup_fullgraph: float | None = None  # eager median / fullgraph median
    n_breaks: int | None = None
    # The share of the default step spent in the breaks' gaps and overheads, and the share the
    # recommended fixes save (work that moving code keeps is not saved).
    break_time_share: float | None = None
    saving_share: float | None = None
    # The share library breaks with no measured fix would save: a library change, outside the
    # projection (`Ledger.library_ms` / step).
    library_share: float | None = None
    step_ms: float | None = None
    projected_speedup: float | None = None
    projection_basis: str | None = None  # `Ledger.projection_basis`: what bounds the projection
    top_action: TopAction | None = None
    incomplete: bool = False
    error: str | None = None
    breaks: tuple[BreakSummary, ...] = ()
    # Actions naming a line the user cannot make their change at: "kind: why" (a finding).
    misplaced: tuple[str, ...] = ()


@dataclass(frozen=True)
class RootCause:
    """One break across the zoo: the same identity (code, displayed file, line, source) in
    every model it appears in."""

    identity: BreakIdentity
    gb_code: str | None
    gb_type: str
    function: str
    library: bool
    models: tuple[str, ...]
    total_share: float  # summed over models: the step shares this line costs
    median_share: float | None
    total_ms: float
    verdicts: tuple[str, ...]


@dataclass(frozen=True)
class CodeCause:
    """One registry code across the zoo."""

    gb_code: str | None
    gb_type: str
    models: tuple[str, ...]
    locations: int
    total_share: float
    median_share: float | None
    total_ms: float


@dataclass(frozen=True)
class Zoo:
    name: str
    models: tuple[ModelSummary, ...]
    root_causes: tuple[RootCause, ...]
    gb_codes: tuple[CodeCause, ...]
    counts: dict[str, int]
    manifest_folder: str | None = None
    display_base: str | None = None  # user code is shown relative to this folder
    sweep_schema: int = SWEEP_SCHEMA

    def display(self, path: str | None) -> str:
        """A path as the zoo shows it (an action's title, a break's file)."""
        return display_path(path, self.display_base)


def zoo_from_json(text: str) -> Zoo:
    """A sweep.json; a one-line ValueError when it is not one this advisor reads."""

    def unsupported(found: object) -> str:
        return (
            f"sweep schema version {found!r} is not supported: this advisor reads version "
            f"{SWEEP_SCHEMA} (compare the sweep folders, or re-judge them with --rejudge)"
        )

    return load_versioned_json(Zoo, text, "sweep.json", "sweep_schema", SWEEP_SCHEMA, unsupported)


# --- the one place that reads a Report -------------------------------------------------------


def summarise_report(report: Report, base: str | None = None) -> ModelSummary:
    """A report's row of the zoo, its user files shown relative to `base`."""
    medians = {m.mode: m.latency.median_ms for m in report.modes if m.status == "ok" and m.latency}
    eager, default = medians.get("eager"), medians.get("default")
    ledger = report.ledger
    step = ledger.step_ms if ledger else None
    first = report.actions[0] if report.actions else None
    return ModelSummary(
        name=report.workload.name,
        status="ok",
        workload=report.workload.name,
        target=report.workload.target,
        eager_ms=eager,
        default_ms=default,
        fullgraph_ms=medians.get("fullgraph"),
        speedup_default=_ratio(eager, default),
        speedup_fullgraph=_ratio(eager, medians.get("fullgraph")),
        n_breaks=len(report.breaks),
        break_time_share=_ratio(ledger.breaks_ms, step) if ledger else None,
        saving_share=_ratio(ledger.saving_ms, step) if ledger else None,
        library_share=_ratio(ledger.library_ms, step) if ledger else None,
        step_ms=step if step is not None else default,
        projected_speedup=ledger.projected_speedup_vs_eager if ledger else None,
        projection_basis=ledger.projection_basis if ledger else None,
        top_action=TopAction(first, action_context(first, report)) if first else None,
        incomplete=report.incomplete,
        breaks=tuple(_break(entry, base) for entry in report.breaks),
        misplaced=tuple(f"{a.kind}: {why}" for a, why in misplaced(report.actions, report.breaks)),
    )


def _break(entry: BreakEntry, base: str | None) -> BreakSummary:
    where = entry.site.where
    return BreakSummary(
        gb_code=entry.site.gb_code,
        gb_type=entry.site.gb_type,
        file=display_path(where.file, base),
        line=where.line,
        function=where.function,
        source=where.code,
        occurrences_per_call=entry.occurrences_per_call,
        cost_ms=entry.cost_ms,
        cost_share=entry.cost_share,
        verdict=entry.verdict,
        library=bool(entry.decision and entry.decision.library),
    )


# --- the zoo ---------------------------------------------------------------------------------


def model_summary(
    record: Mapping[str, Any], summary: ModelSummary | None, error: str | None = None
) -> ModelSummary:
    """A model's row: its report's summary under the sweep's name and status, or why there is
    none (the target's failure, or the report's one-line loading error)."""
    name = str(record.get("name", "?"))
    status = str(record.get("status", "missing"))
    target = record.get("target")
    if status != "ok":
        return ModelSummary(name, status, target=target, error=record.get("error"))
    if summary is None:
        why = error or record.get("error") or "no report.json"
        return ModelSummary(name, "missing", target=target, error=str(why))
    return replace(summary, name=name, target=target or summary.target)


def build_zoo(
    index: Mapping[str, Any],
    reports: Mapping[str, Report],
    errors: Mapping[str, str] | None = None,
) -> Zoo:
    """The zoo from index.json and the reports by target name; `errors` says, by target name,
    why a report could not be read (shown as missing)."""
    manifest_folder = index.get("manifest_folder")
    base = _display_base(manifest_folder, reports.values())
    models = tuple(_row(record, reports, errors or {}, base) for record in _records(index))
    counts: dict[str, int] = defaultdict(int)
    for m in models:
        counts[m.status] += 1
    return Zoo(
        name=str(index.get("sweep", "sweep")),
        models=models,
        root_causes=root_causes(models),
        gb_codes=code_causes(models),
        counts=dict(counts),
        manifest_folder=manifest_folder,
        display_base=base,
    )


def _row(
    record: Mapping[str, Any],
    reports: Mapping[str, Report],
    errors: Mapping[str, str],
    base: str | None,
) -> ModelSummary:
    name = str(record.get("name"))
    report = reports.get(name)
    summary = summarise_report(report, base) if report is not None else None
    return model_summary(record, summary, errors.get(name))


def _records(index: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    targets = index.get("targets")
    return [t for t in targets if isinstance(t, Mapping)] if isinstance(targets, list) else []


def _display_base(manifest_folder: str | None, reports: Iterable[Report]) -> str | None:
    """The folder user code is shown relative to: the deepest one holding the manifest's folder
    and every break's file that is not installed code (built-in scenarios beside a zoo folder
    show as `scenarios/x.py`, not as absolute paths)."""
    files = [
        entry.site.where.file
        for report in reports
        for entry in report.breaks
        if os.path.isabs(entry.site.where.file)
    ]
    anchor = [os.path.join(manifest_folder, "manifest")] if manifest_folder else []
    common = common_folder(anchor + files)
    if common is None or os.path.dirname(common) == common:  # nothing shared but the root
        return manifest_folder
    return common


def per_model_shares(models: tuple[ModelSummary, ...]) -> dict[BreakIdentity, dict[str, float]]:
    """Break identity -> {model: share}, a model's repeats summed."""
    shares: dict[BreakIdentity, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for model in models:
        for b in model.breaks:
            shares[b.identity][model.name] += b.cost_share or 0.0
    return shares


def root_causes(models: tuple[ModelSummary, ...]) -> tuple[RootCause, ...]:
    """Breaks across models (one identity each), ranked by the step shares they cost in total."""
    first: dict[BreakIdentity, BreakSummary] = {}
    ms: dict[BreakIdentity, float] = defaultdict(float)
    verdicts: dict[BreakIdentity, set[str]] = defaultdict(set)
    library: dict[BreakIdentity, bool] = defaultdict(bool)
    for model in models:
        for b in model.breaks:
            key = b.identity
            first.setdefault(key, b)
            ms[key] += b.cost_ms
            verdicts[key].update([b.verdict] if b.verdict else [])
            library[key] |= b.library
    causes = [
        RootCause(
            identity=key,
            gb_code=first[key].gb_code,
            gb_type=first[key].gb_type,
            function=first[key].function,
            library=library[key],
            models=tuple(by_model),
            total_share=sum(by_model.values()),
            median_share=statistics.median(by_model.values()),
            total_ms=ms[key],
            verdicts=tuple(sorted(verdicts[key])),
        )
        for key, by_model in per_model_shares(models).items()
    ]
    return tuple(sorted(causes, key=_rank))


def code_causes(models: tuple[ModelSummary, ...]) -> tuple[CodeCause, ...]:
    """Registry codes across models (a break's type where it has none), ranked by the step
    shares they cost in total."""
    by_code: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    locations: dict[str, set[BreakIdentity]] = defaultdict(set)
    ms: dict[str, float] = defaultdict(float)
    first: dict[str, BreakSummary] = {}
    for model in models:
        for b in model.breaks:
            code = b.identity.registry_code
            by_code[code][model.name] += b.cost_share or 0.0
            locations[code].add(b.identity)
            ms[code] += b.cost_ms
            first.setdefault(code, b)
    causes = [
        CodeCause(
            gb_code=first[code].gb_code,
            gb_type=first[code].gb_type,
            models=tuple(shares),
            locations=len(locations[code]),
            total_share=sum(shares.values()),
            median_share=statistics.median(shares.values()),
            total_ms=ms[code],
        )
        for code, shares in by_code.items()
    ]
    return tuple(sorted(causes, key=_rank))


def _rank(cause: RootCause | CodeCause) -> tuple[float, int, str]:
    if isinstance(cause, RootCause):
        where = f"{cause.identity.registry_code} {cause.identity.file}:{cause.identity.line:09d}"
    else:
        where = cause.gb_code or cause.gb_type
    return (-cause.total_share, -len(cause.models), where)


def _ratio(top: float | None, bottom: float | None) -> float | None:
    if top is None or bottom is None or bottom <= 0:
        return None
    return top / bottom
