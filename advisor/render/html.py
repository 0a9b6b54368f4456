"""A self-contained HTML report: the shared view model through an autoescaping jinja2 template,
with the figures embedded as base64 PNG."""

from __future__ import annotations

import base64

from advisor.model import Report
from advisor.render import figures
from advisor.render.templates import environment
from advisor.render.view import ACTION_HEADERS, BREAK_HEADERS, action_rows, break_rows, build_view


def _b64(png: bytes | None) -> str | None:
    return base64.b64encode(png).decode("ascii") if png is not None else None


def render_html(report: Report) -> str:
    view = build_view(report)
    template = environment().get_template("report.html.j2")
    return template.render(
        v=view,
        action_headers=ACTION_HEADERS,
        action_rows=action_rows(view),
        break_headers=BREAK_HEADERS,
        break_rows=break_rows(view),
        figures={
            "latency": _b64(figures.latency_figure(report)),
            "breaks": _b64(figures.break_cost_figure(report)),
            "timeline": _b64(figures.timeline_figure(report)),
        },
    )
