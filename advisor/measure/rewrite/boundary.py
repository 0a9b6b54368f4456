"""`compile_boundary`: an explicit boundary the code does not need. `graph_break()` is deleted;
a call through `W = torch.compiler.disable(F)` calls `F`; a function decorated with
`@torch.compiler.disable` loses the decorator (the worker then calls the unwrapped function)."""

from __future__ import annotations

import ast

from advisor.measure.rewrite.locate import Site
from advisor.measure.rewrite.names import resolve
from advisor.measure.rewrite.outcome import FunctionNode, LineEdit, Refusal, Rewrite
from advisor.measure.rewrite.side_effects import deletion
from advisor.measure.rewrite.source import last_line
from advisor.measure.rewrite.splice import substitute

KIND = "compile_boundary"
DISABLES = frozenset({"torch.compiler.disable", "torch._dynamo.disable"})
GRAPH_BREAK = "torch._dynamo.graph_break"


def rewrite_compile_boundary(site: Site) -> Rewrite | Refusal | None:
    statement = site.statement
    if statement is None:
        return None
    if (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and resolve(statement.value.func, site.imports) == GRAPH_BREAK
    ):
        return deletion(site, statement, KIND, (site.source.segment(statement.value.func),))
    calls = [
        node
        for node in ast.walk(statement)
        if isinstance(node, ast.Call) and node.func.lineno == site.line
    ]
    for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset)):
        found = _call_wrapper(site, statement, call) or _undecorate(site, call)
        if found is not None:
            return found
    return None


def _call_wrapper(site: Site, statement: ast.stmt, call: ast.Call) -> Rewrite | None:
    """`W(...)` where the module binds `W = torch.compiler.disable(F)`: call `F` here."""
    if not isinstance(call.func, ast.Name):
        return None
    wrapped = _disabled_alias(site, call.func.id)
    if wrapped is None:
        return None
    change = (site.source.start(call.func), site.source.end(call.func), wrapped)
    edit = substitute(site.source, statement, [change])
    return Rewrite(KIND, site.function, (edit,), (call.func.id, wrapped))


def _disabled_alias(site: Site, wrapper: str) -> str | None:
    for node in site.source.tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target, value = node.targets[0], node.value
        if not (isinstance(target, ast.Name) and target.id == wrapper):
            continue
        if (
            isinstance(value, ast.Call)
            and resolve(value.func, site.imports) in DISABLES
            and len(value.args) == 1
            and isinstance(value.args[0], ast.Name)
        ):
            return value.args[0].id
    return None


def _undecorate(site: Site, call: ast.Call) -> Rewrite | None:
    """`F(...)` / `self.F(...)` where this file defines F under `@torch.compiler.disable`:
    the decorator line goes."""
    target = _called_definition(site, call)
    if target is None:
        return None
    for decorator in target.decorator_list:
        callee = decorator.func if isinstance(decorator, ast.Call) else decorator
        if resolve(callee, site.imports) in DISABLES and _owns_decorator_lines(site, decorator):
            edit = LineEdit(decorator.lineno, last_line(decorator), ())
            return Rewrite(KIND, target, (edit,), (target.name,), unwrap=True)
    return None


def _owns_decorator_lines(site: Site, decorator: ast.expr) -> bool:
    """Only `@` and indentation before the decorator, only a comment after it."""
    source = site.source
    before = source.line_text(decorator.lineno)[
        : source.start(decorator) - source.line_starts[decorator.lineno - 1]
    ]
    end_line = last_line(decorator)
    after = source.line_text(end_line)[source.end(decorator) - source.line_starts[end_line - 1] :]
    return before.strip() == "@" and (not after.strip() or after.strip().startswith("#"))


def _called_definition(site: Site, call: ast.Call) -> FunctionNode | None:
    """The function or method of this file that the call names."""
    func = call.func
    if isinstance(func, ast.Name):
        module_level = [
            node
            for node in site.source.tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == func.id
        ]
        return module_level[-1] if module_level else None  # the last definition wins
    if not (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id in ("self", "cls")
    ):
        return None
    owner = site.parents.get(site.function)
    if not isinstance(owner, ast.ClassDef):
        return None
    methods = [
        node
        for node in owner.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == func.attr
    ]
    return methods[-1] if methods else None
