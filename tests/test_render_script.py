"""A script target (`advisor run train.py -- its args`) in every rendering: the console names
the script, the callable measured and where the script called it, within the terminal's width;
Markdown and HTML have a Script section with a row for every compiled callable, the measured one
marked, and the script's own output, which cannot inject markup; report.json keeps the survey
and reads it back equal. A report of no script renders as it did before there were scripts."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from advisor.cli import main
from advisor.core.model import CompiledCallable, Report, ScriptSurvey, report_from_json
from advisor.render.console import render_text
from advisor.render.html import render_html
from advisor.render.json_report import render_json
from advisor.render.markdown import md_fenced, render_markdown
from advisor.render.report_io import load_report
from advisor.render.view import build_view
from advisor.render.view_script import ordinal
from tests.support.reports import full_report
from tests.test_console_width import long_report, too_wide
from tests.test_escaping import HOSTILE, md_tokens, poisoned, tags

FOLDER = "/home/u/proj/examples/scripts"
SCRIPT = f"{FOLDER}/train_loop.py"
HOSTILE_OUT = "step 1 loss 0.5\n<script>alert(1)</script>\n```\n# not a heading\n````` x\n"


def survey(**changes: object) -> ScriptSurvey:
    """A training script with three compiled callables; the model's loop is measured."""
    callables = (
        CompiledCallable(
            "TinyNet",
            "module.compile()",
            SCRIPT,
            41,
            SCRIPT,
            58,
            calls=60,
            total_s=2.4,
            first_call_s=1.9,
            backward=True,
        ),
        CompiledCallable(
            "loss_fn", "torch.compile(fn)", SCRIPT, 30, SCRIPT, 59, calls=60, total_s=0.3
        ),
        CompiledCallable(
            "Evaluator.score",
            "torch.compile(fn)",
            f"{FOLDER}/evaluate.py",
            12,
            SCRIPT,
            70,
            calls=2,
            total_s=0.15,
        ),
    )
    base = ScriptSurvey(
        path="examples/scripts/train_loop.py",
        argv=("--steps", "60"),
        cwd="/home/u/proj",
        exit_code=0,
        ended="finished",
        wall_s=4.0,
        callables=callables,
        measured=0,
        unit="iteration",
        stdout_tail="step 59 loss 0.12\ndone\n",
        stderr_tail="",
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def scripted(**changes: object) -> Report:
    return dataclasses.replace(full_report(), script=survey(**changes))


# --- the console ---------------------------------------------------------------------------


@pytest.mark.parametrize("width", (80, 120))
@pytest.mark.parametrize("base", (full_report, long_report))
def test_console_names_the_script_and_fits(width: int, base: object) -> None:
    report = dataclasses.replace(base(), script=survey())  # type: ignore[operator]
    text = render_text(report, width=width)
    assert not too_wide(text, width), "\n".join(too_wide(text, width))
    flat = " ".join(text.split())
    assert "script: examples/scripts/train_loop.py --steps 60 (cwd /home/u/proj)" in flat
    assert "measured: TinyNet, compiled at train_loop.py:41 (module.compile())" in flat
    assert "called at train_loop.py:58" in flat
    assert "one loop iteration per timed unit" in flat
    assert "2 other compiled callables: loss_fn (7.5%), Evaluator.score (3.8%)" in flat


def test_console_with_long_names_still_fits() -> None:
    many = tuple(
        CompiledCallable(
            f"a_module_with_a_rather_long_name_number_{i}.forward_with_hooks",
            "torch.compile(module)",
            SCRIPT,
            i,
            SCRIPT,
            100 + i,
            calls=3,
            total_s=0.01 * i,
        )
        for i in range(12)
    )
    long_args = tuple(f"--option-{i}=some/long/value/{'x' * 20}" for i in range(6))
    report = scripted(callables=many, measured=5, argv=long_args, unit="call", at_call=3)
    for width in (80, 120):
        text = render_text(report, width=width)
        assert not too_wide(text, width), "\n".join(too_wide(text, width))
    assert "with the arguments of its 3rd call" in " ".join(text.split())
    assert "11 other compiled callables:" in text


def test_unit_call_and_endings_are_worded() -> None:
    view = build_view(scripted(unit="call", at_call=1, ended="enough_calls", exit_code=None))
    assert view.script is not None and view.script.measured is not None
    assert view.script.measured.endswith("with the arguments of its 1st call")
    assert "enough calls" in view.script.ended
    raised = build_view(scripted(ended="raised", exit_code=1, error="ValueError: bad"))
    assert raised.script is not None and raised.script.ended.endswith("ValueError: bad")
    budget = build_view(scripted(ended="budget", exit_code=None))
    assert budget.script is not None and "time budget after 4.00 s" in budget.script.ended
    finished = build_view(scripted())
    assert finished.script is not None and "exit code 0" in finished.script.ended
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st"
    ]  # fmt: skip


