"""The console reads in one look, on every saved record: every built-in scenario, the example
scripts and the committed example reports, judged again and rendered at 80 and 120 columns.

- No code span or number of what the report says (headline, actions, what was tried) is split
  across lines.
- At 120 columns the headline and every action's head line are within the first 24 lines.
- Only what saves time per call is listed as an action; what measured slower or had no
  measurable effect is in "Tried, not worth it", and the headline says "do #1 first" only
  where #1 is something to do.
- No sentence is printed twice.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from advisor.core.kinds import ActionOutcome
from advisor.core.model import Report
from advisor.render.console import render_text
from advisor.render.view import ReportView, build_view
from advisor.render.wrap import units, wrap
from tests.test_render_failure import judged, label, load, saved_measurement_files

ROOT = Path(__file__).resolve().parent.parent
RECORDS = [
    p
    for p in saved_measurement_files()
    if "examples" in p.parts or "scenarios" in p.parts  # the scenarios, scripts and examples
]
TRIED = (ActionOutcome.SLOWER, ActionOutcome.NO_EFFECT)
CODE_SPAN = re.compile(r"`[^`]+`")
NUMBER = re.compile(r"(?<![\w.-])\d+(?:\.\d+)?(?:e[-+]?\d+)?(?: ?(?:ms/call|ms|s|%))?(?![\w.])")


@cache
def report_of(path: Path) -> Report:
    return judged(load(path))


def said(view: ReportView) -> list[str]:
    """What the console writes with the wrapper that must not split a unit."""
    texts = [view.headline or "", view.numerics_note or "", *view.compile_time]
    texts += [f"{a.title} {' '.join(a.saving_parts)} {a.where} {a.removes}" for a in view.actions]
    texts += [n for a in view.actions for n in a.notes]
    texts += [f"{t.label}: {t.effect}" for t in view.tried]
    return texts


def test_the_records_are_every_scenario_script_and_example() -> None:
    names = {p.name.split(".")[0] for p in RECORDS}
    assert {"print_logging", "train_ddp", "script_infer_loop", "script_train_loop"} <= names
    assert len(RECORDS) >= 25


@pytest.mark.parametrize("width", (80, 120))
@pytest.mark.parametrize("path", RECORDS, ids=label)
def test_no_code_span_or_number_is_split(path: Path, width: int) -> None:
    report = report_of(path)
    text = render_text(report, width=width)
    for said_text in said(build_view(report)):
        for span in CODE_SPAN.findall(said_text) + NUMBER.findall(said_text):
            if len(span) < width - 4:  # a unit wider than a line is folded: nothing else fits
                assert span in text, (span, said_text)


@pytest.mark.parametrize("path", RECORDS, ids=label)
def test_the_headline_and_every_action_head_come_first(path: Path) -> None:
    report = report_of(path)
    lines = render_text(report, width=120).splitlines()
    view = build_view(report)
    head = "\n".join(lines[:24])
    if view.headline:
        assert wrap(view.headline, 120)[0] in head
    for action in view.actions:
        assert f"{action.rank}. {units(action.title)[0]}" in head, action.title


@pytest.mark.parametrize("path", RECORDS, ids=label)
def test_only_what_saves_time_is_an_action(path: Path) -> None:
    report = report_of(path)
    view = build_view(report)
    todo = [a for a in report.actions if a.outcome == ActionOutcome.DO]
    assert len(view.actions) == len(todo)
    for action in view.actions:
        assert not any(
            p.startswith(("slower", "no measurable effect")) for p in action.saving_parts
        )
    tried = [
        a for a in report.actions if a.outcome in (ActionOutcome.SLOWER, ActionOutcome.NO_EFFECT)
    ]
    assert len(view.tried) == len(tried)
    text = render_text(report, width=120)
    if tried:
        assert "Tried, not worth it:" in text
    assert ("do #1 first" in (view.headline or "")) == bool(todo) or view.headline is None


@pytest.mark.parametrize("path", RECORDS, ids=label)
def test_no_sentence_is_printed_twice(path: Path) -> None:
    text = render_text(report_of(path), width=1000)  # one line a paragraph: whole sentences
    body = text.split("\nPatch ")[0]  # a patch's diff may repeat its own source lines
    sentences = [
        s.strip()
        for line in body.splitlines()
        for s in re.split(r"(?<=[.;])\s+", line.lstrip("- "))
        if len(s.strip()) >= 40
    ]
    repeated = {s for s in sentences if sentences.count(s) > 1}
    assert not repeated
