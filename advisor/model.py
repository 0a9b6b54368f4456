"""The result model: plain frozen dataclasses with a versioned JSON round trip.

Every stage of the pipeline produces values of these types; renderers consume them. A report
written by this version and loaded again gives an equal object (see `report_from_json`).
Fields may be added (with defaults) without bumping the schema version; renaming or removing a
field, or changing its meaning, bumps `SCHEMA_VERSION`.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from typing import Any, TypeVar

SCHEMA_VERSION = 1

MODES = ("eager", "default", "fullgraph")


@dataclass(frozen=True)
class WorkloadInfo:
    name: str
    target: str
    device: str


@dataclass(frozen=True)
class Environment:
    torch: str
    python: str
    device_name: str
    platform: str = ""
    cpu_threads: int = 0
    cuda: str | None = None


@dataclass(frozen=True)
class Settings:
    """The harness options a report was measured with."""

    warmup: int = 3
    repeats: int = 20
    budget_s: float = 30.0
    min_block_s: float = 0.02
    threads: int | None = None
    profile_calls: int = 20
    what_if: bool = True
    ignore_share: float = 0.01  # breaks cheaper than this share of the step are "ignore"


@dataclass(frozen=True)
class LatencyStats:
    """Steady-state latency of one mode; each sample is the mean per call over one timed block."""

    median_ms: float
    iqr_ms: float
    n: int
    samples_ms: tuple[float, ...]
    min_ms: float = 0.0
    max_ms: float = 0.0
    calls_per_sample: int = 1


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
    memory_method: str = ""
    recompiles: int = 0
    matches_eager: bool | None = None
    max_abs_diff: float | None = None
    error: ModeError | None = None
    graph_count: int | None = None


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
class WhatIf:
    """A measured counterfactual: the same workload compiled with a knob that removes a break."""

    knob: str
    status: str  # "measured" | "failed" | "not_applicable"
    removes_break: bool | None = None
    baseline_ms: float | None = None
    variant_ms: float | None = None
    saving_ms: float | None = None
    saving_noise_ms: float | None = None
    estimated_saving_ms: float | None = None
    matches_eager: bool | None = None
    behaviour_warning: str | None = None
    note: str = ""
    new_breaks: tuple[str, ...] = ()  # breaks in the variant that the original did not have


@dataclass(frozen=True)
class BreakRecord:
    """One user-level graph break: a registry code at one user source line."""

    id: str
    gb_code: str | None
    gb_type: str
    file: str
    line: int
    code: str = ""
    function: str = ""
    explanation: str = ""
    hints: tuple[str, ...] = ()
    reason: str = ""
    outer_file: str | None = None
    outer_line: int | None = None
    outer_function: str | None = None
    # Where Dynamo stopped, when that is not the user line above: inside library code (torch,
    # a third-party package) reached from it, e.g. a graph_break() inside `optimizer.step()`.
    break_file: str | None = None
    break_line: int | None = None
    compile_ids: tuple[str, ...] = ()
    frame_skipped: bool = False
    skip_code: str | None = None
    occurrences_per_call: float = 0.0
    gap_ms: float | None = None
    cost_ms: float | None = None
    cost_share: float | None = None
    cost_uncertainty_ms: float | None = None
    verdict: str | None = None  # "rewrite" | "isolate" | "ignore"
    category: str | None = None
    why: str = ""
    recipe: str = ""
    doc_url: str | None = None
    group: str | None = None
    what_if: WhatIf | None = None


@dataclass(frozen=True)
class Segment:
    """A stretch of one call: entry, guard_lookup, compiled, gap, eager or exit."""

    kind: str
    start_us: float
    duration_us: float
    compile_id: str | None = None
    break_id: str | None = None


@dataclass(frozen=True)
class CallTimeline:
    index: int
    total_us: float
    segments: tuple[Segment, ...] = ()


@dataclass(frozen=True)
class Attribution:
    coverage: float | None = None
    method: str = ""
    profiled_calls: int = 0
    profiler_overhead_us_per_event: float | None = None
    calls: tuple[CallTimeline, ...] = ()


@dataclass(frozen=True)
class RecompileRecord:
    compile_id: str
    function: str
    reason: str
    compile_s: float | None = None
    recommendation: str = ""


@dataclass(frozen=True)
class Report:
    workload: WorkloadInfo
    environment: Environment
    settings: Settings
    modes: tuple[ModeResult, ...]
    graphs: tuple[GraphRecord, ...] = ()
    breaks: tuple[BreakRecord, ...] = ()
    attribution: Attribution = field(default_factory=Attribution)
    recompiles: tuple[RecompileRecord, ...] = ()
    warnings: tuple[str, ...] = ()
    created_at: str = ""
    wall_s: float | None = None
    schema_version: int = SCHEMA_VERSION

    def mode(self, name: str) -> ModeResult | None:
        return next((m for m in self.modes if m.mode == name), None)


# --- JSON round trip -------------------------------------------------------------------------

T = TypeVar("T")


def to_jsonable(value: Any) -> Any:
    """Dataclasses become dicts (field order kept), tuples become lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    return value


def from_jsonable(cls: type[T], data: Any) -> T:
    """Rebuild a dataclass from `to_jsonable` output, guided by its type hints.

    Unknown keys are ignored (a newer writer may add fields); missing keys take the defaults.
    """
    return typing.cast(T, _convert(cls, data))


def _convert(tp: Any, data: Any) -> Any:
    if data is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        for option in options:
            try:
                return _convert(option, data)
            except (TypeError, ValueError):
                continue
        raise ValueError(f"cannot read {data!r} as {tp}")
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(args[0], v) for v in _as_list(data))
        return tuple(_convert(a, v) for a, v in zip(args, _as_list(data), strict=False))
    if origin is dict:
        key_tp, val_tp = typing.get_args(tp)
        if not isinstance(data, dict):
            raise TypeError(f"expected an object, got {type(data).__name__}")
        return {_convert(key_tp, k): _convert(val_tp, v) for k, v in data.items()}
    if dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise TypeError(f"expected an object for {tp.__name__}, got {type(data).__name__}")
        hints = typing.get_type_hints(tp)
        kwargs = {
            f.name: _convert(hints[f.name], data[f.name])
            for f in dataclasses.fields(tp)
            if f.name in data
        }
        return tp(**kwargs)
    if tp is float:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise TypeError(f"expected a number, got {data!r}")
        return float(data)
    if tp is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise TypeError(f"expected an integer, got {data!r}")
        return data
    if tp is bool:
        if not isinstance(data, bool):
            raise TypeError(f"expected true/false, got {data!r}")
        return data
    if tp is str:
        if not isinstance(data, str):
            raise TypeError(f"expected a string, got {data!r}")
        return data
    return data


def _as_list(data: Any) -> list[Any]:
    if not isinstance(data, list):
        raise TypeError(f"expected a list, got {type(data).__name__}")
    return data


def report_to_json(report: Report) -> str:
    return json.dumps(to_jsonable(report), indent=2, allow_nan=False)


def report_from_json(text: str) -> Report:
    """Parse a report; raises ValueError with a one-line reason when it is not one we can read."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict) or "schema_version" not in data:
        raise ValueError("not an advisor report (no schema_version)")
    version = data["schema_version"]
    if version != SCHEMA_VERSION:
        raise ValueError(
            f"report schema version {version} is not supported "
            f"(this advisor reads {SCHEMA_VERSION})"
        )
    try:
        return from_jsonable(Report, data)
    except (TypeError, ValueError, KeyError) as exc:
        raise ValueError(f"malformed report: {exc}") from None
