"""A self-contained HTML report: tables plus figures embedded as base64 PNG."""

from __future__ import annotations

import base64
import html

from tabulate import tabulate

from advisor.model import Report
from advisor.render import figures
from advisor.render.common import (
    MODE_HEADERS,
    fmt_ms,
    fmt_pct,
    fullgraph_finding,
    location,
    mode_rows,
    segment_summary,
    short_path,
)
from advisor.taxonomy import skipped_frame_note

_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1100px;
color:#222;line-height:1.45}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f4f6f8}
code{background:#f4f6f8;padding:1px 4px;border-radius:3px}
.finding{background:#fff4e5;border-left:4px solid #e67e22;padding:.5em 1em}
.verdict-rewrite{color:#c0392b;font-weight:bold}.verdict-isolate{color:#d35400;font-weight:bold}
.verdict-ignore{color:#7f8c8d;font-weight:bold}
.break{border:1px solid #e3e3e3;border-radius:6px;padding:.4em 1em;margin:.8em 0}
pre{background:#f7f7f7;padding:.6em;white-space:pre-wrap}
img{max-width:100%}
"""


def _e(value: object) -> str:
    return html.escape(str(value))


def _img(png: bytes | None, alt: str) -> str:
    if png is None:
        return ""
    data = base64.b64encode(png).decode("ascii")
    return f'<p><img alt="{_e(alt)}" src="data:image/png;base64,{data}"></p>'


def _table(rows: list[list[object]], headers: list[str]) -> str:
    return tabulate(rows, headers=headers, tablefmt="html")


def render_html(report: Report) -> str:
    wl, env = report.workload, report.environment
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>advisor: {_e(wl.name)}</title><style>{_CSS}</style></head><body>",
        f"<h1>advisor report: {_e(wl.name)}</h1>",
        f"<p>Target <code>{_e(wl.target)}</code> on {_e(wl.device)} ({_e(env.device_name)}), "
        f"torch {_e(env.torch)}, Python {_e(env.python)}; measured {_e(report.created_at)}.</p>",
        "<h2>Modes</h2>",
        _table(mode_rows(report), MODE_HEADERS),  # type: ignore[arg-type]
        _img(figures.latency_figure(report), "latency by mode"),
    ]
    finding = fullgraph_finding(report)
    if finding:
        parts.append(f"<p class='finding'><b>Finding:</b> {_e(finding)}</p>")
    parts.append("<h2>Graph breaks</h2>")
    if not report.breaks:
        parts.append("<p>No graph breaks were captured in the default mode.</p>")
    else:
        parts.append(_img(figures.break_cost_figure(report), "break cost"))
        for i, b in enumerate(report.breaks, 1):
            verdict = (
                f"<span class='verdict-{_e(b.verdict)}'>{_e(b.verdict)}</span>" if b.verdict else ""
            )
            code_link = (
                f"<a href='{_e(b.doc_url)}'>{_e(b.gb_code)}</a>"
                if b.doc_url
                else _e(b.gb_code or "?")
            )
            items = [
                f"<li>source: <code>{_e(b.code)}</code> in {_e(b.function)}</li>" if b.code else "",
                f"<li>Dynamo stopped inside <code>{_e(short_path(b.break_file))}:"
                f"{b.break_line}</code></li>"
                if b.break_file
                else "",
                f"<li>explanation: {_e(b.explanation)}</li>" if b.explanation else "",
                f"<li>{_e(skipped_frame_note(b))}, so it runs in eager</li>"
                if b.frame_skipped
                else "",
                f"<li>occurrences per call: {b.occurrences_per_call:g}; measured gap "
                f"{fmt_ms(b.gap_ms)} ms/call; estimated cost {fmt_ms(b.cost_ms)} ms/call "
                f"({fmt_pct(b.cost_share)})</li>",
                f"<li>why: {_e(b.why)}</li>" if b.why else "",
            ]
            if b.what_if is not None:
                w = b.what_if
                items.append(
                    f"<li>what if <code>{_e(w.knob)}</code>: {_e(w.status)}; measured saving "
                    f"{fmt_ms(w.saving_ms)} ± {fmt_ms(w.saving_noise_ms)} ms (estimated "
                    f"{fmt_ms(w.estimated_saving_ms)}). {_e(w.behaviour_warning or w.note)}</li>"
                )
            items += [f"<li>registry hint: {_e(h)}</li>" for h in b.hints]
            recipe = f"<pre>{_e(b.recipe)}</pre>" if b.recipe else ""
            parts.append(
                f"<div class='break'><h3>{i}. {code_link} {_e(b.gb_type)} at "
                f"<code>{_e(location(b))}</code> {verdict}</h3><ul>{''.join(items)}</ul>"
                f"{recipe}</div>"
            )
    if report.graphs:
        rows = [
            [
                g.compile_id,
                g.function,
                g.file,
                f"{min(g.lines)}-{max(g.lines)}" if g.lines else "-",
                g.ops,
                fmt_ms(g.compile_s),
            ]
            for g in report.graphs
        ]
        parts += [
            "<h2>Compiled graphs</h2>",
            _table(rows, ["compile id", "function", "file", "lines", "ops", "compile s"]),
        ]
    if report.recompiles:
        rows = [[r.compile_id, r.function, r.reason, r.recommendation] for r in report.recompiles]
        parts += [
            "<h2>Recompiles</h2>",
            _table(rows, ["compile id", "function", "reason", "recommendation"]),
        ]
    att = report.attribution
    if att.calls:
        parts += [
            "<h2>Where a call's time goes</h2>",
            f"<p>Coverage {fmt_pct(att.coverage)} over {att.profiled_calls} profiled calls. "
            f"{_e(att.method)}</p>",
            _img(figures.timeline_figure(report), "call timeline"),
            _table(
                [
                    [label, f"{us:.1f}", fmt_pct(share)]
                    for label, us, share in segment_summary(report)
                ],
                ["segment", "µs per profiled call", "share"],
            ),
        ]
    if report.warnings:
        parts.append(
            "<h2>Warnings</h2><ul>"
            + "".join(f"<li>{_e(w)}</li>" for w in report.warnings)
            + "</ul>"
        )
    parts.append("</body></html>")
    return "\n".join(p for p in parts if p)
