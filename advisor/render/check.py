"""`advisor check`'s words: a sentence per finding and note, as plain lines or as GitHub Actions
annotations.

A new break's sentence ends with the first sentence of its recipe (`prose.recipe_first_sentence`),
its paths shown as the report shows them; every other path is the baseline's (relative to the
folder the gate runs in).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from advisor.core.model import Report
from advisor.gate.baseline import BaselineBreak
from advisor.gate.check import (
    BreakGone,
    CheapNewBreak,
    CheckNote,
    CheckResult,
    CostlierBreak,
    DefaultFailed,
    Finding,
    FullgraphCompiles,
    FullgraphFails,
    Mismatch,
    MoreRecompiles,
    NewBreak,
    Slower,
)
from advisor.render import prose
from advisor.render.prose import Display
from advisor.render.view import displayer


def format_text(result: CheckResult, report: Report) -> list[str]:
    """One line per finding, `file:line: message` where the finding has a place."""
    display = displayer(report)
    lines = []
    for finding in result.findings:
        file, line = finding.place()
        text = finding_text(finding, display)
        lines.append(f"{file}:{line}: {text}" if file and line else text)
    return lines


def format_github(result: CheckResult, report: Report) -> list[str]:
    """GitHub Actions workflow commands: an `::error` annotation per finding (on its file and
    line when it has one), a `::notice` per note."""
    display = displayer(report)
    lines = []
    for finding in result.findings:
        file, line = finding.place()
        props = [f"title={_escape_property('advisor check: ' + finding.kind)}"]
        if file:
            props.insert(0, f"file={_escape_property(file)}")
            if line:
                props.insert(1, f"line={line}")
        text = _escape_data(finding_text(finding, display))
        lines.append(f"::error {','.join(props)}::{text}")
    lines += [f"::notice title=advisor check::{_escape_data(note_text(n))}" for n in result.notes]
    return lines


def finding_text(finding: Finding, display: Display) -> str:
    """The finding in one sentence (the recipe's paths shown with `display`)."""
    if isinstance(finding, NewBreak):
        return _new_break(finding, display)
    return _FINDINGS[type(finding)](finding)


def note_text(note: CheckNote) -> str:
    if isinstance(note, CheapNewBreak):
        return (
            f"{_where(note.brk)}: new break {_label(note.brk)} costs {_pct(note.brk.cost_share)} "
            f"of the step, within the {_pct(note.limit)} allowed"
        )
    if isinstance(note, BreakGone):
        return f"{_where(note.brk)}: break {_label(note.brk)} is gone (`{note.brk.code}`)"
    if isinstance(note, FullgraphCompiles):
        return "fullgraph=True compiles now (it failed in the baseline)"
    raise TypeError(f"no words for the check note {note!r}")


def _new_break(f: NewBreak, display: Display) -> str:
    new = f.brk
    cost = (
        f"costs {_pct(new.cost_share)} of the step (limit {_pct(f.limit)})"
        if new.cost_share is not None
        else "has no measured cost (the default mode was not profiled)"
    )
    fix = prose.recipe_first_sentence(f.entry, display) if f.entry is not None else ""
    return f"new graph break {_label(new)} {cost}: `{new.code}`" + (f". Fix: {fix}" if fix else "")


def _costlier_break(f: CostlierBreak) -> str:
    old, new = f.old, f.new
    return (
        f"graph break {_label(new)} costs more: {_pct(new.cost_share)} of the step, "
        f"{_pct(old.cost_share)} in the baseline (limit +{_pct(f.limit)}; runs "
        f"{new.occurrences_per_call:g}x per call, {old.occurrences_per_call:g}x before): "
        f"`{new.code}`"
    )


def _slower(f: Slower) -> str:
    if f.interval is not None:
        low, high = f.interval
        return (
            f"{f.target}: default mode is slower: {f.median_ms:.4g} ms per call, "
            f"{f.baseline_ms:.4g} ms in the baseline; over the machine's speed in each run "
            f"{f.change:+.1%} [{low:+.1%}, {high:+.1%}] across processes (limit "
            f"+{_pct(f.limit)})"
        )
    return (
        f"{f.target}: default mode is slower: {f.median_ms:.4g} ms per call, "
        f"{f.baseline_ms:.4g} ms in the baseline ({f.change:+.1%}; limit "
        f"+{_pct(f.limit)}, noise {_pct(f.noise)})"
    )


def _recompiles(f: MoreRecompiles) -> str:
    reason = f": {f.compile_id} {f.reason}" if f.compile_id is not None else ""
    return f"{f.recompiles} recompile(s) of the default mode, {f.baseline} in the baseline{reason}"


def _fullgraph(f: FullgraphFails) -> str:
    err = f.error
    what = (err.gb_type or err.message) if err else "an error"
    code = f" [{err.gb_code}]" if err and err.gb_code else ""
    source = f": `{err.code}`" if err and err.code else ""
    return f"fullgraph=True compiled in the baseline and now fails{code}: {what}{source}"


_FINDINGS: dict[type, Callable[[Any], str]] = {
    CostlierBreak: _costlier_break,
    Slower: _slower,
    MoreRecompiles: _recompiles,
    FullgraphFails: _fullgraph,
    DefaultFailed: lambda f: f"{f.target}: the default torch.compile mode {f.status}",
    Mismatch: lambda f: f"{f.target}: default-mode outputs no longer match eager",
}


def _label(brk: BaselineBreak) -> str:
    return f"{brk.gb_code or '?'} ({brk.gb_type})"


def _where(brk: BaselineBreak) -> str:
    return f"{brk.file}:{brk.line}"


def _pct(value: float | None) -> str:
    return "?" if value is None else f"{value * 100:.1f}%"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")
