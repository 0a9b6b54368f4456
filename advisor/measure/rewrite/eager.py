"""A nested helper decorated with `torch.compiler.disable`, written into the compiled function:
the statements moved into it (re-indented one level, comments kept) and its call. Code run
through it stays out of Dynamo's trace, so Python state it mutates is never guarded on."""

from __future__ import annotations

import ast

from advisor.measure.rewrite.expressions import Change, text_with
from advisor.measure.rewrite.locate import Site
from advisor.measure.rewrite.names import dotted, fresh_name
from advisor.measure.rewrite.source import Source, last_line, split_lines, strip_ending
from advisor.measure.rewrite.splice import statement_lines

MOVABLE = (ast.Expr, ast.Delete, ast.Assign, ast.AugAssign)
# a nested function changes what these mean: `yield`/`await` would make it a generator or a
# coroutine, `:=` would bind in it, zero-argument `super()` needs the method's own frame
NOT_IN_HELPER = (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr)
FRAME_NAMES = frozenset({"super", "__class__"})


def fresh_names(taken: set[str], *wanted: str) -> list[str]:
    """Each wanted name, or `name_2`, `name_3`, ...: unused in the function and by each other
    (a helper's parameter must not hide a name its moved statements read)."""
    taken = set(taken)
    chosen = []
    for base in wanted:
        chosen.append(fresh_name(base, taken))
        taken.add(chosen[-1])
    return chosen


def indent_unit(source: Source, outer_line: int, inner_line: int) -> str:
    """One level of the file's own indentation: the inner line's, less the outer's."""
    outer, inner = source.indent_of(outer_line), source.indent_of(inner_line)
    return inner[len(outer) :] if inner.startswith(outer) and len(inner) > len(outer) else "    "


def helper_lines(
    torch: str, name: str, parameter: str, body: list[str], indent: str, argument: str
) -> list[str]:
    """The decorated `def`, its body (lines already indented), a blank line and the call."""
    return [
        f"{indent}@{torch}.compiler.disable",
        f"{indent}def {name}({parameter}):",
        *body,
        "",
        *statement_lines([f"{name}({argument})"], indent),
    ]


def rendered(
    source: Source,
    node: ast.stmt,
    indent: str,
    extra: str,
    changes: list[Change] | None = None,
    comment: bool = False,
) -> list[str]:
    """The statement's text with `changes`, at `indent`, its continuation lines moved `extra`
    further in (kept as written when that would change a string that spans lines); with
    `comment`, the comment that trails its last line too."""
    text = text_with(source, node, changes or [])
    if comment:
        last = last_line(node)
        text += source.line_text(last)[source.end(node) - source.line_starts[last - 1] :].rstrip()
    lines = [strip_ending(line) for line in split_lines(text)]
    shifted = [lines[0]] + [extra + line if line.strip() else line for line in lines[1:]]
    if len(lines) > 1 and not _same_code("\n".join(lines), "\n".join(shifted)):
        shifted = lines
    return [indent + shifted[0], *shifted[1:]]


def _same_code(first: str, second: str) -> bool:
    try:
        return ast.dump(ast.parse(first)) == ast.dump(ast.parse(second))
    except SyntaxError:
        return False


def following(site: Site, after: ast.stmt, state: str, forbidden: set[str]) -> list[ast.stmt]:
    """The statements right after `after` in its block that can move into the helper with it:
    each simple, on lines of its own, naming `state`, reading none of `forbidden`, binding no
    plain name (in the helper it would bind the helper's own). The first that cannot ends the
    run, so the order of what stays and what moves is kept."""
    moved: list[ast.stmt] = []
    current = site.next_statement(after)
    while current is not None and _movable(site.source, current, state, forbidden):
        moved.append(current)
        current = site.next_statement(current)
    return moved


def _movable(source: Source, statement: ast.stmt, state: str, forbidden: set[str]) -> bool:
    if not isinstance(statement, MOVABLE) or not source.owns_lines(statement):
        return False
    nodes = list(ast.walk(statement))
    if not any(isinstance(n, (ast.Name, ast.Attribute)) and dotted(n) == state for n in nodes):
        return False
    if any(isinstance(n, NOT_IN_HELPER) for n in nodes):
        return False
    # a comprehension's own variables are bound in its scope, not the helper's
    own = {
        n.id
        for c in nodes
        if isinstance(c, ast.comprehension)
        for n in ast.walk(c.target)
        if isinstance(n, ast.Name)
    }
    for node in nodes:
        if not isinstance(node, ast.Name):
            continue
        if node.id in FRAME_NAMES or node.id in forbidden:
            return False
        if not isinstance(node.ctx, ast.Load) and node.id not in own:
            return False
    return True


def assigned_in(block: ast.AST) -> set[str]:
    """Every name bound anywhere in `block` (nested scopes too: more is only more careful)."""
    names: set[str] = set()
    for node in ast.walk(block):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
    return names


def moved_lines(
    source: Source, after: ast.stmt, moved: list[ast.stmt], indent: str, extra: str
) -> list[str]:
    """The moved statements at `indent`, each with the comment lines above it (they describe
    it); the blank lines between them are dropped."""
    lines: list[str] = []
    previous = last_line(after)
    for statement in moved:
        lines.extend(
            indent + source.line_text(n).strip()
            for n in range(previous + 1, statement.lineno)
            if n in source.comment_lines
        )
        lines.extend(rendered(source, statement, indent, extra, comment=True))
        previous = last_line(statement)
    return lines
