"""`mask_gather`: rows picked by a mask (`nonzero`, or a boolean index), transformed and written
back, as a masked `torch.where` over every row. The shapes no longer depend on the data, at the
cost of computing on every row; the measurement decides whether that pays."""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass

from advisor.measure.rewrite.expressions import Change, argument, text_with, value
from advisor.measure.rewrite.locate import Site
from advisor.measure.rewrite.names import (
    fresh_name,
    mentions,
    names_in,
    parameters,
    resolve,
    walk_scope,
)
from advisor.measure.rewrite.outcome import SHARED_LINE, LineEdit, Refusal, Rewrite
from advisor.measure.rewrite.source import last_line
from advisor.measure.rewrite.splice import insert_statements, replace_statements

KIND = "mask_gather"
UNEXPRESSIBLE = Refusal("the gathered rows are used in a way a masked where cannot express")
TAILS = {"squeeze": ("-1", "1"), "flatten": ("",), "view": ("-1",), "reshape": ("-1",)}
BOOLEAN_OPS = (ast.BitAnd, ast.BitOr, ast.BitXor)


@dataclass(frozen=True)
class Gather:
    """`store`: `T[I] = F` (or `T[M] = F`), `target` its `T[I]`; `mask`: M; `index`: I's
    statement (`I = torch.nonzero(M)...`) and `index_name` I, None when M indexes directly."""

    store: ast.Assign
    target: ast.Subscript
    mask: ast.expr
    index: ast.Assign | None = None
    index_name: str | None = None


def rewrite_mask_gather(site: Site) -> Rewrite | Refusal | None:
    statement = site.statement
    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
        return None
    found = _gather(site, statement)
    if found is None or isinstance(found, Refusal):
        return found
    return _masked_where(site, found)


def _gather(site: Site, statement: ast.Assign) -> Gather | Refusal | None:
    """The gather the line belongs to: its index statement or its indexed assignment."""
    target = statement.targets[0]
    mask = nonzero_mask(statement.value, site.imports)
    if isinstance(target, ast.Name) and mask is not None:
        store = _first_use(site, statement, target.id)
        if store is None or not isinstance(store.targets[0], ast.Subscript):
            return UNEXPRESSIBLE
        return Gather(store, store.targets[0], mask, statement, target.id)
    if not isinstance(target, ast.Subscript):
        return None
    index = target.slice
    if isinstance(index, ast.Name):
        previous = _previous_statement(site, statement)
        if (
            isinstance(previous, ast.Assign)
            and len(previous.targets) == 1
            and isinstance(previous.targets[0], ast.Name)
            and previous.targets[0].id == index.id
        ):
            mask = nonzero_mask(previous.value, site.imports)
            if mask is not None:
                return Gather(statement, target, mask, previous, index.id)
        return (
            Gather(statement, target, index) if _assigned_a_mask(site, index, statement) else None
        )
    return Gather(statement, target, index) if is_mask_expression(index) else None


def nonzero_mask(node: ast.expr, imports: dict[str, str]) -> ast.expr | None:
    """M in `torch.nonzero(M)`, `M.nonzero()`, `torch.where(M)`, optionally followed by
    `.squeeze(-1)`, `.flatten()`, `.view(-1)`, `.reshape(-1)`, `[0]` or `[:, 0]`."""
    core = _without_tail(node)
    if not isinstance(core, ast.Call):
        return None
    function = resolve(core.func, imports)
    if function == "torch.nonzero" and len(core.args) == 1:
        return core.args[0]
    if function == "torch.where" and len(core.args) == 1 and not core.keywords:
        return core.args[0]
    if isinstance(core.func, ast.Attribute) and core.func.attr == "nonzero" and not core.args:
        return core.func.value
    return None


def _without_tail(node: ast.expr) -> ast.expr:
    if isinstance(node, ast.Subscript) and ast.unparse(node.slice) in ("0", "(:, 0)", ":, 0"):
        return node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.keywords:
        allowed = TAILS.get(node.func.attr)
        if allowed is not None and ", ".join(ast.unparse(a) for a in node.args) in allowed:
            return node.func.value
    return node


def is_mask_expression(node: ast.expr) -> bool:
    """A comparison, or `&`/`|`/`^`/`~` of comparisons: a boolean tensor by its form."""
    if isinstance(node, ast.Compare):
        return len(node.ops) == 1
    if isinstance(node, ast.BinOp) and isinstance(node.op, BOOLEAN_OPS):
        return is_mask_expression(node.left) and is_mask_expression(node.right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        return is_mask_expression(node.operand)
    return False


def _assigned_a_mask(site: Site, name: ast.Name, before: ast.stmt) -> bool:
    """The name's last assignment before `before` stores a mask expression."""
    last = None
    for node in walk_scope(site.function):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == name.id
            and node.lineno < before.lineno
            and (last is None or node.lineno > last.lineno)
        ):
            last = node
    return last is not None and is_mask_expression(last.value)


