"""Dynamo's text formats: the graph-break registry (codes, documentation links), break
messages and the `dynamo_graph_break_reason` artifact, a failed compile's exception, guard
failure reasons, printed FX graphs and resume-function names. Parsers of recorded text: no torch
is imported except to find torch's own files.
"""

from __future__ import annotations

import functools
import linecache
import re
from dataclasses import dataclass

from advisor.core.model import ModeError

GB_DOC_URL = "https://meta-pytorch.github.io/compile-graph-break-site/gb/{code}.html"
_GB_LINK = re.compile(r"/gb/(gb\d{4})\.html", re.IGNORECASE)


# --- the graph-break registry ----------------------------------------------------------------


@functools.cache
def gb_type_to_code() -> dict[str, str]:
    """gb_type (first line of a break message) -> registry id such as 'GB0059'."""
    try:
        from torch._dynamo.exc import _load_gb_type_to_gb_id_map
    except ImportError:
        return {}
    try:
        return dict(_load_gb_type_to_gb_id_map())
    except (OSError, ValueError, KeyError):  # registry file missing or unreadable
        return {}


def gb_code_for(gb_type: str | None, message: str = "") -> str | None:
    """Registry id for a break: from its gb_type, else from a documentation link in the message."""
    if gb_type:
        code = gb_type_to_code().get(gb_type)
        if code:
            return code
    match = _GB_LINK.search(message or "")
    return match.group(1).upper() if match else None


def gb_doc_url(code: str | None) -> str | None:
    return GB_DOC_URL.format(code=code.lower()) if code else None


@dataclass(frozen=True)
class BreakMessage:
    """A break message split into its parts (the format of `format_graph_break_message`)."""

    gb_type: str
    explanation: str
    hints: tuple[str, ...]


def parse_break_message(message: str) -> BreakMessage:
    lines = (message or "").splitlines()
    gb_type = lines[0].strip() if lines else ""
    explanation_parts: list[str] = []
    hints: list[str] = []
    for raw in lines[1:]:
        line = raw.strip()
        if line.startswith("Explanation:"):
            explanation_parts.append(line.split(":", 1)[1].strip())
        elif line.startswith("Hint:"):
            hints.append(line.split(":", 1)[1].strip())
    return BreakMessage(gb_type, " ".join(explanation_parts), tuple(hints))


def source_line(filename: str, lineno: int | None) -> str:
    if not filename or not lineno:
        return ""
    return linecache.getline(filename, lineno).strip()


# --- failures of a compiled mode -------------------------------------------------------------


def describe_compile_failure(exc: BaseException) -> ModeError:
    """What a failed compile says: for Dynamo's Unsupported, the first break and where it is."""
    message = str(exc)
    gb_type = getattr(exc, "gb_type", None)
    parsed = parse_break_message(message)
    if not gb_type and parsed.gb_type and gb_code_for(parsed.gb_type):
        gb_type = parsed.gb_type
    file = line = code = None
    frame = getattr(exc, "innermost_user_frame_summary", None)
    stack = getattr(exc, "real_stack", None)
    if frame is None and stack:
        frame = stack[-1]
    if frame is not None:
        file, line = frame.filename, frame.lineno
        code = (frame.line or "").strip() or source_line(file, line)
    first = message.strip().splitlines()[0] if message.strip() else type(exc).__name__
    return ModeError(
        type=type(exc).__name__,
        message=first,
        gb_code=gb_code_for(gb_type, message),
        gb_type=gb_type,
        file=file,
        line=line,
        code=code,
    )


# --- guard failures ---------------------------------------------------------------------------


def is_backend_switch(reason: str) -> bool:
    """A 'recompile' caused only by another mode's backend owning the cached entry."""
    return "BACKEND_MATCH" in reason


_SIZE_GUARD = re.compile(r"size mismatch at index (\d+)")


def recompile_cause(reason: str) -> tuple[str, int | None]:
    """The failing guard's kind, read from its text, and for a size guard the dimension that
    changed: "size" | "dtype" | "rank" | "requires_grad" | "device" | "value" | "other"."""
    size = _SIZE_GUARD.search(reason)
    if size:
        return "size", int(size.group(1))
    for needle, cause in (
        ("dtype mismatch", "dtype"),
        ("rank mismatch", "rank"),
        ("dim mismatch", "rank"),
        ("requires_grad", "requires_grad"),
        ("device", "device"),
    ):
        if needle in reason:
            return cause, None
    if "==" in reason or "!=" in reason:
        return "value", None
    return "other", None


# --- the `dynamo_graph_break_reason` artifact -------------------------------------------------

_BREAK_AT = re.compile(r"^Graph break in user code at (?P<file>.+):(?P<line>\d+)\s*$")
_TB_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>.+)$')
_CHAINED = "*** While handling this graph break, another graph break occurred: ***"
_REASON_PREFIX = "Graph Break Reason:"


@dataclass(frozen=True)
class BreakPart:
    """One break message of a (possibly chained) break: registry code, gb_type, text."""

    gb_code: str | None
    gb_type: str
    explanation: str
    hints: tuple[str, ...]


@dataclass(frozen=True)
class UserFrame:
    file: str
    line: int
    function: str
    code: str


