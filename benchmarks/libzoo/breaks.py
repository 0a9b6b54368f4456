"""Collect Dynamo's graph breaks from its structured trace, independent of the advisor's capture.

Dynamo writes one `dynamo_graph_break_reason` artifact to its structured trace for every graph
break it takes (and for every frame it skips after one, while its `graph_breaks` logs are on).
The torch adapter's listener (`StructuredTraceListener`, with `quiet_graph_break_logs`) keeps
them while a compiled function runs, and this module parses them with its own parser (not the
advisor's: the survey is a check on the advisor's capture):

    with BreakRecorder() as recorder:
        torch.compile(fn, backend="eager")(*args)
    recorder.breaks, recorder.graphs

Two payload shapes occur (torch 2.13):
- a break Dynamo resumes after: "Graph break in user code at FILE:LINE", then "Graph Break
  Reason: ...", the gb_type on its own line above "  Explanation:", a doc link ending
  `/gb/gbNNNN.html`, then the user traceback and the Python traceback;
- a skipped frame: "Graph break: torch.compile cannot properly resume from this graph break,
  which results in a skip." with the user stack (its last frame is where it broke) and the
  Python traceback of the `Unsupported` error (its doc link gives the code).
"""

from __future__ import annotations

import linecache
import os
import re
import sysconfig
from collections.abc import Collection, Iterator
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from typing import Any

from advisor.measure import torch_adapter as ta
from benchmarks.survey_common import SITE_PACKAGES, short_path

_USER_CODE_AT = re.compile(r"Graph break in user code at (.+):(\d+)")
# What Dynamo's messages say when it gives up on a frame (the whole function, a loop's frame,
# or the rest of the function after the last graph it could compile) and runs it eagerly.
_SKIP_MARKERS = (
    "which results in a skip",  # convert_frame: cannot resume, the frame is skipped
    "Skipping the function and falling back to eager",  # the root frame failed to resume
    "graph breaks in loops are not supported",  # a break inside a loop skips the loop's frame
    "then skipping the rest of the function",  # no checkpoint to resume from
)
_DYNAMO = "torch/_dynamo/"  # Dynamo's own wrapper frames (short paths)
_GB_CODE = re.compile(r"/gb/gb(\d+)\.html")
_FRAME = re.compile(r'^  File "([^"]+)", line (\d+)', re.MULTILINE)
_STACK_HEADERS = ("User code traceback:", "The graph break occurred in the following user code:")


@dataclass
class GraphBreak:
    """One break site: the registry code, where Dynamo broke, and the stack that led there."""

    gb_code: str | None  # "GB0170"; None when the payload has no doc link
    gb_type: str | None  # "Data-dependent branching"
    file: str
    line: int
    frame_skipped: bool  # Dynamo gave up on the frame: it runs eagerly (or its rest does)
    stack: list[str] = field(default_factory=list)  # "file:line", outermost first
    codes: list[str] = field(default_factory=list)  # every code in the payload (chained causes)
    count: int = 1  # how many times this site was reported (recompiles, restarts)
    # the frames Dynamo was compiling when it broke here ("file:first line (name)"); for a
    # skipped frame, the frames it skipped
    frames: list[str] = field(default_factory=list)

    @property
    def in_library(self) -> bool:
        return is_library_file(self.file)

    @property
    def where(self) -> str:
        return f"{short_path(self.file)}:{self.line}"

    def key(self) -> tuple[Any, ...]:
        return (self.gb_code, self.file, self.line, self.frame_skipped)

    def as_dict(self, callers: Collection[str] = ()) -> dict[str, Any]:
        """A JSON-able record; `callers`: files of the code that called the compiled function
        (a survey or a test), whose frames the stack leaves out."""
        record = asdict(self)
        del record["file"], record["line"]
        record["where"] = self.where
        record["code"] = linecache.getline(self.file, self.line).strip()  # the line's source
        record["in_library"] = self.in_library
        stack = _workload_frames(self.stack, callers)
        record["stack"] = [_short_frame(frame) for frame in stack]
        user_frames = [f for f in stack if not is_library_file(f.rsplit(":", 1)[0])]
        # the innermost frame of the user's own code on the way to the break (None: the
        # compiled function itself is library code and so is everything under it)
        record["user_frame"] = _short_frame(user_frames[-1]) if user_frames else None
        return record


