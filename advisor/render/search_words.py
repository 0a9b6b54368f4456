"""The words for what the search for a fix did (#59): why an estimated action has no
measurement behind it, and, per break, every fix considered, measured or skipped with why."""

from __future__ import annotations

from advisor.core.model import Action, BreakEntry, Candidate, Report
from advisor.render.formatting import knob_code

# Why an estimated action has no measurement behind it (`Action.unmeasured`).
UNMEASURED_WORDS = {
    "no_rewrite": "no patch is generated for this shape of code, so nothing was run",
    "library": "the change is in library code: the knobs and placements tried from your side "
    "are listed on their own",
    "failed": "its what-if failed to run",
    "kept": "its what-if left the break in place",
    "moved": "its what-if broke the graph again nearby",
    "differs": "its what-if changed the result",
    "files": "read from your own run's files, nothing was run (the notes give the `advisor run` "
    "command that measures it)",
}


def unmeasured_note(action: Action) -> str | None:
    """An estimate says what stopped it being measured."""
    if action.measured or action.unmeasured is None:
        return None
    why = UNMEASURED_WORDS.get(action.unmeasured, action.unmeasured)
    return f"estimated, not measured: {why}"


def considered(entry: BreakEntry, report: Report) -> str | None:
    """Every fix considered for the entry's breaks: what was measured, then what was skipped
    and why; None for a report that records none (written before the search recorded it)."""
    ids = {entry.id, *(c.id for c in entry.causes)}
    mine = [c for c in report.candidates if ids & set(c.sites)]
    if not mine:
        return None
    measured = [_label(c) for c in mine if c.planned]
    skipped = [f"{_label(c)} ({c.why})" for c in mine if not c.planned]
    parts = []
    if measured:
        parts.append("measured: " + ", ".join(dict.fromkeys(measured)))
    if skipped:
        parts.append("skipped: " + "; ".join(dict.fromkeys(skipped)))
    return "; ".join(parts)


def _label(c: Candidate) -> str:
    if c.kind == "knob" and c.planned:
        return knob_code(c.label)
    if c.kind == "knob":
        return "a knob"
    if c.kind == "knobs":
        return f"knobs together ({knob_code(c.label)})" if c.planned else "pairs of knobs"
    if c.kind == "patch":
        return f"a `{c.label}` patch" if c.planned else "a patch"
    if c.kind == "patches":
        return f"patches together ({c.label})" if c.planned else "sets of patches"
    if c.kind == "noop":
        return f"`{c.label}` made a no-op"
    if c.kind == "undisable":
        return "the `torch.compiler.disable` boundary removed"
    return f"placement `{c.label}`"
