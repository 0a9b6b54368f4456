"""The judged records: the attribution of profiled time (`Attribution`, per-call `Segment`s,
the `Calibration` that scaled them) and the advice (`BreakEntry` with its `CostTerms`,
`CostParts`, `Savings` and `Decision`; `Ledger`, `Action`, `RecompileAdvice`). Plain frozen
dataclasses; `advisor.core.model` exports them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.core.kinds import ActionKind, ActionOutcome, Verdict, coerced
from advisor.core.measured import BreakSite, CodeUnit, Location
from advisor.core.patch import Patch

# --- attribution ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    """A stretch of one call: entry, guard_lookup, compiled, gap, eager or exit (µs, after
    calibration), the part of it that is work (graph calls, aten ops), and what it belongs to."""

    kind: str
    start_us: float
    duration_us: float
    compile_id: str | None = None
    break_id: str | None = None
    work_us: float = 0.0


@dataclass(frozen=True)
class CallTimeline:
    index: int
    total_us: float
    segments: tuple[Segment, ...] = ()


@dataclass(frozen=True)
class Calibration:
    """How profiled times were turned into unprofiled ones (see `advisor.judge.attribute`)."""

    overhead_us_per_event: float = 0.0  # profiler cost of one aten event
    structural_event_us: float = 0.0  # profiler cost of one region/lookup/graph-call event
    calibration_profiled_us: float | None = None  # tiny aten op, profiled, per op
    calibration_bare_us: float | None = None  # the same op unprofiled
    events_per_op: float | None = None
    reference: str = "none"  # "sessions" | "given" | "none": what the split was made against
    sessions: int = 0
    reference_us: float | None = None  # median unprofiled call at profile time
    step_us: float | None = None  # the mode's median the segments were rescaled to
    overhead_scale: float = 1.0  # median share of the profiled overhead kept
    rescale: float = 1.0  # median factor from profile-time to the mode's median (drift)
    profiled_ratio: float | None = None  # median profiled call / unprofiled reference
    fallback_calls: int = 0  # calls whose work exceeded the reference: scaled alike
    graph_call_us: float | None = None  # one more graph call: the probe's graph call
    glue_us: float | None = None  # one break's reconstruction + resume call: the probe's gap
    probe_break_us: float | None = None  # one whole break unprofiled: probe with minus without
    probe_calls: int = 0
    whole_call_us_per_event: float | None = None  # cross-check from whole calls


@dataclass(frozen=True)
class Attribution:
    coverage: float | None = None
    profiled_calls: int = 0
    calibration: Calibration = field(default_factory=Calibration)
    calls: tuple[CallTimeline, ...] = ()


@dataclass(frozen=True)
class GraphSplit:
    """A compiled region whose graph DDP's optimizer split into one graph per gradient bucket,
    so the gradients' all-reduce overlaps the backward: intended, not a break to fix. Its price
    is estimated from the graph calls the split adds (per call of the step)."""

    compile_id: str
    function: str
    graphs: int  # the graphs the split made (capture)
    graph_calls: float  # forward graph calls per region instance (profile; 0: not profiled)
    backward_calls: float = 0.0  # their backward graphs' calls per step
    extra_calls: float = 0.0  # graph calls per step beyond one forward and one backward graph
    graph_call_us: float = 0.0  # the price of one more graph call (the probe's)
    cost_ms: float = 0.0  # estimated: the extra graph calls, per step


# --- advice -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CostTerms:
    """The cost model's measured terms for one entry, per call (see `advisor.judge.cost`)."""

    regions: float = 0.0  # extra compiled regions per call that exist because of this entry
    graph_regions: float = 0.0  # of which call a compiled graph
    guard_lookup_us: float = 0.0  # per region
    region_overhead_us: float = 0.0  # per region that calls a graph (wrappers, prologue)
    graph_call_us: float = 0.0  # per extra graph call
    glue_us: float = 0.0  # per occurrence: output reconstruction and the call into the resume
    gap_us: float = 0.0  # measured eager time the entry owns (gaps, a skipped frame's time)
    tensor_work_us: float = 0.0  # eager aten work in that time
    kept_us: float = 0.0  # of which compute-bound ops: the same kernels compiled
    spread_us: float = 0.0  # per-call spread of the owned time and the region overheads
    overhead_cap: float = 1.0  # <1 where the entries' fixed costs were scaled to the profile's
    skipped_frame: bool = False  # the owned time is a frame Dynamo runs eagerly
    # Training: the extra forward graphs' backward graphs, each a hop of the autograd engine
    # (its node, AOTAutograd's wrapper) and one more graph call.
    backward_graphs: float = 0.0
    backward_hop_us: float = 0.0
    guard_basis: str = "profile"  # "measured": the guard what-if's price per lookup

    @property
    def fixed_us(self) -> float:
        """Extra regions, their guard lookups and graph calls, and in training their backward
        graphs (the prices are after the cap)."""
        per_graph = self.region_overhead_us + self.graph_call_us
        backward = self.backward_graphs * (self.backward_hop_us + self.graph_call_us)
        return self.regions * self.guard_lookup_us + self.graph_regions * per_graph + backward


