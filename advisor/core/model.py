"""The result model: plain frozen dataclasses with a versioned JSON round trip.

Records carry facts and numbers; sentences are written by the renderers (`advisor.render`).
Each stage of the pipeline writes its own records and never rewrites another stage's:

- harness:   `ModeResult` (with `LatencyStats`, `ModeError`), `Environment`
- capture:   `GraphRecord`, `BreakSite` (where Dynamo breaks, its registry code, the frames it
             splits), `RecompileRecord`
- what-ifs:  `WhatIf` (one per config knob tried, listing the sites it removed)
- attribute: `Attribution` (per-call segments, the `Calibration` that scaled them)
- advise:    `BreakEntry` (a root cause: its sites, `CostTerms`, `CostParts`, `Savings`,
             `Decision`), `Ledger`, `Action`, `RecompileAdvice`

A report written by this version and loaded again gives an equal object. Fields may be added
(with defaults) without bumping `SCHEMA_VERSION`; renaming or removing a field, or changing its
meaning, bumps it. The JSON renderer (`advisor.render.json_report`) adds documented convenience
fields (each break's `gb_code`, `file`, `line`, `verdict`, `why`, `recipe`, ...; each action's
`title`) that are derived from these records and ignored when the report is read back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.core.serial import dumps, from_jsonable, load_versioned, to_jsonable

__all__ = ["from_jsonable", "to_jsonable"]  # the round trip, re-exported for the records' users

SCHEMA_VERSION = 3

MODES = ("eager", "default", "fullgraph")


# --- what was measured, where ---------------------------------------------------------------


@dataclass(frozen=True)
class WorkloadInfo:
    name: str
    target: str
    device: str
    params: tuple[tuple[str, str], ...] = ()  # factory keyword arguments, as JSON text


@dataclass(frozen=True)
class Environment:
    torch: str
    python: str
    device_name: str
    platform: str = ""
    cpu_threads: int = 0
    cuda: str | None = None
    load_average: tuple[float, ...] = ()  # os.getloadavg() when the run started (1, 5, 15 min)
    cpu_affinity: tuple[int, ...] = ()  # CPUs the process was pinned to while measuring
    cpu_count: int = 0  # CPUs of the machine (os.cpu_count), for reading the load average


@dataclass(frozen=True)
class Settings:
    """The harness and advice options a report was made with."""

    warmup: int = 3
    repeats: int = 20  # the minimum number of interleaved rounds (timed blocks per mode)
    budget_s: float = 30.0  # the most seconds of timed rounds per timing (modes, each what-if)
    min_block_s: float = 0.02
    threads: int | None = None
    profile_calls: int = 20
    what_if: bool = True
    ignore_share: float = 0.01  # entries whose saving is below this share of the step: "ignore"
    isolate: bool = False  # each mode and what-if measured in a process of its own
    timeout_s: float | None = None  # isolated: per process, then it is killed (None: no limit)
    # Rounds go on past `repeats` until each timed callable's median has a 95% interval within
    # this fraction of the median, or the budget runs out; 0: exactly `repeats` rounds.
    target_ci: float = 0.02


@dataclass(frozen=True)
class Note:
    """Something a stage noticed that a reader of the report should know (a warning), as a
    record: its kind, what it is about and its numbers; the renderers word it
    (`advisor.render.prose.note_text`). `detail` carries a message from elsewhere as it came (an
    exception's first line), never a sentence of ours."""

    kind: str
    subject: str = ""  # a mode, a what-if, a compile id: what the note is about
    values: dict[str, float] = field(default_factory=dict)
    detail: str = ""


# --- harness ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LatencyStats:
    """Steady-state latency of one mode; each sample is the mean per call over one timed block.

    `samples_ms` are in the order they were timed (one per interleaved round), so the drift of
    the machine during the run can be read from them (`advisor.core.stats.drift`)."""

    median_ms: float
    iqr_ms: float
    n: int  # timed blocks taken
    samples_ms: tuple[float, ...]
    min_ms: float = 0.0
    max_ms: float = 0.0
    calls_per_sample: int = 1
    ci_ms: tuple[float, float] | None = None  # 95% interval of the median (order statistics)
    target_met: bool | None = None  # the interval reached Settings.target_ci; None: no target

    @property
    def relative_iqr(self) -> float | None:
        return self.iqr_ms / self.median_ms if self.median_ms > 0 else None

    @property
    def relative_ci(self) -> float | None:
        """How far the median's 95% interval reaches from it (the larger side), as a fraction."""
        if self.ci_ms is None or self.median_ms <= 0:
            return None
        low, high = self.ci_ms
        return max(self.median_ms - low, high - self.median_ms) / self.median_ms


@dataclass(frozen=True)
class ModeError:
    """Why a mode failed; for a fullgraph failure, the first graph break and where it is."""

    type: str
    message: str
    gb_code: str | None = None
    gb_type: str | None = None
    file: str | None = None
    line: int | None = None
    code: str | None = None


@dataclass(frozen=True)
class ModeResult:
    mode: str
    status: str  # "ok" | "failed" | "skipped"
    first_call_s: float | None = None
    latency: LatencyStats | None = None
    peak_memory_bytes: int | None = None
    memory_method: str = ""  # "cpu_profiler" | "cuda_allocator"
    recompiles: int = 0
    matches_eager: bool | None = None
    max_abs_diff: float | None = None
    error: ModeError | None = None
    graph_count: int | None = None


# --- capture ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Location:
    """A source line: absolute path, 1-based line, function, and the line's text."""

    file: str
    line: int
    function: str = ""
    code: str = ""


@dataclass(frozen=True)
class GraphRecord:
    """One compiled graph, keyed by Dynamo's compile id (`frame/recompile`, e.g. `1/0`)."""

    compile_id: str
    function: str
    file: str
    lines: tuple[int, ...] = ()
    ops: int = 0
    compile_s: float | None = None
    recompile_reason: str | None = None
    end_reason: str | None = None  # "graph_break", "return_value", ...


@dataclass(frozen=True)
class BreakSite:
    """One graph break as Dynamo reported it: registry code at the line where Dynamo broke.

    `where` is the innermost frame of Dynamo's traceback: the line where it stopped, library
    code included. Every compile id that broke there is folded in (a break inside a submodule
    is met by the frame that calls the submodule and by the submodule's own frame).
    """

    id: str
    gb_code: str | None
    gb_type: str
    where: Location
    explanation: str = ""
    hints: tuple[str, ...] = ()
    # The innermost frame of the user's own code that reaches `where`, when that is another line
    # (a user line calling into a library that breaks).
    reached_from: Location | None = None
    # Lines of compiled frames that end their graph because of this break, other than `where`
    # itself: the caller frames that break at the call into it.
    also_at: tuple[Location, ...] = ()
    compile_ids: tuple[str, ...] = ()
    # Compile ids of frames Dynamo gave up on while handling this break (run entirely eager).
    skipped_frames: tuple[str, ...] = ()
    skip_code: str | None = None  # the chained code that made Dynamo skip, e.g. GB7000 (loop)
    doc_url: str | None = None

    @property
    def frame_skipped(self) -> bool:
        return bool(self.skipped_frames) or self.skip_code is not None


@dataclass(frozen=True)
class RecompileRecord:
    """A recompile, with its failing guard classified where it was read (the guard text is a
    torch format): `cause` is "size" | "dtype" | "rank" | "requires_grad" | "device" | "value" |
    "other"; `backend_switch` marks a recompile for another backend object (one per mode), which
    the workload did not cause."""

    compile_id: str
    function: str
    reason: str
    compile_s: float | None = None
    cause: str = "other"
    dim: int | None = None
    backend_switch: bool = False


# --- what-ifs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class WhatIf:
    """A measured counterfactual: the workload compiled again with one Dynamo config knob.

    Baseline and variant are compiled in the same process and timed with the harness's method;
    `saving_ms` is baseline minus variant per call, with a bootstrap 95% interval.
    """

    knob: str  # e.g. "capture_scalar_outputs=True"
    setting: str  # the config attribute
    fix: str  # the kind of fix the knob amounts to: "isolate" | "rewrite" | "delete"
    status: str  # "measured" | "failed"
    targets: tuple[str, ...] = ()  # site ids the knob was tried for
    removed: tuple[str, ...] = ()  # of those, the ones the variant no longer has
    new_breaks: tuple[Location, ...] = ()  # breaks in the variant that the original did not have
    remaining: int = 0  # breaks left in the variant
    baseline_ms: float | None = None
    variant_ms: float | None = None
    saving_ms: float | None = None
    saving_ci_ms: tuple[float, float] | None = None
    rounds: int = 0
    target_met: bool | None = None  # both medians reached Settings.target_ci; None: no target
    interleaved: bool = True  # False: timed one after the other (the original skips frames)
    matches_eager: bool | None = None
    stdout_chars: tuple[int, int] | None = None  # per call, (original, variant)
    behaviour_change: str | None = None  # the knob's documented behaviour change (a key)
    recompiled_while_timed: bool = False
    error: str | None = None

    @property
    def clean(self) -> bool:
        """Measured, every target removed, nothing new in their place, outputs match eager."""
        return (
            self.status == "measured"
            and bool(self.targets)
            and set(self.targets) <= set(self.removed)
            and not self.new_breaks
            and self.matches_eager is not False
        )


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

    @property
    def fixed_us(self) -> float:
        """Extra regions, their guard lookups and graph calls (the prices are after the cap)."""
        per_graph = self.region_overhead_us + self.graph_call_us
        return self.regions * self.guard_lookup_us + self.graph_regions * per_graph


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

    verdict: str  # "rewrite" | "isolate" | "ignore"
    category: str  # taxonomy key, e.g. "print", "scalar_extraction"
    fix: str  # recommended fix: "isolate" | "rewrite" | "delete" | "knob"
    basis: str  # "estimate" | "measured" | "bounded": what `saving_ms` is
    saving_ms: float  # the recommended fix's saving per call: the deciding number
    threshold_ms: float  # ignore_share of the step
    noise_ms: float  # the larger of the step's noise and the estimate's spread
    reason: str  # "above" | "below_share" | "below_noise" | "never_ran"
    library: bool = False  # the break is in code that is not the user's (site-packages, torch)
    knob: str | None = None  # the knob that decided it (what-if), if any
    knob_outcome: str | None = None  # "removed" | "moved" | "kept" | "failed"
    measured_ms: float | None = None  # the what-if's saving credited to this entry
    measured_ci_ms: tuple[float, float] | None = None
    shared_with: tuple[str, ...] = ()  # other entries removed by the same knob
    estimate_miss: float | None = None  # estimate / measurement - 1, where they disagree


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


@dataclass(frozen=True)
class Action:
    """One thing to do, with what it saves per call; `measured` when a run of it was timed."""

    kind: str  # "knob" | "code" | "fullgraph" | "dynamic" | "isolate" | "recompile" | "guards"
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


@dataclass(frozen=True)
class RecompileAdvice:
    """A recompile and its cause, classified from the failing guard."""

    compile_id: str
    function: str
    reason: str
    cause: str  # "size" | "dtype" | "rank" | "requires_grad" | "device" | "value" | "other"
    dim: int | None = None
    compile_s: float | None = None


# --- the report -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Report:
    workload: WorkloadInfo
    environment: Environment
    settings: Settings
    modes: tuple[ModeResult, ...]
    graphs: tuple[GraphRecord, ...] = ()
    sites: tuple[BreakSite, ...] = ()  # every break the capture saw
    breaks: tuple[BreakEntry, ...] = ()  # root causes, ranked by cost_ms
    what_ifs: tuple[WhatIf, ...] = ()
    ledger: Ledger | None = None
    actions: tuple[Action, ...] = ()
    attribution: Attribution = field(default_factory=Attribution)
    recompiles: tuple[RecompileAdvice, ...] = ()
    warnings: tuple[Note, ...] = ()
    incomplete: bool = False  # interrupted: only the modes measured so far
    redacted: bool = False  # source text and absolute paths removed (`advisor.core.redact`)
    created_at: str = ""
    wall_s: float | None = None
    schema_version: int = SCHEMA_VERSION

    def mode(self, name: str) -> ModeResult | None:
        return next((m for m in self.modes if m.mode == name), None)

    def what_if(self, knob: str | None) -> WhatIf | None:
        return next((w for w in self.what_ifs if w.knob == knob), None)

    def entry(self, entry_id: str) -> BreakEntry | None:
        return next((b for b in self.breaks if b.id == entry_id), None)


def report_to_json(report: Report) -> str:
    """The records alone; `advisor.render.json_report` adds the documented derived fields."""
    return dumps(report)


def report_from_json(text: str) -> Report:
    """Parse a report; raises ValueError with a one-line reason when it is not one we can read."""
    return load_versioned(
        Report,
        text,
        SCHEMA_VERSION,
        "report",
        "written by an older advisor: run the workload again",
    )
