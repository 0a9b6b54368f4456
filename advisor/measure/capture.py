"""Capture: the graphs, break sites, skipped frames and recompiles of one compile, as it happens.

A `CaptureSession` listens to Dynamo's in-process structured trace (see torch_adapter) while the
benchmarked compile runs, so nothing is compiled twice and no cache is reset (unlike `explain`).
The result is a `Capture` artifact (see `advisor.core.artifacts`).

Grouping rules (where `explain` is wrong):
- one site = one (registry code, line where Dynamo breaks), however many compile ids meet it:
  a break in a submodule is met by the frame that calls the submodule (which breaks at the
  call) and by the submodule's own frame; the caller's line is kept in `also_at`;
- two breaks in a row are two sites (the middle frame has an empty graph and no backend call);
- a data-dependent branch gets its gb_type from the trace (GB0170), not `generic_jump`;
- a break inside a loop makes Dynamo skip the frame: ONE site with the root code (e.g. GB0059),
  the skipped compile id and the chained `skip_code` (GB7000).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from advisor.core.artifacts import Capture, FrameRecord
from advisor.core.model import BreakSite, GraphRecord, Location, Note, RecompileRecord
from advisor.core.paths import is_installed
from advisor.measure import torch_adapter as ta

SiteKey = tuple[str, str, int]  # (registry code or gb_type, file, line where Dynamo breaks)


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


@dataclass
class _Records:
    """The structured-trace records of one compile, sorted by compile id."""

    order: list[str] = field(default_factory=list)
    starts: set[str] = field(default_factory=set)
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    graph_text: dict[str, str] = field(default_factory=dict)
    breaks: dict[str, list[ta.ParsedBreak]] = field(default_factory=dict)
    recompile_text: dict[str, str] = field(default_factory=dict)
    ddp_graphs: dict[str, int] = field(default_factory=dict)  # DDP's split, per compile id
    notes: list[Note] = field(default_factory=list)


@dataclass
class _SiteGroup:
    """A site being collected across compile ids."""

    part: ta.BreakPart
    where: Location
    reached_from: Location | None
    via: tuple[Location, ...] = ()
    stack: tuple[Location, ...] = ()
    compile_ids: list[str] = field(default_factory=list)
    also_at: list[Location] = field(default_factory=list)
    skip_code: str | None = None


def build_capture(records: list[ta.TraceRecord]) -> Capture:
    """Turn structured-trace records into a `Capture` (pure; testable on recorded records)."""
    sorted_records = _sort_records(records)
    groups, met = _group_sites(sorted_records)
    ids = {key: f"B{i}" for i, key in enumerate(groups, start=1)}
    frames = _link_resumes(_frames(sorted_records, met, ids))
    by_id = {f.compile_id: f for f in frames}
    sites = tuple(_site(ids[key], group, by_id) for key, group in groups.items())
    return Capture(
        graphs=_graphs(frames, sorted_records.graph_text),
        sites=sites,
        recompiles=tuple(_recompile(f) for f in frames if ta.is_recompile_id(f.compile_id)),
        frames=tuple(frames),
        root_compile_id=sorted_records.order[0] if sorted_records.order else None,
        notes=tuple(sorted_records.notes),
        torch_version=ta.torch_version(),
    )


def _sort_records(records: list[ta.TraceRecord]) -> _Records:
    out = _Records()
    for rec in records:
        cid = rec.compile_id
        if cid is None:
            continue
        if cid not in out.order:
            out.order.append(cid)
        if rec.event == "dynamo_start":
            out.starts.add(cid)
        elif rec.event == "compilation_metrics":
            out.metrics[cid] = rec.data
        elif rec.event == "dynamo_output_graph" and rec.payload:
            out.graph_text[cid] = rec.payload
        elif rec.event == "dynamo_graph_break_reason" and rec.payload:
            parsed = ta.parse_break_artifact(rec.payload)
            if parsed is None:
                out.notes.append(Note("break_unparsed", cid))
            else:
                out.breaks.setdefault(cid, []).append(parsed)
        elif rec.event == "recompile_reasons" and rec.payload:
            out.recompile_text[cid] = rec.payload
        elif rec.event == ta.DDP_SPLIT_CHILD:
            out.ddp_graphs[cid] = out.ddp_graphs.get(cid, 0) + 1
    if not out.metrics and out.order:
        out.notes.append(Note("no_compilation_metrics"))
    if not out.order:
        out.notes.append(Note("no_compile_recorded"))
    return out


def _group_sites(
    records: _Records,
) -> tuple[dict[SiteKey, _SiteGroup], dict[str, list[SiteKey]]]:
    """Sites by (code, where Dynamo breaks), and the sites each compile id met, in order."""
    groups: dict[SiteKey, _SiteGroup] = {}
    met: dict[str, list[SiteKey]] = {}
    compiled = {
        (str(m.get("co_filename") or ""), str(m.get("co_name") or ""))
        for m in records.metrics.values()
    }
    for cid in records.order:
        m = records.metrics.get(cid, {})
        co_name, co_file = str(m.get("co_name") or ""), str(m.get("co_filename") or "")
        for parsed in records.breaks.get(cid, []):
            if not parsed.parts:
                records.notes.append(
                    Note("break_without_type", cid, detail=f"{parsed.file}:{parsed.line}")
                )
                continue
            root = parsed.parts[0]
            where = _where(parsed)
            key = (root.gb_code or root.gb_type, where.file, where.line)
            group = groups.get(key)
            if group is None:
                group = groups[key] = _SiteGroup(root, where, None)
            _refine(group, parsed, co_name, co_file, compiled)
            _add_sighting(group, cid, parsed, co_name, co_file)
            keys = met.setdefault(cid, [])
            if key not in keys:
                keys.append(key)
    return groups, met


def _refine(
    group: _SiteGroup,
    parsed: ta.ParsedBreak,
    co_name: str,
    co_file: str,
    compiled: set[tuple[str, str]],
) -> None:
    """The user's line and the stack, from the first sighting that has them: the first compile
    to meet a break may be one whose traceback lacks its own frame (a user function breaking
    at its call into a library), a later one (the library's frame, compiled on its own) shows
    both."""
    if group.reached_from is None:
        reached = _reached_from(parsed, group.where, co_name, co_file, compiled)
        if reached is not None:
            group.reached_from, group.via = reached, _via(parsed, reached, group.where)
    if not group.stack:
        group.stack = _stack(parsed, co_name, co_file)


def _add_sighting(
    group: _SiteGroup, cid: str, parsed: ta.ParsedBreak, co_name: str, co_file: str
) -> None:
    if cid not in group.compile_ids:
        group.compile_ids.append(cid)
    skip = next((p.gb_code for p in parsed.parts[1:] if p.gb_code), None)
    if skip is not None and group.skip_code is None:
        group.skip_code = skip
    outer = _outer_frame(parsed, co_name, co_file)
    if outer is not None:
        _add_location(group, _location(outer))


def _add_location(group: _SiteGroup, loc: Location) -> None:
    if (loc.file, loc.line) == (group.where.file, group.where.line):
        return
    if any((a.file, a.line) == (loc.file, loc.line) for a in group.also_at):
        return
    group.also_at.append(loc)


def _location(frame: ta.UserFrame) -> Location:
    return Location(frame.file, frame.line, frame.function, frame.code)


def _where(parsed: ta.ParsedBreak) -> Location:
    """Where Dynamo broke: the header's file:line, with its frame's function and source."""
    for frame in reversed(parsed.frames):
        if (frame.file, frame.line) == (parsed.file, parsed.line):
            return _location(frame)
    return Location(parsed.file, parsed.line, "", ta.source_line(parsed.file, parsed.line))


_ADVISOR_DIR = str(Path(__file__).resolve().parent) + os.sep


def is_user_file(filename: str) -> bool:
    """The user's own code: not installed (torch, libraries, the standard library) and not this
    tool (its harness calls the workload, so its frames sit in every traceback)."""
    return (
        not is_installed(filename)
        and not ta.is_library_file(filename)
        and not (filename.startswith(_ADVISOR_DIR))
    )


def _reached_from(
    parsed: ta.ParsedBreak,
    where: Location,
    co_name: str,
    co_file: str,
    compiled: AbstractSet[tuple[str, str]] = frozenset(),
) -> Location | None:
    """The innermost user frame on the way to `where`, when that is another line: from the
    compiled function inwards (the frames above it, a script or a command-line entry point,
    only call it), or the user frame just above a library function compiled on its own when
    that frame is itself a compiled function (it broke at its call into the library)."""
    outer = _outer_frame(parsed, co_name, co_file)
    if outer is None:
        return None
    index = parsed.frames.index(outer)
    for frame in reversed(parsed.frames[index:]):
        if is_user_file(frame.file):
            if (frame.file, frame.line) == (where.file, where.line):
                return None
            return _location(frame)
    caller = next((f for f in reversed(parsed.frames[:index]) if is_user_file(f.file)), None)
    if caller is not None and (caller.file, caller.function) in compiled:
        return _location(caller)
    return None


def _via(parsed: ta.ParsedBreak, reached: Location, where: Location) -> tuple[Location, ...]:
    """The frames between the user's line and where Dynamo broke, outermost first: the library
    calls the user's line goes through (a functional form, the constructor it runs)."""
    frames = list(parsed.frames)
    start = next(
        (i for i in range(len(frames) - 1, -1, -1) if _at(frames[i], reached.file, reached.line)),
        None,
    )
    if start is None:
        return ()
    inner = frames[start + 1 :]
    end = next((i for i, f in enumerate(inner) if _at(f, where.file, where.line)), len(inner))
    return tuple(_location(f) for f in inner[:end])


def _stack(parsed: ta.ParsedBreak, co_name: str, co_file: str) -> tuple[Location, ...]:
    """The frames from the compiled function's own to where Dynamo broke, outermost first."""
    outer = _outer_frame(parsed, co_name, co_file)
    if outer is None:
        return ()
    return tuple(_location(f) for f in parsed.frames[parsed.frames.index(outer) :])


def _at(frame: ta.UserFrame, file: str, line: int) -> bool:
    return (frame.file, frame.line) == (file, line)


def _outer_frame(parsed: ta.ParsedBreak, co_name: str, co_file: str) -> ta.UserFrame | None:
    """The frame of the compiled function itself (where the break leaves the compiled code)."""
    if not co_name:
        return None
    names = {co_name}
    origin = ta.resume_origin(co_name)
    if origin is not None:
        names.add(origin[0])
    for frame in parsed.frames:
        if frame.function in names and (not co_file or frame.file == co_file):
            return frame
    return None


def _frames(
    records: _Records, met: dict[str, list[SiteKey]], ids: Mapping[SiteKey, str]
) -> list[FrameRecord]:
    frames: list[FrameRecord] = []
    for cid in records.order:
        m = records.metrics.get(cid)
        if m is None:
            if cid in records.starts:
                records.notes.append(Note("compile_without_metrics", cid))
            continue
        co_name = str(m.get("co_name") or "")
        keys = met.get(cid, [])
        origin = ta.resume_origin(co_name)
        ops = m.get("graph_op_count")
        reason = _str_or_none(m.get("recompile_reason")) or records.recompile_text.get(cid)
        frames.append(
            FrameRecord(
                compile_id=cid,
                function=co_name,
                file=str(m.get("co_filename") or ""),
                first_line=int(m.get("co_firstlineno") or 0),
                ops=int(ops) if ops is not None else None,
                compile_s=_float(m.get("entire_frame_compile_time_s")),
                skipped=bool(m.get("fail_type")) and not m.get("has_guarded_code"),
                break_ids=tuple(ids[k] for k in keys),
                end_break_id=ids[keys[-1]] if keys else None,
                resume_of=origin[0] if origin else None,
                resume_line=origin[1] if origin else None,
                recompile_reason=ta.one_line_guard_reason(reason) if reason else None,
                ddp_graphs=records.ddp_graphs.get(cid, 0),
            )
        )
    return frames


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


def _site(site_id: str, group: _SiteGroup, frames: Mapping[str, FrameRecord]) -> BreakSite:
    skipped = tuple(c for c in group.compile_ids if c in frames and frames[c].skipped)
    for cid in group.compile_ids:
        resumed = _resume_location(cid, frames)
        if resumed is not None:
            _add_location(group, resumed)
    return BreakSite(
        id=site_id,
        gb_code=group.part.gb_code,
        gb_type=group.part.gb_type,
        where=group.where,
        explanation=group.part.explanation,
        hints=group.part.hints,
        reached_from=group.reached_from,
        via=group.via,
        stack=group.stack,
        also_at=tuple(group.also_at),
        compile_ids=tuple(group.compile_ids),
        skipped_frames=skipped,
        skip_code=group.skip_code,
        doc_url=ta.gb_doc_url(group.part.gb_code),
    )


def _resume_location(cid: str, frames: Mapping[str, FrameRecord]) -> Location | None:
    """Where the frame `cid` leaves its graph for this break: the line its resume function
    starts at (the caller's line for a break inside a call)."""
    origin = frames.get(cid)
    if origin is None:
        return None
    for frame in frames.values():
        if frame.resumes == cid and frame.resume_line is not None:
            function = origin.resume_of or origin.function
            line = frame.resume_line
            return Location(origin.file, line, function, ta.source_line(origin.file, line))
    return None


def _graphs(frames: list[FrameRecord], graph_text: Mapping[str, str]) -> tuple[GraphRecord, ...]:
    return tuple(
        GraphRecord(
            compile_id=f.compile_id,
            function=f.function,
            file=f.file,
            lines=ta.graph_source_lines(graph_text.get(f.compile_id, ""), f.file)
            or ((f.first_line,) if f.ops else ()),
            ops=f.ops or 0,
            compile_s=f.compile_s,
            recompile_reason=f.recompile_reason,
            end_reason="graph_break" if f.end_break_id else "return_value",
            ddp_graphs=f.ddp_graphs,
        )
        for f in frames
        if f.ops is not None and not f.skipped
    )


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def _str_or_none(value: Any) -> str | None:
    return str(value) if value else None


def _recompile(frame: FrameRecord) -> RecompileRecord:
    reason = frame.recompile_reason or ""
    cause, dim = ta.recompile_cause(reason)
    return RecompileRecord(
        frame.compile_id,
        frame.function,
        reason,
        frame.compile_s,
        cause=cause,
        dim=dim,
        backend_switch=ta.is_backend_switch(reason),
    )