@dataclass(frozen=True)
class CostParts:
    """An entry's share of the step, split by what a fix removes (ms per call).

    overhead + tensor work + Python work = the entry's share of the ledger.
    """

    overhead_ms: float = 0.0  # goes with any fix that removes the break
    tensor_work_ms: float = 0.0  # eager aten work; compiled, it fuses (less `kept_ms`)
    kept_ms: float = 0.0  # of the tensor work: compute-bound, same time compiled
    python_work_ms: float = 0.0  # the code at the line and below: stays if moved or isolated

    @property
    def total_ms(self) -> float:
        return self.overhead_ms + self.tensor_work_ms + self.python_work_ms


@dataclass(frozen=True)
class Savings:
    """What each kind of fix saves per call, in ms; None where the fix does not apply."""

    isolate: float | None = None  # move it out / reorder / disable a small boundary
    rewrite: float | None = None  # express it in tensor code (or a knob that traces it)
    delete: float | None = None  # remove it (debug output, a check that can go)


@dataclass(frozen=True)
class Decision:
    """The verdict on one entry and the numbers that decided it."""

    verdict: Verdict
    category: str  # taxonomy key, e.g. "print", "scalar_extraction"
    fix: str  # recommended fix: "isolate" | "rewrite" | "delete" | "knob"
    basis: str  # "estimate" | "measured" | "bounded": what `saving_ms` is
    saving_ms: float  # the recommended fix's saving per call: the deciding number
    threshold_ms: float  # ignore_share of the step
    noise_ms: float  # the larger of the step's noise and the estimate's spread
    # "above" | "below_share" | "below_noise" | "no_effect" (a what-if measured it: its interval
    # reaches zero or its saving is under the minimum effect) | "never_ran" | "ddp" (DDP's own)
    reason: str
    library: bool = False  # the break is in code that is not the user's (site-packages, torch)
    knob: str | None = None  # the knob that decided it (what-if), if any
    knob_outcome: str | None = None  # "removed" | "moved" | "kept" | "failed"
    measured_ms: float | None = None  # the what-if's saving credited to this entry
    measured_ci_ms: tuple[float, float] | None = None
    shared_with: tuple[str, ...] = ()  # other entries removed by the same knob
    estimate_miss: float | None = None  # estimate / measurement - 1, where they disagree

    def __post_init__(self) -> None:
        object.__setattr__(self, "verdict", coerced(Verdict, self.verdict))


@dataclass(frozen=True)
class BreakEntry:
    """A root cause: the ranked unit. It owns disjoint time (the gaps of its site, or the eager
    time of a frame Dynamo skipped) and lists the breaks that made Dynamo skip that frame."""

    id: str  # the id of its site (segments' `break_id`)
    site: BreakSite
    causes: tuple[BreakSite, ...] = ()  # other breaks met in the skipped frames it owns
    occurrences_per_call: float = 0.0
    terms: CostTerms = field(default_factory=CostTerms)
    parts: CostParts = field(default_factory=CostParts)
    savings: Savings = field(default_factory=Savings)
    cost_ms: float = 0.0  # the recommended fix's saving (= decision.saving_ms)
    cost_share: float | None = None  # cost_ms / the default-mode step
    cost_uncertainty_ms: float = 0.0
    decision: Decision | None = None
    what_if_knob: str | None = None  # the knob (WhatIf.knob) measured for it, if any

    @property
    def verdict(self) -> str | None:
        return self.decision.verdict if self.decision else None

    @property
    def gap_ms(self) -> float:
        return self.terms.gap_us / 1e3


@dataclass(frozen=True)
class LedgerTerm:
    """One thing the fixes remove, summed over the entries a user can fix (ms per call), and
    what the number rests on: "measured", "profile" (the profile's segments and the probe's
    prices), "estimate", or "not estimated"."""

    name: str  # "guards", "regions", "backward", "python", "tensor_work", "fusion"
    ms: float | None
    basis: str


