"""The zoo report and the zoo comparison as strings: Markdown, HTML (figures embedded), JSON."""

from __future__ import annotations

import base64
import html
import json

from tabulate import tabulate

from advisor.core.identity import BreakIdentity
from advisor.core.model import to_jsonable
from advisor.render.actions import title_of
from advisor.render.formatting import fmt_ms, fmt_pct
from advisor.sweep import figures
from advisor.sweep.aggregate import CodeCause, ModelSummary, RootCause, Zoo
from advisor.sweep.compare import CauseChange, ZooComparison

TOP_SENTENCES = 5
_MODEL_HEADERS = [
    "model",
    "status",
    "eager ms",
    "default ms",
    "fullgraph ms",
    "speedup default",
    "speedup fullgraph",
    "breaks",
    "time in breaks",
    "fixes save",
    "library change",
    "projected",
    "top action",
]
MODEL_COLUMNS_NOTE = (
    "time in breaks: the share of the default-mode step spent in the breaks' eager gaps and "
    "region overheads; fixes save: the share the recommended fixes would save (measured where "
    "a what-if or fullgraph measured it; work that moving code keeps is not counted); library "
    "change: the share breaks in library code would save that no measured change removes (not "
    "in the projection); projected: the speedup over eager with the fixes, and what bounds it "
    "when something measured does."
)
_CAUSE_HEADERS = [
    "#",
    "code",
    "location",
    "models",
    "sum of shares",
    "median share",
    "ms",
    "verdicts",
    "library",
]
_CODE_HEADERS = ["code", "type", "models", "locations", "sum of shares", "median share", "ms"]


def render_json(zoo: Zoo) -> str:
    return json.dumps(to_jsonable(zoo), indent=2, allow_nan=False)


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _where(identity: BreakIdentity) -> str:
    return f"{identity.file}:{identity.line}"


def _projected(m: ModelSummary) -> str:
    shown = _x(m.projected_speedup)
    if m.projected_speedup is None or m.projection_basis in (None, "estimate"):
        return shown
    return f"{shown} ({m.projection_basis})"


def top_action_title(m: ModelSummary, zoo: Zoo) -> str:
    if m.top_action is None:
        return "-"
    return title_of(m.top_action.action, m.top_action.context, zoo.display)


def model_rows(zoo: Zoo) -> list[list[str]]:
    return [_model_row(m, zoo) for m in zoo.models]


def _model_row(m: ModelSummary, zoo: Zoo) -> list[str]:
    status = m.status + (" (incomplete)" if m.incomplete else "")
    return [
        m.name,
        status,
        fmt_ms(m.eager_ms),
        fmt_ms(m.default_ms),
        fmt_ms(m.fullgraph_ms),
        _x(m.speedup_default),
        _x(m.speedup_fullgraph),
        "-" if m.n_breaks is None else str(m.n_breaks),
        fmt_pct(m.break_time_share),
        fmt_pct(m.saving_share),
        fmt_pct(m.library_share),
        _projected(m),
        top_action_title(m, zoo),
    ]


def cause_rows(zoo: Zoo) -> list[list[str]]:
    return [_cause_row(i, c) for i, c in enumerate(zoo.root_causes, 1)]


def _cause_row(i: int, c: RootCause) -> list[str]:
    return [
        str(i),
        c.identity.registry_code,
        _where(c.identity),
        str(len(c.models)),
        fmt_pct(c.total_share),
        fmt_pct(c.median_share),
        fmt_ms(c.total_ms),
        ", ".join(c.verdicts) or "-",
        "yes" if c.library else "-",
    ]


def code_rows(zoo: Zoo) -> list[list[str]]:
    return [_code_row(c) for c in zoo.gb_codes]


def _code_row(c: CodeCause) -> list[str]:
    return [
        c.gb_code or "-",
        c.gb_type,
        str(len(c.models)),
        str(c.locations),
        fmt_pct(c.total_share),
        fmt_pct(c.median_share),
        fmt_ms(c.total_ms),
    ]


def _kind(c: RootCause) -> str:
    return f"{c.gb_code}, {c.gb_type}" if c.gb_code else c.gb_type


def cause_sentences(zoo: Zoo, top: int = TOP_SENTENCES) -> list[str]:
    """'One line costs N% of the step on K models', for the costliest locations."""
    return [
        f"`{_where(c.identity)}` ({_kind(c)}) costs a median "
        f"{fmt_pct(c.median_share)} of the step on {len(c.models)} model"
        f"{'s' * (len(c.models) != 1)} ({fmt_pct(c.total_share)} summed)"
        for c in zoo.root_causes[:top]
        if c.total_share > 0
    ]


def failure_rows(zoo: Zoo) -> list[list[str]]:
    return [[m.name, m.status, m.error or "-"] for m in zoo.models if m.status != "ok"]


def counts_line(zoo: Zoo) -> str:
    parts = [f"{n} {status}" for status, n in sorted(zoo.counts.items())]
    return f"{len(zoo.models)} targets: {', '.join(parts) or 'none'}"


