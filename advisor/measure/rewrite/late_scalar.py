"""`late_scalar`: `name = E.item()` (or `.tolist()`) whose value is only returned, converted at
the return instead. The function's tensor work after the line then stays in the graph before
it, and the break moves to the very end, where nothing is left to resume:

    confidence = probs.amax(dim=-1).mean().item()    ->    confidence = probs.amax(dim=-1).mean()
    tokens = probs.argmax(dim=-1)                          tokens = probs.argmax(dim=-1)
    return tokens, confidence                              return tokens, confidence.item()

Only where the name is read by nothing but the function's final `return` (at the function's
top level): the caller gets the same Python number, the same way."""

from __future__ import annotations

import ast

from advisor.measure.rewrite.expressions import method_call_start
from advisor.measure.rewrite.locate import Site
from advisor.measure.rewrite.outcome import SHARED_LINE, Refusal, Rewrite
from advisor.measure.rewrite.splice import substitute

CONVERSIONS = ("item", "tolist")


def rewrite_late_scalar(site: Site) -> Rewrite | Refusal | None:
    statement = site.statement
    found = _converted_name(statement) if statement is not None else None
    if found is None or statement is None:
        return None
    name, call = found
    body = site.function.body
    if not any(s is statement for s in body):
        return None  # in a loop or a branch: not this pattern
    final = body[-1]
    if not (isinstance(final, ast.Return) and final.value is not None):
        return None
    between = body[body.index(statement) + 1 : -1]
    if any(_reads(s, name) or _binds(s, name) or _mutates(s) for s in between):
        return None
    if not site.source.owns_lines(statement) or not site.source.owns_lines(final):
        return SHARED_LINE
    assert isinstance(call.func, ast.Attribute)
    cut = (method_call_start(site.source, call.func), site.source.end(call), "")
    method = f".{call.func.attr}()"
    uses = [
        (site.source.end(n), site.source.end(n), method)
        for n in ast.walk(final.value)
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
    ]
    edits = (substitute(site.source, statement, [cut]), substitute(site.source, final, uses))
    returned = tuple(range(final.lineno, (final.end_lineno or final.lineno) + 1))
    # substitutions keep the line count, so the return keeps its lines in the patched file
    return Rewrite("late_scalar", site.function, edits, (name,), intended_breaks=returned)


def converted_assignment(statement: ast.stmt | None) -> tuple[ast.expr, ast.Call] | None:
    """`T = E.item()` / `T = E.tolist()` (one target, no arguments): the target and the call."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return None
    target, value = statement.targets[0], statement.value
    if not isinstance(value, ast.Call) or value.args or value.keywords:
        return None
    func = value.func
    if not isinstance(func, ast.Attribute) or func.attr not in CONVERSIONS:
        return None
    return target, value


def _converted_name(statement: ast.stmt) -> tuple[str, ast.Call] | None:
    """`name = E.item()` / `name = E.tolist()`: the name and the conversion call."""
    found = converted_assignment(statement)
    if found is None or not isinstance(found[0], ast.Name):
        return None
    return found[0].id, found[1]


def _reads(statement: ast.stmt, name: str) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
        for n in ast.walk(statement)
    ) or any(isinstance(n, (ast.FunctionDef, ast.Lambda)) for n in ast.walk(statement))


def _mutates(statement: ast.stmt) -> bool:
    """An in-place tensor method (`x.add_(1)`) or an augmented assignment: the converted tensor
    might be changed before the return reads it (a view of `x` would be)."""
    for node in ast.walk(statement):
        if isinstance(node, ast.AugAssign):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            if attr.endswith("_") and not attr.startswith("_"):
                return True
    return False


def _binds(statement: ast.stmt, name: str) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)
        for n in ast.walk(statement)
    )
