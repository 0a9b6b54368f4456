"""`side_effect`: a print, logging or warnings call in the compiled region, deleted. Dynamo
cannot trace it, and the call only reports; the rest of the function is unchanged."""

from __future__ import annotations

import ast

from advisor.measure.rewrite.locate import Site
from advisor.measure.rewrite.outcome import SHARED_LINE, Refusal, Rewrite
from advisor.measure.rewrite.splice import delete_statement, substitute

LOG_METHODS = frozenset(
    {"debug", "info", "warning", "warn", "error", "exception", "critical", "log"}
)
LOGGER_NAMES = frozenset({"logger", "log", "logging"})  # also `_logger`, `LOGGER`


def rewrite_side_effect(site: Site) -> Rewrite | Refusal | None:
    statement = site.statement
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return None
    call = statement.value
    if not _reports_only(call, site.imports):
        return None
    return deletion(site, statement, "side_effect", (site.source.segment(call.func),))


def _reports_only(call: ast.Call, imports: dict[str, str]) -> bool:
    """print(...), logging.<method>(...), <...>.logger.<method>(...), log.<method>(...),
    warnings.warn(...)."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id == "print" or imports.get(func.id) == "warnings.warn"
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr == "warn" and _name_of(func.value) == "warnings":
        return True
    owner = _name_of(func.value)
    return func.attr in LOG_METHODS and owner is not None and _is_logger_name(owner)


def _name_of(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _is_logger_name(name: str) -> bool:
    return name.lower().lstrip("_") in LOGGER_NAMES


def deletion(
    site: Site, statement: ast.stmt, kind: str, names: tuple[str, ...]
) -> Rewrite | Refusal:
    """The rewrite that deletes `statement` (the call spans however many lines it does). On a
    line it shares with its block's header (`if debug: print(x)`), it becomes `pass` there."""
    source, block = site.source, site.block_of(statement)
    if source.owns_lines(statement):
        edit = delete_statement(source, block, statement)
    elif len(block) == 1:
        edit = substitute(
            source, statement, [(source.start(statement), source.end(statement), "pass")]
        )
    else:
        return SHARED_LINE
    return Rewrite(kind, site.function, (edit,), names)
