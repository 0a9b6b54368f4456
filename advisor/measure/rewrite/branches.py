"""`tensor_branch`: an `if` on a tensor value as `torch.where`. Both sides are computed and the
condition picks, so the code stays one graph; only branches that do nothing but assign names
(or return, or skip the rest of a loop that only assigns) have that form; an `elif` chain of
such branches becomes nested wheres."""

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


def branch_at(site: Site) -> tuple[ast.If, str] | Refusal | None:
    """The `if` whose test holds the site's line, and its condition as tensor code; a refusal
    for the shapes no tensor form expresses; None where the line is no `if` test."""
    statement = site.statement
    if not isinstance(statement, ast.If) or not statement.lineno <= site.line <= last_line(
        statement.test
    ):
        return None
    refused = unsupported(site, statement)
    if refused is not None:
        return refused
    if not site.source.owns_lines(statement):
        return SHARED_LINE
    condition = tensor_condition(site.source, statement.test, site.torch)
    if isinstance(condition, Refusal):
        return condition
    return statement, condition


def rewrite_tensor_branch(site: Site) -> Rewrite | Refusal | None:
    found = branch_at(site)
    if found is None or isinstance(found, Refusal):
        return found
    statement, condition = found
    if _skips_rest(statement):
        return _skip_rest_of_loop(site, statement, condition)
    if isinstance(statement.body[0], ast.Return):
        return _select_return(site, statement, condition)
    if is_elif(site, statement.orelse):
        return _select_chain(site, statement, condition)
    return _select_assignments(site, statement, condition)


def does_more(site: Site, statement: ast.stmt) -> Refusal:
    what = brief(site.source, statement)
    return Refusal(
        f"a branch that does more than assign (`{what}`) needs torch.cond or a hand rewrite"
    )


def unsupported(site: Site, statement: ast.If) -> Refusal | None:
    """The shapes no torch.where expresses: a break on an `elif` (its chain's head decides
    first), break, raise."""
    parent = site.parents.get(statement)
    if isinstance(parent, ast.If) and parent.orelse == [statement] and is_elif(site, [statement]):
        return ELIF
    for branch_statement in _chain_statements(site, statement):
        if isinstance(branch_statement, ast.Break):
            return BREAK
        if isinstance(branch_statement, ast.Raise):
            return RAISE
    return None


def _chain_statements(site: Site, statement: ast.If) -> list[ast.stmt]:
    """Every statement of every branch of the `if` and of its `elif` chain."""
    _, blocks = _chain(site, statement)
    return [s for block in blocks for s in block or ()]


def _chain(site: Site, statement: ast.If) -> tuple[list[ast.expr], list[list[ast.stmt] | None]]:
    """An `if` / `elif` ... / `else` chain as its tests and their blocks, the `else` block last
    (None where there is no `else`)."""
    tests, blocks = [statement.test], [statement.body]
    current = statement
    while is_elif(site, current.orelse):
        current = current.orelse[0]  # type: ignore[assignment]
        tests.append(current.test)
        blocks.append(current.body)
    blocks.append(current.orelse or None)
    return tests, blocks


def _select_chain(site: Site, statement: ast.If, condition: str) -> Rewrite | Refusal:
    """`if C1: x = A / elif C2: x = B / else: x = C` -> the conditions computed first, then
    `x = torch.where(C1, A, torch.where(C2, B, C))` per name (`x` itself where there is no
    `else`). Every branch's value is computed: whether that costs more than the break is for
    the measurement to say."""
    tests, blocks = _chain(site, statement)
    conditions = [condition]
    for test in tests[1:]:
        later = tensor_condition(site.source, test, site.torch)
        if isinstance(later, Refusal):
            return later
        conditions.append(later)
    branches = []
    for block in blocks:
        assigned = assignments(site, block) if block is not None else None
        if isinstance(assigned, Refusal):
            return assigned
        branches.append(assigned)
    names = [name for name, _ in branches[0] or ()]
    refused = _chain_refusal(site, statement, names, branches)
    if refused is not None:
        return refused
    code, hoisted = _hoisted_conditions(site, conditions)
    for name in names:
        values = [_branch_value(site, branch, name) for branch in branches]
        chosen = values[-1]
        for test, picked in zip(reversed(hoisted), reversed(values[:-1]), strict=True):
            chosen = f"{site.torch}.where({test}, {picked}, {chosen})"
        code.append(f"{name} = {chosen}")
    edit = replace_statements(site.source, statement, statement, code)
    return Rewrite(KIND, site.function, (edit,), tuple(names), uses_torch=True)