@dataclass(frozen=True)
class ParsedBreak:
    file: str
    line: int
    parts: tuple[BreakPart, ...]  # root cause first; e.g. (GB0059, GB7000) for a loop skip
    frames: tuple[UserFrame, ...]  # user traceback, outer to inner


def _parse_part(chunk: str) -> BreakPart | None:
    lines = chunk.splitlines()
    idx = next((i for i, ln in enumerate(lines) if ln.strip().startswith("Explanation:")), None)
    gb_type = ""
    if idx is not None:
        before = [ln.strip() for ln in lines[:idx] if ln.strip()]
        gb_type = before[-1] if before else ""
    else:
        first = [ln.strip() for ln in lines if ln.strip()]
        gb_type = first[0] if first else ""
    if gb_type.startswith(_REASON_PREFIX):
        gb_type = gb_type[len(_REASON_PREFIX) :].strip()
    if not gb_type:
        return None
    explanation: list[str] = []
    hints: list[str] = []
    mode = ""
    for raw in lines[(idx or 0) :]:
        text = raw.strip()
        if text.startswith("Explanation:"):
            mode = "e"
            explanation.append(text.split(":", 1)[1].strip())
        elif text.startswith("Hint:"):
            mode = "h"
            hints.append(text.split(":", 1)[1].strip())
        elif text.startswith(("Developer debug context:", "For more details")) or not text:
            mode = ""
        elif mode == "e":
            explanation.append(text)
        elif mode == "h":
            hints[-1] = f"{hints[-1]} {text}"
    return BreakPart(
        gb_code=gb_code_for(gb_type, chunk),
        gb_type=gb_type,
        explanation=" ".join(explanation),
        hints=tuple(hints),
    )


def parse_break_artifact(payload: str) -> ParsedBreak | None:
    """Parse Dynamo's `dynamo_graph_break_reason` text (the `graph_breaks` log message):

    Graph break in user code at FILE:LINE
    Graph Break Reason: [prefix:]  <gb_type> / Explanation / Hint... / doc link
    [*** While handling this graph break, another graph break occurred: *** <gb_type>...]
    User code traceback:
      File "...", line N, in fn
        source
    """
    text = payload or ""
    lines = text.splitlines()
    if not lines:
        return None
    head = _BREAK_AT.match(lines[0].strip())
    if head is None:
        return None
    body = "\n".join(lines[1:])
    reason, _, rest = body.partition("User code traceback:")
    tb_text = rest.split("\nTraceback (most recent call last)", 1)[0]
    parts = [p for p in (_parse_part(c) for c in reason.split(_CHAINED)) if p is not None]
    frames: list[UserFrame] = []
    tb_lines = tb_text.splitlines()
    for i, raw in enumerate(tb_lines):
        match = _TB_FRAME.match(raw)
        if match is None:
            continue
        code = ""
        if i + 1 < len(tb_lines) and not _TB_FRAME.match(tb_lines[i + 1]):
            code = tb_lines[i + 1].strip()
        file, line = match.group("file"), int(match.group("line"))
        frames.append(
            UserFrame(file, line, match.group("name").strip(), code or source_line(file, line))
        )
    return ParsedBreak(head.group("file"), int(head.group("line")), tuple(parts), tuple(frames))


@functools.cache
def _library_roots() -> tuple[str, ...]:
    import os
    import sysconfig

    import torch

    roots = {os.path.dirname(torch.__file__)}
    for key in ("stdlib", "platstdlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(path)
    return tuple(sorted(roots))


def is_library_file(filename: str) -> bool:
    """torch itself or the Python standard library (not the user's code)."""
    return filename.startswith(_library_roots()) or filename.startswith("<")


def resume_origin(co_name: str) -> tuple[str, int] | None:
    """`torch_dynamo_resume_in_<fn>_at_<line>` -> (fn, line)."""
    match = re.match(r"^torch_dynamo_resume_in_(?P<fn>.+)_at_(?P<line>\d+)$", co_name)
    return (match.group("fn"), int(match.group("line"))) if match else None


# --- Dynamo's text formats --------------------------------------------------------------------

_GRAPH_SOURCE = "# File: "  # the source comments in a printed FX graph


def graph_source_lines(graph_text: str, file: str) -> tuple[int, ...]:
    """Source lines a graph covers, from the `# File: path:line in fn, code:` comments of its
    printout (lines in `file` when there are any, else every line mentioned)."""
    mine: set[int] = set()
    anywhere: set[int] = set()
    for raw in graph_text.splitlines():
        line = raw.strip()
        if not line.startswith(_GRAPH_SOURCE):
            continue
        where = line[len(_GRAPH_SOURCE) :].split(" in ", 1)[0]
        path, _, number = where.rpartition(":")
        if not number.isdigit():
            continue
        anywhere.add(int(number))
        if path == file:
            mine.add(int(number))
    return tuple(sorted(mine or anywhere))


def one_line_guard_reason(reason: str) -> str:
    """A guard-failure reason as one line: Dynamo appends the user stack trace on later lines
    and pads the guard's source comment with spaces."""
    head = reason.split("\nUser stack trace:", 1)[0]
    return re.sub(r"\s+", " ", head).strip()


def is_recompile_id(compile_id: str) -> bool:
    """`frame/recompile` ids with a recompile count above zero (`0/1`, `3/2`)."""
    tail = compile_id.rsplit("/", 1)[-1]
    return tail.isdigit() and int(tail) > 0
