"""Helpers for the user's own test suite (pytest or plain asserts).

from advisor.testing import assert_no_costly_breaks

def test_decoder_step_has_no_costly_breaks():
    assert_no_costly_breaks(model, tokens, max_share=0.02, repeats=5, what_if=False)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from advisor.core.model import Report
from advisor.gate.baseline import breaks_of
from advisor.render import prose
from advisor.render.view import displayer

__all__ = ["assert_no_costly_breaks"]


def assert_no_costly_breaks(
    fn: Callable[..., Any], *args: Any, max_share: float = 0.02, **options: Any
) -> Report:
    """Run `advisor.analyse(fn, *args, **options)` and raise AssertionError when a graph break
    costs more than `max_share` of the default-mode step (or could not be costed because the
    default mode failed or was not profiled). The message lists each such break with its
    file:line, source, share and recipe. Returns the report for further checks.
    """
    if not 0 <= max_share < 1:
        raise ValueError(f"max_share must be a share of the step in [0, 1), got {max_share}")
    from advisor.api import analyse

    options.setdefault("progress", False)
    report = analyse(fn, *args, **options)
    failure = costly_breaks_message(report, max_share)
    if failure:
        raise AssertionError(failure)
    return report


def costly_breaks_message(report: Report, max_share: float) -> str | None:
    """The assertion message for `report`, or None when no break costs more than allowed."""
    default = report.mode("default")
    if default is not None and default.status != "ok":
        reason = f": {default.error.message}" if default.error else ""
        return f"{report.workload.name}: the default torch.compile mode {default.status}{reason}"
    costly = costly_breaks(report, max_share)
    if not costly:
        return None
    header = (
        f"{report.workload.name}: {len(costly)} graph break(s) cost more than "
        f"{max_share:.1%} of the default-mode step"
    )
    return "\n".join([header, *(_describe(i, b) for i, b in enumerate(costly, 1))])


@dataclass(frozen=True)
class CostlyBreak:
    where: str
    label: str
    code: str
    share: float | None
    recipe: str


def costly_breaks(report: Report, max_share: float) -> list[CostlyBreak]:
    """Breaks costing more than `max_share` of the step, or whose cost is unknown."""
    display = displayer(report)
    out = []
    for entry, site in breaks_of(report):
        share = entry.cost_share if entry else None
        if share is not None and share <= max_share:
            continue
        recipe = prose.recipe(entry, report, display) if entry and entry.decision else ""
        out.append(
            CostlyBreak(
                where=prose.location(site.where, display),
                label=f"{site.gb_code or '?'} ({site.gb_type})",
                code=site.where.code,
                share=share,
                recipe=recipe,
            )
        )
    return out


def _describe(rank: int, brk: CostlyBreak) -> str:
    share = f"{brk.share:.1%} of the step" if brk.share is not None else "cost not measured"
    text = f"{rank}. {brk.where} {brk.label}: {share}: `{brk.code}`"
    if brk.recipe:
        text += "\n   " + brk.recipe.replace("\n", "\n   ")
    return text
