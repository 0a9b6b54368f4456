"""House rules on the shape of `advisor/`: no module over 500 lines, no function over 60 lines
(counted from its `def` to its last line, docstring included; methods and nested functions
too). Small modules and functions that each do one job are the ones a reader can hold whole."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ADVISOR = ROOT / "advisor"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60


def _offenders(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    where = path.relative_to(ROOT).as_posix()
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


def test_modules_and_functions_stay_small() -> None:
    offenders = [o for path in sorted(ADVISOR.rglob("*.py")) for o in _offenders(path)]
    assert not offenders, "over the house limits:\n" + "\n".join(offenders)