@dataclass(frozen=True)
class Ledger:
    """The default-mode step split into disjoint parts (ms per call).

    step = compiled (work that stays, compute-bound eager work included) + breaks + other.
    """

    step_ms: float
    compiled_ms: float
    breaks_ms: float  # the entries' shares: overhead + tensor work + Python work
    other_ms: float  # entry, exit, eager time outside any break, unexplained
    saving_ms: float  # the sum of the entries' recommended savings
    projected_ms: float  # step - saving
    eager_ms: float | None = None
    projected_speedup_vs_eager: float | None = None
    # fullgraph=True compiled and matched eager: its median is the measured all-fixed step.
    measured_all_fixed_ms: float | None = None
    measured_all_fixed_ci_ms: tuple[float, float] | None = None  # default - fullgraph saving
    projection_miss: float | None = None  # projected / measured all-fixed - 1
    guard_lookup_ms: float = 0.0  # of the step: guard evaluation before each region
    guard_excess_ms: float = 0.0  # of which above the probe's trivial guards
    # Estimated savings of breaks in library code that no measured change removes: they need
    # a library change, so they are not in `saving_ms` or the projection.
    library_ms: float = 0.0
    # What bounds the projection: "estimate" (none), "measured" (not below the best measured
    # step of a variant that removes the same breaks), "eager" (compiling loses and nothing
    # measured recovers it: not below eager).
    projection_basis: str = "estimate"
    estimated_projected_ms: float | None = None  # step - saving, before any bound
    measured_all_fixed_source: str | None = None  # "fullgraph" or the knob that removed all
    measured_all_fixed_diff: float | None = None  # its largest difference from eager's output
    default_diff: float | None = None  # the default mode's own
    # A training step's passes, outside what the breaks own (None: no backward or optimizer
    # was profiled): backward graphs and the autograd engine, and the optimizer step.
    backward_ms: float | None = None
    optimizer_ms: float | None = None
    terms: tuple[LedgerTerm, ...] = ()  # what the fixes remove, term by term


@dataclass(frozen=True)
class Action:
    """One thing to do, with what it saves per call; `measured` when a run of it was timed."""

    kind: ActionKind
    saving_ms: float | None
    saving_ci_ms: tuple[float, float] | None = None
    measured: bool = False
    breaks: tuple[str, ...] = ()  # entry ids it removes
    matches_eager: bool | None = None
    knob: str | None = None  # kind "knob": the setting
    fix: str | None = None  # kind "code"/"isolate": the fix kind
    where: Location | None = None  # the line to change
    compile_s: float | None = None  # kind "recompile"/"dynamic": compile time spent
    dims: tuple[int, ...] = ()  # kind "dynamic": the dimensions that change
    # The step after it: a measured variant's median scaled to the default mode's (the A/B's
    # own baseline drifts from it), else the default median less the estimated saving.
    step_ms: float | None = None
    subjects: tuple[CodeUnit, ...] = ()  # kind "regional"/"disable": modules or functions
    safe: bool = True  # False: it can silently run the wrong code (skipping guards)
    max_abs_diff: float | None = None  # its output's largest difference from eager's
    default_abs_diff: float | None = None  # the default mode's own, for comparison
    # False: measured, but its interval reaches zero or its saving is under the minimum
    # effect ("no measurable effect"); such actions come after every other
    measurable: bool = True
    processes: int | None = None  # replicated processes its measurement rests on (None: quick)
    patch: Patch | None = None  # kind "patch": the rewrite, its diff's hunks
    # `saving_ci_ms` is where a rerun would put the saving (a measured one); this is the
    # interval the run's own waves give, before the run-level spread was added
    run_ci_ms: tuple[float, float] | None = None
    # measured: the compile and first call of the median worker that ran it, seconds
    first_call_s: float | None = None
    # measured: the calls after which its saving has paid for the compile and first call it
    # adds to the default mode's (None: it adds none, or saves nothing)
    break_even_calls: float | None = None
    # measured, no measurable effect, yet its saving would lead if it held: how many runs
    # judged together (`advisor judge RUN RUN ...`) would tell it from zero (None: not so)
    runs_to_settle: int | None = None
    # whether it is something to do (see `ActionOutcome`); a report written before this field
    # reads as DO, as every action was listed then
    outcome: ActionOutcome = ActionOutcome.DO
    # an estimate: what stopped it being measured ("no_rewrite": no patch is generated for this
    # shape of code; "library": library code, no change at the user's line; "failed", "kept",
    # "moved", "differs": what its what-if did); None when measured
    unmeasured: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", coerced(ActionKind, self.kind))
        outcome = coerced(ActionOutcome, self.outcome)
        if self.kind == ActionKind.KEEP:  # a statement, never something to do (older reports)
            outcome = ActionOutcome.NOTHING
        object.__setattr__(self, "outcome", outcome)


@dataclass(frozen=True)
class RecompileAdvice:
    """A recompile and its cause, classified from the failing guard."""

    compile_id: str
    function: str
    reason: str
    cause: str  # "size" | "dtype" | "rank" | "requires_grad" | "device" | "value" | "other"
    dim: int | None = None
    compile_s: float | None = None