def is_library_file(file: str) -> bool:
    """Library code: an installed package (site-packages) or the standard library; the torch
    package counts too. Everything else (this repository) is the user's code."""
    if SITE_PACKAGES in file:
        return True
    stdlib = sysconfig.get_paths()["stdlib"]
    return file.startswith(stdlib + os.sep)


def _workload_frames(stack: list[str], callers: Collection[str]) -> list[str]:
    """The frames below the last caller frame (the stack also holds the frames that called the
    compiled function), without Dynamo's own wrappers."""
    files = [frame.rsplit(":", 1)[0] for frame in stack]
    last_caller = max((i for i, file in enumerate(files) if file in callers), default=-1)
    return [f for f in stack[last_caller + 1 :] if not _is_dynamo_file(f.rsplit(":", 1)[0])]


def _short_frame(frame: str) -> str:
    file, line = frame.rsplit(":", 1)
    return f"{short_path(file)}:{line}"


def parse_break(payload: str) -> GraphBreak | None:
    """One `dynamo_graph_break_reason` payload as a GraphBreak (None if it has no location)."""
    user_part, _, exception_part = payload.partition("Traceback (most recent call last)")
    codes = [f"GB{c}" for c in _GB_CODE.findall(payload)]
    # the user stack follows its header (the explanation above it can quote other frames)
    stack_text = user_part
    for header in _STACK_HEADERS:
        if header in user_part:
            stack_text = user_part.rsplit(header, 1)[1]
            break
    stack = [f"{file}:{line}" for file, line in _FRAME.findall(stack_text)]
    skipped = any(marker in user_part for marker in _SKIP_MARKERS)
    match = _USER_CODE_AT.search(user_part)
    if match:
        file, line = match.group(1), int(match.group(2))
    elif stack:
        file, line_text = stack[-1].rsplit(":", 1)
        line = int(line_text)
    else:
        return None
    if _is_dynamo_file(file):
        # a break inside one of Dynamo's polyfills (its `all()`, `any()`...): the line that
        # called it is the code's own
        outside = [frame for frame in stack if not _is_dynamo_file(frame.rsplit(":", 1)[0])]
        if outside:
            file, line_text = outside[-1].rsplit(":", 1)
            line = int(line_text)
    return GraphBreak(
        gb_code=codes[0] if codes else None,
        gb_type=_gb_type(payload if match else exception_part),
        file=file,
        line=line,
        frame_skipped=skipped,
        stack=stack,
        codes=list(dict.fromkeys(codes)),
    )


def _is_dynamo_file(file: str) -> bool:
    return os.sep + os.path.join("torch", "_dynamo") + os.sep in file


def _gb_type(text: str) -> str | None:
    """The gb_type: the line above the first "  Explanation:" (the registry's message layout)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("  Explanation:") and i > 0:
            candidate = lines[i - 1].strip().removeprefix("Graph Break Reason: ")
            # an exception line reads "torch._dynamo.exc.Unsupported: <gb_type>"
            return candidate.split(": ", 1)[1] if candidate.startswith("torch.") else candidate
    return None


class BreakRecorder:
    """Dynamo's structured trace, listened to while inside (a context manager): the graph-break
    payloads, the frames they were reported in and the output graphs. The listener and the
    `graph_breaks` logs it needs are the advisor's torch adapter's; the payloads are read here,
    by this module's own parser."""

    def __init__(self) -> None:
        self._listener = ta.StructuredTraceListener()
        self._inside = ExitStack()

    @property
    def graphs(self) -> int:
        """Output graphs so far (one per graph Dynamo hands to the backend)."""
        return sum(r.event == "dynamo_output_graph" for r in self._listener.records)

    @property
    def payloads(self) -> list[str]:
        return [payload for payload, _ in self._payloads()]

    def _payloads(self) -> list[tuple[str, str | None]]:
        """(payload, compile id) of every `dynamo_graph_break_reason` artifact, in order."""
        return [
            (r.payload, r.compile_id)
            for r in self._listener.records
            if r.event == "dynamo_graph_break_reason" and r.payload is not None
        ]

    def _frame_names(self) -> dict[str | None, str]:
        """compile id -> "file:first line (name)" of the frame it compiled."""
        names: dict[str | None, str] = {}
        for r in self._listener.records:
            if r.event == "compilation_metrics" and r.data.get("co_filename"):
                file = short_path(str(r.data["co_filename"]))
                names[r.compile_id] = (
                    f"{file}:{r.data.get('co_firstlineno')} ({r.data.get('co_name')})"
                )
        return names

    @property
    def breaks(self) -> list[GraphBreak]:
        """Distinct break sites in the order first seen; repeats counted."""
        sites: dict[tuple[Any, ...], GraphBreak] = {}
        names = self._frame_names()
        for payload, compile_id in self._payloads():
            brk = parse_break(payload)
            if brk is None:
                continue
            site = sites.get(brk.key())
            if site is None:
                site = sites[brk.key()] = brk
            else:
                site.count += 1
            name = names.get(compile_id)
            if name is not None and name not in site.frames and not name.startswith(_DYNAMO):
                site.frames.append(name)
        return list(sites.values())

    def __enter__(self) -> BreakRecorder:
        self._inside.enter_context(ta.quiet_graph_break_logs())
        self._inside.enter_context(self._listener)
        return self

    def __exit__(self, *exc: object) -> None:
        self._inside.close()


