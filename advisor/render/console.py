"""Terminal summary: the shared view model as plain-text tables that fit the terminal.

Why rich is a dependency: its tables fit a given width and wrap a long cell inside its own
column. tabulate's grew as wide as their longest cell, so one 400-character action title made
every row of the table wrap into the next. rich renders here to plain text (no colour, no cursor
movement, ASCII rules), so the summary reads the same piped into a file, in CI's log or on a
terminal that is not UTF-8. Where a narrow column cuts a long cell, the full text is in
report.md.
"""

from __future__ import annotations

import io
import shutil
import sys
from collections.abc import Collection, Iterable, Sequence
from typing import TextIO

from rich.box import Box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from advisor.core.model import Report
from advisor.render.formatting import without_controls
from advisor.render.ranks import RANK_HEADERS
from advisor.render.view import BREAK_HEADERS, ReportView, break_rows, build_view
from advisor.render.view_actions import ActionView
from advisor.render.view_patches import REDACTED_DIFF
from advisor.render.view_script import ScriptView
from advisor.render.wrap import one_line, wrap

# rich's SIMPLE box (no borders, a rule under the header) drawn in ASCII: "─" is not in every
# terminal's encoding. The space in the rule's crossing keeps a gap between the columns' rules.
ASCII_RULE = Box("    \n    \n -  \n    \n    \n -  \n    \n    \n", ascii=True)

MIN_WIDTH = 40  # narrower, the numbers' columns alone do not fit and get cut
MIN_TEXT = 16  # a column that wraps text gets at least this many characters, room allowing
NOTE_INDENT = 2  # an action's caveat and numerics note sit this far in under its title


def _clean(text: str) -> str:
    # before rich measures a cell, so the widths it lays out are the widths printed
    return without_controls(text)


def _text(text: str) -> Text:
    """Plain text for rich: a `Text` is never read as markup (a `[b]` in user code stays as
    written); a word longer than its column is folded onto the next line, never past the edge."""
    return Text(_clean(text), overflow="fold")


class _Fitted:
    """A table no wider than the console: when its cells do not fit, the widest wrapping columns
    give way first. The `fixed` columns (numbers, short words) do not wrap, so a number is not
    broken in two while a long text beside it keeps its whole width; on a console too narrow to
    leave the other columns `MIN_TEXT` each beside them, they wrap too."""

    def __init__(
        self,
        headers: Sequence[str],
        rows: Iterable[Sequence[RenderableType | str]],
        fixed: Collection[int] = (),
    ) -> None:
        self.headers = tuple(headers)
        self.rows = [tuple(row) for row in rows]
        self.fixed = frozenset(fixed)

    def _fixed_width(self) -> int:
        """The fixed columns' width with their gaps (their cells are plain strings)."""
        return sum(
            2 + max(cell_len(line) for cell in cells for line in str(cell).splitlines() or [""])
            for i, cells in enumerate(zip(self.headers, *self.rows, strict=True))
            if i in self.fixed
        )

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        text_columns = len(self.headers) - len(self.fixed)
        room = options.max_width - self._fixed_width()
        fixed = self.fixed if room >= MIN_TEXT * text_columns else frozenset()
        table = Table(
            box=ASCII_RULE,
            show_edge=False,
            pad_edge=False,
            padding=(0, 1, 0, 0),  # one space right of each cell, and the column gap: two in all
            collapse_padding=True,
            expand=False,
        )
        for i, header in enumerate(self.headers):
            table.add_column(_text(header), overflow="fold", no_wrap=i in fixed)
        for row in self.rows:
            table.add_row(*(_text(cell) if isinstance(cell, str) else cell for cell in row))
        yield table


def _lines(first: str, *more: RenderableType | str) -> RenderableType:
    """A cell of several lines: `first`, then each of `more` indented under it; a line that
    wraps keeps its indent."""
    if not more:
        return _text(first)
    indented = (
        Padding(_text(m) if isinstance(m, str) else m, (0, 0, 0, NOTE_INDENT)) for m in more
    )
    return Group(_text(first), *indented)


class _Wrapped:
    """Text wrapped to the console's width at spaces only (`render.wrap`): a code span, an
    identifier or a number is never broken; `first` starts the first line, `rest` the others."""

    def __init__(self, text: str, first: str = "", rest: str | None = None) -> None:
        self.text, self.first, self.rest = _clean(text), first, rest

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in wrap(self.text, options.max_width, self.first, self.rest):
            yield Text(line, no_wrap=True, overflow="ignore")


def _actions_list(view: ReportView) -> list[RenderableType]:
    """Each action: its head line (rank, what to do, the saving with its interval and share,
    measured or estimated), then where, what it removes, and its own caveats, indented."""
    out: list[RenderableType] = []
    for a in view.actions:
        first = f"{a.rank}. "
        indent = " " * len(first)
        out.append(_Wrapped(f"{a.title}; {_saving_words(a)}", first))
        where = "; ".join(
            part for part in (f"where: {a.where}" if a.where else "", _removes(a)) if part
        )
        for line in (where, *a.notes):
            if line:
                out.append(_Wrapped(line, indent))
    return out


