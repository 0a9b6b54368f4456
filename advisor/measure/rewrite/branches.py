"""`tensor_branch`: an `if` on a tensor value as `torch.where`. Both sides are computed and the
condition picks, so the code stays one graph; only branches that do nothing but assign names
(or return, or skip the rest of a loop that only assigns) have that form."""

from __future__ import annotations

import ast

from advisor.measure.rewrite.conditions import tensor_condition
from advisor.measure.rewrite.expressions import argument, brief, value
from advisor.measure.rewrite.locate import Site
from advisor.measure.rewrite.names import bound_before, fresh_name, names_in, reads
from advisor.measure.rewrite.outcome import SHARED_LINE, LineEdit, Refusal, Rewrite
from advisor.measure.rewrite.source import last_line
from advisor.measure.rewrite.splice import replace_statements

KIND = "tensor_branch"
LOOPS = (ast.For, ast.AsyncFor, ast.While)
BREAK = Refusal("an early exit from a loop on a tensor value (`break`) has no tensor form")
RAISE = Refusal(
    "an error raised on a tensor value (`raise`) has no tensor form; check it before the "
    "compiled code runs"
)
ELIF = Refusal("an `elif` chain on a tensor value needs torch.cond or a hand rewrite")
DIFFERENT_RETURNS = Refusal(
    "the two branches return results of different forms (a tuple and a value, or tuples of "
    "different lengths), so no torch.where pairs them"
)
DIFFERENT_NAMES = Refusal(
    "the two branches assign different names, so one side has no value for a torch.where"
)

Selection = tuple[str, str, str]  # (name, its value when the test holds, its value otherwise)


def rewrite_tensor_branch(site: Site) -> Rewrite | Refusal | None:
    statement = site.statement
    if not isinstance(statement, ast.If) or not statement.lineno <= site.line <= last_line(
        statement.test
    ):
        return None
    refused = _unsupported(site, statement)
    if refused is not None:
        return refused
    if not site.source.owns_lines(statement):
        return SHARED_LINE
    condition = tensor_condition(site.source, statement.test, site.torch)
    if isinstance(condition, Refusal):
        return condition
    if _skips_rest(statement):
        return _skip_rest_of_loop(site, statement, condition)
    if isinstance(statement.body[0], ast.Return):
        return _select_return(site, statement, condition)
    return _select_assignments(site, statement, condition)


def does_more(site: Site, statement: ast.stmt) -> Refusal:
    what = brief(site.source, statement)
    return Refusal(
        f"a branch that does more than assign (`{what}`) needs torch.cond or a hand rewrite"
    )


def _unsupported(site: Site, statement: ast.If) -> Refusal | None:
    """The shapes no torch.where expresses: elif chains, break, raise."""
    parent = site.parents.get(statement)
    if _is_elif(site, statement.orelse) or (
        isinstance(parent, ast.If) and parent.orelse == [statement] and _is_elif(site, [statement])
    ):
        return ELIF
    for branch_statement in statement.body + statement.orelse:
        if isinstance(branch_statement, ast.Break):
            return BREAK
        if isinstance(branch_statement, ast.Raise):
            return RAISE
    return None


def _is_elif(site: Site, block: list[ast.stmt]) -> bool:
    return (
        len(block) == 1
        and isinstance(block[0], ast.If)
        and site.source.line_text(block[0].lineno).lstrip().startswith("elif")
    )


def _skips_rest(statement: ast.If) -> bool:
    return (
        len(statement.body) == 1
        and isinstance(statement.body[0], ast.Continue)
        and not statement.orelse
    )


