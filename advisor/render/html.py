"""A self-contained HTML report: the shared view model through an autoescaping jinja2 template,
with the figures embedded as base64 PNG."""

from __future__ import annotations

import base64
import html

from advisor.core.model import Report
from advisor.render import figures
from advisor.render.ranks import RANK_HEADERS
from advisor.render.templates import environment
from advisor.render.view import BREAK_HEADERS, break_rows, build_view
from advisor.render.view_actions import ACTION_HEADERS, action_rows
from advisor.render.view_patches import REDACTED_DIFF
from advisor.render.view_script import SCRIPT_HEADERS


def _b64(png: bytes | None) -> str | None:
    return base64.b64encode(png).decode("ascii") if png is not None else None


def render_html(report: Report) -> str:
    view = build_view(report)
    template = environment().get_template("report.html.j2")
    return template.render(
        v=view,
        action_headers=ACTION_HEADERS,
        action_rows=action_rows(view.actions),
        break_headers=BREAK_HEADERS,
        break_rows=break_rows(view),
        rank_headers=RANK_HEADERS,
        script_headers=SCRIPT_HEADERS,
        redacted_diff=REDACTED_DIFF,
        figures={
            "latency": _b64(figures.latency_figure(report)),
            "breaks": _b64(figures.break_cost_figure(report)),
            "timeline": _b64(figures.timeline_figure(report)),
        },
    )


NOTEBOOK_HEIGHT_PX = 720


def render_notebook_html(report: Report) -> str:
    """The report for a notebook cell: the same page in an iframe, whose styles (`body`,
    `table`) would otherwise restyle the notebook around it."""
    page = html.escape(render_html(report), quote=True)
    return (
        f'<iframe srcdoc="{page}" title="advisor report: {html.escape(report.workload.name)}" '
        f'style="width:100%;height:{NOTEBOOK_HEIGHT_PX}px;border:1px solid #ddd"></iframe>'
    )
