"""An `if`'s test as a tensor condition for `torch.where`: `.item()` dropped, `bool(E)` read as
`E`, `and`/`or`/`not` as `torch.logical_*` (Python's would ask the tensor for a bool again), and
a test that is not already boolean made so with `.bool()` (truth is "non-zero", as in `if`)."""

from __future__ import annotations

import ast

from advisor.measure.rewrite.expressions import grouped, is_item_call, without_item
from advisor.measure.rewrite.outcome import Refusal
from advisor.measure.rewrite.source import Source

BOOLEAN_METHODS = frozenset(
    {
        "all",
        "any",
        "bool",
        "eq",
        "ge",
        "gt",
        "isclose",
        "isfinite",
        "isin",
        "isinf",
        "isnan",
        "isneginf",
        "isposinf",
        "le",
        "logical_and",
        "logical_not",
        "logical_or",
        "logical_xor",
        "lt",
        "ne",
        "signbit",
    }
)
NOT_TENSOR_OPS = (ast.Is, ast.IsNot, ast.In, ast.NotIn)
CHAINED = Refusal("a chained comparison on a tensor (`a < x < b`) needs a hand rewrite")
NOT_A_TENSOR = Refusal("the `if` tests identity or membership (`is`, `in`), not a tensor value")


def tensor_condition(source: Source, test: ast.expr, torch: str) -> str | Refusal:
    """The test's text as a boolean tensor expression, or why it cannot be one."""
    if isinstance(test, ast.Call) and _is_bool_call(test):
        return tensor_condition(source, test.args[0], torch)
    if isinstance(test, ast.BoolOp):
        parts = [tensor_condition(source, value, torch) for value in test.values]
        refused = next((p for p in parts if isinstance(p, Refusal)), None)
        if refused is not None:
            return refused
        function = "logical_and" if isinstance(test.op, ast.And) else "logical_or"
        folded = str(parts[0])
        for part in parts[1:]:
            folded = f"{torch}.{function}({folded}, {part})"
        return folded
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = tensor_condition(source, test.operand, torch)
        return inner if isinstance(inner, Refusal) else f"{torch}.logical_not({inner})"
    if isinstance(test, ast.Compare):
        if len(test.ops) > 1:
            return CHAINED
        if isinstance(test.ops[0], NOT_TENSOR_OPS):
            return NOT_A_TENSOR
    text = without_item(source, test)
    return text if _is_boolean(test) else grouped(_core(test), text) + ".bool()"


def _is_bool_call(node: ast.Call) -> bool:
    return (
        isinstance(node.func, ast.Name)
        and node.func.id == "bool"
        and len(node.args) == 1
        and not node.keywords
    )


def _core(node: ast.expr) -> ast.expr:
    """The expression under a trailing `.item()` (what is left once it is cut)."""
    while (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and is_item_call(node)
    ):
        node = node.func.value
    return node


def _is_boolean(node: ast.expr) -> bool:
    core = _core(node)
    if isinstance(core, ast.Compare):
        return True
    return (
        isinstance(core, ast.Call)
        and isinstance(core.func, (ast.Attribute, ast.Name))
        and (core.func.attr if isinstance(core.func, ast.Attribute) else core.func.id)
        in BOOLEAN_METHODS
    )