def test_a_survey_that_found_nothing_compiled() -> None:
    report = scripted(callables=(), measured=None, modules_called=("Net",), loop_calls=("step",))
    text = render_text(report, width=80)
    assert "no callable of the script went through torch.compile" in text
    assert "modules it called at top level: Net" in text
    md = render_markdown(report)
    assert "## Script" in md and "functions it called in its loops: step" in md
    assert "| callable" not in md


# --- Markdown and HTML -----------------------------------------------------------------------


def _script_section(md: str) -> str:
    match = re.search(r"^## Script\n(.*?)(?=^## )", md, re.M | re.S)
    assert match, "no Script section"
    return match.group(1)


def test_markdown_has_a_row_per_callable_and_marks_the_measured() -> None:
    section = _script_section(render_markdown(scripted()))
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + 3  # the header and one row per callable
    by_name = {row.split("|")[1].strip(): row for row in rows[1:]}
    assert set(by_name) == {"TinyNet", "loss_fn", "Evaluator.score"}
    assert by_name["TinyNet"].rstrip(" |").endswith("measured")
    assert sum("measured" in row for row in rows[1:]) == 1
    assert "train_loop.py:41" in by_name["TinyNet"] and "train_loop.py:58" in by_name["TinyNet"]
    assert "evaluate.py:12" in section and "60.0%" in by_name["TinyNet"]
    assert "- run: `examples/scripts/train_loop.py --steps 60` in `/home/u/proj`" in section
    assert "step 59 loss 0.12\ndone" in section


def test_the_script_section_comes_before_the_modes() -> None:
    md = render_markdown(scripted())
    assert md.index("## What to do first") < md.index("## Script") < md.index("## Modes")


def test_html_has_a_row_per_callable_and_marks_the_measured() -> None:
    html = render_html(scripted())
    assert "<h2>Script</h2>" in html
    for name, site in (("TinyNet", "41"), ("loss_fn", "30"), ("Evaluator.score", "12")):
        assert re.search(rf"<tr><td>{re.escape(name)}</td>.*?:{site}</td>", html)
    cells = r"(?:<td>[^<]*</td>)*?"
    measured_rows = re.findall(rf"<tr><td>[^<]*</td>{cells}<td>measured</td></tr>", html)
    assert len(measured_rows) == 1 and measured_rows[0].startswith("<tr><td>TinyNet</td>")
    assert "<details><summary>The end of the script's own stdout</summary>" in html
    assert "The end of the script's own stderr" not in html  # it wrote nothing there


def test_hostile_output_is_escaped_in_html() -> None:
    plain = render_html(scripted(stdout_tail="fine", stderr_tail="fine"))
    evil = render_html(scripted(stdout_tail=HOSTILE_OUT, stderr_tail=HOSTILE_OUT + "\x1b]0;x\x07"))
    assert tags(evil) == tags(plain)
    assert "<script>" not in evil and "&lt;script&gt;alert(1)&lt;/script&gt;" in evil
    assert "\x1b" not in evil and "\x07" not in evil


