"""Renderers are pure: the same report in, the same text out, with the numbers it holds."""

from __future__ import annotations

import dataclasses

from advisor.render.console import render_text
from advisor.render.html import render_html
from advisor.render.markdown import render_markdown
from tests.test_model import full_report


def test_text_summary() -> None:
    report = full_report()
    text = render_text(report)
    assert "compile (default)" in text and "2.00x" in text  # eager 1.0 ms / default 0.5 ms
    assert "fullgraph=True fails [GB0059] at demo.py:7" in text
    assert "GB0059" in text and "isolate" in text
    assert "Attribution coverage: 99.0%" in text


def test_markdown_report_sections() -> None:
    md = render_markdown(full_report())
    assert md.startswith("# advisor report: demo")
    for heading in (
        "## Modes",
        "## Graph breaks",
        "## Compiled graphs",
        "## Recompiles",
        "## Where a call's time goes",
        "## Warnings",
    ):
        assert heading in md
    assert "what if `reorderable_logging_functions={print}`" in md
    assert "mark_dynamic" in md
    assert render_markdown(full_report()) == md  # deterministic


def test_html_is_self_contained_with_figures() -> None:
    html = render_html(full_report())
    assert html.startswith("<!DOCTYPE html>")
    assert html.count("data:image/png;base64,") == 3  # latency, break cost, timeline
    assert "<script" not in html and "http-equiv" not in html


def test_report_without_breaks_or_profile() -> None:
    report = dataclasses.replace(
        full_report(),
        breaks=(),
        graphs=(),
        recompiles=(),
        attribution=dataclasses.replace(full_report().attribution, calls=(), coverage=None),
    )
    assert "No graph breaks were captured" in render_markdown(report)
    assert render_html(report).count("data:image/png;base64,") == 1
