"""Running the user's script as `python script.py args` would: as `__main__`, with its own
argv, working directory and `sys.path[0]`, its `torch.compile` calls handed to the advisor.

`--compile NAME` names what to compile in a script that never calls `torch.compile`: a
function or `nn.Module` class defined at the top of the script (`NAME` or `script.py:NAME`),
compiled right after its definition (the script's source is changed in memory, its line
numbers kept), or one in an importable module (`package.module.NAME` or `package.module:NAME`),
patched before the script starts. A class's instances are compiled in place when made.
"""

from __future__ import annotations

import ast
import importlib
import multiprocessing
import os
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.core.errors import AdvisorError
from advisor.core.script import ScriptSpec
from advisor.measure import torch_adapter

COMPILE_HOOK = "__advisor_compile__"  # the name the rewritten script calls after a definition
_NAMED_BY_COMPILE = "__advisor_named_by_compile__"


@dataclass(frozen=True)
class ScriptEnd:
    """How the script's run ended: its exit code and, if it raised, the exception."""

    exit_code: int
    error: BaseException | None = None


def run_script(spec: ScriptSpec) -> ScriptEnd:
    """Run the script to its end in this process (as `__main__`); SystemExit is its exit code,
    an exception its failure (never raised from here)."""
    code, namespace = prepared(spec)
    try:
        exec(code, namespace)
    except SystemExit as stop:
        return ScriptEnd(_exit_code(stop.code))
    except BaseException as exc:  # the script's own failure: the caller reports it
        if isinstance(exc, KeyboardInterrupt):
            raise
        return ScriptEnd(1, exc)
    return ScriptEnd(0)


def prepared(spec: ScriptSpec) -> tuple[types.CodeType, dict[str, Any]]:
    """The script's code (with `--compile` hooks) and a fresh `__main__` namespace; argv, the
    working directory and `sys.path[0]` set as Python sets them for a script."""
    path = Path(spec.path)
    try:
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source, filename=str(path))
    except OSError as exc:
        raise AdvisorError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except SyntaxError as exc:
        raise AdvisorError(f"syntax error in {path}:{exc.lineno}: {exc.msg}") from exc
    local = [n for n in spec.compile if _is_local(n, path)]
    _patch_imported([n for n in spec.compile if n not in local])
    if local:
        tree = _with_compile_hooks(tree, [n.rsplit(":", 1)[-1] for n in local], path)
    code = compile(tree, str(path), "exec")
    if spec.cwd:
        os.chdir(spec.cwd)
    sys.argv = [str(path), *spec.argv]
    # The platform's own start method, as `python script.py` has it: a worker of the advisor's
    # may have been started from a fork server, and a DataLoader's workers must not inherit it
    # (they would import the script again as their main module).
    multiprocessing.set_start_method(multiprocessing.get_all_start_methods()[0], force=True)
    sys.path.insert(0, str(path.parent))
    module = types.ModuleType("__main__")
    module.__dict__.update(
        {
            "__file__": str(path),
            "__builtins__": __builtins__,
            "__spec__": None,
            COMPILE_HOOK: compiled_definition,
        }
    )
    sys.modules["__main__"] = module
    return code, module.__dict__


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message") prints it and exits 1, as Python does
    return 1


def _is_local(name: str, path: Path) -> bool:
    if ":" in name:
        where = name.rsplit(":", 1)[0]
        return where.endswith(".py") and Path(where).name == path.name
    return "." not in name


def compiled_definition(obj: Any) -> Any:
    """A function compiled (through `torch.compile`, which the advisor stands in for), or a
    module class whose instances compile themselves when made; either marked as named by
    `--compile` (`named_by_compile`), so the survey tells it from the script's own compiles."""
    setattr(obj, _NAMED_BY_COMPILE, True)
    if isinstance(obj, type) and torch_adapter.is_module_class(obj):
        init = obj.__init__

        def compiling_init(self: Any, *args: Any, **kwargs: Any) -> None:
            init(self, *args, **kwargs)
            if type(self) is obj:  # a subclass's instance is compiled by its own --compile
                self.compile()

        obj.__init__ = compiling_init  # type: ignore[misc]
        return obj
    if callable(obj):
        return torch_adapter.torch_compile(obj)
    raise AdvisorError(f"--compile names {obj!r}, which is neither a function nor a module")


