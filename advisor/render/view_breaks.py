"""One break's view: its table row's values and the labelled lines of its details, built once
for every renderer (see `advisor.render.view`).
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.core.model import BreakEntry, Decision, Report
from advisor.render import prose, search_words
from advisor.render.formatting import Display, fmt_ms, fmt_pct


@dataclass(frozen=True)
class Field:
    """One labelled line of a break's details."""

    label: str
    text: str
    code: bool = False  # show the text as code


@dataclass(frozen=True)
class BreakView:
    rank: int
    id: str
    gb_code: str
    doc_url: str | None
    gb_type: str
    where: str
    code: str
    verdict: str
    category: str
    occurrences: str
    gap_ms: str
    cost_ms: str
    cost_share: str
    fields: tuple[Field, ...]
    recipe: str
    hints: tuple[str, ...]


def safe_url(url: str | None) -> str | None:
    """Only web links are shown as links: a report read from disk may carry anything."""
    return url if url and url.startswith(("https://", "http://")) else None


def break_view(rank: int, entry: BreakEntry, report: Report, display: Display) -> BreakView:
    site = entry.site
    d = entry.decision
    return BreakView(
        rank=rank,
        id=entry.id,
        gb_code=site.gb_code or "?",
        doc_url=safe_url(site.doc_url),
        gb_type=site.gb_type,
        where=prose.location(site.where, display),
        code=site.where.code,
        verdict=prose.verdict_label(d) if d else "-",
        category=prose.category_title(d.category) if d else "",
        occurrences=f"{entry.occurrences_per_call:g}",
        gap_ms=fmt_ms(entry.gap_ms),
        cost_ms=fmt_ms(entry.cost_ms),
        cost_share=fmt_pct(entry.cost_share),
        fields=tuple(_break_fields(entry, report, display)),
        recipe=prose.recipe(entry, report, display) if d else "",
        hints=site.hints,
    )


def _break_fields(entry: BreakEntry, report: Report, display: Display) -> list[Field]:
    """The details in the order they are read: where the break is, what it costs, the verdict
    and why, the evidence, what the what-if showed, the registry page."""
    out = _site_fields(entry, display) + _cost_fields(entry)
    if entry.decision is not None:
        out += _verdict_fields(entry, entry.decision, report)
    out.append(Field("evidence", prose.evidence(entry)))
    out += _what_if_fields(entry, report)
    tried = search_words.considered(entry, report)
    if tried:
        out.append(Field("fixes considered", tried))
    if entry.site.doc_url:
        out.append(Field("registry page", entry.site.doc_url))
    return out


def _site_fields(entry: BreakEntry, display: Display) -> list[Field]:
    """Where the break is: its line, how it is reached, the frames and graphs it touches."""
    site = entry.site
    out = []
    if site.where.code:
        out.append(Field("source", site.where.code, True))
    if site.where.function:
        out.append(Field("function", site.where.function))
    if site.reached_from:
        out.append(
            Field(
                "reached from",
                prose.location(site.reached_from, display)
                + (f": {site.reached_from.code}" if site.reached_from.code else ""),
            )
        )
    if site.also_at:
        out.append(Field("also at", ", ".join(prose.location(a, display) for a in site.also_at)))
    if site.explanation:
        out.append(Field("explanation", site.explanation))
    note = prose.skipped_note(site)
    if note:
        out.append(Field("skipped frame", f"{note}: the frame runs in eager"))
    if entry.causes:
        out.append(
            Field(
                "causes",
                "; ".join(
                    f"{c.id} {c.gb_code or '?'} {c.gb_type} at {prose.location(c.where, display)}"
                    for c in entry.causes
                ),
            )
        )
    if site.compile_ids:
        out.append(Field("splits graphs", ", ".join(site.compile_ids)))
    return out


def _cost_fields(entry: BreakEntry) -> list[Field]:
    """How often it runs, the time it owns, and the parts of that time."""
    parts = entry.parts
    return [
        Field(
            "per call",
            f"runs {entry.occurrences_per_call:g}x; owns {fmt_ms(entry.gap_ms)} ms of eager time",
        ),
        Field(
            "cost parts",
            f"overhead {fmt_ms(parts.overhead_ms)} ms + tensor work "
            f"{fmt_ms(parts.tensor_work_ms)} ms (of which {fmt_ms(parts.kept_ms)} ms "
            f"compute-bound) + Python {fmt_ms(parts.python_work_ms)} ms",
        ),
    ]


def _verdict_fields(entry: BreakEntry, d: Decision, report: Report) -> list[Field]:
    """The cost, the other fixes' savings, the verdict (`d`, the entry's decision) and why."""
    unc = f" ± {fmt_ms(entry.cost_uncertainty_ms)}" if entry.cost_uncertainty_ms else ""
    label = f"{prose.verdict_label(d)} ({prose.category_title(d.category)})"
    return [
        Field(
            "cost",
            f"{fmt_ms(entry.cost_ms)}{unc} ms/call "
            f"({fmt_pct(entry.cost_share)} of the default-mode step)",
        ),
        Field("fix options", prose.savings_line(entry)),
        Field("verdict", label),
        Field("why", prose.why(entry, report)),
    ]


def _what_if_fields(entry: BreakEntry, report: Report) -> list[Field]:
    """What the what-if measured for this break, and any behaviour change it brings."""
    w = report.what_if(entry.what_if_knob)
    if w is None:
        return []
    out = [Field("what if", prose.what_if_line(w, training=report.training is not None))]
    warning = prose.behaviour_warning(w)
    if warning:
        out.append(Field("behaviour change", warning))
    return out