def _assignments(site: Site, block: list[ast.stmt]) -> list[tuple[str, ast.Assign]] | Refusal:
    """The block as `name = value` statements, each name once, or why it is not."""
    found: list[tuple[str, ast.Assign]] = []
    for statement in block:
        if not (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            return does_more(site, statement)
        name = statement.targets[0].id
        if any(name == seen for seen, _ in found):
            return Refusal(
                f"`{name}` is assigned twice in one branch; one torch.where per name cannot "
                "say which value wins"
            )
        found.append((name, statement))
    return found


def _unbound(site: Site, names: list[str], line: int) -> Refusal | None:
    for name in names:
        if not bound_before(site.function, name, line):
            return Refusal(
                f"`{name}` has no value before the `if` to keep when the branch is not taken"
            )
    return None


def _select_assignments(site: Site, statement: ast.If, condition: str) -> Rewrite | Refusal:
    """`if C: x = A [else: x = B]` -> `x = torch.where(C, A, B or x)`."""
    taken = _assignments(site, statement.body)
    if isinstance(taken, Refusal):
        return taken
    names = [name for name, _ in taken]
    if not statement.orelse:
        refused = _unbound(site, names, statement.lineno)
        otherwise = {name: name for name in names}
    else:
        other = _assignments(site, statement.orelse)
        if isinstance(other, Refusal):
            return other
        refused = _cross_reads(taken + other)
        if sorted(names) != sorted(name for name, _ in other):
            refused = DIFFERENT_NAMES
        otherwise = {name: _value_text(site, assign) for name, assign in other}
    if refused is not None:
        return refused
    selections = [(name, _value_text(site, assign), otherwise[name]) for name, assign in taken]
    code = where_statements(site, condition, selections)
    edit = replace_statements(site.source, statement, statement, code)
    return Rewrite(KIND, site.function, (edit,), tuple(names), uses_torch=True)


def _cross_reads(assignments: list[tuple[str, ast.Assign]]) -> Refusal | None:
    """With an `else:`, the wheres run in the first branch's order; a value that reads another
    assigned name could see it too early, so that is refused (reading its own name is fine)."""
    assigned = {name for name, _ in assignments}
    for name, assign in assignments:
        crossing = sorted(reads(assign.value) & (assigned - {name}))
        if crossing:
            return Refusal(
                f"a branch reads `{crossing[0]}`, which the branches also assign, so one "
                "torch.where per name would not keep their order"
            )
    return None


def _value_text(site: Site, assign: ast.Assign) -> str:
    return argument(site.source, assign.value)


def where_statements(site: Site, condition: str, selections: list[Selection]) -> list[str]:
    """One `name = torch.where(C, A, B)` per name; with several, the condition is computed
    once first (each where would otherwise recompute it, after the names it reads changed)."""
    code = []
    if len(selections) > 1:
        hoisted = _hoisted_name(site)
        code.append(f"{hoisted} = {value(condition)}")
        condition = hoisted
    for name, chosen, otherwise in selections:
        code.append(f"{name} = {site.torch}.where({condition}, {chosen}, {otherwise})")
    return code


def _select_return(site: Site, statement: ast.If, condition: str) -> Rewrite | Refusal:
    """`if C: return A` + `else: return B` (or a `return B` next) -> one return of a where
    (of one where per item when both return tuples: `return where(C, a, c), where(C, b, d)`)."""
    chosen = statement.body[0]
    following = site.next_statement(statement) if not statement.orelse else None
    otherwise = statement.orelse[0] if statement.orelse else following
    if len(statement.body) > 1 or len(statement.orelse) > 1:
        extra = statement.body[-1] if len(statement.body) > 1 else statement.orelse[-1]
        return does_more(site, extra)
    if not (
        isinstance(chosen, ast.Return)
        and chosen.value is not None
        and isinstance(otherwise, ast.Return)
        and otherwise.value is not None
    ):
        return does_more(site, chosen)
    if following is not None and not site.source.owns_lines(following):
        return SHARED_LINE
    pairs = _returned_pairs(chosen.value, otherwise.value)
    if pairs is None:
        return DIFFERENT_RETURNS
    code = [] if len(pairs) == 1 else [f"{_hoisted_name(site)} = {value(condition)}"]
    test = condition if len(pairs) == 1 else _hoisted_name(site)
    wheres = [
        f"{site.torch}.where({test}, {argument(site.source, a)}, {argument(site.source, b)})"
        for a, b in pairs
    ]
    code.append("return " + ", ".join(wheres))
    edit = replace_statements(site.source, statement, following or statement, code)
    return Rewrite(KIND, site.function, (edit,), ("return",), uses_torch=True)


def _returned_pairs(
    chosen: ast.expr, otherwise: ast.expr
) -> list[tuple[ast.expr, ast.expr]] | None:
    """The values to select between, item by item for two tuples of one length."""
    if not isinstance(chosen, ast.Tuple) and not isinstance(otherwise, ast.Tuple):
        return [(chosen, otherwise)]
    if not (isinstance(chosen, ast.Tuple) and isinstance(otherwise, ast.Tuple)):
        return None
    items = chosen.elts + otherwise.elts
    if len(chosen.elts) != len(otherwise.elts) or any(isinstance(i, ast.Starred) for i in items):
        return None
    return list(zip(chosen.elts, otherwise.elts, strict=True))


def _hoisted_name(site: Site) -> str:
    return fresh_name("condition", names_in(site.function))


def _skip_rest_of_loop(site: Site, statement: ast.If, condition: str) -> Rewrite | Refusal:
    """`if C: continue` then `x = E` ... to the loop's end -> `x = torch.where(C, x, E)`."""
    loop = site.parents.get(statement)
    if not isinstance(loop, LOOPS) or not any(s is statement for s in loop.body):
        return does_more(site, statement.body[0])
    rest = loop.body[next(i for i, s in enumerate(loop.body) if s is statement) + 1 :]
    if not rest:
        return does_more(site, statement.body[0])
    assignments = _assignments(site, rest)
    if isinstance(assignments, Refusal):
        return assignments
    refused = _unbound(site, [name for name, _ in assignments], statement.lineno)
    if refused is not None:
        return refused
    if any(not site.source.owns_lines(assign) for _, assign in assignments):
        return SHARED_LINE
    selections = [(name, name, _value_text(site, assign)) for name, assign in assignments]
    code = where_statements(site, condition, selections)
    hoisted = code[: len(code) - len(selections)]
    edits = (
        [replace_statements(site.source, statement, statement, hoisted)]
        if hoisted
        else [LineEdit(statement.lineno, last_line(statement), ())]
    )
    for (_, assign), line in zip(assignments, code[len(hoisted) :], strict=True):
        edits.append(replace_statements(site.source, assign, assign, [line]))
    names = tuple(name for name, _ in assignments)
    return Rewrite(KIND, site.function, tuple(edits), names, uses_torch=True)