def _with_compile_hooks(tree: ast.Module, names: list[str], path: Path) -> ast.Module:
    """After each top-level definition named in `names`: `NAME = __advisor_compile__(NAME)`."""
    body: list[ast.stmt] = []
    found: set[str] = set()
    for stmt in tree.body:
        body.append(stmt)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if stmt.name in names:
                found.add(stmt.name)
                body.append(_assign_hook(stmt.name, stmt.end_lineno or stmt.lineno))
    missing = [n for n in names if n not in found]
    if missing:
        raise AdvisorError(
            f"--compile {missing[0]}: {path.name} defines no top-level function or class "
            f"named '{missing[0]}'"
        )
    return ast.fix_missing_locations(ast.Module(body=body, type_ignores=tree.type_ignores))


def _assign_hook(name: str, line: int) -> ast.stmt:
    """`NAME = __advisor_compile__(NAME)`, placed on the definition's last line."""
    call = ast.Call(ast.Name(COMPILE_HOOK, ast.Load()), [ast.Name(name, ast.Load())], [])
    node = ast.Assign([ast.Name(name, ast.Store())], call)
    for part in ast.walk(node):
        part.lineno, part.end_lineno, part.col_offset, part.end_col_offset = line, line, 0, 0
    return node


def _patch_imported(names: list[str]) -> None:
    """`package.module.NAME` / `package.module:NAME`: compiled before the script imports it."""
    for name in names:
        where, _, attr = name.rpartition(":") if ":" in name else name.rpartition(".")
        if not where or not attr:
            raise AdvisorError(f"--compile {name}: name a module and what is in it (pkg.mod.NAME)")
        try:
            module = importlib.import_module(where)
        except Exception as exc:  # the user's module failed to import: one line
            raise AdvisorError(f"--compile {name}: cannot import {where}: {exc}") from exc
        obj: Callable[..., Any] | None = getattr(module, attr, None)
        if obj is None:
            raise AdvisorError(f"--compile {name}: {where} has no '{attr}'")
        compiled = compiled_definition(obj)
        if not isinstance(obj, type):
            setattr(module, attr, compiled)


def request_site(req: Any, script_path: str) -> tuple[str, int]:
    """Where the script compiled a callable; a `--compile` made before the script ran: where
    the callable is defined."""
    if req.site_file:
        return req.site_file, req.site_line
    code = getattr(req.target, "__code__", None)
    if code is None and isinstance(req.target, type):
        init = getattr(req.target, "__init__", None)
        code = getattr(init, "__code__", None)
    return (code.co_filename, code.co_firstlineno) if code else (script_path, 0)


def named_by_compile(target: Any) -> bool:
    """Whether a compiled function or module was named by `--compile` (not the script's own)."""
    owner = target if callable(target) and not hasattr(target, "_call_impl") else type(target)
    # its own attribute, not one inherited from a base class that --compile named
    return bool(getattr(owner, "__dict__", {}).get(_NAMED_BY_COMPILE, False))


class CompileSites:
    """Names each compile the script makes as every process of a run names it: where it was
    compiled, and which of the compiles at that line (a loop may compile several). The
    survey and each measuring process must agree, or the measured callable is not found."""

    def __init__(self, script_path: str) -> None:
        self.script_path = script_path
        self._seen: list[str] = []

    def place(self, req: Any) -> tuple[str, int, int]:
        """The request's site file, line and ordinal among the compiles at that site."""
        site_file, site_line = request_site(req, self.script_path)
        site = f"{site_file}:{site_line}"
        ordinal = self._seen.count(site)
        self._seen.append(site)
        return site_file, site_line, ordinal
