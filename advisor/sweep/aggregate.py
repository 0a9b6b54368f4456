"""The zoo report's numbers, from saved JSON: per-model summaries and zoo-wide root causes.

Pure functions on dicts (index.json, report.json, sweep.json); no torch, no files. Every read
of a report.json field is in `summarise_report`, so a schema change is adapted there alone.
"""

from __future__ import annotations

import os
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from advisor.core.paths import common_folder, display_path

SWEEP_SCHEMA = 1


@dataclass(frozen=True)
class BreakSummary:
    gb_code: str | None
    gb_type: str | None
    file: str | None
    line: int | None
    function: str | None
    code: str | None
    occurrences_per_call: float | None
    cost_ms: float | None
    cost_share: float | None
    verdict: str | None


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
    step_ms: float | None = None
    projected_speedup: float | None = None
    top_action: str | None = None
    incomplete: bool = False
    error: str | None = None
    breaks: tuple[BreakSummary, ...] = ()


@dataclass(frozen=True)
class RootCause:
    """One break location across the zoo: `gb_code` at `file:line` (file as displayed)."""

    gb_code: str | None
    file: str | None
    line: int | None
    gb_type: str | None
    function: str | None
    code: str | None
    models: tuple[str, ...]
    total_share: float  # summed over models: the step shares this line costs
    median_share: float | None
    total_ms: float
    verdicts: tuple[str, ...]


@dataclass(frozen=True)
class CodeCause:
    """One registry code across the zoo."""

    gb_code: str | None
    gb_type: str | None
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
    sweep_schema: int = SWEEP_SCHEMA


# --- the one place that reads report.json ----------------------------------------------------


def summarise_report(data: Mapping[str, Any]) -> ModelSummary:
    """A report.json dict (schema 1 or 2) to a ModelSummary; absent fields become None."""
    workload = _dict(data.get("workload"))
    medians = {
        m.get("mode"): _num(_dict(m.get("latency")).get("median_ms"))
        for m in _dicts(data.get("modes"))
        if m.get("status") == "ok"
    }
    breaks = tuple(_break(b) for b in _dicts(data.get("breaks")))
    ledger = _dict(data.get("ledger"))
    actions = _dicts(data.get("actions"))
    eager = medians.get("eager")
    return ModelSummary(
        name=str(workload.get("name") or "?"),
        status="ok",
        workload=workload.get("name"),
        target=workload.get("target"),
        eager_ms=eager,
        default_ms=medians.get("default"),
        fullgraph_ms=medians.get("fullgraph"),
        speedup_default=_ratio(eager, medians.get("default")),
        speedup_fullgraph=_ratio(eager, medians.get("fullgraph")),
        n_breaks=len(breaks),
        break_time_share=_ratio(_num(ledger.get("breaks_ms")), _num(ledger.get("step_ms"))),
        saving_share=_saving_share(ledger, breaks),
        step_ms=_num(ledger.get("step_ms")) or medians.get("default"),
        projected_speedup=_num(ledger.get("projected_speedup_vs_eager")),
        top_action=actions[0].get("title") if actions else None,
        incomplete=bool(data.get("incomplete", False)),
        breaks=breaks,
    )


def _break(b: Mapping[str, Any]) -> BreakSummary:
    line = b.get("line")
    return BreakSummary(
        gb_code=b.get("gb_code"),
        gb_type=b.get("gb_type"),
        file=b.get("file"),
        line=line if isinstance(line, int) else None,
        function=b.get("function"),
        code=b.get("code"),
        occurrences_per_call=_num(b.get("occurrences_per_call")),
        cost_ms=_num(b.get("cost_ms")),
        cost_share=_num(b.get("cost_share")),
        verdict=b.get("verdict"),
    )


def _saving_share(ledger: Mapping[str, Any], breaks: tuple[BreakSummary, ...]) -> float | None:
    """The ledger's saving over its step when it has them, else the breaks' shares summed (each
    entry's cost is its recommended fix's saving)."""
    from_ledger = _ratio(_num(ledger.get("saving_ms")), _num(ledger.get("step_ms")))
    if from_ledger is not None:
        return from_ledger
    shares = [b.cost_share for b in breaks if b.cost_share is not None]
    return sum(shares) if shares or not breaks else None


def _top_break_action(breaks: tuple[BreakSummary, ...]) -> str | None:
    """Without actions (schema 1): the costliest break that is not 'ignore', as an action
    (its file as displayed)."""
    for b in breaks:
        if b.verdict and b.verdict != "ignore":
            return f"{b.verdict} {b.gb_code or b.gb_type or 'break'} at {b.file}:{b.line}"
    return None


# --- the zoo ---------------------------------------------------------------------------------


