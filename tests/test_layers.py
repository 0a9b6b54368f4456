"""The layout shows the pipeline: which package may import which, read from the source (every
import, including those inside functions and under `if TYPE_CHECKING:`), and what runs without
torch: only the torch adapter (`advisor.measure.torch_adapter`) imports torch.

    core  <-  measure (torch)
    core  <-  judge  <-  gate  <-  render  <-  sweep  <-  entry points (cli, api, runner, ...)
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from advisor.core.artifacts import measurements_to_json
from advisor.core.model import Environment
from tests.support.no_torch import run_without_torch
from tests.support.recorded import print_case_measurements

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "advisor"

# What each stage's package may import (besides itself); the top-level modules are the entry
# points (cli, api, testing, runner) and may import anything.
ALLOWED = {
    "core": {"core"},
    "measure": {"core", "measure"},
    "judge": {"core", "judge"},
    "gate": {"core", "judge", "gate"},
    "render": {"core", "judge", "gate", "render"},
    "sweep": {"core", "judge", "render", "gate", "sweep"},
}


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path = ROOT, package: str = "advisor") -> dict[str, Path]:
    return {module_name(p, root): p for p in (root / package).rglob("*.py")}


def imports(path: Path, known: dict[str, Path], root: Path = ROOT) -> set[str]:
    """Every module and package `path` imports, anywhere in the file (functions included), and
    every module it names to `importlib.import_module` as a literal."""
    out: set[str] = set()
    own = module_name(path, root)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if _imported_by_name(node):
            out.add(node.args[0].value)  # type: ignore[attr-defined]
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([node.module] if node.module else [])])
            submodules = {f"{base}.{a.name}" for a in node.names} & set(known)
            out.update(submodules)
            if len(submodules) < len(node.names):  # names from the package itself
                out.add(base)
    return out


def _imported_by_name(node: ast.AST) -> bool:
    """`importlib.import_module("a.b")` (or `import_module("a.b")`) with a literal name."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    first = node.args[0]
    return (
        name == "import_module" and isinstance(first, ast.Constant) and isinstance(first.value, str)
    )


def graph(root: Path = ROOT, package: str = "advisor") -> dict[str, set[str]]:
    known = modules(root, package)
    return {
        name: {m for m in imports(path, known, root) if m in known and m != name}
        for name, path in known.items()
    }


def stage(module: str) -> str | None:
    """The stage package a module is in; None for the entry points at the top."""
    parts = module.split(".")
    return parts[1] if len(parts) >= 2 and parts[1] in ALLOWED else None


TORCH_ADAPTER = "advisor.measure.torch_adapter"


def in_the_torch_adapter(module: str) -> bool:
    return module == TORCH_ADAPTER or module.startswith(TORCH_ADAPTER + ".")


def torch_importers(root: Path = ROOT) -> list[str]:
    """Every module of `advisor` outside the torch adapter that imports torch."""
    known = modules(root)
    return sorted(
        name
        for name, path in known.items()
        if not in_the_torch_adapter(name)
        and any(m == "torch" or m.startswith("torch.") for m in imports(path, known, root))
    )


def arrows_up(root: Path = ROOT) -> list[str]:
    wrong = []
    for name, targets in graph(root).items():
        own = stage(name)
        if own is None:
            continue  # an entry point imports what it needs
        for target in sorted(targets):
            if target == "advisor":
                continue
            if stage(target) is None:
                wrong.append(f"{name} -> {target} (an entry point)")
            elif stage(target) not in ALLOWED[own]:
                wrong.append(f"{name} -> {target}")
    return wrong