def iter_tensors(value: Any) -> Iterator[Any]:
    """The tensors in an output, in a fixed order (tuples, lists, dicts and dataclass-like
    objects with tensor attributes)."""
    import torch

    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from iter_tensors(item)
    elif isinstance(value, dict):
        for key in value:
            yield from iter_tensors(value[key])
    elif hasattr(value, "__dict__") and not callable(value):
        for key in sorted(vars(value)):
            item = vars(value)[key]
            if isinstance(item, (torch.Tensor, tuple, list, dict)):
                yield from iter_tensors(item)


def max_abs_diff(expected: Any, actual: Any) -> float | None:
    """The largest absolute difference between two outputs' tensors (None: the structures or
    shapes differ); exact-equal NaNs count as equal."""
    import torch

    left, right = list(iter_tensors(expected)), list(iter_tensors(actual))
    if len(left) != len(right):
        return None
    worst = 0.0
    for a, b in zip(left, right, strict=True):
        if a.shape != b.shape or a.dtype != b.dtype:
            return None
        if a.numel() == 0:
            continue
        if a.dtype == torch.bool or not (a.is_floating_point() or a.is_complex()):
            worst = max(worst, 0.0 if torch.equal(a, b) else float("inf"))
            continue
        diff = (a.double() - b.double()).abs()
        both_nan = a.isnan() & b.isnan()
        diff = torch.where(both_nan, torch.zeros_like(diff), diff)
        worst = max(worst, float(diff.max()) if not diff.isnan().any() else float("inf"))
    return worst


def outputs_equal(expected: Any, actual: Any) -> bool:
    """Bitwise equality of two outputs' tensors."""
    return max_abs_diff(expected, actual) == 0.0


def describe_failure(exc: BaseException) -> dict[str, Any]:
    """A failed compile (fullgraph=True, or a crash) as a record: the exception type, its
    registry code and gb_type when Dynamo gave them, and the innermost frame of its "from user
    code" stack."""
    message = str(exc)
    codes = _GB_CODE.findall(message)
    # Dynamo's errors end with "from user code:" and a stack, Inductor's lowering errors with
    # "Found from :" and the traced line
    _, _, user_stack = message.partition("from user code:")
    if not user_stack:
        _, _, user_stack = message.partition("Found from :")
    frames = _FRAME.findall(user_stack) or re.findall(r'File "([^"]+)", line (\d+)', user_stack)
    frames = [f for f in frames if not _is_dynamo_file(f[0])] or frames
    where = None
    if frames:
        file, line = frames[-1]
        where = f"{short_path(file)}:{line}"
    first_line = next((line for line in message.splitlines() if line.strip()), "")
    return {
        "ok": False,
        "error_type": type(exc).__name__,
        "gb_code": f"GB{codes[0]}" if codes else None,
        "gb_type": _gb_type(message) or (first_line if codes else None),
        "where": where,
        "in_library": is_library_file(frames[-1][0]) if frames else None,
        "message": first_line[:300],
    }