def model_summary(
    record: Mapping[str, Any], summary: ModelSummary | None, base: str | None = None
) -> ModelSummary:
    """A model's row: its report's summary (`summarise_report`) under the sweep's name and
    status (or the failure)."""
    name = str(record.get("name", "?"))
    status = str(record.get("status", "missing"))
    if status != "ok":
        return ModelSummary(name, status, target=record.get("target"), error=record.get("error"))
    if summary is None:
        error = "report.json missing or unreadable"
        return ModelSummary(name, "missing", target=record.get("target"), error=error)
    shown = tuple(
        replace(b, file=display_path(b.file, base) if b.file else b.file) for b in summary.breaks
    )
    action = summary.top_action or _top_break_action(shown)
    return replace(summary, name=name, target=record.get("target"), breaks=shown, top_action=action)


def build_zoo(index: Mapping[str, Any], reports: Mapping[str, Mapping[str, Any] | None]) -> Zoo:
    """The zoo from index.json and the reports by target name (None where absent)."""
    manifest_folder = index.get("manifest_folder")
    summaries = {name: summarise_report(report) for name, report in reports.items() if report}
    base = _display_base(manifest_folder, summaries.values())
    models = tuple(
        model_summary(r, summaries.get(str(r.get("name"))), base)
        for r in _dicts(index.get("targets"))
    )
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
    )


def _display_base(manifest_folder: str | None, summaries: Iterable[ModelSummary]) -> str | None:
    """The folder user code is shown relative to: the deepest one holding the manifest's folder
    and every break's file that is not installed code (built-in scenarios beside a zoo folder
    show as `scenarios/x.py`, not as absolute paths)."""
    files = [b.file for m in summaries for b in m.breaks if b.file and os.path.isabs(b.file)]
    anchor = [os.path.join(manifest_folder, "manifest")] if manifest_folder else []
    common = common_folder(anchor + files)
    if common is None or os.path.dirname(common) == common:  # nothing shared but the root
        return manifest_folder
    return common


def per_model_shares(models: tuple[ModelSummary, ...]) -> dict[tuple[Any, ...], dict[str, float]]:
    """Location key (gb_code, file, line) -> {model: share}, a model's repeats summed."""
    shares: dict[tuple[Any, ...], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for model in models:
        for b in model.breaks:
            shares[(b.gb_code, b.file, b.line)][model.name] += b.cost_share or 0.0
    return shares


def root_causes(models: tuple[ModelSummary, ...]) -> tuple[RootCause, ...]:
    """Break locations across models, ranked by the step shares they cost in total."""
    first: dict[tuple[Any, ...], BreakSummary] = {}
    ms: dict[tuple[Any, ...], float] = defaultdict(float)
    verdicts: dict[tuple[Any, ...], set[str]] = defaultdict(set)
    for model in models:
        for b in model.breaks:
            key = (b.gb_code, b.file, b.line)
            first.setdefault(key, b)
            ms[key] += b.cost_ms or 0.0
            verdicts[key].update([b.verdict] if b.verdict else [])
    causes = [
        _root_cause(key, first[key], by_model, ms[key], verdicts[key])
        for key, by_model in per_model_shares(models).items()
    ]
    return tuple(sorted(causes, key=_rank))


def _root_cause(
    key: tuple[Any, ...], b: BreakSummary, by_model: dict[str, float], ms: float, verdicts: set[str]
) -> RootCause:
    return RootCause(
        gb_code=key[0],
        file=key[1],
        line=key[2],
        gb_type=b.gb_type,
        function=b.function,
        code=b.code,
        models=tuple(by_model),
        total_share=sum(by_model.values()),
        median_share=statistics.median(by_model.values()),
        total_ms=ms,
        verdicts=tuple(sorted(verdicts)),
    )


def code_causes(models: tuple[ModelSummary, ...]) -> tuple[CodeCause, ...]:
    """Registry codes across models, ranked by the step shares they cost in total."""
    by_code: dict[Any, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    locations: dict[Any, set[tuple[Any, ...]]] = defaultdict(set)
    ms: dict[Any, float] = defaultdict(float)
    gb_type: dict[Any, str | None] = {}
    for model in models:
        for b in model.breaks:
            by_code[b.gb_code][model.name] += b.cost_share or 0.0
            locations[b.gb_code].add((b.file, b.line))
            ms[b.gb_code] += b.cost_ms or 0.0
            gb_type.setdefault(b.gb_code, b.gb_type)
    causes = [
        CodeCause(
            gb_code=code,
            gb_type=gb_type[code],
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
    location = f"{getattr(cause, 'file', '')}:{getattr(cause, 'line', '')}"
    return (-cause.total_share, -len(cause.models), f"{cause.gb_code or ''} {location}")


# --- paths -----------------------------------------------------------------------------------

# --- small readers ---------------------------------------------------------------------------


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _dicts(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _ratio(top: float | None, bottom: float | None) -> float | None:
    if top is None or bottom is None or bottom <= 0:
        return None
    return top / bottom
