"""The user's expressions as text: their own source segments, with small cuts (`.item()`
dropped, `h[idx]` read as `h`), fit to stand as a call's argument or an assignment's value."""

from __future__ import annotations

import ast

from advisor.measure.rewrite.source import Node, Source

Change = tuple[int, int, str]  # (start, end) character offsets in the file, and the new text


def text_with(source: Source, node: Node, changes: list[Change]) -> str:
    """The node's text with `changes` (ranges inside it) made."""
    start = source.start(node)
    text = source.segment(node)
    for first, last, new in sorted(changes, reverse=True):
        text = text[: first - start] + new + text[last - start :]
    return text


def is_item_call(node: ast.AST) -> bool:
    """`E.item()`."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "item"
        and not node.args
        and not node.keywords
    )


def item_calls(node: ast.AST) -> list[ast.Call]:
    """`E.item()` calls inside the node."""
    return [call for call in ast.walk(node) if isinstance(call, ast.Call) and is_item_call(call)]


def method_call_start(source: Source, method: ast.Attribute) -> int:
    """Where `.method(...)` begins in `E.method(...)`: at its dot, which stands after E's
    closing parenthesis when E is bracketed (E's own span ends inside it)."""
    return source.text.rfind(".", source.start(method), source.end(method) - len(method.attr))


def without_item(source: Source, node: Node) -> str:
    """The node's text with every `.item()` removed (`x.sum().item() > 0` -> `x.sum() > 0`)."""
    cuts = [
        (method_call_start(source, call.func), source.end(call), "")
        for call in item_calls(node)
        if isinstance(call.func, ast.Attribute)
    ]
    return text_with(source, node, _outermost(cuts))


def _outermost(changes: list[Change]) -> list[Change]:
    """Drop changes nested in another (`a.item().item()`: the outer cut holds the inner)."""
    kept: list[Change] = []
    for change in sorted(changes, key=lambda c: (c[0], -c[1])):
        if kept and change[0] < kept[-1][1]:
            continue
        kept.append(change)
    return kept


def argument(source: Source, node: ast.expr, text: str | None = None) -> str:
    """The node's text as one argument of a call: a bare tuple (`a, b`), a starred or a
    walrus expression gets the parentheses it needs there."""
    text = source.segment(node) if text is None else text
    bare_tuple = (
        isinstance(node, ast.Tuple)
        and bool(node.elts)
        and source.start(node.elts[0]) == source.start(node)
    )
    if bare_tuple or isinstance(node, (ast.Starred, ast.NamedExpr, ast.Yield, ast.YieldFrom)):
        return f"({text})"
    return text


def value(text: str) -> str:
    """Text to stand after `name = `: an expression spread over lines is bracketed, since the
    line breaks inside it were only legal inside the brackets it had."""
    return f"({text})" if "\n" in text or "\r" in text else text


def grouped(node: ast.expr, text: str) -> str:
    """Text to take a method call (`.bool()`): bracketed unless it is already one term."""
    atoms = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)
    return text if isinstance(node, atoms) or _bracketed(text) else f"({text})"


def _bracketed(text: str) -> bool:
    """`(...)` as a whole: the first parenthesis closes at the last character."""
    if not (text.startswith("(") and text.endswith(")")):
        return False
    depth = 0
    for position, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return position == len(text) - 1
    return False


def brief(source: Source, node: Node, width: int = 40) -> str:
    """The node's first line, cut to `width` characters, for a one-line reason."""
    text = source.segment(node).strip().splitlines()[0]
    return text if len(text) <= width else text[: width - 3] + "..."
