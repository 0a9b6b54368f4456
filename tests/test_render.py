"""Renderers are pure: the same report in, the same text out, with the numbers it holds."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from advisor.core.model import Report, Segment, WhatIf
from advisor.render.console import render_text as _render_text
from advisor.render.html import render_html
from advisor.render.markdown import render_markdown
from advisor.render.prose import what_if_line
from tests.support.reports import full_report


def render_text(report: Report) -> str:
    """The console summary wide enough that no phrase these tests look for is wrapped: they
    check what it says; tests/test_console_width.py checks that it fits a terminal."""
    return _render_text(report, width=1000)


def test_text_summary() -> None:
    report = full_report()
    text = render_text(report)
    assert "compile (default)" in text and "2.00x" in text  # eager 1.0 ms / default 0.5 ms
    assert "fullgraph=True fails [GB0059] at demo.py:7" in text
    assert "GB0059" in text and "isolate" in text
    assert "Attribution coverage: 99.0%" in text
    assert "What to do first" in text and "Isolate the print() side effect at demo.py:7" in text


def test_markdown_report_sections() -> None:
    md = render_markdown(full_report())
    assert md.startswith("# advisor report: demo")
    for heading in (
        "## Modes",
        "## Graph breaks",
        "## Compiled graphs",
        "## Recompiles",
        "## Where a call's time goes",
        "## About this measurement",
    ):
        assert heading in md
    assert "what if: `reorderable_logging_functions={print}`" in md
    assert "mark_dynamic" in md
    assert "## What to do first" in md and "## Where the step goes" in md
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
        sites=(),
        ledger=None,
        actions=(),
        graphs=(),
        recompiles=(),
        attribution=dataclasses.replace(full_report().attribution, calls=(), coverage=None),
    )
    assert "No graph breaks were captured" in render_markdown(report)
    assert render_html(report).count("data:image/png;base64,") == 1


def _break_fields_in(text: str) -> list[str]:
    return [label for label in FIELD_LABELS if f"{label}:" in text]


FIELD_LABELS = ("source", "function", "also at", "explanation", "splits graphs", "per call",
                "cost parts", "cost", "fix options", "verdict", "why", "evidence", "what if",
                "registry page", "registry hint")  # fmt: skip


def test_markdown_and_html_show_the_same_break_fields() -> None:
    import html as html_lib
    import re

    report = full_report()
    md = render_markdown(report)
    page = html_lib.unescape(re.sub(r"<[^>]+>", "", render_html(report)))
    md_section = md.split("### 1.")[1].split("## Measured what-ifs")[0]
    html_section = page.split("1. GB0059")[1].split("Measured what-ifs")[0]
    assert _break_fields_in(md_section) == list(FIELD_LABELS)
    assert _break_fields_in(html_section) == _break_fields_in(md_section)
    assert "demo.py:12" in md_section and "demo.py:12" in html_section  # also at, relative


def test_paths_are_shortened_only_when_rendering() -> None:
    md = render_markdown(full_report())
    assert "/home/u/proj/" not in md and "demo.py:7" in md


def test_timeline_legend_names_no_none(monkeypatch: pytest.MonkeyPatch) -> None:
    # The legend once read "eager gap after None": labels must not be built from a missing id.
    from advisor.render import figures

    shown: list[list[str]] = []

    def capture_legend(fig: Any) -> bytes:
        legend = fig.axes[0].get_legend()
        shown.append([text.get_text() for text in legend.get_texts()])
        return b""

    monkeypatch.setattr(figures, "png", capture_legend)
    report = full_report()
    call = report.attribution.calls[0]
    unnamed = (Segment("gap", call.total_us, 3.0), Segment("compiled", call.total_us + 3.0, 1.0))
    odd_call = dataclasses.replace(call, segments=call.segments + unnamed, total_us=54.0)
    report = dataclasses.replace(
        report, attribution=dataclasses.replace(report.attribution, calls=(odd_call,))
    )
    figures.timeline_figure(report)
    (labels,) = shown
    # the kinds this call has, each named once
    assert labels == ["entry", "compiled region", "eager gap (a break)"]
    assert not [label for label in labels if "None" in label]


def _missed_target_report():  # type: ignore[no-untyped-def]
    """The default mode's median interval is ±20% (0.4 .. 0.6 around 0.5) and missed ±2%."""
    report = full_report()
    default = report.mode("default")
    assert default is not None and default.latency is not None
    latency = dataclasses.replace(default.latency, ci_ms=(0.4, 0.6), target_met=False, n=40)
    modes = tuple(
        dataclasses.replace(m, latency=latency) if m.mode == "default" else m for m in report.modes
    )
    return dataclasses.replace(report, modes=modes)


