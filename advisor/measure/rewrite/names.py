"""Names: what the module imports (to know torch's local name and recognise
`torch.compiler.disable` under any alias), which names a function uses, and fresh ones."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from advisor.measure.rewrite.outcome import FunctionNode

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def module_imports(tree: ast.Module) -> dict[str, str]:
    """Top-level import bindings, name -> dotted path (`import torch as th` -> th: torch;
    `from torch import compiler` -> compiler: torch.compiler); imports under `if`/`try` count,
    those under `if TYPE_CHECKING:` do not (they bind nothing at run time)."""
    bound: dict[str, str] = {}
    for node in _module_level(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:  # `import torch.nn` binds `torch`
                    root = alias.name.split(".")[0]
                    bound[root] = root
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    for node in body:
        yield node
        if isinstance(node, ast.If) and not _is_type_checking(node.test):
            yield from _module_level(node.body)
            yield from _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            yield from _module_level(node.body)
            for handler in node.handlers:
                yield from _module_level(handler.body)
            yield from _module_level(node.orelse)
            yield from _module_level(node.finalbody)


def _is_type_checking(test: ast.expr) -> bool:
    return dotted(test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def torch_binding(imports: dict[str, str]) -> str | None:
    """The name the module binds to the torch package itself, if any."""
    return next((name for name, path in imports.items() if path == "torch"), None)


def dotted(node: ast.expr) -> str | None:
    """`a.b.c` for a chain of attributes on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def resolve(node: ast.expr, imports: dict[str, str]) -> str | None:
    """The dotted path a name chain means, its first name read through the imports
    (`th.compiler.disable` -> `torch.compiler.disable` after `import torch as th`)."""
    path = dotted(node)
    if path is None:
        return None
    root, _, rest = path.partition(".")
    if root not in imports:
        return path
    return f"{imports[root]}.{rest}" if rest else imports[root]


def walk_scope(node: ast.AST) -> Iterator[ast.AST]:
    """`ast.walk` that stays in one scope: nested functions, lambdas and classes are not
    entered (the node given is, even when it is a function)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for child in ast.iter_child_nodes(current):
            if not isinstance(child, _SCOPES):
                stack.append(child)


def parameters(function: FunctionNode) -> set[str]:
    args = function.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return {arg.arg for arg in every if arg is not None}


def names_in(function: FunctionNode) -> set[str]:
    """Every identifier the function (nested scopes included) binds or reads."""
    found: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.alias):
            found.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            found.update(node.names)
    return found


def fresh_name(base: str, taken: set[str]) -> str:
    """`base`, or `base_2`, `base_3`, ... : the first not in `taken`."""
    if base not in taken:
        return base
    number = 2
    while f"{base}_{number}" in taken:
        number += 1
    return f"{base}_{number}"


def bound_before(function: FunctionNode, name: str, line: int) -> bool:
    """A parameter, or a name the function stores on a line before `line`: it has a value to
    keep when a branch is not taken."""
    if name in parameters(function):
        return True
    return any(
        isinstance(node, ast.Name)
        and node.id == name
        and isinstance(node.ctx, ast.Store)
        and node.lineno < line
        for node in walk_scope(function)
    )


def reads(node: ast.AST) -> set[str]:
    """Names the node reads."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))
