"""The ledger: the default-mode step split into disjoint parts, what the recommended fixes save,
and the projected step, bounded by what was measured.

- A break in library code with no measured fix needs a library change: its estimated saving is
  kept apart (`library_ms`) and stays out of the projection.
- The projected all-fixed step is never below the best measured step of a variant that removes
  the same breaks (fullgraph=True, or a knob that removes them all).
- Where compiling loses to eager and nothing measured beats eager, the projection is not below
  eager either: an estimate alone does not promise more than not compiling.
The unbounded estimate is kept beside it (`estimated_projected_ms`).
"""

from __future__ import annotations

from advisor.core.model import BreakEntry, Ledger, LedgerTerm, ModeResult
from advisor.judge.attribute import AttributionResult
from advisor.judge.measured import MeasuredStep, all_fixed


def needs_library_change(entry: BreakEntry) -> bool:
    decision = entry.decision
    return decision is not None and decision.library and decision.basis != "measured"


def build_ledger(
    entries: tuple[BreakEntry, ...],
    att: AttributionResult,
    modes: dict[str, ModeResult],
    steps: list[MeasuredStep],
) -> Ledger:
    default = modes["default"]
    assert default.latency is not None
    step_ms = default.latency.median_ms
    totals = att.totals
    other_ms = (totals.entry_us + totals.exit_us + totals.eager_us) / 1e3
    breaks_ms = sum(e.parts.total_ms for e in entries)
    backward_ms, optimizer_ms = _training_parts(entries, att)
    library = [e for e in entries if needs_library_change(e)]
    saving_ms = min(sum(e.cost_ms for e in entries if e not in library), step_ms)
    estimated = max(step_ms - saving_ms, 0.0)
    eager = modes.get("eager")
    eager_ms = eager.latency.median_ms if eager and eager.latency else None
    fixed = all_fixed(steps, frozenset(e.id for e in entries))
    projected, basis = _bounded(estimated, fixed, steps)
    return Ledger(
        step_ms=step_ms,
        compiled_ms=max(
            0.0, step_ms - breaks_ms - other_ms - (backward_ms or 0.0) - (optimizer_ms or 0.0)
        ),
        breaks_ms=breaks_ms,
        other_ms=other_ms,
        saving_ms=step_ms - projected,
        projected_ms=projected,
        eager_ms=eager_ms,
        projected_speedup_vs_eager=eager_ms / projected if eager_ms and projected > 0 else None,
        measured_all_fixed_ms=fixed.step_ms if fixed else None,
        measured_all_fixed_ci_ms=fixed.saving_ci_ms if fixed else None,
        projection_miss=estimated / fixed.step_ms - 1.0 if fixed else None,
        guard_lookup_ms=totals.lookup_us / 1e3,
        guard_excess_ms=_guard_excess_ms(att),
        library_ms=sum(e.cost_ms for e in library),
        projection_basis=basis,
        estimated_projected_ms=estimated,
        measured_all_fixed_source=fixed.source if fixed else None,
        measured_all_fixed_diff=fixed.max_abs_diff if fixed else None,
        default_diff=fixed.default_abs_diff if fixed else None,
        backward_ms=backward_ms,
        optimizer_ms=optimizer_ms,
        terms=_terms([e for e in entries if e not in library], estimated, fixed),
    )


def _terms(
    entries: list[BreakEntry], estimated: float, fixed: MeasuredStep | None
) -> tuple[LedgerTerm, ...]:
    """What fixing the breaks the user can fix removes, term by term, with the basis of each:
    the guards of the graphs that go, the extra regions and graph calls, the backward graphs'
    hops, the Python at the breaks, their fusible tensor work; and the fusion across the merged
    graph, which only a measured all-fixed step shows (the estimate has no model of it)."""
    t = [e.terms for e in entries]
    guards = sum(x.regions * x.guard_lookup_us for x in t) / 1e3
    backward = sum(x.backward_graphs * (x.backward_hop_us + x.graph_call_us) for x in t) / 1e3
    overhead = sum(e.parts.overhead_ms for e in entries)
    measured_guards = any(x.guard_basis == "measured" for x in t)
    fusion = LedgerTerm("fusion", None, "not estimated")
    if fixed is not None and estimated > fixed.step_ms:
        fusion = LedgerTerm("fusion", estimated - fixed.step_ms, f"measured ({fixed.source})")
    return (
        LedgerTerm("guards", guards, "measured" if measured_guards else "profile"),
        LedgerTerm("regions", max(0.0, overhead - guards - backward), "profile"),
        LedgerTerm("backward", backward, "profile"),
        LedgerTerm("python", sum(e.parts.python_work_ms for e in entries), "profile"),
        LedgerTerm(
            "tensor_work",
            sum(e.parts.tensor_work_ms - e.parts.kept_ms for e in entries),
            "estimate",
        ),
        fusion,
    )


def _training_parts(
    entries: tuple[BreakEntry, ...], att: AttributionResult
) -> tuple[float | None, float | None]:
    """The backward pass less the backward graphs' hops the breaks own, and the optimizer;
    None for an inference step (neither was profiled)."""
    totals = att.totals
    if totals.backward_us <= 0 and totals.optimizer_us <= 0:
        return None, None
    owned = sum(
        e.terms.backward_graphs * (e.terms.backward_hop_us + e.terms.graph_call_us) for e in entries
    )
    backward = max(0.0, totals.backward_us - owned) / 1e3
    return backward, totals.optimizer_us / 1e3


def _bounded(
    estimated: float, fixed: MeasuredStep | None, steps: list[MeasuredStep]
) -> tuple[float, str]:
    if fixed is not None and estimated < fixed.step_ms:
        return fixed.step_ms, "measured"
    eager = next((s for s in steps if s.kind == "eager"), None)
    if eager is not None and eager.beyond_noise and estimated < eager.step_ms:
        if not beats(steps, eager.step_ms):
            return eager.step_ms, "eager"
    return estimated, "estimate"


def beats(steps: list[MeasuredStep], step_ms: float) -> bool:
    """Whether a measured compiled variant (outputs accepted) is faster than `step_ms`."""
    return any(
        s.kind not in ("eager", "guards") and s.accepted is not False and s.step_ms < step_ms
        for s in steps
    )


def _guard_excess_ms(att: AttributionResult) -> float:
    """Guard evaluation beyond what the probe's trivial guards cost, per call."""
    if att.probe.lookup_us is None:
        return 0.0
    excess = att.totals.lookup_us - att.totals.lookups * att.probe.lookup_us
    return max(0.0, excess) / 1e3
