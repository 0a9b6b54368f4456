"""The user's file as text and as a tree, with the position arithmetic the rewriters share.

`ast` gives columns as UTF-8 byte offsets; the text is sliced in characters, so every position
goes through `offset`. Lines are split the way Python's tokenizer counts them (`\\n`, `\\r\\n`,
`\\r`), not `str.splitlines` (which also breaks at form feeds and would shift line numbers).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass

from advisor.measure.rewrite.outcome import Refusal

Node = ast.stmt | ast.expr  # what has a position

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_ENDING = re.compile(r"(?:\r\n|\r|\n)$")


def split_lines(text: str) -> list[str]:
    """The lines of `text`, each with its own line ending (the last may have none)."""
    return _LINE.findall(text)


def strip_ending(line: str) -> str:
    return _ENDING.sub("", line)


def last_line(node: Node) -> int:
    return node.end_lineno or node.lineno


@dataclass(frozen=True)
class Source:
    """One file: its text, lines (with endings), tree, and the lines holding only a comment."""

    file: str
    text: str
    lines: tuple[str, ...]
    tree: ast.Module
    comment_lines: frozenset[int]
    line_starts: tuple[int, ...]

    @property
    def newline(self) -> str:
        """The file's own line ending, for the lines a rewrite writes."""
        for line in self.lines:
            match = _ENDING.search(line)
            if match:
                return match.group()
        return "\n"

    def line_text(self, lineno: int) -> str:
        """Line `lineno` (1-based) without its ending."""
        return strip_ending(self.lines[lineno - 1])

    def indent_of(self, lineno: int) -> str:
        text = self.line_text(lineno)
        return text[: len(text) - len(text.lstrip(" \t"))]

    def offset(self, lineno: int, byte_col: int) -> int:
        """The character offset in `text` of `ast`'s (line, UTF-8 byte column)."""
        line = self.lines[lineno - 1]
        return self.line_starts[lineno - 1] + len(line.encode("utf-8")[:byte_col].decode("utf-8"))

    def start(self, node: Node) -> int:
        return self.offset(node.lineno, node.col_offset)

    def end(self, node: Node) -> int:
        return self.offset(last_line(node), node.end_col_offset or 0)

    def segment(self, node: Node) -> str:
        """The node's text as the user wrote it."""
        return self.text[self.start(node) : self.end(node)]

    def owns_lines(self, node: Node) -> bool:
        """Nothing but indentation before the node on its first line and nothing but a comment
        after it on its last: its lines can be replaced without touching other code."""
        first, last = node.lineno, last_line(node)
        before = self.line_text(first)[: self.start(node) - self.line_starts[first - 1]]
        after = self.line_text(last)[self.end(node) - self.line_starts[last - 1] :]
        return not before.strip() and (not after.strip() or after.strip().startswith("#"))


def read_source(file: str) -> Source | Refusal:
    """The file parsed, or why it cannot be (unreadable, not UTF-8, not Python)."""
    try:
        with open(file, encoding="utf-8-sig", newline="") as handle:  # keep \r\n as written
            text = handle.read()
    except (OSError, UnicodeDecodeError) as error:
        return Refusal(f"cannot read {file}: {error}")
    return parse_source(file, text)


def parse_source(file: str, text: str) -> Source | Refusal:
    """`text` (the file's, or the file as patches left it) parsed, or why it cannot be."""
    try:
        tree = ast.parse(text, filename=file)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        where = f" (line {error.lineno})" if isinstance(error, SyntaxError) else ""
        message = error.msg if isinstance(error, SyntaxError) else str(error)
        return Refusal(f"cannot parse {file}: {message}{where}")
    lines = tuple(split_lines(text))
    starts, total = [], 0
    for line in lines:
        starts.append(total)
        total += len(line)
    return Source(file, text, lines, tree, _comment_lines(text), tuple(starts))


def _comment_lines(text: str) -> frozenset[int]:
    """Lines whose only token is a comment (kept when the statement around them is replaced)."""
    found: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text, newline="").readline):
            if token.type == tokenize.COMMENT and not token.line[: token.start[1]].strip():
                found.add(token.start[0])
    except (tokenize.TokenError, SyntaxError):
        pass  # the file parsed, so this does not happen; no comments kept is the safe answer
    return frozenset(found)
