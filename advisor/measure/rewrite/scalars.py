"""`scalar_bookkeeping`: `.item()` / `.tolist()` results kept in Python state
(`T.append(E.item())`, `T.extend(E.tolist())`, `T += E.item()`). The conversion and the
state's update move into a nested function decorated with `torch.compiler.disable`, defined and
called in the compiled function: traced, any mutation of a Python list makes Dynamo guard on
its length, so every call recompiles until the recompile limit sends the frame back to eager
(measured on torch 2.13); run through a disabled helper, the list never enters the trace. In a
loop, the tensors are collected in a list and the helper, called once after the loop, converts
them. The simple statements right after that keep up the same state (`del T[:-N]`) move into
the helper with it, since traced they would mutate the list all the same."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from advisor.measure.rewrite.eager import (
    assigned_in,
    following,
    fresh_names,
    helper_lines,
    indent_unit,
    moved_lines,
    rendered,
)
from advisor.measure.rewrite.expressions import argument, method_call_start
from advisor.measure.rewrite.locate import Site
from advisor.measure.rewrite.names import dotted, names_in, walk_scope
from advisor.measure.rewrite.outcome import SHARED_LINE, LineEdit, Refusal, Rewrite
from advisor.measure.rewrite.source import Source, last_line
from advisor.measure.rewrite.splice import insert_statements, replace_statements

KIND = "scalar_bookkeeping"
LOOPS = (ast.For, ast.AsyncFor, ast.While)
Loop = ast.For | ast.AsyncFor | ast.While
PAIRS = {("append", "item"), ("extend", "tolist")}  # the store and the conversion it takes


@dataclass(frozen=True)
class Bookkeeping:
    """`T.append(E.item())`, `T.extend(E.tolist())` or `T op= E.item()`: the state `T`, the
    tensor `E`, the conversion call (`.item()` / `.tolist()`), its name, and the store
    (the `T.append` / `T.extend` attribute, None for `op=`)."""

    state: ast.expr
    tensor: ast.expr
    conversion: ast.Call
    method: ast.Attribute
    store: ast.Attribute | None

    @property
    def path(self) -> str:
        """`T` as a dotted chain (`self.recent`); `_bookkeeping` takes no other state."""
        return dotted(self.state) or ""

    @property
    def base(self) -> str:
        """The last name of the chain, for the names the rewrite makes (`recent`)."""
        return self.path.rsplit(".", 1)[-1]


def rewrite_scalar_bookkeeping(site: Site) -> Rewrite | Refusal | None:
    statement = site.statement
    found = _bookkeeping(statement) if statement is not None else None
    if found is None or statement is None:
        return None
    if not site.source.owns_lines(statement):
        return SHARED_LINE
    if found.store is None and isinstance(found.state, ast.Name):
        return Refusal(
            "a local total is not state kept across calls: a nested function cannot rebind "
            f"`{found.path}`"
        )
    loop = site.parents.get(statement)
    if isinstance(loop, LOOPS) and any(s is statement for s in loop.body):
        return _convert_after_loop(site, statement, loop, found)
    if _under_a_loop(site, statement):
        return Refusal(
            "the bookkeeping sits in a block inside a loop, so its values cannot be collected "
            "for after the loop"
        )
    return _convert_in_place(site, statement, found)


def _bookkeeping(statement: ast.stmt) -> Bookkeeping | None:
    if isinstance(statement, ast.AugAssign):
        converted = _conversion(statement.value)
        if converted is None or converted[2].attr != "item" or dotted(statement.target) is None:
            return None
        return Bookkeeping(statement.target, *converted, None)
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return None
    call = statement.value
    if not (isinstance(call.func, ast.Attribute) and len(call.args) == 1 and not call.keywords):
        return None
    converted = _conversion(call.args[0])
    if converted is None or dotted(call.func.value) is None:
        return None
    if (call.func.attr, converted[2].attr) not in PAIRS:
        return None
    return Bookkeeping(call.func.value, *converted, call.func)


def _conversion(node: ast.expr) -> tuple[ast.expr, ast.Call, ast.Attribute] | None:
    """(E, the call, its `E.item` / `E.tolist`) for `E.item()` / `E.tolist()`, else None."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("item", "tolist")
        and not node.args
        and not node.keywords
    ):
        return node.func.value, node, node.func
    return None


def _under_a_loop(site: Site, statement: ast.stmt) -> bool:
    """Nested in a block (`if`, `with`) of a loop's body: a helper called there would still
    break the graph inside the loop, and the values cannot wait for its end there either."""
    child: ast.AST = statement
    parent = site.parents.get(child)
    while parent is not None and parent is not site.function:
        if isinstance(parent, LOOPS) and any(s is child for s in parent.body):
            return True
        child, parent = parent, site.parents.get(parent)
    return False


def _as_value(source: Source, found: Bookkeeping, value: str) -> list[tuple[int, int, str]]:
    """The change that writes `E.item()` as `value.item()` (E's brackets included)."""
    return [(source.start(found.conversion), method_call_start(source, found.method), value)]