def misplaced_line(zoo: Zoo) -> str:
    """How many actions name a line the user can make their change at (a check of the advice)."""
    finished = [m for m in zoo.models if m.status == "ok"]
    bad = [f"{m.name} ({'; '.join(m.misplaced)})" for m in finished if m.misplaced]
    if not bad:
        n = len(finished)
        return f"Every action of the {n} finished models names a line the user can act at."
    return f"Actions at a line the user cannot act at: {', '.join(bad)}."


def render_markdown(zoo: Zoo) -> str:
    parts = [f"# Sweep: {zoo.name}", "", counts_line(zoo), "", misplaced_line(zoo), ""]
    parts += ["## Models", ""]
    parts += [tabulate(model_rows(zoo), headers=_MODEL_HEADERS, tablefmt="github"), ""]
    parts += [MODEL_COLUMNS_NOTE, ""]
    parts += _md_causes(zoo)
    failures = failure_rows(zoo)
    if failures:
        parts += ["## Targets that did not finish", ""]
        parts += [tabulate(failures, headers=["target", "status", "error"], tablefmt="github"), ""]
    return "\n".join(parts)


def _md_causes(zoo: Zoo) -> list[str]:
    if not zoo.root_causes:
        return ["No graph breaks in any finished model.", ""]
    parts = ["## Root causes across the zoo", ""]
    parts += [f"- {s}" for s in cause_sentences(zoo)] + [""]
    parts += [tabulate(cause_rows(zoo), headers=_CAUSE_HEADERS, tablefmt="github"), ""]
    parts += ["## By registry code", ""]
    parts += [tabulate(code_rows(zoo), headers=_CODE_HEADERS, tablefmt="github"), ""]
    return parts


_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1200px;
color:#222;line-height:1.45}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f4f6f8}
code{background:#f4f6f8;padding:1px 4px;border-radius:3px}
img{max-width:100%}
"""


def _img(png: bytes | None, alt: str) -> str:
    if png is None:
        return ""
    data = base64.b64encode(png).decode("ascii")
    return f'<p><img alt="{html.escape(alt)}" src="data:image/png;base64,{data}"></p>'


def _table(rows: list[list[str]], headers: list[str]) -> str:
    return tabulate(rows, headers=headers, tablefmt="html")


def render_html(zoo: Zoo) -> str:
    name = html.escape(zoo.name)
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>advisor sweep: {name}</title><style>{_CSS}</style></head><body>",
        f"<h1>Sweep: {name}</h1><p>{html.escape(counts_line(zoo))}</p>"
        f"<p>{html.escape(misplaced_line(zoo))}</p>",
        "<h2>Models</h2>",
        _table(model_rows(zoo), _MODEL_HEADERS),
        f"<p>{html.escape(MODEL_COLUMNS_NOTE)}</p>",
        _img(figures.speedup_figure(zoo), "speedup distribution"),
    ]
    if zoo.root_causes:
        sentences = "".join(f"<li>{html.escape(s)}</li>" for s in cause_sentences(zoo))
        parts += [
            "<h2>Root causes across the zoo</h2>",
            f"<ul>{sentences}</ul>",
            _img(figures.root_cause_figure(zoo), "cost by root cause"),
            _table(cause_rows(zoo), _CAUSE_HEADERS),
            "<h2>By registry code</h2>",
            _table(code_rows(zoo), _CODE_HEADERS),
        ]
    failures = failure_rows(zoo)
    if failures:
        parts += [
            "<h2>Targets that did not finish</h2>",
            _table(failures, ["target", "status", "error"]),
        ]
    parts.append("</body></html>")
    return "\n".join(parts)


# --- comparison ------------------------------------------------------------------------------


def render_compare_markdown(cmp: ZooComparison) -> str:
    parts = [f"# Sweep comparison: {cmp.old_name} -> {cmp.new_name}", "", "## Models", ""]
    rows = [
        [
            m.name,
            f"{m.old_status or '-'} -> {m.new_status or '-'}",
            f"{_x(m.old_speedup)} -> {_x(m.new_speedup)}",
            f"{fmt_ms(m.old_default_ms)} -> {fmt_ms(m.new_default_ms)}",
            "-" if m.default_change is None else f"{m.default_change * 100:+.1f}%",
        ]
        for m in cmp.models
    ]
    headers = ["model", "status", "speedup default", "default ms", "change"]
    parts += [tabulate(rows, headers=headers, tablefmt="github"), ""]
    for title, changes in (
        ("Root causes removed", cmp.removed),
        ("Root causes added", cmp.added),
        ("Root causes changed", cmp.changed),
    ):
        parts += [f"## {title}", "", *_change_table(changes)]
    return "\n".join(parts)


def _change_table(changes: tuple[CauseChange, ...]) -> list[str]:
    if not changes:
        return ["None.", ""]
    rows = [
        [
            c.identity.registry_code,
            _where(c.identity),
            f"{c.old_models} -> {c.new_models}",
            f"{fmt_pct(c.old_share)} -> {fmt_pct(c.new_share)}",
        ]
        for c in changes
    ]
    headers = ["code", "location", "models", "sum of shares"]
    return [tabulate(rows, headers=headers, tablefmt="github"), ""]