def _previous_statement(site: Site, statement: ast.stmt) -> ast.stmt | None:
    block = site.block_of(statement)
    index = next(i for i, item in enumerate(block) if item is statement)
    return block[index - 1] if index else None


def _first_use(site: Site, index: ast.Assign, name: str) -> ast.Assign | None:
    """The first statement after `index` in its block that uses `name`, when it is `T[I] = F`."""
    block = site.block_of(index)
    after = block[next(i for i, item in enumerate(block) if item is index) + 1 :]
    user = next((s for s in after if mentions(s, name)), None)
    if (
        isinstance(user, ast.Assign)
        and len(user.targets) == 1
        and isinstance(user.targets[0], ast.Subscript)
        and isinstance(user.targets[0].slice, ast.Name)
        and user.targets[0].slice.id == name
    ):
        return user
    return None


def _masked_where(site: Site, found: Gather) -> Rewrite | Refusal:
    """`T[I] = F(S[I])` -> `T = torch.where(<mask over T's trailing dims>, F(S), T)`."""
    source, store, target = site.source, found.store, found.target
    written = target.value
    if not isinstance(written, ast.Name) or written.id in parameters(site.function):
        what = source.segment(written)
        return Refusal(
            f"`{what}[...] = ...` writes into `{what}` in place, where its caller can see it; "
            "a masked where would only rebind the name"
        )
    key = target.slice
    changes = _ungathered(site, store.value, key)
    if changes is None or _index_read_later(site, found):
        return UNEXPRESSIBLE
    if not all(source.owns_lines(s) for s in (store, found.index) if s is not None):
        return SHARED_LINE
    mask, edits = _mask_name(site, found)
    shaped = f"{mask}.reshape({mask}.shape + (1,) * ({written.id}.dim() - {mask}.dim()))"
    rows = argument(source, store.value, text_with(source, store.value, changes))
    where = f"{written.id} = {site.torch}.where({shaped}, {rows}, {written.id})"
    edits.append(replace_statements(source, store, store, [where]))
    return Rewrite(
        KIND, site.function, tuple(edits), (source.segment(found.mask),), uses_torch=True
    )


def _ungathered(site: Site, rows: ast.expr, key: ast.expr) -> list[Change] | None:
    """`S[key]` in the value read as `S`; None when the key is used any other way."""
    wanted = ast.dump(key)
    gathers = [
        node
        for node in ast.walk(rows)
        if isinstance(node, ast.Subscript) and ast.dump(node.slice) == wanted
    ]
    inside = {id(n) for g in gathers for n in ast.walk(g.slice)}
    if isinstance(key, ast.Name) and any(
        isinstance(n, ast.Name) and n.id == key.id and id(n) not in inside for n in ast.walk(rows)
    ):
        return None
    spans = sorted((site.source.start(g), site.source.end(g)) for g in gathers)
    if any(later[0] < earlier[1] for earlier, later in itertools.pairwise(spans)):
        return None  # a gather of a gather
    return [
        (site.source.start(g), site.source.end(g), site.source.segment(g.value)) for g in gathers
    ]


def _index_read_later(site: Site, found: Gather) -> bool:
    """I read anywhere but in `T[I] = F`, unless it was assigned again after that first."""
    name, store = found.index_name, found.store
    if name is None:
        return False
    inside = {id(n) for n in ast.walk(store)}
    end = (last_line(store), store.end_col_offset or 0)
    names = [n for n in walk_scope(site.function) if isinstance(n, ast.Name) and n.id == name]
    again = min(
        (
            (n.lineno, n.col_offset)
            for n in names
            if isinstance(n.ctx, ast.Store) and (n.lineno, n.col_offset) > end
        ),
        default=None,
    )
    return any(
        isinstance(n.ctx, ast.Load)
        and id(n) not in inside
        and (again is None or (n.lineno, n.col_offset) < again)
        for n in names
    )


def _mask_name(site: Site, found: Gather) -> tuple[str, list[LineEdit]]:
    """The mask's name and the edits that give it one: a mask that is a name already is used
    as it is; otherwise `mask = M` where the index was computed (or just before the store)."""
    source, mask = site.source, found.mask
    if isinstance(mask, ast.Name) and not _stored_between(site, mask.id, found):
        edits = []
        if found.index is not None:
            edits.append(LineEdit(found.index.lineno, last_line(found.index), ()))
        return mask.id, edits
    name = fresh_name("mask", names_in(site.function))
    code = [f"{name} = {value(source.segment(mask))}"]
    if found.index is not None:
        return name, [replace_statements(source, found.index, found.index, code)]
    indent = source.indent_of(found.store.lineno)
    return name, [insert_statements(found.store.lineno, code, indent)]


def _stored_between(site: Site, name: str, found: Gather) -> bool:
    if found.index is None:
        return False
    block = site.block_of(found.store)
    first = next(i for i, s in enumerate(block) if s is found.index)
    last = next(i for i, s in enumerate(block) if s is found.store)
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for s in block[first + 1 : last]
        for n in ast.walk(s)
    )
