"""The measured records: what was measured and where (`WorkloadInfo`, `Environment`, the
`Settings` used), what the harness timed (`ModeResult` with `LatencyStats` and `ModeError`), what
the capture saw (`GraphRecord`, `BreakSite`, `RecompileRecord`), the what-ifs (`WhatIf`), and the
`Note`s any stage leaves. Plain frozen dataclasses; `advisor.core.model` exports them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.core import policy
from advisor.core.kinds import WhatIfKind, coerced
from advisor.core.patch import Patch

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

    @property
    def every_cpu(self) -> bool:
        """torch's threads took every CPU of the machine (its default on a small one)."""
        return takes_every_cpu(self.cpu_threads, self.cpu_count)


def takes_every_cpu(threads: int, cpu_count: int) -> bool:
    """Whether `threads` torch threads take every one of the machine's `cpu_count` CPUs: the
    run-level spreads (`policy.saving_spread`, `policy.run_spread`) depend on it."""
    return 0 < cpu_count <= threads


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
    # entries whose saving is below this share of the step: "ignore"
    ignore_share: float = policy.IGNORE_SHARE
    isolate: bool = False  # each mode and what-if measured in a process of its own
    timeout_s: float | None = None  # isolated: per process, then it is killed (None: no limit)
    # Rounds go on past `repeats` until each timed callable's median has a 95% interval within
    # this fraction of the median, or the budget runs out; 0: exactly `repeats` rounds.
    target_ci: float = 0.02
    # Data-parallel ranks, each a process of its own measuring in lockstep (the same calls in
    # the same order: collectives wait on every rank); 1: this process, adaptive as above.
    ranks: int = 1
    # How the compared arms are timed: "replicated" (each arm in worker processes of its own,
    # `processes` of them, driven round by round; see `advisor.measure.replicate`) or "quick"
    # (every arm in this one process, as before: for iterating, not for numbers to keep) or
    # "isolated" (each mode in a process, one after the other). The default is the quick one
    # because records written before the field existed were measured that way; `advisor run`
    # asks for "replicated" unless told --quick (`advisor.core.options.settings_from`).
    protocol: str = "quick"
    processes: int = 4
    # Replicated: up to this many more waves for a saving that is unsettled and could lead
    # (`advisor.measure.replicate._settle`). `advisor run` asks for `policy.SETTLE_WAVES`, and
    # none when --processes was given (that many, as asked); 0 in records from before.
    settle_waves: int = 0
    # A saving is "measured" only when its 95% interval lies above zero and it is at least this
    # share of the step; below, it is "no measurable effect" (docs/measurement.md says why 3%).
    min_effect: float = policy.MIN_EFFECT
    # Saved runs judged together as this one (`advisor judge RUN RUN ...`, `judge.pool`): each
    # saving's interval carries the run-level spread once per run pooled. 1: one run.
    runs: int = 1

    @property
    def wave_budget_s(self) -> float:
        """Replicated: the most timed seconds of one wave, its arms together (the budget is
        split between the `processes` waves)."""
        return self.budget_s / max(1, self.processes)


@dataclass(frozen=True)
class Replication:
    """How a replicated number was measured: one worker process per arm per wave, the waves
    one after the other, the arms of a wave timed round by round (rotating who goes first).

    `process_medians_ms` holds each process's median per call (in wave order); the arm's median
    is their median and `interval_ms` a 95% t-interval of their mean, so the spread between
    processes is in the interval rather than in a bias. `first_call_s` is each worker's compile
    plus first call (the compile caches warm after the run's first compile)."""

    processes: int
    rounds: int  # timed blocks kept per process (the fewest of any process)
    process_medians_ms: tuple[float, ...] = ()
    waves: tuple[int, ...] = ()  # the wave each of those medians came from (pairs arms by wave)
    interval_ms: tuple[float, float] | None = None
    first_call_s: tuple[float, ...] = ()
    dropped: tuple[str, ...] = ()  # blocks invalidated, each with its reason
    remeasured: bool = False  # its processes disagreed and it got more of them
    disagree: bool = False  # they still disagree beyond the noise model after that
    # the machine-speed reference (`advisor.measure.metronome`) in each of those waves, ms per
    # call, in the same order as `process_medians_ms`; () when it was not timed (older runs)
    machine_ms: tuple[float, ...] = ()
    # each process's median of (its block / the reference's block of the same round): its
    # level in units of the machine's speed at that moment; () when not timed
    over_machine: tuple[float, ...] = ()
    # the saved runs its processes came from (`advisor.judge.pool`): the run-level spread its
    # saving carries falls as 1 / sqrt(runs)
    runs: int = 1

    @property
    def by_wave(self) -> bool:
        """Its process medians say which wave each came from (pairing needs that)."""
        return len(self.waves) == len(self.process_medians_ms) > 0

    def wave_medians(self) -> dict[int, float]:
        """Each process's median by the wave it came from."""
        return dict(zip(self.waves, self.process_medians_ms, strict=True))


