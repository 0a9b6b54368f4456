"""`kept_tensor`: `obj.attr = E.tolist()` (or `.item()`) inside the compiled call, a conversion
whose only purpose is to keep a value on an object for later, kept as a tensor instead:

    self.peaks = attn.amax(dim=-1).tolist()    ->    self.peaks = attn.amax(dim=-1).detach()

The conversion forces a break (the tensor's values are needed as Python numbers mid-graph);
stored as a tensor the value stays in the graph, and whoever reads the attribute converts it
there, after the call. `.detach()` keeps the same meaning as the numbers had: no autograd history
is held alive by the stored value. Only an attribute store: a local name would be read by the
function itself (`late_scalar` handles the one only returned)."""

from __future__ import annotations

import ast

from advisor.measure.rewrite.expressions import method_call_start
from advisor.measure.rewrite.late_scalar import converted_assignment
from advisor.measure.rewrite.locate import Site
from advisor.measure.rewrite.names import dotted
from advisor.measure.rewrite.outcome import SHARED_LINE, Refusal, Rewrite
from advisor.measure.rewrite.splice import substitute

KIND = "kept_tensor"


def rewrite_kept_tensor(site: Site) -> Rewrite | Refusal | None:
    statement = site.statement
    found = _stored_conversion(statement) if statement is not None else None
    if found is None or statement is None:
        return None
    path, call = found
    if not site.source.owns_lines(statement):
        return SHARED_LINE
    if _read_back(site.function, path, statement):
        return Refusal(
            f"`{path}` is read again in the same function, which expects the converted Python value"
        )
    assert isinstance(call.func, ast.Attribute)
    kept = (method_call_start(site.source, call.func), site.source.end(call), ".detach()")
    edit = substitute(site.source, statement, [kept])
    return Rewrite(KIND, site.function, (edit,), (path,))


def _stored_conversion(statement: ast.stmt) -> tuple[str, ast.Call] | None:
    """`a.b = E.tolist()` / `a.b = E.item()`: the attribute's dotted path and the conversion."""
    found = converted_assignment(statement)
    if found is None or not isinstance(found[0], ast.Attribute):
        return None
    path = dotted(found[0])
    return (path, found[1]) if path else None


def _read_back(function: ast.AST, path: str, statement: ast.stmt) -> bool:
    """The attribute is read in the function after being stored (a tensor there would change
    what that code computes)."""
    return any(
        isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Load)
        and node.lineno > statement.lineno
        and dotted(node) == path
        for node in ast.walk(function)
    )
