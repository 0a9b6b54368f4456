"""Setup work in the hot call (#59): a break in library code reached through a constructor on
every call gets a patch that builds the object once in `__init__`; the patch is installed in a
process that already built the model (its `__init__` statements run on the live instance),
planned for every break inside that setup, and measured. Refusals say why. Capture and
measurement on the eager backend (the logic is Dynamo's, not Inductor's)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from advisor.core.model import BreakSite, Location
from advisor.core.taxonomy import setup_frames
from advisor.measure import harness
from advisor.measure.patching import InstalledPatch, NotInstallable, set_up_instances
from advisor.measure.rewrite.hoist import hoist_patch_for
from advisor.measure.rewrite.outcome import Refusal
from advisor.measure.stages import measure_what_if, what_if_plan
from advisor.measure.workload import load_target
from advisor.render.patch_words import patch_summary
from tests.support.eager_capture import QUICK, captured_sites, eager_backend  # noqa: F401

ROOT = Path(__file__).resolve().parent
TARGET = "tests/targets/setup_in_call.py:workload"
LIBRARY = ROOT / "targets" / "site-packages"
SETTINGS = QUICK
sys.path.insert(0, str(LIBRARY))
import setuplib  # noqa: E402

LIB_FILE = setuplib.__file__
INIT_LINE = next(
    i for i, t in enumerate(Path(LIB_FILE).read_text().splitlines(), 1) if ".item()" in t
)
SMOOTH_LINE = next(
    i for i, t in enumerate(Path(LIB_FILE).read_text().splitlines(), 1) if "return Smoother(" in t
)


def break_at(user: Path, line: int, via: tuple[Location, ...] = ()) -> BreakSite:
    """The `.item()` in Smoother's constructor, reached from the user's `line`."""
    return BreakSite(
        id="B1",
        gb_code="GB0124",
        gb_type="Unsupported Tensor.item() call with capture_scalar_outputs=False",
        where=Location(LIB_FILE, INIT_LINE, "__init__", "self.peak = ..."),
        reached_from=Location(str(user), line, "forward", ""),
        via=via,
    )


SMOOTH = Location(LIB_FILE, SMOOTH_LINE, "smooth", "return Smoother(width, taps)(x)")
HEAD = "import setuplib\nfrom setuplib import Smoother\n\n\nclass M:\n"
INIT = "    def __init__(self):\n        self.scale = 2.0\n\n"


def user_file(tmp_path: Path, forward: str, head: str = HEAD, init: str = INIT) -> Path:
    path = tmp_path / "model.py"
    path.write_text(head + init + "    def forward(self, x):\n" + forward, encoding="utf-8")
    return path


def forward_line(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_a_break_reached_through_a_constructor_is_setup_work() -> None:
    site = break_at(ROOT / "model.py", 3, (SMOOTH,))
    assert [f.function for f in setup_frames(site)] == ["smooth", "__init__"]
    # torch's own frames between them are left out
    dynamo = Location("/x/site-packages/torch/_dynamo/polyfills/__init__.py", 1, "instantiate", "")
    assert setup_frames(site.__class__(**{**site.__dict__, "via": (SMOOTH, dynamo)})) == (
        SMOOTH,
        site.where,
    )
    # no constructor on the way, or no user line: not setup work
    plain = BreakSite("B2", None, "x", Location(LIB_FILE, SMOOTH_LINE, "smooth", ""))
    assert setup_frames(plain) == ()


def test_a_functional_form_is_built_once_with_the_users_arguments(tmp_path: Path) -> None:
    path = user_file(
        tmp_path, "        y = setuplib.smooth(x, width=self.scale) * 2\n        return y\n"
    )
    patch = hoist_patch_for(break_at(path, forward_line(path) - 1, (SMOOTH,)))
    assert not isinstance(patch, Refusal) and patch is not None
    assert patch.kind == "setup_hoist" and patch.names == ("Smoother", "self._smoother")
    # the library's default (a module-level constant) is taken by its value
    assert patch.setup == (
        "from setuplib import Smoother",
        f"self._smoother = Smoother(self.scale, {setuplib.TAPS})",
    )
    init, forward = patch.edits
    assert init.qualname == "M.__init__" and forward.qualname == "M.forward"
    assert init.after.endswith(
        f"        self._smoother = Smoother(self.scale, {setuplib.TAPS})\n"
    ), init.after
    assert "        y = self._smoother(x) * 2\n" in forward.after
    assert "build `Smoother` once in `__init__`" in patch_summary(patch)


def test_a_construction_on_the_users_line_moves_to_init(tmp_path: Path) -> None:
    path = user_file(tmp_path, "        return Smoother(3.0)(x)\n")
    patch = hoist_patch_for(break_at(path, forward_line(path)))
    assert not isinstance(patch, Refusal) and patch is not None
    assert patch.setup == ("self._smoother = Smoother(3.0)",)
    assert "        return self._smoother(x)\n" in patch.edits[1].after


@pytest.mark.parametrize(
    ("forward", "init", "why"),
    [
        # the object depends on the call's own values
        ("        return Smoother(x.shape[-1])(x)\n", INIT, "values of the call itself"),
        ("        return setuplib.smooth(x, width=x.std())\n", INIT, "values of the call itself"),
        # no __init__ to build it in
        ("        return Smoother(3.0)(x)\n", "", "not in a method of a class"),
        # the line calls nothing that builds it
        ("        return x * 2\n", INIT, "holds no call"),
    ],
)
def test_refusals_say_why(tmp_path: Path, forward: str, init: str, why: str) -> None:
    path = user_file(tmp_path, forward, init=init)
    via = (SMOOTH,) if "smooth" in forward else ()
    refused = hoist_patch_for(break_at(path, forward_line(path), via))
    assert isinstance(refused, Refusal) and why in refused.reason


def test_a_plain_function_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "f.py"
    path.write_text("from setuplib import Smoother\n\ndef f(x):\n    return Smoother(3.0)(x)\n")
    refused = hoist_patch_for(break_at(path, 4))
    assert isinstance(refused, Refusal) and "not in a method" in refused.reason


def test_a_library_function_that_does_more_is_refused(tmp_path: Path) -> None:
    library = tmp_path / "site-packages" / "lib2.py"
    library.parent.mkdir()
    library.write_text(
        "from setuplib import Smoother\n\ndef smooth2(x, width=2.0):\n"
        "    x = x * 2\n    return Smoother(width)(x)\n"
    )
    sys.path.insert(0, str(library.parent))
    try:
        import lib2  # noqa: F401

        path = user_file(
            tmp_path, "        return lib2.smooth2(x)\n", head="import lib2\n\n\nclass M:\n"
        )
        entry = Location(str(library), 5, "smooth2", "")
        refused = hoist_patch_for(break_at(path, forward_line(path), (entry,)))
    finally:
        sys.path.remove(str(library.parent))
        sys.modules.pop("lib2", None)
    assert isinstance(refused, Refusal) and "does more than build" in refused.reason


def test_installing_sets_up_the_live_instance_once(tmp_path: Path) -> None:
    path = user_file(tmp_path, "        return setuplib.smooth(x, width=self.scale)\n")
    patch = hoist_patch_for(break_at(path, forward_line(path), (SMOOTH,)))
    assert patch is not None and not isinstance(patch, Refusal)
    namespace: dict[str, object] = {"__name__": "hoist_model", "__file__": str(path)}
    module = type(sys)("hoist_model")
    module.__file__ = str(path)
    sys.modules["hoist_model"] = module
    try:
        exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
        model = module.M()
        x = torch.randn(2, 1, 16)
        expected = model.forward(x)
        with InstalledPatch(patch):
            assert isinstance(model._smoother, setuplib.Smoother)
            first = model._smoother
            torch.testing.assert_close(model.forward(x), expected)
        with InstalledPatch(patch):
            assert model._smoother is first  # built once, where the patch is entered again
        broken = patch.__class__(**{**patch.__dict__, "setup": ("self._x = undefined_name",)})
        with pytest.raises(NotInstallable, match="NameError"):
            set_up_instances(broken)
    finally:
        sys.modules.pop("hoist_model", None)
    del namespace


@pytest.mark.usefixtures("eager_backend")
def test_the_setup_patch_is_planned_for_the_breaks_inside_and_measured() -> None:
    workload = load_target(TARGET, "cpu")
    sites = captured_sites(TARGET)
    item = next(s for s in sites if s.gb_code == "GB0124")
    assert [f.function for f in setup_frames(item)] == ["smooth", "__init__"]
    (plan,) = [p for p in what_if_plan(sites) if p.kind == "patch"]
    assert plan.patch is not None and plan.patch.kind == "setup_hoist"
    # every break inside the constructor it builds once is its target
    assert {t.id for t in plan.targets} == {s.id for s in sites}
    reference = harness.eager_reference(workload, [])
    w = measure_what_if(workload, plan, reference, SETTINGS, "cpu", sites)
    assert w.status == "measured", w.error
    assert set(w.removed) == {s.id for s in sites} and not w.new_breaks
    assert w.output is not None and w.output.matches
