"""The terminal summary fits the terminal: no line of it is wider than the width it is given
(or the terminal's, `COLUMNS` included), whatever the report holds; actions lead with a short
title and put their caveat and numerics note on lines of their own.

Reports, none of which runs torch.compile here:
- the committed example runs (reports/examples: print_logging, moe_nonzero_routing and
  item_in_decode_loop broken and fixed), as saved and re-judged from their measurements.json;
- the recorded break cases of tests/data (print, if, item, nonzero, loop, disable, recompile...:
  the breaks of print_logging, data_dependent_branch, item_in_decode_loop, moe_nonzero_routing,
  loop_frame_skip, disabled_helper and dynamic_shapes_recompile), judged with made-up timings;
- a hand-made report with every text long: deep paths, library code, long titles and remarks
  (the scenarios with no recording: numpy_interop, third_party_call, cold_path_check, the
  training ones, differ from these in words, not in the shape of the summary).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.cells import cell_len

from advisor.core.artifacts import Capture, Measurements, ProfileTrace
from advisor.core.model import (
    Action,
    CodeUnit,
    Environment,
    LatencyStats,
    Location,
    ModeResult,
    Note,
    RecompileAdvice,
    Report,
    Settings,
    WorkloadInfo,
)
from advisor.judge import judge
from advisor.render.actions import GUARD_CONDITION
from advisor.render.console import render_text
from advisor.render.markdown import render_markdown
from advisor.render.report_io import load_measurements, load_report
from tests.support.reports import full_report, print_entry, print_site

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "reports" / "examples"
DATA = ROOT / "tests" / "data"
WIDTHS = (80, 120)

EXAMPLE_RUNS = sorted(p.parent for p in EXAMPLES.rglob("measurements.json"))
RECORDED_CASES = sorted(p.name.split(".")[0] for p in DATA.glob("*.capture.json"))


def recorded_case(name: str) -> Report:
    """A recorded case of tests/cases/breaks.py judged as if default took 0.105 ms, eager 0.2."""
    capture = Capture.from_json((DATA / f"{name}.capture.json").read_text())
    trace = ProfileTrace.from_json((DATA / f"{name}.trace.json").read_text())
    samples = (0.104, 0.106, 0.105, 0.107, 0.105)
    default = ModeResult("default", "ok", 1.0, LatencyStats(0.105, 0.002, 5, samples))
    eager = ModeResult("eager", "ok", 0.01, LatencyStats(0.2, 0.004, 5, (0.2,) * 5))
    workload = WorkloadInfo(name, f"tests/cases/breaks.py:{name}", "cpu")
    environment = Environment("2.13.0+cpu", "3.11", "cpu")
    return judge(Measurements(workload, environment, Settings(), (eager, default), capture, trace))


# Two deep folders, so the paths shown stay long (they are shown relative to the common one).
DEEP_A = "/home/someone/" + "a_rather_long_folder_name/" * 4 + "model_with_a_long_name.py"
DEEP_B = "/home/someone/" + "another_long_folder/" * 4 + "layers_with_long_names.py"
LIBRARY = "/opt/venv/lib/python3.11/site-packages/somelib/modeling/attention_implementations.py"
LONG_CODE = "print(f'hidden state {tuple(hidden.shape)} dtype {hidden.dtype} " + "x" * 90 + "')"
NO_SPACES = "/tmp/" + "unbreakable_" * 12 + "target.py:make"  # one token wider than 80


def long_report() -> Report:
    """Every text of the summary long: the workload, paths, code, titles, notes, warnings."""
    base = full_report()
    site = dataclasses.replace(
        print_site(),
        where=Location(DEEP_A, 7, "trace_the_hidden_states_of_the_model", LONG_CODE),
        gb_type="Failed to trace builtin operator in a function with a long name",
    )
    numerics = {"matches_eager": True, "max_abs_diff": 3e-8, "default_abs_diff": 3e-8}
    layers = tuple(
        CodeUnit(f"model.encoder.layers.{i}.self_attention", "forward", Location(DEEP_B, 10 + i))
        for i in range(6)
    )
    actions = (
        Action(
            "isolate",
            0.033,
            (0.032, 0.034),
            True,
            ("B1",),
            fix="isolate",
            **numerics,
            where=site.where,
        ),
        Action("guards", 0.0074, (0.0061, 0.0097), True, safe=False, **numerics),
        Action("knob", 0.02, (0.01, 0.03), True, ("B1",), knob="optimize_ddp=False", step_ms=0.4),
        Action("upstream", 0.01, None, False, ("B1",), where=Location(LIBRARY, 123)),
        Action("disable", 0.02, (0.01, 0.03), True, ("B1",), subjects=layers, step_ms=0.45),
        Action("regional", 0.02, (0.01, 0.03), True, ("B1",), subjects=layers, step_ms=0.45),
        Action("eager", 0.01, None, True, fix="compile_failed", where=Location(DEEP_B, 99)),
        Action("dynamic", None, dims=(0, 1, 2), compile_s=0.3),
    )
    return dataclasses.replace(
        base,
        workload=WorkloadInfo(
            "a_workload_with_a_rather_long_name_indeed", NO_SPACES, "cpu", (("hidden", "4096"),)
        ),
        sites=(site,),
        breaks=(dataclasses.replace(print_entry(), site=site),),
        actions=actions,
        recompiles=(
            RecompileAdvice(
                "0/1", "forward", f"tensor 'x' size mismatch {'at index 0 ' * 20}", "size", 0, 0.3
            ),
        ),
        warnings=(*base.warnings, Note("capture_unreadable", detail=f"could not read {DEEP_A}")),
    )


def sites_only(report: Report) -> Report:
    """Breaks captured but not costed (no profile): the other break table."""
    return dataclasses.replace(report, breaks=(), ledger=None, actions=())


REPORTS: dict[str, Callable[[], Report]] = {
    **{f"saved:{p.relative_to(EXAMPLES)}": (lambda p=p: load_report(p)) for p in EXAMPLE_RUNS},
    **{
        f"judged:{p.relative_to(EXAMPLES)}": (lambda p=p: judge(load_measurements(p)))
        for p in EXAMPLE_RUNS
    },
    **{f"case:{name}": (lambda name=name: recorded_case(name)) for name in RECORDED_CASES},
    "long": long_report,
    "long, not costed": lambda: sites_only(long_report()),
}


def too_wide(text: str, width: int) -> list[str]:
    """The lines wider than `width` but those that are one unbreakable token (a path)."""
    return [line for line in text.splitlines() if cell_len(line) > width and len(line.split()) > 1]


def test_the_recordings_are_there() -> None:
    """So the parametrised tests below cannot pass by having nothing to render."""
    assert len(EXAMPLE_RUNS) >= 4 and {"print", "if", "loop", "nonzero"} <= set(RECORDED_CASES)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", sorted(REPORTS))
def test_no_line_is_wider_than_the_terminal(name: str, width: int) -> None:
    text = render_text(REPORTS[name](), width=width)
    assert not too_wide(text, width), "\n".join(too_wide(text, width))
    assert "\x1b" not in text  # plain text, no colour codes


def test_the_long_report_would_not_fit_unwrapped() -> None:
    """So the width test above has something to wrap: at 1000 columns it is far wider."""
    assert too_wide(render_text(long_report(), width=1000), 120)


@pytest.mark.parametrize("columns", (60, 80, 100))
def test_columns_is_honoured_without_a_width(monkeypatch: pytest.MonkeyPatch, columns: int) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    lines = render_text(long_report()).splitlines()
    assert not too_wide("\n".join(lines), columns)
    # and the width is used, not only kept under: some line comes close to it
    assert max(cell_len(line) for line in lines) > columns - 10


def test_actions_lead_with_a_short_title_their_notes_below(monkeypatch: pytest.MonkeyPatch) -> None:
    report = long_report()
    text = render_text(report, width=120)
    title_line = next(line for line in text.splitlines() if line.startswith("2. Reduce guard"))
    assert "safe only while" not in title_line and "differs from eager" not in title_line
    assert re.search(r"^ {3}safe only while every call keeps", text, re.M)
    assert re.search(r"^ {3}with one graph, DDP all-reduces the gradients", text, re.M)
    # the numerics note every variant shares (all rounding) is said once, under the actions
    shared = "Every compiled variant measured here matches eager: its output differs from"
    assert text.count(shared) == 1 and "its output differs" not in text.replace(shared, "")
    # report.md keeps the whole title in its cell, and the shared note once under the table
    md = render_markdown(report)
    assert f"once warm (measured): {GUARD_CONDITION} " in md and md.count(shared) == 1


def test_plain_ascii_rules_and_no_colour_even_when_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    text = render_text(full_report(), width=100)
    assert "\x1b" not in text
    assert not re.search(r"[\u2500-\u257f]", text)  # box-drawing characters
    assert re.search(r"^-- -+ ", text, re.M)  # the rule under a header, in ASCII


def test_breaks_are_a_list_where_the_table_would_fold_the_source_line() -> None:
    """At 80 columns the numbers and the verdict leave the break column about 20 characters:
    a break whose source line does not fit there is listed instead, its source line whole on a
    line of its own under its place and verdict. One that fits keeps the table."""
    report = long_report()
    source = report.breaks[0].site.where.code[:50]
    narrow = render_text(report, width=80)
    listed = narrow[narrow.index("Graph breaks") :].splitlines()
    assert "gap ms" not in listed[1]  # no table header
    assert re.match(r"1  \S+$", listed[1])  # its place, a path folded at the edge
    assert listed[2].endswith("model_with_a_long_name.py:7: isolate")
    assert listed[4] == f"   {source}"
    numbers = r"^   runs 2x a call; gap \S+ ms, cost \S+ ms \(\S+ of the step\)$"
    assert re.match(numbers, listed[5])
    wide = render_text(report, width=200)
    assert re.search(r"^#  break +per call +gap ms +cost ms +share +verdict", wide, re.M)
    assert "runs 2x a call" not in wide
    fits = render_text(recorded_case("if"), width=80)
    assert re.search(r"^#  break +per call +gap ms +cost ms +share +verdict", fits, re.M)