def _saving_words(a: ActionView) -> str:
    saving = " ".join(p for p in a.saving_parts if not p.endswith("processes)"))
    basis = "measured" if a.measured else "estimated"
    return f"saves {saving}" + ("" if basis in a.title else f", {basis}")


def _removes(a: ActionView) -> str:
    return f"removes {a.removes}" if a.removes else ""


def _not_to_do(view: ReportView) -> list[RenderableType]:
    """What was tried and is not worth it, and what changes compile time only: one line each."""
    out: list[RenderableType] = []
    if view.tried:
        out += [Text(""), _text("Tried, not worth it:")]
        out += [_Wrapped(f"{t.label}: {t.effect}", "- ") for t in view.tried]
    if view.numerics_note and (view.actions or view.tried):  # once, for every variant above
        out += [Text(""), _Wrapped(view.numerics_note)]
    if view.compile_time:
        out += [Text(""), _text("Compile time only (nothing saved per call):")]
        out += [_Wrapped(line, "- ") for line in view.compile_time]
    return out


def _modes_table(view: ReportView) -> _Fitted:
    """The modes as columns, their measures as rows: eleven measures side by side do not fit
    80 columns, three modes do."""
    headers, rows = view.mode_headers, view.mode_rows
    measures = [(header, *(row[i] for row in rows)) for i, header in enumerate(headers) if i > 0]
    return _Fitted((headers[0], *(row[0] for row in rows)), measures)


class _Breaks:
    """The breaks ranked: a table where the console leaves its break column room for each
    break's longest line (where, code and type, the source line), else a list. At 80 columns
    the numbers and the verdict take about 60, and a source line folded into the 20 left reads
    as pieces of code. In the list, each break's place and verdict lead; its code and type, its
    source line and its numbers follow, one a line, at the console's whole width."""

    def __init__(self, view: ReportView) -> None:
        self.rows = break_rows(view)
        headers = BREAK_HEADERS
        cells = [
            (rank, _lines(where, f"{code} {gb_type}", source), *numbers)
            for rank, code, gb_type, where, source, *numbers in self.rows
        ]
        self.table = _Fitted((headers[0], "break", *headers[5:]), cells, fixed=(0, 2, 3, 4, 5, 6))

    def _widest(self) -> int:
        """The break column's widest line: where, then code and type and the source indented,
        with the column's one space of padding."""
        lines = [(r[3], 0) for r in self.rows]
        lines += [(t, NOTE_INDENT) for r in self.rows for t in (f"{r[1]} {r[2]}", r[4])]
        return max((cell_len(_clean(text)) + indent + 1 for text, indent in lines), default=0)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if options.max_width - self.table._fixed_width() >= self._widest():
            yield self.table
            return
        for rank, code, gb_type, where, source, per_call, gap, cost, share, verdict in self.rows:
            yield _labelled(f"{rank} ", f"{where}: {verdict}")  # a long path folds under itself
            numbers = (
                f"runs {per_call}x a call; gap {_in_ms(gap)}, cost {_in_ms(cost)} "
                f"({share} of the step)"
            )
            for line in (f"{code} {gb_type}", source, numbers):
                yield Padding(_text(line), (0, 0, 0, len(rank) + 2))


def _in_ms(value: str) -> str:
    """A formatted time with its unit; "-" (not measured) stays bare."""
    return value if value == "-" else f"{value} ms"


def _labelled(label: str, text: str) -> Table:
    """`label text`, the text's wrapped lines indented under its first (a hanging indent)."""
    grid = Table.grid(padding=(0, 1, 0, 0))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row(_text(label), _text(text))
    return grid


def _head(v: ReportView) -> list[RenderableType]:
    out: list[RenderableType] = [_text(f"advisor: {v.title} ({v.target}) on {v.environment}")]
    if v.incomplete:
        out.append(
            _text("INCOMPLETE: the run was interrupted; only what was measured so far is here.")
        )
    out += _script_head(v.script) if v.script is not None else []
    if v.headline:
        out += [Text(""), _Wrapped(v.headline)]
    if v.actions:
        out += [Text(""), _text("What to do first:"), *_actions_list(v)]
    out += _not_to_do(v)
    out += [Text(""), _modes_table(v)]
    if v.rank_rows:
        out += [Text(""), _text("Ranks:"), _Fitted(RANK_HEADERS, v.rank_rows)]
        out += [_text(v.rank_note)] if v.rank_note else []
    out += [Text(""), *(_text(s) for s in v.splits)] if v.splits else []
    return out


def _script_head(script: ScriptView) -> list[RenderableType]:
    """A script target: the command, the callable measured, how the survey ended and the other
    compiled callables on one wrapped line (their table is in report.md)."""
    out: list[RenderableType] = [_labelled("script:", script.run)]
    if script.measured:
        out.append(_labelled("measured:", script.measured))
    out.append(_labelled("survey:", script.ended))
    out += [_labelled("survey:", line) for line in script.uncompiled]
    if script.others:
        out.append(_text(script.others))
    return out


