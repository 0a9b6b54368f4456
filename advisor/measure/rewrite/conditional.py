"""`tensor_cond`: an `if` on a tensor value whose branches assign names, as `torch.cond`. Unlike
`torch.where` (`tensor_branch`), only the branch taken runs: where a branch is expensive, that
can cost less than computing both; where both are cheap, the where's plain graph wins. Which
one pays is the measurement's to say, so both are generated where both apply (#59).

    if C:                       def cond_true(h, y):
        h = h * 0.5                 h = h * 0.5
        y = y - h * err             y = y - h * err
    else:               ->          return h, y
        h = h * 2.0             def cond_false(h, y):
        y = y + h * err             ...
                                h, y = torch.cond(C, cond_true, cond_false, (h, y))

The names the branches assign and read before assigning are passed in (a nested function that
assigns a name cannot read the outer one); the rest is read through the closure."""

from __future__ import annotations

import ast

from advisor.measure.rewrite.branches import (
    DIFFERENT_NAMES,
    assignments,
    branch_at,
    is_elif,
    unbound,
)
from advisor.measure.rewrite.expressions import value
from advisor.measure.rewrite.locate import Site
from advisor.measure.rewrite.names import fresh_name, names_in, reads
from advisor.measure.rewrite.outcome import Refusal, Rewrite
from advisor.measure.rewrite.splice import replace_statements

KIND = "tensor_cond"


def rewrite_tensor_cond(site: Site) -> Rewrite | Refusal | None:
    """`if C: <assignments> [else: <assignments>]` as `torch.cond`; None where the site is not
    an `if` test (not this rewriter's pattern)."""
    found = branch_at(site)
    if found is None or isinstance(found, Refusal):
        return found
    statement, condition = found
    if is_elif(site, statement.orelse):
        return Refusal("an `elif` chain is tried as nested torch.where only")
    taken = assignments(site, statement.body)
    if isinstance(taken, Refusal):
        return taken
    other = assignments(site, statement.orelse) if statement.orelse else []
    if isinstance(other, Refusal):
        return other
    names = [name for name, _ in taken]
    if statement.orelse and sorted(names) != sorted(name for name, _ in other):
        return DIFFERENT_NAMES
    refused = unbound(site, names, statement.lineno) if not statement.orelse else None
    if refused is not None:
        return refused
    code = _cond_code(site, statement, condition, names)
    edit = replace_statements(site.source, statement, statement, code)
    return Rewrite(KIND, site.function, (edit,), tuple(names), uses_torch=True)


def _cond_code(site: Site, statement: ast.If, condition: str, names: list[str]) -> list[str]:
    """The two branch functions, then the names assigned from `torch.cond`."""
    taken = set(names_in(site.function))
    true_name = fresh_name("cond_true", taken)
    false_name = fresh_name("cond_false", taken | {true_name})
    passed = [n for n in names if _read_in(statement, n)]
    params = ", ".join(passed)
    result = f"({names[0]},)" if len(names) == 1 else ", ".join(names)
    code = []
    for name, block in ((true_name, statement.body), (false_name, statement.orelse)):
        body = [site.source.segment(s) for s in block]
        code.append(f"def {name}({params}):")
        code += [f"    {line}" for text in body for line in text.splitlines()]
        code.append(f"    return {result}")
    operands = f"{passed[0]}," if len(passed) == 1 else ", ".join(passed)
    code.append(
        f"{result} = {site.torch}.cond({value(condition)}, {true_name}, {false_name}, ({operands}))"
    )
    return code


def _read_in(statement: ast.If, name: str) -> bool:
    """Whether a branch reads `name` (it assigns it too: it must come in as a parameter)."""
    return any(name in reads(s) for s in [*statement.body, *statement.orelse])
