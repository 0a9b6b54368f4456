"""House rules on the shape of `advisor/` and `benchmarks/`: no module over 500 lines, no
function over 60 lines (counted from its `def` to its last line, docstring included; methods and
nested functions too). Small modules and functions that each do one job are the ones a reader
can hold whole. And `benchmarks/` touches no private torch API: every such touch lives in the
advisor's torch adapter (`advisor/measure/torch_adapter/`), feature-detected in one place."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("advisor", "benchmarks")
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60
# A dotted torch name as a string: a logger's or a module's ("torch.__trace", "torch._dynamo").
_TORCH_NAME = re.compile(r"torch(\.\w+)+")


def _offenders(path: Path, root: Path = ROOT) -> list[str]:
    text = path.read_text(encoding="utf-8")
    where = path.relative_to(root).as_posix()
    out = []
    lines = len(text.splitlines())
    if lines > MAX_MODULE_LINES:
        out.append(f"{where}: module of {lines} lines (at most {MAX_MODULE_LINES})")
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                out.append(
                    f"{where}:{node.lineno}: {node.name}() of {length} lines "
                    f"(at most {MAX_FUNCTION_LINES})"
                )
    return out


def over_the_limits(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    return [
        o for package in packages for path in sorted((root / package).rglob("*.py"))
        for o in _offenders(path, root)
    ]  # fmt: skip


def _private(dotted: str) -> str | None:
    """The dotted name up to its first private part (`torch._dynamo` of
    `torch._dynamo.config.patch`), None when no part is private (a dunder such as
    `torch.__version__` is public)."""
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
            return ".".join(parts[: i + 1])
    return None


def _dotted(node: ast.AST) -> str | None:
    """`a.b.c` for an attribute chain on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _torch_names(node: ast.AST, aliases: set[str]) -> list[str]:
    """The torch names one node uses: imported, read through an attribute chain on torch (or an
    alias of it), or written as a string that is a whole dotted torch name."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "torch"]
    if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch":
        return [f"{node.module}.{a.name}" for a in node.names]
    if isinstance(node, ast.Attribute):
        dotted = _dotted(node)
        if dotted and dotted.split(".")[0] in aliases:
            return ["torch." + dotted.split(".", 1)[1]]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if _TORCH_NAME.fullmatch(node.value):
            return [node.value]
    return []


def private_torch_uses(path: Path, root: Path = ROOT) -> list[str]:
    """`file:line: name` for each private torch name the module uses (once per line)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    aliases = {"torch"} | {
        a.asname
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for a in node.names
        if a.name == "torch" and a.asname
    }
    found: dict[tuple[int, str], None] = {}
    for node in ast.walk(tree):
        for name in _torch_names(node, aliases):
            private = _private(name)
            if private is not None:
                found[(getattr(node, "lineno", 0), private)] = None
    where = path.relative_to(root).as_posix()
    return [f"{where}:{line}: {name}" for line, name in sorted(found)]


def private_torch_in(root: Path = ROOT, package: str = "benchmarks") -> list[str]:
    return [
        u for path in sorted((root / package).rglob("*.py")) for u in private_torch_uses(path, root)
    ]


def test_modules_and_functions_stay_small() -> None:
    offenders = over_the_limits()
    assert not offenders, "over the house limits:\n" + "\n".join(offenders)


def test_the_benchmarks_use_no_private_torch() -> None:
    uses = private_torch_in()
    assert not uses, "private torch outside the torch adapter:\n" + "\n".join(uses)


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_the_limits_find_a_long_module_and_a_long_function(tmp_path: Path) -> None:
    long_function = "def f():\n" + "    x = 1\n" * 60  # 61 lines
    _tree(
        tmp_path,
        {
            "benchmarks/__init__.py": "",
            "benchmarks/long.py": "x = 1\n" * 501,
            "benchmarks/zoo/survey.py": "\n" + long_function,
            "benchmarks/zoo/ok.py": "def g():\n" + "    x = 1\n" * 59,
        },
    )
    assert over_the_limits(tmp_path, ("benchmarks",)) == [
        "benchmarks/long.py: module of 501 lines (at most 500)",
        "benchmarks/zoo/survey.py:2: f() of 61 lines (at most 60)",
    ]


def test_the_private_torch_check_finds_each_kind_of_use(tmp_path: Path) -> None:
    text = '''"""Docs may name torch._dynamo.reset() and the torch.__trace logger."""
import logging
import torch
import torch as T
import torch._dynamo
from torch import _inductor, nn
from torch._dynamo.utils import counters

torch._dynamo.reset()
with T._dynamo.config.patch(x=1):
    pass
logging.getLogger("torch.__trace")
logging.getLogger("torch._dynamo").setLevel(logging.ERROR)
print(torch.__version__, torch.compiler.disable, nn.Linear, "torch.nn", "    torch._dynamo.x()")
'''
    _tree(tmp_path, {"benchmarks/__init__.py": "", "benchmarks/planted.py": text})
    assert private_torch_in(tmp_path) == [
        "benchmarks/planted.py:5: torch._dynamo",
        "benchmarks/planted.py:6: torch._inductor",
        "benchmarks/planted.py:7: torch._dynamo",
        "benchmarks/planted.py:9: torch._dynamo",
        "benchmarks/planted.py:10: torch._dynamo",
        "benchmarks/planted.py:12: torch.__trace",
        "benchmarks/planted.py:13: torch._dynamo",
    ]
