"""Capture: the graphs, breaks, skipped frames and recompiles of one compile, as it happens.

A `CaptureSession` listens to Dynamo's in-process structured trace (see torch_adapter) while the
benchmarked compile runs, so nothing is compiled twice and no cache is reset (unlike `explain`).
`Capture` holds the result in JSON-serialisable form so it can be recorded under tests/data.

Grouping rules (where `explain` is wrong):
- one user-level break = one (registry code, file, line), however many compile ids see it (a
  break in a submodule is seen by the outer and the inner frame);
- two breaks in a row are two breaks (the middle frame has an empty graph and no backend call);
- a data-dependent branch gets its gb_type from the trace (GB0170), not `generic_jump`;
- a break inside a loop makes Dynamo skip the frame: ONE break with the root code (e.g. GB0059),
  `frame_skipped=True` and `skip_code` (GB7000).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from advisor import torch_adapter as ta
from advisor.model import BreakRecord, GraphRecord, RecompileRecord, from_jsonable, to_jsonable

_GRAPH_LINE = "# File: "


@dataclass(frozen=True)
class FrameRecord:
    """One compile id as Dynamo saw it (a frame compile; may have no graph, may be skipped)."""

    compile_id: str
    function: str
    file: str
    first_line: int = 0
    ops: int | None = None  # None: no graph was produced (e.g. a resume right before return)
    compile_s: float | None = None
    skipped: bool = False  # Dynamo gave up on the frame and runs it eagerly (e.g. break in a loop)
    break_ids: tuple[str, ...] = ()  # breaks recorded while compiling this frame
    end_break_id: str | None = None  # the break that ends this frame's graph (None: return)
    resume_of: str | None = None  # for a resume function: the function it continues
    resume_line: int | None = None
    resumes: str | None = None  # compile id of the frame this resume function continues
    recompile_reason: str | None = None


@dataclass(frozen=True)
class Capture:
    graphs: tuple[GraphRecord, ...] = ()
    breaks: tuple[BreakRecord, ...] = ()
    recompiles: tuple[RecompileRecord, ...] = ()
    frames: tuple[FrameRecord, ...] = ()
    root_compile_id: str | None = None  # the first frame compiled: the function itself
    warnings: tuple[str, ...] = ()
    torch_version: str = ""

    def frame(self, compile_id: str) -> FrameRecord | None:
        return next((f for f in self.frames if f.compile_id == compile_id), None)

    def break_(self, break_id: str | None) -> BreakRecord | None:
        return next((b for b in self.breaks if b.id == break_id), None)

    @property
    def root_skip_break_id(self) -> str | None:
        """When the function's own frame is skipped, the break that caused it."""
        root = self.frame(self.root_compile_id) if self.root_compile_id else None
        return root.end_break_id if root is not None and root.skipped else None

    def to_json(self) -> str:
        return json.dumps(to_jsonable(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> Capture:
        return from_jsonable(cls, json.loads(text))


@dataclass
class _BreakGroup:
    key: tuple[str | None, str, int]
    part: ta.BreakPart
    frame: ta.UserFrame
    outer: ta.UserFrame | None
    compile_ids: list[str] = field(default_factory=list)
    skip_code: str | None = None
    stop: tuple[str, int] | None = None  # Dynamo's own location, when in library code below


class CaptureSession:
    """Records what Dynamo compiles while active; `result()` builds the `Capture`.

    Use it around the compile and first calls of the benchmarked mode. It installs only a
    logging handler (removed on exit), so it leaks no state between runs.
    """

    def __init__(self) -> None:
        self._listener = ta.StructuredTraceListener()
        self._active = False

    def __enter__(self) -> CaptureSession:
        self._listener.__enter__()
        self._active = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._active:
            self._listener.__exit__(*exc)
            self._active = False

    @property
    def records(self) -> list[ta.TraceRecord]:
        return list(self._listener.records)

    def result(self) -> Capture:
        records = list(self._listener.records)
        if records and not any(r.event == "compilation_metrics" for r in records):
            # a release whose trace lacks metrics: take them from Dynamo's metrics deque
            seen = {r.compile_id for r in records}
            records += [r for r in ta.compilation_metrics_records() if r.compile_id in seen]
        return build_capture(records)


def build_capture(records: list[ta.TraceRecord]) -> Capture:
    """Turn structured-trace records into a `Capture` (pure; testable on recorded records)."""
    warnings: list[str] = []
    order: list[str] = []
    starts: dict[str, dict[str, Any]] = {}
    metrics: dict[str, dict[str, Any]] = {}
    graph_text: dict[str, str] = {}
    breaks_by_cid: dict[str, list[ta.ParsedBreak]] = {}
    recompile_text: dict[str, str] = {}
    for rec in records:
        cid = rec.compile_id
        if cid is None:
            continue
        if cid not in order:
            order.append(cid)
        if rec.event == "dynamo_start":
            starts.setdefault(cid, rec.data)
        elif rec.event == "compilation_metrics":
            metrics[cid] = rec.data
        elif rec.event == "dynamo_output_graph" and rec.payload:
            graph_text[cid] = rec.payload
        elif rec.event == "dynamo_graph_break_reason" and rec.payload:
            parsed = ta.parse_break_artifact(rec.payload)
            if parsed is None:
                warnings.append(f"{cid}: could not parse a graph-break message")
            else:
                breaks_by_cid.setdefault(cid, []).append(parsed)
        elif rec.event == "recompile_reasons" and rec.payload:
            recompile_text[cid] = rec.payload
    if not metrics and order:
        warnings.append("no compilation_metrics in the structured trace; frame data incomplete")
    if not order:
        warnings.append(
            "the structured trace recorded no compile (was the function already compiled, "
            "or does this torch release not emit it?)"
        )

    groups: dict[tuple[str | None, str, int], _BreakGroup] = {}
    cid_breaks: dict[str, list[tuple[str | None, str, int]]] = {}
    for cid in order:
        m = metrics.get(cid, {})
        co_name = str(m.get("co_name") or "")
        co_file = str(m.get("co_filename") or "")
        for parsed in breaks_by_cid.get(cid, []):
            if not parsed.parts:
                warnings.append(f"{cid}: break at {parsed.file}:{parsed.line} has no gb_type")
                continue
            root = parsed.parts[0]
            skip = next((p.gb_code for p in parsed.parts[1:] if p.gb_code), None)
            inner = _innermost_user_frame(parsed, co_name, co_file)
            key = (root.gb_code, inner.file, inner.line)
            group = groups.get(key)
            if group is None:
                outer = _outer_frame(parsed, co_name, co_file)
                stop = _library_stop(parsed, inner)
                group = groups[key] = _BreakGroup(key, root, inner, outer, stop=stop)
            if cid not in group.compile_ids:
                group.compile_ids.append(cid)
            if skip is not None and group.skip_code is None:
                group.skip_code = skip
            keys = cid_breaks.setdefault(cid, [])
            if key not in keys:
                keys.append(key)

    ids = {key: f"B{i}" for i, key in enumerate(groups, start=1)}
    frames: list[FrameRecord] = []
    for cid in order:
        m = metrics.get(cid)
        if m is None:
            if cid in starts:
                warnings.append(f"{cid}: compile started but no metrics were recorded")
            continue
        co_name = str(m.get("co_name") or "")
        keys = cid_breaks.get(cid, [])
        skipped = bool(m.get("fail_type")) and not m.get("has_guarded_code")
        origin = ta.resume_origin(co_name)
        ops = m.get("graph_op_count")
        frames.append(
            FrameRecord(
                compile_id=cid,
                function=co_name,
                file=str(m.get("co_filename") or ""),
                first_line=int(m.get("co_firstlineno") or 0),
                ops=int(ops) if ops is not None else None,
                compile_s=_float(m.get("entire_frame_compile_time_s")),
                skipped=skipped,
                break_ids=tuple(ids[k] for k in keys),
                end_break_id=ids[keys[-1]] if keys else None,
                resume_of=origin[0] if origin else None,
                resume_line=origin[1] if origin else None,
                recompile_reason=_one_line_or_none(
                    _str_or_none(m.get("recompile_reason")) or recompile_text.get(cid)
                ),
            )
        )

    frames = _link_resumes(frames)
    frame_by_id = {f.compile_id: f for f in frames}
    for group in groups.values():
        group.outer = _resume_outer(group, frame_by_id) or group.outer
    breaks = tuple(_break_record(ids[key], group, frame_by_id) for key, group in groups.items())
    graphs = tuple(
        GraphRecord(
            compile_id=f.compile_id,
            function=f.function,
            file=f.file,
            lines=_graph_lines(graph_text.get(f.compile_id, ""), f.file)
            or ((f.first_line,) if f.ops else ()),
            ops=f.ops or 0,
            compile_s=f.compile_s,
            recompile_reason=f.recompile_reason,
            end_reason="graph_break" if f.end_break_id else "return_value",
        )
        for f in frames
        if f.ops is not None and not f.skipped
    )
    recompiles = tuple(
        RecompileRecord(
            compile_id=f.compile_id,
            function=f.function,
            reason=f.recompile_reason or "",
            compile_s=f.compile_s,
        )
        for f in frames
        if _is_recompile(f.compile_id)
    )
    return Capture(
        graphs=graphs,
        breaks=breaks,
        recompiles=recompiles,
        frames=tuple(frames),
        root_compile_id=order[0] if order else None,
        warnings=tuple(warnings),
        torch_version=ta.torch_version(),
    )


def _break_record(
    break_id: str, group: _BreakGroup, frames: Mapping[str, FrameRecord]
) -> BreakRecord:
    skipped = any(frames[c].skipped for c in group.compile_ids if c in frames)
    return BreakRecord(
        id=break_id,
        gb_code=group.part.gb_code,
        gb_type=group.part.gb_type,
        file=group.frame.file,
        line=group.frame.line,
        code=group.frame.code or ta.source_line(group.frame.file, group.frame.line),
        function=group.frame.function,
        explanation=group.part.explanation,
        hints=group.part.hints,
        reason=group.part.gb_type,
        outer_file=group.outer.file if group.outer else None,
        outer_line=group.outer.line if group.outer else None,
        outer_function=group.outer.function if group.outer else None,
        break_file=group.stop[0] if group.stop else None,
        break_line=group.stop[1] if group.stop else None,
        compile_ids=tuple(group.compile_ids),
        frame_skipped=skipped or group.skip_code is not None,
        skip_code=group.skip_code,
        doc_url=ta.gb_doc_url(group.part.gb_code),
    )


def _link_resumes(frames: list[FrameRecord]) -> list[FrameRecord]:
    """For each resume function, the compile id it continues: the most recent earlier frame of
    the same function and file whose first line is the closest one at or before the resume line."""
    out: list[FrameRecord] = []
    for i, frame in enumerate(frames):
        if frame.resume_of is None or frame.resume_line is None:
            out.append(frame)
            continue
        best: FrameRecord | None = None
        for cand in frames[:i]:
            name = cand.resume_of or cand.function
            if name != frame.resume_of or cand.file != frame.file:
                continue
            if cand.first_line > frame.resume_line:
                continue
            if best is None or cand.first_line >= best.first_line:
                best = cand
        out.append(replace(frame, resumes=best.compile_id if best else None))
    return out


def _resume_outer(group: _BreakGroup, frames: Mapping[str, FrameRecord]) -> ta.UserFrame | None:
    """Where the break leaves the compiled frame: the line its resume function starts at."""
    if not group.compile_ids:
        return None
    origin = frames.get(group.compile_ids[0])
    if origin is None:
        return None
    for frame in frames.values():
        if frame.resumes == origin.compile_id and frame.resume_line is not None:
            function = origin.resume_of or origin.function
            line = frame.resume_line
            return ta.UserFrame(origin.file, line, function, ta.source_line(origin.file, line))
    return None


_ADVISOR_DIR = str(Path(__file__).resolve().parent) + os.sep


def _is_user_file(filename: str) -> bool:
    """Not torch, not the standard library, and not this tool (its harness calls the workload,
    so its frames sit in every traceback)."""
    return not ta.is_library_file(filename) and not filename.startswith(_ADVISOR_DIR)


def _innermost_user_frame(
    parsed: ta.ParsedBreak, co_name: str = "", co_file: str = ""
) -> ta.UserFrame:
    """The innermost frame in user code at or inside the compiled frame (the frames above it
    are its callers: the harness, a script); with none (a torch module compiled as it is, say),
    the innermost frame of all, where Dynamo stopped."""
    outer = _outer_frame(parsed, co_name, co_file) if co_name else None
    frames = parsed.frames
    if outer is not None:
        frames = frames[frames.index(outer) :]
    for frame in reversed(frames):
        if _is_user_file(frame.file):
            return frame
    if parsed.frames:
        return parsed.frames[-1]
    return ta.UserFrame(parsed.file, parsed.line, "", ta.source_line(parsed.file, parsed.line))


def _one_line_or_none(reason: str | None) -> str | None:
    return _one_line(reason) if reason else None


def _one_line(reason: str) -> str:
    """A guard-failure reason as one line: Dynamo appends the user stack trace on later lines
    and pads the guard's source comment with spaces."""
    head = reason.split("\nUser stack trace:", 1)[0]
    return re.sub(r"\s+", " ", head).strip()


def _library_stop(parsed: ta.ParsedBreak, inner: ta.UserFrame) -> tuple[str, int] | None:
    """Where Dynamo stopped, if that is library code other than the user line we report."""
    if (parsed.file, parsed.line) == (inner.file, inner.line) or _is_user_file(parsed.file):
        return None
    return parsed.file, parsed.line


def _outer_frame(parsed: ta.ParsedBreak, co_name: str, co_file: str) -> ta.UserFrame | None:
    """The frame of the compiled function itself (where the break leaves the compiled code)."""
    names = {co_name}
    origin = ta.resume_origin(co_name)
    if origin is not None:
        names.add(origin[0])
    for frame in parsed.frames:
        if frame.function in names and (not co_file or frame.file == co_file):
            return frame
    return None


def _graph_lines(text: str, file: str) -> tuple[int, ...]:
    """Source lines a graph covers, from the `# File: path:line in fn, code:` comments."""
    mine: set[int] = set()
    anywhere: set[int] = set()
    for raw in text.splitlines():
        line = raw.strip()
        if not line.startswith(_GRAPH_LINE):
            continue
        where = line[len(_GRAPH_LINE) :].split(" in ", 1)[0]
        path, _, number = where.rpartition(":")
        if not number.isdigit():
            continue
        anywhere.add(int(number))
        if path == file:
            mine.add(int(number))
    return tuple(sorted(mine or anywhere))


def _is_recompile(compile_id: str) -> bool:
    tail = compile_id.rsplit("/", 1)[-1]
    return tail.isdigit() and int(tail) > 0


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def _str_or_none(value: Any) -> str | None:
    return str(value) if value else None


def capture_workload(
    fn: Callable[..., Any],
    args: tuple[Any, ...] | list[Any],
    kwargs: Mapping[str, Any] | None = None,
    backend: Any = "eager",
    *,
    mark_graphs: bool = False,
    extra_calls: tuple[tuple[Any, ...], ...] = (),
) -> Capture:
    """Reset Dynamo, compile `fn` (fullgraph=False) with `backend`, run it once (and once per
    entry of `extra_calls`, e.g. to force recompiles) inside a CaptureSession.

    `mark_graphs=True` wraps the backend so each graph call is a named profiler event (see
    `torch_adapter.marked_backend`); use the returned compiled function via
    `compile_and_capture` when you also want to profile it.
    """
    _, capture = compile_and_capture(
        fn, args, kwargs, backend, mark_graphs=mark_graphs, extra_calls=extra_calls
    )
    return capture


def compile_and_capture(
    fn: Callable[..., Any],
    args: tuple[Any, ...] | list[Any],
    kwargs: Mapping[str, Any] | None = None,
    backend: Any = "eager",
    *,
    mark_graphs: bool = False,
    extra_calls: tuple[tuple[Any, ...], ...] = (),
) -> tuple[Callable[..., Any], Capture]:
    """Like `capture_workload`, and also return the compiled (warm) function."""
    ta.reset_dynamo()
    chosen = ta.marked_backend(backend) if mark_graphs else backend
    compiled = ta.compile_mode(fn, chosen, fullgraph=False)
    with CaptureSession() as session:
        for call_args in extra_calls:
            compiled(*call_args, **dict(kwargs or {}))
        compiled(*args, **dict(kwargs or {}))
    return compiled, session.result()
