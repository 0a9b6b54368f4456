"""The actions as the reports show them, split by what the judge found of each
(`Action.outcome`): what to do (a saving per call), what was tried and is not worth it (slower,
or no measurable effect), and what changes compile time only. The numerics caveat every
compiled variant shares is said once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.core.kinds import ActionOutcome
from advisor.core.model import Action, Report
from advisor.render import prose, search_words
from advisor.render.actions import action_label, action_title, shared_numerics_note
from advisor.render.formatting import Display, fmt_ms, fmt_pct, fmt_s, location

TRIED = (ActionOutcome.SLOWER, ActionOutcome.NO_EFFECT)


@dataclass(frozen=True)
class ActionView:
    """One action. `title` is what to do, short; `notes` are its caveat and numerics remark.
    The console shows the notes on lines of their own, Markdown and HTML in the title's cell
    (`full_title`). The saving is in parts (value, interval, share of the step) for the same
    reason: a narrow column breaks it between them."""

    rank: int
    title: str
    kind: str
    saving_parts: tuple[str, ...]
    measured: bool
    breaks: str
    notes: tuple[str, ...] = ()
    full_title: str = ""
    where: str = ""  # the line to change, file:line ("" when the action names none)
    removes: str = ""  # the breaks it removes, each with its line: "B1 (model.py:84)"

    @property
    def saving(self) -> str:
        return " ".join(self.saving_parts)


@dataclass(frozen=True)
class TriedView:
    """A change measured and not worth it: what it was, and what it measured."""

    label: str
    effect: str


def action_views(report: Report, display: Display) -> dict[str, Any]:
    """The view's action fields: `actions`, `tried`, `compile_time` and `numerics_note`."""
    listed = [a for a in report.actions if a.outcome in (ActionOutcome.DO, *TRIED)]
    shared = shared_numerics_note(listed)
    todo = [a for a in report.actions if a.outcome == ActionOutcome.DO]
    step = report.ledger.step_ms if report.ledger else None
    return {
        "actions": tuple(
            _action_view(i, a, report, display, shared is not None) for i, a in enumerate(todo, 1)
        ),
        "tried": tuple(
            TriedView(action_label(a, report, display), _effect(a, step))
            for a in report.actions
            if a.outcome in TRIED
        ),
        "compile_time": tuple(
            f"{prose.action_title(a, report, display)}: {_saving_parts(a, report)[0]}"
            for a in report.actions
            if a.outcome == ActionOutcome.COMPILE_TIME
        ),
        "numerics_note": shared,
    }


def _action_view(
    rank: int, action: Action, report: Report, display: Display, numerics_shared: bool
) -> ActionView:
    title, notes = prose.action_parts(action, report, display, numerics_shared)
    return ActionView(
        rank,
        title,
        action.kind,
        _saving_parts(action, report),
        action.measured,
        ", ".join(action.breaks),
        notes,
        _full_title(action, report, display, numerics_shared),
        location(action.where, display) if action.where else "",
        _removes(action, report, display),
    )


def _full_title(action: Action, report: Report, display: Display, numerics_shared: bool) -> str:
    """The cell of report.md and report.html: the numerics note only where not said once for
    all under the actions; an estimate says what stopped it being measured."""
    if numerics_shared:
        title = action_title(action, report, display)
    else:
        title = prose.action_title(action, report, display)
    note = search_words.unmeasured_note(action)
    return f"{title} ({note})" if note else title


LISTED_BREAKS = 3  # more than this many removed: their ids alone (the break list has the lines)


def _removes(action: Action, report: Report, display: Display) -> str:
    """The breaks it removes, each with its line where that is not the action's own."""
    if len(action.breaks) > 1 and len(action.breaks) == len(report.breaks):
        return f"all {len(action.breaks)} breaks"
    if len(action.breaks) > LISTED_BREAKS:
        return ", ".join(action.breaks)
    where = location(action.where, display) if action.where else None
    out = []
    for b in action.breaks:
        entry = report.entry(b)
        at = location(entry.site.where, display) if entry is not None else where
        out.append(f"{b} ({at})" if at != where else b)
    return ", ".join(out)


def _saving_parts(action: Action, report: Report) -> tuple[str, ...]:
    if action.saving_ms is None:
        return (f"compile time {fmt_s(action.compile_s)} s",) if action.compile_s else ("-",)
    step = report.ledger.step_ms if report.ledger else None
    if not action.measurable:
        return (_effect(action, step),)
    parts = [f"{fmt_ms(action.saving_ms)} ms/call"]
    if action.saving_ci_ms:
        low, high = action.saving_ci_ms
        parts.append(f"[{fmt_ms(low)}, {fmt_ms(high)}]")
    if step:
        parts.append(f"({fmt_pct(action.saving_ms / step)} of the step)")
    if action.processes:
        parts.append(f"({action.processes} processes)")
    return tuple(parts)


def _effect(action: Action, step_ms: float | None) -> str:
    """What a change that is not worth it measured: slower by a share of the step, or "no
    measurable effect (+-x%)" with the interval's half-width as a share of the step."""
    if action.saving_ms is not None and action.saving_ms < 0 and step_ms:
        low, high = action.saving_ci_ms or (action.saving_ms, action.saving_ms)
        if high < 0:  # a rerun would find it slower too
            return (
                f"slower: {fmt_pct(-action.saving_ms / step_ms)} more per call "
                f"(+{fmt_ms(-action.saving_ms)} ms){_why_slower(action)}"
            )
    if not action.saving_ci_ms or not step_ms:
        return "no measurable effect"
    low, high = action.saving_ci_ms
    text = f"no measurable effect (+-{fmt_pct((high - low) / 2 / step_ms)})"
    if action.runs_to_settle is None or action.saving_ms is None:
        return text
    return (
        f"{text}; may save {fmt_pct(action.saving_ms / step_ms)}: about "
        f"{action.runs_to_settle} runs judged together would tell"
    )


def _why_slower(action: Action) -> str:
    """Why a rewrite can cost more than the break it removes, where its kind says."""
    if action.patch is not None and action.patch.kind == "tensor_branch":
        return ": rewriting costs more, both branches run on every call"
    return ""


def action_rows(actions: tuple[ActionView, ...]) -> list[tuple[str, ...]]:
    return [
        (str(a.rank), a.full_title, a.saving, "measured" if a.measured else "estimated", a.breaks)
        for a in actions
    ]


ACTION_HEADERS = ("#", "what to do", "saving", "basis", "removes")
