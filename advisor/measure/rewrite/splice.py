"""Line edits: replace a statement's lines, delete a statement, edit inside a line, and put
the edits back into the file's text. Every line an edit does not name is kept byte for byte."""

from __future__ import annotations

import ast
import difflib

from advisor.measure.rewrite.outcome import FunctionNode, LineEdit
from advisor.measure.rewrite.source import Node, Source, last_line, split_lines, strip_ending


class OverlappingEdits(ValueError):
    """Two edits of one rewrite name the same line (a rewriter's mistake, not the user's)."""


def replace_statements(
    source: Source, first: Node, last: Node, code: list[str], indent: str | None = None
) -> LineEdit:
    """The lines of `first`..`last` replaced by `code` (statements, each possibly spanning
    lines) at `first`'s indentation. A comment alone on a line in between is kept, above the
    new code, since it still describes it; a comment trailing a replaced line is not."""
    indent = source.indent_of(first.lineno) if indent is None else indent
    start, stop = first.lineno, last_line(last)
    kept = [
        indent + source.line_text(n).strip()
        for n in range(start, stop + 1)
        if n in source.comment_lines
    ]
    return LineEdit(start, stop, tuple(kept + statement_lines(code, indent)))


def insert_statements(before_line: int, code: list[str], indent: str) -> LineEdit:
    return LineEdit(before_line, before_line - 1, tuple(statement_lines(code, indent)))


def statement_lines(code: list[str], indent: str) -> list[str]:
    """Statements as lines: the first line of each indented, the lines that continue it (a
    multi-line expression taken from the user's text) left as they were written."""
    lines: list[str] = []
    for statement in code:
        parts = [strip_ending(part) for part in split_lines(statement)]
        lines.append(indent + parts[0])
        lines.extend(parts[1:])
    return lines


def delete_statement(source: Source, block: list[ast.stmt], statement: ast.stmt) -> LineEdit:
    """The statement's lines removed; `pass` in their place when the block would be empty."""
    if len(block) == 1:
        return replace_statements(source, statement, statement, ["pass"])
    return LineEdit(statement.lineno, last_line(statement), ())


def substitute(source: Source, node: Node, changes: list[tuple[int, int, str]]) -> LineEdit:
    """The node's lines with text ranges (character offsets into the file) replaced; the rest
    of those lines, comments included, stays as written."""
    first, last = node.lineno, last_line(node)
    base = source.line_starts[first - 1]
    text = "".join(source.lines[first - 1 : last])
    for start, end, new in sorted(changes, reverse=True):
        text = text[: start - base] + new + text[end - base :]
    return LineEdit(first, last, tuple(strip_ending(line) for line in split_lines(text)))


def apply_edits(source: Source, edits: tuple[LineEdit, ...]) -> list[str]:
    """The file's lines (with endings) after the edits; insertions at a line go before an
    edit that replaces that line, in the order given."""
    ordered = sorted(edits, key=lambda e: (e.first, not e.is_insertion))
    out: list[str] = []
    next_line = 1  # the first original line not yet copied or replaced
    for edit in ordered:
        if edit.first < next_line:
            raise OverlappingEdits(f"edits overlap at line {edit.first}")
        out.extend(source.lines[next_line - 1 : edit.first - 1])
        if edit.lines and out and strip_ending(out[-1]) == out[-1]:
            out[-1] += source.newline  # the file's last line had no ending
        out.extend(line + source.newline for line in edit.lines)
        next_line = max(next_line, edit.first, edit.last + 1)
    out.extend(source.lines[next_line - 1 :])
    return out


def function_span(function: FunctionNode) -> tuple[int, int]:
    """(first line, last line): from the first decorator, or the `def`, to the end."""
    first = min([d.lineno for d in function.decorator_list] + [function.lineno])
    return first, last_line(function)


def span_text(lines: list[str] | tuple[str, ...], first: int, last: int) -> str:
    """Lines first..last joined, ending in a newline."""
    text = "".join(lines[first - 1 : last])
    return text if text.endswith(("\n", "\r")) else text + "\n"


def new_span(function: FunctionNode, edits: tuple[LineEdit, ...]) -> tuple[int, int]:
    """Where the function's lines lie after its edits (all of them inside it)."""
    first, last = function_span(function)
    growth = sum(len(e.lines) - (e.last - e.first + 1) for e in edits)
    return first, last + growth


def unified_hunks(old: list[str] | tuple[str, ...], new: list[str]) -> str:
    """The diff's hunks (from the first `@@`), one newline-terminated text."""
    rows = list(
        difflib.unified_diff(
            [strip_ending(line) for line in old],
            [strip_ending(line) for line in new],
            n=3,
            lineterm="",
        )
    )
    return "\n".join(rows[2:]) + "\n" if rows else ""
