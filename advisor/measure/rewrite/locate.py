"""Where the break is: the innermost function whose body holds the line, and the innermost
statement of that function at the line, with what the rewriters ask about both."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from advisor.measure.rewrite.names import module_imports, torch_binding
from advisor.measure.rewrite.outcome import FunctionNode, Refusal
from advisor.measure.rewrite.source import Source, last_line

_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")


@dataclass(frozen=True)
class Site:
    """The break's place in the file. `torch`: the module's name for torch (`torch` when it
    binds none; `torch_bound` says whether it does)."""

    source: Source
    line: int
    function: FunctionNode
    statement: ast.stmt | None
    qualnames: dict[FunctionNode, str] = field(repr=False)
    parents: dict[ast.AST, ast.AST] = field(repr=False)
    imports: dict[str, str] = field(repr=False)

    @property
    def torch(self) -> str:
        return torch_binding(self.imports) or "torch"

    @property
    def torch_bound(self) -> bool:
        return torch_binding(self.imports) is not None

    def block_of(self, statement: ast.stmt) -> list[ast.stmt]:
        """The statement list that holds `statement` (a body, an `else:`, ...)."""
        parent = self.parents[statement]
        for _, value in ast.iter_fields(parent):
            if isinstance(value, list) and any(item is statement for item in value):
                return value
        raise LookupError("statement not in its parent")  # the tree is the one parents maps

    def next_statement(self, statement: ast.stmt) -> ast.stmt | None:
        block = self.block_of(statement)
        index = next(i for i, item in enumerate(block) if item is statement)
        return block[index + 1] if index + 1 < len(block) else None


def locate(source: Source, line: int) -> Site | Refusal:
    """The site of `line`, or why there is none (not in a function's body)."""
    functions = qualnames(source.tree)
    holding = [f for f in functions if f.body[0].lineno <= line <= last_line(f)]
    if not holding:
        return Refusal(f"line {line} is not inside a function")
    function = max(holding, key=lambda f: f.body[0].lineno)  # nested bodies start later
    parents = {
        child: parent for parent in ast.walk(source.tree) for child in ast.iter_child_nodes(parent)
    }
    statement = innermost_statement(function.body, line)
    return Site(source, line, function, statement, functions, parents, module_imports(source.tree))


def statements_at(site: Site) -> list[ast.stmt]:
    """The statement at the line, then each statement around it whose header holds the line
    too (`if x.sum() > 0: x = 0` on one line: the assignment, then the `if`)."""
    found: list[ast.stmt] = []
    node: ast.AST | None = site.statement
    while isinstance(node, ast.stmt) and node is not site.function:
        if node is site.statement or site.line <= _header_end(node):
            found.append(node)
        else:
            break
        node = site.parents.get(node)
    return found


def _header_end(statement: ast.stmt) -> int:
    """The last line of a compound statement's header (its test, iterable or items)."""
    if isinstance(statement, (ast.If, ast.While)):
        return last_line(statement.test)
    if isinstance(statement, (ast.For, ast.AsyncFor)):
        return last_line(statement.iter)
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        return last_line(statement.items[-1].optional_vars or statement.items[-1].context_expr)
    return statement.lineno


def innermost_statement(block: list[ast.stmt], line: int) -> ast.stmt | None:
    """The deepest statement whose lines hold `line` (a compound statement when the line is
    its header, e.g. an `if`'s test)."""
    for statement in block:
        if not statement.lineno <= line <= last_line(statement):
            continue
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return statement
        for inner in _child_blocks(statement):
            found = innermost_statement(inner, line)
            if found is not None:
                return found
        return statement
    return None


def _child_blocks(statement: ast.stmt) -> list[list[ast.stmt]]:
    blocks = []
    for name in _STATEMENT_LISTS:
        for item in getattr(statement, name, None) or []:
            if isinstance(item, (ast.excepthandler, ast.match_case)):
                blocks.append(item.body)
        value = getattr(statement, name, None)
        if value and isinstance(value[0], ast.stmt):
            blocks.append(value)
    return blocks


def qualnames(tree: ast.Module) -> dict[FunctionNode, str]:
    """Every function and method with its `__qualname__` (`Outer.method.<locals>.inner`)."""
    found: dict[FunctionNode, str] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found[child] = prefix + child.name
                visit(child, f"{prefix}{child.name}.<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found