def _convert_in_place(site: Site, statement: ast.stmt, found: Bookkeeping) -> Rewrite:
    """The statement (and the simple ones after it on the same state) as a disabled helper
    taking `E`, called where the statement was."""
    source, function = site.source, site.function
    helper, value = fresh_names(names_in(function), f"keep_{found.base}", "value")
    indent = source.indent_of(statement.lineno)
    unit = indent_unit(source, function.lineno, function.body[0].lineno)
    body = rendered(source, statement, indent + unit, unit, _as_value(source, found, value))
    moved = following(site, statement, found.path, set())
    body += moved_lines(source, statement, moved, indent + unit, unit)
    block = helper_lines(site.torch, helper, value, body, indent, argument(source, found.tensor))
    if _blank_line_before(site, statement):
        block.insert(0, "")
    end = last_line(moved[-1]) if moved else last_line(statement)
    edit = LineEdit(statement.lineno, end, tuple(block))
    return Rewrite(KIND, function, (edit,), (source.segment(found.state),), uses_torch=True)


def _blank_line_before(site: Site, statement: ast.stmt) -> bool:
    """A blank line sets the helper apart from the code above it, unless a block's header or
    a comment (which describes the statement) stands right above it."""
    if site.block_of(statement)[0] is statement:
        return False
    above = statement.lineno - 1
    return bool(site.source.line_text(above).strip()) and above not in site.source.comment_lines


def _convert_after_loop(
    site: Site, statement: ast.stmt, loop: Loop, found: Bookkeeping
) -> Rewrite | Refusal:
    """Collect `E` in a list before the loop; after it, a disabled helper takes the list and
    does the bookkeeping for each value in order (exact for any rank), eagerly."""
    source, state = site.source, site.source.segment(found.state)
    refused = _loop_refusal(loop, found, state)
    if refused is not None:
        return refused
    if not source.owns_lines(loop):
        return SHARED_LINE
    taken = names_in(site.function)
    pending, helper, parameter, value = fresh_names(
        taken, f"{found.base}_pending", f"keep_{found.base}", "pending", "value"
    )
    indent = source.indent_of(loop.lineno)
    unit = indent_unit(source, loop.lineno, loop.body[0].lineno)
    inner = indent + unit
    body = [f"{inner}for {value} in {parameter}:"]
    body += rendered(source, statement, inner + unit, unit, _as_value(source, found, value))
    # a moved statement reading the loop's own names is left where it is, after the call
    forbidden = assigned_in(loop) - {found.path.split(".")[0]}
    moved = following(site, loop, found.path, forbidden)
    body += moved_lines(source, loop, moved, inner, unit)
    after = last_line(loop) + 1
    end = last_line(moved[-1]) if moved else after - 1
    block = ["", *helper_lines(site.torch, helper, parameter, body, indent, pending)]
    append = f"{pending}.append({argument(source, found.tensor)})"
    edits = (
        insert_statements(loop.lineno, [f"{pending} = []"], indent),
        replace_statements(source, statement, statement, [append]),
        LineEdit(after, end, tuple(block)),
    )
    return Rewrite(KIND, site.function, edits, (state,), uses_torch=True)


def _loop_refusal(loop: Loop, found: Bookkeeping, state: str) -> Refusal | None:
    """A loop that can be left other than by its end skips the helper after it; a state read
    elsewhere in the loop would see the values missing; a state whose owner the loop rebinds
    is not one object that the values can all go to at its end."""
    keyword = _early_exit(loop)
    if keyword is not None:
        return Refusal(
            f"the loop can be left early (`{keyword}`), so the values it collects cannot be "
            "converted once after it"
        )
    path = found.path
    if any(node is not found.state and _names(node) == path for node in ast.walk(loop)):
        return Refusal(
            f"`{state}` is used elsewhere in the loop, so its values cannot wait for its end"
        )
    for node in ast.walk(loop):
        owner = _names(node)
        stored = not isinstance(getattr(node, "ctx", ast.Load()), ast.Load)
        if stored and owner is not None and path.startswith(owner + "."):
            return Refusal(
                f"the loop rebinds `{owner}`, so `{state}` may not be one object at its end"
            )
    return None


def _names(node: ast.AST) -> str | None:
    return dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None


def _early_exit(loop: Loop) -> str | None:
    """`return`, `yield` or `break` when the loop has one that leaves it."""
    for node in walk_scope(loop):
        if isinstance(node, ast.Return):
            return "return"
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return "yield"
    leaves_else = any(
        isinstance(node, (ast.Break, ast.Continue))  # they leave an enclosing loop
        for statement in loop.orelse
        for node in walk_scope(statement)
    )
    return "break" if leaves_else or any(_breaks(s) for s in loop.body) else None


def _breaks(node: ast.AST) -> bool:
    """A `break` of the loop whose body holds `node` (a nested loop's own are not)."""
    if isinstance(node, ast.Break):
        return True
    if isinstance(node, LOOPS):
        return any(_breaks(s) for s in node.orelse)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
        return False
    return any(_breaks(child) for child in ast.iter_child_nodes(node))