@dataclass(frozen=True)
class Note:
    """Something a stage noticed that a reader of the report should know (a warning), as a
    record: its kind, what it is about and its numbers; the renderers word it
    (`advisor.render.notes.note_text`). `detail` carries a message from elsewhere as it came (an
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
    # The share of the CPUs it ran on that other processes used while it was timed; above
    # 10% its threads were descheduled, and its interval is not called met whatever its width.
    contention: float | None = None
    replication: Replication | None = None  # replicated protocol: processes, rounds, spread

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
class OutputCheck:
    """A compiled variant's output against eager's: within the dtype tolerances or not, the
    largest absolute difference, and whether only floating-point rounding can explain it
    (`comparable`: the same structure, shapes, dtypes, NaN positions and exact non-float
    values; a print that disappeared or a changed shape is not comparable)."""

    matches: bool
    max_abs_diff: float | None = None
    comparable: bool = True


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
    output: OutputCheck | None = None  # None: eager does not reproduce its own output


@dataclass(frozen=True)
class RankTimings:
    """One data-parallel rank's modes (eager, default, fullgraph), as that rank measured them."""

    rank: int
    modes: tuple[ModeResult, ...] = ()
    breaks: int = 0  # the break sites its capture saw

    def mode(self, name: str) -> ModeResult | None:
        return next((m for m in self.modes if m.mode == name), None)


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
    # The graphs DDP's optimizer (`torch._dynamo.config.optimize_ddp`) split this one into, one
    # per gradient bucket, each compiled and called on its own; 0: not split.
    ddp_graphs: int = 0


@dataclass(frozen=True)
class LibraryOption:
    """A library argument that, left None, makes the library work out a value on every call on
    the way to the break (`if NAME is None: NAME = ...`), and the class whose constructor takes
    it and keeps it (`self.NAME = NAME`): passing it there skips that work and its break."""

    name: str
    owner: str  # the class's qualified name
    owner_file: str
    owner_line: int  # the line of its `__init__`
    computed_at: Location  # the `if NAME is None:` line
    computed_until: int  # the block's last line (the value is set once a later line runs)
    # the value the library worked out on the run's inputs, as Python source (None: not
    # recorded, or not a plain number, string or bool that source can spell)
    value: str | None = None


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
    # With `reached_from`: the frames between that line and `where`, outermost first (the
    # library calls it goes through: a functional form, a constructor it runs)
    via: tuple[Location, ...] = ()
    # Lines of compiled frames that end their graph because of this break, other than `where`
    # itself: the caller frames that break at the call into it.
    also_at: tuple[Location, ...] = ()
    compile_ids: tuple[str, ...] = ()
    # Compile ids of frames Dynamo gave up on while handling this break (run entirely eager).
    skipped_frames: tuple[str, ...] = ()
    skip_code: str | None = None  # the chained code that made Dynamo skip, e.g. GB7000 (loop)
    doc_url: str | None = None
    # The frames from the compiled function's own to `where`, outermost first (first sighting)
    stack: tuple[Location, ...] = ()
    # A library argument whose default makes the library compute a value on the way here
    option: LibraryOption | None = None

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
class Candidate:
    """A fix considered for breaks when the what-ifs were planned: measured as the what-if it
    names (`planned`), or skipped, with why (a rewrite's refusal, no knob for that kind of
    break, too many knobs to pair)."""

    sites: tuple[str, ...]  # the break ids it aims at
    kind: str  # "knob" | "knobs" (set together) | "patch" | "patches" (together) | "noop" |
    # "undisable" | "placement"
    label: str  # the what-if's key (its knob), or what was considered
    planned: bool
    why: str = ""  # skipped: why, in words a user reads


@dataclass(frozen=True)
class CodeUnit:
    """A module or function a placement compiles or runs eagerly: its path as the user reaches
    it (`model.layers.3`, `package.module.Class.method`), its class or function name, and where
    it is defined."""

    path: str
    name: str
    where: Location | None = None


@dataclass(frozen=True)
class TrainingStep:
    """What a training step holds, as the process that profiled it found: the placements of
    torch.compile a training step can take are planned from it, breaks or not."""

    optimizers: tuple[str, ...]  # the names its optimizers are held by (closure, globals...)
    module_compiled: bool  # the model compiled in place, the step eager (else the step compiled)
    modules: tuple[str, ...] = ()  # the top-level modules it reaches
    # False: the step is one iteration of a script's own loop, which cannot be compiled as
    # one function (no "step" placement)
    step_compilable: bool = True


@dataclass(frozen=True)
class WhatIf:
    """A measured counterfactual: the workload compiled again with one change (a Dynamo config
    knob, a placement of torch.compile, a side effect made a no-op).

    Replicated protocol: the variant is an arm of its own (its own worker processes), timed in
    the same waves as the default mode's arm, and `saving_ms` is the paired saving across those
    waves with a t-interval over them (`replication`). Quick protocol: baseline and variant
    compiled in one process, timed interleaved, with a bootstrap 95% interval. Both outputs are
    checked against eager's (`output`, `baseline_output`), so a
    variant's difference can be judged against the default mode's own.
    """

    knob: str  # identifies it, e.g. "capture_scalar_outputs=True", "placement:regional"
    setting: str  # the config attribute, or what the variant changes
    fix: str  # what it amounts to: "isolate" | "rewrite" | "delete" | "guards" | "placement"
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
    kind: WhatIfKind = WhatIfKind.KNOB
    subjects: tuple[CodeUnit, ...] = ()  # placement: the modules compiled / functions disabled
    output: OutputCheck | None = None  # the variant's output against eager's
    baseline_output: OutputCheck | None = None  # the default mode's, in the same process
    # Replicated protocol: the variant's processes (the baseline is the default mode's arm,
    # timed in the same waves); `process_savings_ms` holds each wave's paired saving.
    replication: Replication | None = None
    process_savings_ms: tuple[float, ...] = ()
    patch: Patch | None = None  # kind "patch": the rewrite measured

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", coerced(WhatIfKind, self.kind))

    @property
    def deletes_call(self) -> bool:
        """It measures deleting a side-effect call: a no-op of it, or a patch removing it."""
        return self.kind == WhatIfKind.NOOP or (
            self.patch is not None and self.patch.kind == "side_effect"
        )

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