def test_hostile_output_cannot_leave_its_markdown_block() -> None:
    plain = render_markdown(scripted(stdout_tail="fine", stderr_tail="fine"))
    evil = render_markdown(scripted(stdout_tail=HOSTILE_OUT, stderr_tail=HOSTILE_OUT))
    parse = MarkdownIt("commonmark").enable("table").parse
    assert [t.type for t in parse(evil)] == [t.type for t in parse(plain)]
    fences = [t for t in parse(evil) if t.type == "fence"]
    assert [f.content for f in fences] == [HOSTILE_OUT.rstrip() + "\n"] * 2
    assert not [t for t in md_tokens(evil) if t.type in ("html_inline", "html_block")]


def test_a_fence_is_longer_than_any_backticks_inside() -> None:
    (token,) = MarkdownIt("commonmark").parse(md_fenced("a\n``````\nb"))
    assert token.type == "fence" and token.content == "a\n``````\nb\n"


def test_hostile_names_are_escaped_too() -> None:
    name = "<img src=x onerror=alert(1)>|`x`"
    item = dataclasses.replace(survey().callables[0], name=name, kind=name)
    report = scripted(callables=(item,), argv=("<b>", "`", "|"), error=name, ended="raised")
    html = render_html(report)
    assert tags(html) == tags(render_html(scripted(callables=(survey().callables[0],))))
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    md = render_markdown(report)
    assert not [t for t in md_tokens(md) if t.type in ("html_inline", "html_block", "image")]


def test_every_field_of_the_survey_poisoned() -> None:
    """test_escaping's hostile text in every string of the survey: the same HTML tags and
    Markdown blocks as the plain survey, no raw HTML, no control characters on the console."""
    plain, evil = scripted(), dataclasses.replace(full_report(), script=poisoned(survey()))
    assert evil.script is not None and HOSTILE in evil.script.callables[0].site_file
    assert tags(render_html(evil)) == tags(render_html(plain))
    parse = MarkdownIt("commonmark").enable("table").parse
    md = render_markdown(evil)
    assert [t.type for t in parse(md)] == [t.type for t in parse(render_markdown(plain))]
    assert not [t for t in md_tokens(md) if t.type in ("html_inline", "html_block", "image")]
    assert not [t for t in md_tokens(md) if t.type == "link_open"]
    text = render_text(evil, width=80)
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text


# --- no script: as before ----------------------------------------------------------------------


@pytest.mark.parametrize("base", (full_report, long_report))
def test_no_script_renders_as_before(base: object) -> None:
    report = base()  # type: ignore[operator]
    assert report.script is None
    with_script = dataclasses.replace(report, script=survey())
    md, md_script = render_markdown(report), render_markdown(with_script)
    assert "## Script" not in md
    # the scripted report is the same report with a Script section added
    assert md_script.replace("\n## Script\n" + _script_section(md_script), "\n") == md
    text, text_script = render_text(report, width=80), render_text(with_script, width=80)
    assert "script:" not in text and "script:" in text_script
    assert "<h2>Script</h2>" not in render_html(report)
    assert build_view(report).script is None


# --- JSON ---------------------------------------------------------------------------------------


def test_report_json_round_trips_the_survey(tmp_path: Path) -> None:
    report = scripted(stdout_tail=HOSTILE_OUT, error="x")
    text = render_json(report)
    data = json.loads(text)
    assert data["script"]["callables"][2]["site_file"] == f"{FOLDER}/evaluate.py"
    assert data["script"]["argv"] == ["--steps", "60"] and data["script"]["measured"] == 0
    assert report_from_json(text) == report
    path = tmp_path / "report.json"
    path.write_text(text)
    assert load_report(path) == report
    assert json.loads(render_json(full_report()))["script"] is None


def test_show_json_includes_the_survey(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = scripted()
    path = tmp_path / "report.json"
    path.write_text(render_json(report))
    assert main(["show", str(path), "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["script"]["callables"][0]["name"] == "TinyNet"
    assert report_from_json(json.dumps(shown)) == report
