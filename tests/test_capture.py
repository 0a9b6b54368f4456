"""Capture in the same (real) compile: backend="eager" for structure. Checks the cases where
`explain` is wrong, and that a CaptureSession leaves no handler behind."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch

from advisor import torch_adapter as ta
from advisor.capture import CaptureSession, capture_workload
from tests.cases.breaks import CASES, FILE, f_print, marker_line


def run_case(name: str):
    case = CASES[name]
    extra = tuple(make() for make in case.extra_args)
    return capture_workload(case.build(), case.make_args(), backend="eager", extra_calls=extra)


@pytest.mark.parametrize("name", list(CASES))
def test_true_breaks_codes_and_lines(name: str) -> None:
    case = CASES[name]
    capture = run_case(name)
    assert [(b.gb_code, b.file, b.line) for b in capture.breaks] == [
        (code, FILE, line) for code, line in case.expected()
    ]
    for b in capture.breaks:
        assert b.gb_type and b.explanation and b.code.endswith(f"# BREAK:{b.code.split(':')[-1]}")
        assert b.doc_url and b.gb_code and b.gb_code.lower() in b.doc_url
    assert capture.warnings == ()
    ta.reset_dynamo()


def test_data_dependent_branch_gets_registry_code_not_generic_jump() -> None:
    (b,) = run_case("if").breaks
    assert (b.gb_code, b.gb_type) == ("GB0170", "Data-dependent branching")
    assert b.hints


def test_loop_break_is_one_skipped_frame_break() -> None:
    capture = run_case("loop")
    (b,) = capture.breaks
    assert (b.gb_code, b.frame_skipped, b.skip_code) == ("GB0059", True, "GB7000")
    assert capture.graphs == ()
    assert capture.frames[0].skipped and capture.root_skip_break_id == "B1"


def test_submodule_break_once_with_outer_frame() -> None:
    capture = run_case("module")
    (b,) = capture.breaks
    assert b.compile_ids == ("0/0", "1/0")
    assert (b.outer_function, b.outer_line) == ("forward", marker_line("module") + 13)
    assert [g.compile_id for g in capture.graphs] == ["0/0", "1/0", "2/0", "3/0"]
    assert capture.frame("3/0").resumes == "0/0"  # type: ignore[union-attr]
    assert capture.frame("2/0").resumes == "1/0"  # type: ignore[union-attr]


def test_two_breaks_in_a_row_and_graph_records() -> None:
    capture = run_case("double")
    assert [b.line for b in capture.breaks] == [marker_line("double1"), marker_line("double2")]
    g = {g.compile_id: g for g in capture.graphs}
    assert g["0/0"].ops == 2 and g["0/0"].lines == (marker_line("double1") - 1,)
    assert g["1/0"].ops == 0 and g["1/0"].end_reason == "graph_break"
    assert g["2/0"].end_reason == "return_value" and g["2/0"].compile_s is not None


def test_recompile_reason_recorded() -> None:
    capture = run_case("recompile")
    assert [r.compile_id for r in capture.recompiles] == ["0/1", "1/1"]
    assert "size mismatch" in capture.recompiles[0].reason
    assert capture.breaks[0].compile_ids == ("0/0", "0/1")


def test_session_removes_its_handler_and_restores_level() -> None:
    logger = logging.getLogger(ta.TRACE_LOGGER)
    before = (list(logger.handlers), logger.level)
    ta.reset_dynamo()
    with CaptureSession() as session:
        torch.compile(f_print, backend="eager")(torch.ones(4))
        assert len(logger.handlers) == len(before[0]) + 1
    assert (list(logger.handlers), logger.level) == before
    assert len(session.result().breaks) == 1
    # nothing is recorded after exit
    n = len(session.records)
    ta.reset_dynamo()
    torch.compile(f_print, backend="eager")(torch.ones(4))
    assert len(session.records) == n


def test_parse_break_artifact_chain() -> None:
    text = (
        "Graph break in user code at /x/y.py:7\n"
        "Graph Break Reason: Failed to handle graph break gracefully. Skipping.\n\n"
        "Failed to trace builtin operator\n  Explanation: no print\n  Hint: move it\n\n"
        " For more details, please visit: https://x/gb/gb0059.html\n\n"
        "*** While handling this graph break, another graph break occurred: ***\n\n"
        "graph break in loop\n  Explanation: loop\n\n"
        "User code traceback:\n"
        '  File "/x/y.py", line 5, in outer\n    inner()\n'
        '  File "/x/y.py", line 7, in inner\n    print(1)\n'
    )
    parsed = ta.parse_break_artifact(text)
    assert parsed is not None
    assert [p.gb_code for p in parsed.parts] == ["GB0059", "GB7000"]
    assert parsed.parts[0].hints == ("move it",)
    assert [(f.line, f.function, f.code) for f in parsed.frames] == [
        (5, "outer", "inner()"),
        (7, "inner", "print(1)"),
    ]
    assert Path(parsed.file).name == "y.py" and parsed.line == 7


def test_break_location_is_user_code_inside_the_compiled_frame() -> None:
    from advisor import capture

    torch_dir = str(Path(torch.__file__).parent)
    advisor_dir = str(Path(capture.__file__).parent)
    script = ta.UserFrame("/home/u/train.py", 40, "<module>", "out = model(x)")
    harness = ta.UserFrame(f"{advisor_dir}/harness.py", 253, "call", "return compiled(*args)")
    module = ta.UserFrame(f"{torch_dir}/nn/modules/module.py", 1789, "_call_impl", "")
    forward = ta.UserFrame("/home/u/model.py", 12, "forward", "if x.sum() > 0:")
    functional = ta.UserFrame(f"{torch_dir}/nn/functional.py", 99, "relu", "")
    parts = (ta.BreakPart("GB0170", "Data-dependent branching", "", ()),)
    parsed = ta.ParsedBreak(
        functional.file, 99, parts, (script, harness, module, forward, functional)
    )
    assert capture._innermost_user_frame(parsed, "forward", forward.file) == forward
    # The harness (this tool) is never the user's code, nor is a caller above the compiled
    # frame: with no user frame inside it, the break is where Dynamo stopped.
    # Dynamo stopped inside torch, below the user's line: that library line is kept apart.
    assert capture._library_stop(parsed, forward) == (functional.file, 99)
    inner = ta.UserFrame(f"{torch_dir}/_dynamo/external_utils.py", 69, "inner", "")
    parsed = ta.ParsedBreak(inner.file, 69, parts, (script, harness, module, inner))
    assert capture._innermost_user_frame(parsed, "inner", inner.file) == inner
    assert capture._library_stop(parsed, inner) is None  # already the reported line


def test_recompile_reason_is_one_line() -> None:
    from advisor.capture import _one_line

    raw = (
        "2/0: len(seen) == 6                                   # seen.append(x)  # m.py:71 in f"
        '\nUser stack trace:\n  File "m.py", line 71, in f\n    seen.append(x)'
    )
    assert _one_line(raw) == "2/0: len(seen) == 6 # seen.append(x) # m.py:71 in f"