def test_missed_target_is_an_alert_in_every_rendering() -> None:
    import json

    from advisor.render.json_report import render_json

    report = _missed_target_report()
    alert = (
        "noisy: compile (default) (its median's 95% interval, ±20.0% after 40 blocks, missed "
        "the ±2% target); costs, verdicts and comparisons from it are uncertain."
    )
    # the console: one line among the notes at the end (cut at a space where the console is
    # narrower than it; report.md has the whole)
    assert f"\n- {alert}" in render_text(report)
    assert f"- **warning:** {alert}" in render_markdown(report)
    import html as html_lib

    assert f"<b>Warning:</b> {alert}" in html_lib.unescape(render_html(report))  # ' is escaped
    assert alert in json.loads(render_json(report))["alerts"]
    assert "±20.0% (target NOT met)" in render_markdown(report)
    assert not any("interval" in a for a in json.loads(render_json(full_report()))["alerts"])
    unpinned = dataclasses.replace(
        report, settings=dataclasses.replace(report.settings, threads=None)
    )
    assert f"{alert} On a shared machine --threads 1 often steadies it" in render_markdown(unpinned)


def test_an_ignore_inside_the_noise_says_so() -> None:
    import json

    from advisor.render.json_report import render_json

    report = full_report()
    entry = report.breaks[0]
    assert entry.decision is not None
    for reason, label in (
        ("below_noise", "ignore (within noise)"),
        ("below_share", "ignore (small)"),
    ):
        decision = dataclasses.replace(entry.decision, verdict="ignore", reason=reason)
        changed = dataclasses.replace(
            report, breaks=(dataclasses.replace(entry, decision=decision),)
        )
        assert f"| {label} " in render_markdown(changed)
        assert f"{label}" in render_text(changed)
        assert json.loads(render_json(changed))["breaks"][0]["verdict_label"] == label
    noisy = dataclasses.replace(entry.decision, verdict="ignore", reason="below_noise")
    md = render_markdown(
        dataclasses.replace(report, breaks=(dataclasses.replace(entry, decision=noisy),))
    )
    assert "cannot be told from zero here" in md


def test_a_busy_machine_is_an_alert() -> None:
    report = full_report()
    busy_env = dataclasses.replace(report.environment, load_average=(6.1, 5.0, 4.0), cpu_count=2)
    busy = dataclasses.replace(report, environment=busy_env)
    assert "The machine was busy when measuring began (load average 6.10 on 2 CPUs)" in (
        render_text(busy)
    )
    assert "--threads 1" not in render_text(busy)  # this run already set its threads
    unpinned = dataclasses.replace(busy, settings=dataclasses.replace(busy.settings, threads=None))
    assert "--threads 1 keeps torch's threads" in render_markdown(unpinned)
    quiet_env = dataclasses.replace(busy_env, load_average=(1.9, 1.0, 1.0))
    assert "busy" not in render_text(dataclasses.replace(report, environment=quiet_env))


def test_guard_action_names_fixing_breaks_only_when_there_are_breaks() -> None:
    from advisor.core.model import Action
    from advisor.render import prose
    from advisor.render.view import displayer

    guards = Action(kind="guards", saving_ms=0.05)
    with_breaks = dataclasses.replace(full_report(), actions=(guards,))
    without = dataclasses.replace(with_breaks, breaks=(), sites=())
    title = prose.action_title(guards, with_breaks, displayer(with_breaks))
    assert "fix the breaks" in title and "skip_guard_eval_unsafe=True" in title
    title = prose.action_title(guards, without, displayer(without))
    assert "fix the breaks" not in title and "skip_guard_eval_unsafe=True" in title


def test_a_rewrite_of_library_code_says_whose_change_it_is() -> None:
    from advisor.core.model import Action
    from advisor.render import prose
    from advisor.render.view import displayer

    report = full_report()
    entry = report.breaks[0]
    assert entry.decision is not None
    library_entry = dataclasses.replace(
        entry, decision=dataclasses.replace(entry.decision, library=True, fix="rewrite")
    )
    report = dataclasses.replace(report, breaks=(library_entry,))
    upstream = Action(
        kind="upstream", saving_ms=0.1, breaks=(entry.id,), fix="rewrite", where=entry.site.where
    )
    title = prose.action_title(upstream, report, displayer(report))
    assert title.startswith("Needs a library change (estimated): the print() side effect at ")
    assert "report it upstream with that line" in title
    rewrite = dataclasses.replace(upstream, kind="code")
    mine = dataclasses.replace(report, breaks=(entry,))
    title = prose.action_title(rewrite, mine, displayer(mine))
    assert title.startswith("Rewrite the ") and "library" not in title


def test_guard_what_if_line_says_what_was_timed() -> None:
    from advisor.core.model import WhatIf
    from advisor.render import prose

    w = WhatIf(
        "skip_guard_eval_unsafe=True",
        "torch.compiler.set_stance",
        "guards",
        "measured",
        baseline_ms=0.5,
        variant_ms=0.45,
        saving_ms=0.05,
        saving_ci_ms=(0.04, 0.06),
        rounds=20,
        matches_eager=True,
    )
    line = prose.what_if_line(w)
    assert line.startswith("`torch.compiler.set_stance(skip_guard_eval_unsafe=True)`")
    assert "guards not evaluated" in line and "saving 0.0500 ms" in line
    assert "targeted break" not in line