def _branch_value(site: Site, branch: list[tuple[str, ast.Assign]] | None, name: str) -> str:
    """What the branch assigns to `name` (the name itself for a missing `else`)."""
    return next((_value_text(site, a) for n, a in branch or () if n == name), name)


def _chain_refusal(
    site: Site,
    statement: ast.If,
    names: list[str],
    branches: list[list[tuple[str, ast.Assign]] | None],
) -> Refusal | None:
    """Every branch must assign the same names (without an `else`, names bound before), and
    no value may read a name the chain assigns."""
    given = [b for b in branches if b is not None]
    if any(sorted(n for n, _ in b) != sorted(names) for b in given):
        return DIFFERENT_NAMES
    if branches[-1] is None:
        refused = unbound(site, names, statement.lineno)
        if refused is not None:
            return refused
    return _cross_reads(given)


def _hoisted_conditions(site: Site, conditions: list[str]) -> tuple[list[str], list[str]]:
    """Each condition computed once, before any branch's value is assigned (the chain tests
    them before it assigns anything)."""
    taken = set(names_in(site.function))
    code, hoisted = [], []
    for condition in conditions:
        name = fresh_name("condition", taken)
        taken.add(name)
        code.append(f"{name} = {value(condition)}")
        hoisted.append(name)
    return code, hoisted


def is_elif(site: Site, block: list[ast.stmt]) -> bool:
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


def assignments(site: Site, block: list[ast.stmt]) -> list[tuple[str, ast.Assign]] | Refusal:
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


def unbound(site: Site, names: list[str], line: int) -> Refusal | None:
    for name in names:
        if not bound_before(site.function, name, line):
            return Refusal(
                f"`{name}` has no value before the `if` to keep when the branch is not taken"
            )
    return None


def _select_assignments(site: Site, statement: ast.If, condition: str) -> Rewrite | Refusal:
    """`if C: x = A [else: x = B]` -> `x = torch.where(C, A, B or x)`."""
    taken = assignments(site, statement.body)
    if isinstance(taken, Refusal):
        return taken
    names = [name for name, _ in taken]
    if not statement.orelse:
        refused = unbound(site, names, statement.lineno)
        otherwise = {name: name for name in names}
    else:
        other = assignments(site, statement.orelse)
        if isinstance(other, Refusal):
            return other
        refused = _cross_reads([taken, other])
        if sorted(names) != sorted(name for name, _ in other):
            refused = DIFFERENT_NAMES
        otherwise = {name: _value_text(site, assign) for name, assign in other}
    if refused is not None:
        return refused
    selections = [(name, _value_text(site, assign), otherwise[name]) for name, assign in taken]
    code = where_statements(site, condition, selections)
    edit = replace_statements(site.source, statement, statement, code)
    return Rewrite(KIND, site.function, (edit,), tuple(names), uses_torch=True)


def _cross_reads(branches: list[list[tuple[str, ast.Assign]]]) -> Refusal | None:
    """The wheres run in the first branch's order, each name selected before the next value
    is computed; where every branch assigns its names in that order, each value reads what it
    read in its own branch (the condition is one bool, so the names already selected hold the
    taken branch's values). Otherwise a value that reads another assigned name could see it
    too early, so that is refused (reading its own name is fine)."""
    orders = {tuple(name for name, _ in branch) for branch in branches}
    if len(orders) <= 1:
        return None
    every = [a for branch in branches for a in branch]
    assigned = {name for name, _ in every}
    for name, assign in every:
        crossing = sorted(reads(assign.value) & (assigned - {name}))
        if crossing:
            return Refusal(
                f"a branch reads `{crossing[0]}`, which the branches also assign in another "
                "order, so one torch.where per name would not keep their order"
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
    assigned = assignments(site, rest)
    if isinstance(assigned, Refusal):
        return assigned
    refused = unbound(site, [name for name, _ in assigned], statement.lineno)
    if refused is not None:
        return refused
    if any(not site.source.owns_lines(assign) for _, assign in assigned):
        return SHARED_LINE
    selections = [(name, name, _value_text(site, assign)) for name, assign in assigned]
    code = where_statements(site, condition, selections)
    hoisted = code[: len(code) - len(selections)]
    edits = (
        [replace_statements(site.source, statement, statement, hoisted)]
        if hoisted
        else [LineEdit(statement.lineno, last_line(statement), ())]
    )
    for (_, assign), line in zip(assigned, code[len(hoisted) :], strict=True):
        edits.append(replace_statements(site.source, assign, assign, [line]))
    names = tuple(name for name, _ in assigned)
    return Rewrite(KIND, site.function, tuple(edits), names, uses_torch=True)
