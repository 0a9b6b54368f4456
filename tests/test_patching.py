"""A patch installed in a running process (`advisor.measure.patching`): every function object
running the original code runs the patched text while installed and the original after; a
method keeps its name mangling and `super()`, a closure its free variables; the file on disk is
never touched; a patch that cannot be installed says why in one line."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from advisor.core.model import FunctionEdit, Patch
from advisor.measure.patching import InstalledPatch, NotInstallable

SOURCE = """\
class Base:
    def scale(self):
        return 10


class Model(Base):
    def __init__(self):
        self.__secret = 3

    def forward(self, x):
        y = x + self.__secret
        return y * super().scale()


def helper(x):
    print("debug", x)
    return x + 1


def make_adder(k):
    def add(x):
        return x + k

    return add
"""


def load(tmp_path: Path) -> tuple[ModuleType, str]:
    path = tmp_path / "patched_target.py"
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location("patched_target", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["patched_target"] = module
    spec.loader.exec_module(module)
    return module, str(path)


def edit(qualname: str, first_line: int, before: str, after: str) -> FunctionEdit:
    last = first_line + before.count("\n") - 1
    return FunctionEdit(qualname, first_line, last, before, after)


def patch_of(file: str, *edits: FunctionEdit) -> Patch:
    return Patch("tensor_branch", file, edits[0].first_line, edits, hunks="@@ -1 +1 @@\n")


def lines(first: int, last: int) -> str:
    return "".join(SOURCE.splitlines(keepends=True)[first - 1 : last])


def test_a_method_keeps_mangling_and_super(tmp_path: Path) -> None:
    module, file = load(tmp_path)
    before = lines(10, 12)
    after = before.replace("y * super().scale()", "y * super().scale() + 1")
    model = module.Model()
    bound = model.forward  # a bound method taken before installing sees the patch too
    with InstalledPatch(patch_of(file, edit("Model.forward", 10, before, after))):
        assert bound(1) == 41
        assert model.forward(1) == 41
    assert model.forward(1) == 40
    assert Path(file).read_text() == SOURCE


def test_a_function_and_its_alias(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    module, file = load(tmp_path)
    alias = module.helper
    before = lines(15, 17)
    after = textwrap.dedent(
        """\
        def helper(x):
            return x + 1
        """
    )
    with InstalledPatch(patch_of(file, edit("helper", 15, before, after))):
        assert alias(1) == 2
    assert capsys.readouterr().out == ""
    alias(1)
    assert "debug" in capsys.readouterr().out


def test_a_closure_keeps_its_cell(tmp_path: Path) -> None:
    module, file = load(tmp_path)
    add = module.make_adder(5)
    before = lines(21, 22)
    after = before.replace("x + k", "x + 2 * k")
    with InstalledPatch(patch_of(file, edit("make_adder.<locals>.add", 21, before, after))):
        assert add(1) == 11
    assert add(1) == 6


def test_not_loaded_and_not_compiling_say_why(tmp_path: Path) -> None:
    _, file = load(tmp_path)
    missing = edit("nowhere", 3, "def nowhere():\n    pass\n", "def nowhere():\n    pass\n")
    with pytest.raises(NotInstallable, match=r"nowhere .* is not loaded"):
        InstalledPatch(patch_of(file, missing))
    broken = edit("helper", 15, lines(15, 17), "def helper(x):\n    return (x +\n")
    with pytest.raises(NotInstallable, match="does not compile"):
        InstalledPatch(patch_of(file, broken))


def test_a_closure_that_loses_a_variable_is_refused(tmp_path: Path) -> None:
    module, file = load(tmp_path)
    add = module.make_adder(5)
    before = lines(21, 22)
    after = before.replace("x + k", "x + 1")
    with pytest.raises(NotInstallable, match="closes over"):
        InstalledPatch(patch_of(file, edit("make_adder.<locals>.add", 21, before, after)))
    assert add(1) == 6


def test_captured_lines_are_read_as_the_files() -> None:
    """A break the patch kept maps back to its line on disk; one the patch leaves on purpose
    (`intended_breaks`: here the disabled helper it adds, whose lines the rewrite engine
    records) is left out; one on another line the patch wrote stays, as a new break."""
    from advisor.core.model import BreakSite, Location
    from advisor.measure.patching import as_in_file

    before = "def f(self, x):\n    y = x + 1\n    self.log.extend(y.tolist())\n    return g(y)\n"
    after = (
        "def f(self, x):\n"
        "    y = x + 1\n"
        "\n"
        "    @torch.compiler.disable\n"
        "    def keep_log(value):\n"
        "        self.log.extend(value.tolist())\n"
        "\n"
        "    keep_log(y)\n"
        "    z = torch.where(y > 0, y, -y)\n"
        "    return g(y)\n"
    )
    file = "/src/m.py"
    edit = FunctionEdit("f", 10, 13, before, after)
    patch = Patch("scalar_bookkeeping", file, 12, (edit,), "", intended_breaks=(13, 14, 17))

    def site(line: int, path: str = file) -> BreakSite:
        return BreakSite(f"B{line}", None, "x", Location(path, line))

    mapped = as_in_file(patch, (site(19), site(13), site(17), site(18), site(19, "/other.py")))
    assert [(s.where.file, s.where.line) for s in mapped] == [
        (file, 13),  # `return g(y)`: line 19 of the installed text is line 13 on disk
        (file, 18),  # `z = torch.where(...)`: a line the patch wrote
        ("/other.py", 19),
    ]


def test_an_unwrapped_disable_is_found_once_not_on_every_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Entering the patch is what every timed call of its arm does: it swaps attributes and
    never walks the loaded modules again (that walk made a patch arm tens of ms a call)."""
    import torch

    from advisor.measure.torch_adapter import compiler

    module, file = load(tmp_path)
    module.disabled_helper = torch.compiler.disable(module.helper)
    unwrap = FunctionEdit("disabled_helper", 15, 17, "", "", unwrap=True)
    installed = InstalledPatch(Patch("compile_boundary", file, 15, (unwrap,), "@@ -1 +1 @@\n"))
    walks: list[object] = []
    real_walk = compiler._holders
    monkeypatch.setattr(compiler, "_holders", lambda fn: walks.append(fn) or real_walk(fn))
    for _ in range(3):
        with installed:
            assert module.disabled_helper is module.helper  # the body, traced by Dynamo
        assert module.disabled_helper is not module.helper
    assert walks == []
    del sys.modules["patched_target"]