def test_a_rewrite_in_library_code_says_it_is_a_library_change() -> None:
    import json

    from advisor.render.json_report import render_json

    report = full_report()
    entry = report.breaks[0]
    assert entry.decision is not None
    library = dataclasses.replace(entry.decision, verdict="rewrite", library=True)
    changed = dataclasses.replace(report, breaks=(dataclasses.replace(entry, decision=library),))
    assert "| rewrite (library change) " in render_markdown(changed)
    assert json.loads(render_json(changed))["breaks"][0]["verdict_label"] == (
        "rewrite (library change)"
    )
    users = dataclasses.replace(library, library=False)
    mine = dataclasses.replace(report, breaks=(dataclasses.replace(entry, decision=users),))
    assert "| rewrite " in render_markdown(mine)
    assert "library change" not in json.loads(render_json(mine))["breaks"][0]["verdict_label"]


def test_the_headline_says_no_saving_rather_than_a_negative_one() -> None:
    from advisor.render.prose import headline

    report = full_report()
    assert report.ledger is not None and report.breaks
    assert "fixing the breaks saves about" in (headline(report) or "")
    slower = dataclasses.replace(report.ledger, saving_ms=-0.05 * report.ledger.step_ms)
    line = headline(dataclasses.replace(report, ledger=slower)) or ""
    assert "fixing the breaks saves nothing measurable (-5.0%;" in line
    assert "saves about" not in line
    # every break ignored (the quick start at torch's default threads: 6% estimated, inside a
    # noise of 23%): the first action says nothing is worth fixing, and so does the headline
    ignored = tuple(
        dataclasses.replace(e, decision=dataclasses.replace(e.decision, verdict="ignore"))
        for e in report.breaks
        if e.decision is not None
    )
    line = headline(dataclasses.replace(report, breaks=ignored)) or ""
    assert "fixing the breaks would save about" in line and "too little to act on" in line
    assert "saves about" not in line


def test_coverage_says_how_much_of_the_call_a_profiler_event_names() -> None:
    from advisor.core.model import CallTimeline

    report = full_report()
    segments = (
        Segment("entry", 0.0, 10.0),
        Segment("compiled", 10.0, 50.0, "0/0"),
        Segment("eager", 60.0, 10.0, break_id="B1"),  # a skipped frame a break owns
        Segment("eager", 70.0, 10.0),
        Segment("exit", 80.0, 20.0),
    )
    calls = (CallTimeline(0, 100.0, segments),)
    changed = dataclasses.replace(
        report, attribution=dataclasses.replace(report.attribution, calls=calls)
    )
    assert "60.0% of it to a part with a profiler event of its own" in render_markdown(changed)


def test_the_quick_protocol_says_so_on_the_first_line_and_a_no_effect_action_says_its_noise() -> (
    None
):
    report = full_report()
    quick = dataclasses.replace(report.settings, protocol="quick")
    replicated = dataclasses.replace(report.settings, protocol="replicated")
    first = render_text(dataclasses.replace(report, settings=quick)).splitlines()[0]
    assert "quick protocol: every arm in one process, not replicated" in first
    for render in (render_text, render_markdown, render_html):
        assert "quick protocol" not in render(dataclasses.replace(report, settings=replicated))
    action = report.actions[0]
    assert action.saving_ci_ms is not None and report.ledger is not None
    tried = dataclasses.replace(action, measurable=False)
    text = render_text(dataclasses.replace(report, settings=replicated, actions=(tried,)))
    low, high = action.saving_ci_ms
    half = (high - low) / 2 / report.ledger.step_ms * 100
    assert f"no measurable effect (+-{half:.1f}%)" in text
    # an interval wholly below zero: a rerun would find it slower too, and it says so
    slower = dataclasses.replace(tried, saving_ms=-0.1, saving_ci_ms=(-0.15, -0.05))
    text = render_text(dataclasses.replace(report, settings=replicated, actions=(slower,)))
    assert "slower: 20.0% more per call" in text and "no measurable effect" not in text


def test_a_skipped_what_if_says_why_from_its_kind_not_from_its_record() -> None:
    skipped = WhatIf("placement:fused", "fused", "placement", "skipped", kind="fused")
    assert skipped.error is None  # the record holds the fact, the sentence is render's
    line = what_if_line(skipped, training=True)
    assert "not tried (no optimizer with a fused kernel for these parameters" in line
    saved = WhatIf("guards", "guards", "guards", "skipped", kind="guards", error="this torch ...")
    assert what_if_line(saved).endswith("not tried (this torch ...)")