def cycles(root: Path = ROOT, package: str = "advisor") -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), except a package's
    __init__ and the module it re-exports."""
    edges = graph(root, package)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return [c for c in found if not _package_and_its_module(c)]


def _package_and_its_module(component: list[str]) -> bool:
    return len(component) == 2 and component[1].startswith(component[0] + ".")


def test_only_the_torch_adapter_imports_torch() -> None:
    assert torch_importers() == []


def test_no_stage_imports_a_stage_above_it_or_an_entry_point() -> None:
    assert arrows_up() == []


def test_no_import_cycles() -> None:
    assert cycles() == []


def test_no_import_cycles_in_the_benchmarks() -> None:
    assert cycles(package="benchmarks") == []


def test_the_rules_find_torch_an_arrow_up_and_a_cycle(tmp_path: Path) -> None:
    """The same checks on a small package made wrong on purpose (so they can fail)."""
    files = {
        "advisor/__init__.py": "",
        "advisor/judge/__init__.py": "",
        "advisor/judge/rules.py": "import torch\nfrom advisor.measure import harness\n",
        "advisor/measure/__init__.py": "",
        "advisor/measure/harness.py": (
            "from typing import TYPE_CHECKING\n\n"
            "if TYPE_CHECKING:\n    import torch\n\n"
            "def f():\n    from advisor.judge import rules\n"
        ),
        "advisor/measure/torch_adapter/__init__.py": "",
        "advisor/measure/torch_adapter/x.py": "import torch\nfrom torch import distributed\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    # the measuring side's own modules too; the adapter's are not
    assert torch_importers(tmp_path) == ["advisor.judge.rules", "advisor.measure.harness"]
    assert arrows_up(tmp_path) == [
        "advisor.judge.rules -> advisor.measure.harness",
        "advisor.measure.harness -> advisor.judge.rules",
    ]
    assert cycles(tmp_path) == [["advisor.judge.rules", "advisor.measure.harness"]]


def test_the_cycle_check_finds_a_circle_in_the_benchmarks(tmp_path: Path) -> None:
    """A circle closed by a module imported by name (as benchmarks/libzoo/models.py once loaded
    user_code.py, which imported models.py back), and a clean pair beside it."""
    files = {
        "benchmarks/__init__.py": "",
        "benchmarks/zoo/__init__.py": "",
        "benchmarks/zoo/models.py": (
            "import importlib\n\n"
            "def user():\n    return importlib.import_module('benchmarks.zoo.user_code')\n"
        ),
        "benchmarks/zoo/user_code.py": "from benchmarks.zoo.models import user\n",
        "benchmarks/zoo/common.py": "",
        "benchmarks/zoo/survey.py": "from benchmarks.zoo import common\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert cycles(tmp_path, "benchmarks") == [["benchmarks.zoo.models", "benchmarks.zoo.user_code"]]


def _saved_run(folder: Path) -> Path:
    """A run folder holding only measurements.json, from the recorded print case."""
    measurements = print_case_measurements("print_case", Environment("2.13.0+cpu", "3.11", "cpu"))
    folder.mkdir()
    (folder / "measurements.json").write_text(measurements_to_json(measurements))
    return folder


def test_advisor_judge_runs_where_torch_cannot_be_imported(tmp_path: Path) -> None:
    saved = _saved_run(tmp_path / "run")
    out = tmp_path / "judged"
    proc = run_without_torch(
        "import advisor.core, advisor.judge, advisor.render, advisor.gate, advisor.sweep\n"
        "from advisor.cli import main\n"
        f"sys.exit(main(['judge', {str(saved)!r}, '--out', {str(out)!r}, '--quiet']))\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert "torch" not in proc.stderr
    report = json.loads((out / "report.json").read_text())
    assert [b["gb_code"] for b in report["breaks"]] == ["GB0059"]
    assert report["attribution"]["calls"] and report["ledger"]["step_ms"] == 0.105
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["measurements.json", "report.html", "report.json", "report.md", "trace.json"]
    )
    assert not (saved / "report.json").exists()  # the saved run is left as it was


def test_judge_with_other_options_and_never_over_a_report(tmp_path: Path) -> None:
    from advisor.cli import main

    saved = _saved_run(tmp_path / "run")
    assert main(["judge", str(saved), "--out", str(tmp_path / "a"), "--quiet"]) == 0
    args = ["judge", str(saved), "--out", str(tmp_path / "b"), "--quiet", "--ignore-share", "0.9"]
    assert main(args) == 0
    verdicts = {
        name: [
            b["verdict"]
            for b in json.loads((tmp_path / name / "report.json").read_text())["breaks"]
        ]
        for name in ("a", "b")
    }
    assert verdicts["b"] == ["ignore"] and verdicts["a"] != verdicts["b"]
    assert main(["judge", str(saved), "--out", str(tmp_path / "a"), "--quiet"]) == 2


def test_the_default_judged_folder_is_new_and_beside_the_run(tmp_path: Path) -> None:
    from advisor.cli import main

    saved = _saved_run(tmp_path / "run")
    assert main(["judge", str(saved), "--quiet"]) == 0
    assert main(["judge", str(saved / "measurements.json"), "--quiet"]) == 0
    made = sorted(p.name for p in tmp_path.iterdir() if p.name != "run")
    assert len(made) == 2 and all(name.startswith("print_case-judged-") for name in made)


def test_the_judging_side_imports_where_torch_is_blocked() -> None:
    proc = run_without_torch(
        "import advisor.core, advisor.judge, advisor.render, advisor.gate, advisor.sweep\n"
        "import advisor.cli, advisor.api\n"
    )
    assert proc.returncode == 0, proc.stderr