def _body(report: Report, v: ReportView) -> list[RenderableType]:
    out: list[RenderableType] = []
    if v.breaks:
        out += [
            Text(""),
            _text(
                f"Graph breaks ({len(v.breaks)} root causes), ranked by the recommended fix's "
                "saving:"
            ),
            _Breaks(v),
        ]
    elif v.sites_only:
        out += [
            Text(""),
            _text("Breaks captured, not costed:"),
            _Fitted(("id", "code", "type", "where", "source"), v.sites_only),
        ]
    elif (default := report.mode("default")) is not None and default.status == "ok":
        out += [Text(""), _text(f"No graph breaks captured ({len(report.graphs)} graph(s)).")]
    out += _patches(v)
    if v.recompile_rows:
        out += [Text(""), _text(f"Recompiles ({len(v.recompile_rows)}):")]
        out += [Padding(_text(f"{r[0]} {r[1]}: {r[2]}"), (0, 0, 0, 2)) for r in v.recompile_rows]
    if v.coverage:
        out += [Text(""), _text(f"Attribution coverage: {v.coverage}")]
    return out + _notes(v)


def _notes(v: ReportView) -> list[RenderableType]:
    """The warnings about noise, the machine and the run, grouped at the end, one line each
    (cut at a space: report.md has the whole text)."""
    if not v.alerts and not v.warnings:
        return []
    out: list[RenderableType] = [Text(""), _text("Notes (whole in report.md):")]
    return out + [_OneLine(text) for text in (*v.alerts, *v.warnings)]


class _OneLine:
    """A note on one line of the console, cut at a space with "…" where it is longer."""

    def __init__(self, text: str) -> None:
        self.text = _clean(text)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text(one_line(self.text, options.max_width, "- "), no_wrap=True, overflow="ignore")


def _patches(v: ReportView) -> list[RenderableType]:
    """Each generated patch: what it does, what measuring it found, and its diff (short: the
    lines a rewrite changes and three of context), folded at the console's edge."""
    out: list[RenderableType] = []
    for p in v.patches:
        out += [Text(""), _text(f"Patch {p.name}: {p.label}"), _labelled("-", p.outcome)]
        if p.caveat:
            out.append(_labelled("-", p.caveat))
        diff = p.diff.rstrip("\n") or f"({p.no_diff or REDACTED_DIFF})"
        out.append(Padding(_text(diff), (0, 0, 0, NOTE_INDENT)))
    return out


def terminal_width() -> int:
    """The terminal's columns; `COLUMNS` when set, 80 when stdout is not a terminal."""
    return shutil.get_terminal_size().columns


def render_text(report: Report, width: int | None = None) -> str:
    """The summary as plain text, no line wider than `width` (default: the terminal's, which
    honours `COLUMNS`): a cell wraps inside its column, a word wider than it is folded."""
    v = build_view(report)
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=max(width or terminal_width(), MIN_WIDTH),
        no_color=True,
        color_system=None,
        force_terminal=False,
        force_jupyter=False,
        force_interactive=False,
        highlight=False,
        emoji=False,
        markup=False,
        soft_wrap=False,
        legacy_windows=False,
    )
    for part in [*_head(v), *_body(report, v)]:
        console.print(part)
    # rich pads each table line to the table's width: trailing spaces only
    lines = [line.rstrip() for line in buffer.getvalue().splitlines()]
    return without_controls("\n".join(lines))


# Emphasis on a terminal only: the section titles, the actions' numbers, code spans, losses.
_EMPHASIS = (
    (r"(?m)^(What to do first|Tried, not worth it|Compile time only[^\n]*|Graph breaks[^\n]*"
     r"|Notes[^\n]*|Recompiles[^\n]*):$", "bold"),
    (r"(?m)^\d+\. ", "bold green"),
    (r"`[^`\n]+`", "cyan"),
    (r"\bslower: [^\n,;]+", "red"),
)  # fmt: skip


def print_summary(report: Report, file: TextIO | None = None) -> None:
    """The summary on stdout: plain where stdout is not a terminal (a file, a pipe, CI's log),
    with colour and emphasis on one. The text and its line breaks are the same either way."""
    out = file or sys.stdout
    text = render_text(report)
    if not out.isatty():
        print(text, file=out)
        return
    styled = Text(text)
    for pattern, style in _EMPHASIS:
        styled.highlight_regex(pattern, style)
    if (headline := _headline_span(text)) is not None:
        styled.stylize("bold", *headline)
    console = Console(file=out, highlight=False, markup=False, emoji=False, soft_wrap=True)
    console.print(styled)


def _headline_span(text: str) -> tuple[int, int] | None:
    """Where the headline paragraph is: the first that starts "compile is"."""
    start = text.find("\n\ncompile is ")
    if start < 0:
        return None
    end = text.find("\n\n", start + 2)
    return start + 2, end if end >= 0 else len(text)
