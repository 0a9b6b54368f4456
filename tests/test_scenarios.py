"""The scenario suite: every scenario loads, its fixed variant matches, and Dynamo reports the
stated break (code and line) for the workload and none for the fixed variant.

Compiles use backend="eager" only (Dynamo's break decisions do not depend on the backend), so
the whole file stays fast. Breaks are read from the in-process structured trace
(tests/support/dynamo_trace.py), which works for `.item()` and `nonzero` too, unlike a
fullgraph compile.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import torch

from advisor.measure import harness
from advisor.measure.workload import SCENARIO_DIR, Workload, load_target, scenario_info
from tests.support.dynamo_trace import Capture, traced_calls

SCENARIOS = [
    "clean_mlp",
    "print_logging",
    "data_dependent_branch",
    "item_in_decode_loop",
    "moe_nonzero_routing",
    "numpy_interop",
    "third_party_call",
    "loop_frame_skip",
    "disabled_helper",
    "cold_path_check",
    "dynamic_shapes_recompile",
    "scalar_bookkeeping",
]
WITH_BREAK = [s for s in SCENARIOS if s not in ("clean_mlp", "dynamic_shapes_recompile")]
# with fullgraph=True these trace without error (one_graph turns on capture_scalar_outputs and
# capture_dynamic_output_shape_ops, torch-facts §4/§5), or fail for another reason
FULLGRAPH_DOES_NOT_RAISE_ROOT = {"item_in_decode_loop", "moe_nonzero_routing", "scalar_bookkeeping"}
VERDICTS = {"rewrite", "isolate", "ignore"}


def capture(w: Workload, calls: int = 2) -> Capture:
    """Compile `w.fn` (backend=eager, fullgraph=False), run it, and collect breaks/compiles."""
    return traced_calls(lambda: harness.compiled_call(w, "eager", fullgraph=False), calls)


def _module(name: str) -> ModuleType:
    fn = load_target(name, "cpu").fn
    func = getattr(fn, "__func__", fn)
    module_name = type(fn).__module__ if isinstance(fn, torch.nn.Module) else func.__module__
    import sys

    return sys.modules[module_name]


@pytest.fixture(autouse=True)
def _reset_dynamo() -> Iterator[None]:
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("name", SCENARIOS)
def test_loads_with_metadata(name: str) -> None:
    assert (SCENARIO_DIR / f"{name}.py").is_file()
    w = load_target(name, "cpu")
    f = load_target(f"scenarios/{name}.py:fixed", "cpu")
    assert isinstance(w, Workload) and isinstance(f, Workload)
    assert callable(w.fn) and callable(f.fn)
    info = scenario_info(name)
    assert info.pattern
    assert info.expected_verdict in VERDICTS
    assert len(info.summary) > 80, "the module docstring explains the pattern and the fix"
    if name in WITH_BREAK:
        assert info.gb_code is not None and re.fullmatch(r"GB\d{4}", info.gb_code)
        assert isinstance(info.line, int)
        line = (SCENARIO_DIR / f"{name}.py").read_text().splitlines()[info.line - 1]
        assert line.rstrip().endswith("# graph-break")
        # the kind of fix `fixed` applies, so a benchmark compares it with the matching saving
        assert _module(name).FIX_KIND in ("isolate", "rewrite", "delete")
    else:
        assert info.gb_code is None and info.line is None


def test_codes_are_in_the_registry() -> None:
    known = set(torch._dynamo.exc._load_gb_type_to_gb_id_map().values())
    for name in WITH_BREAK:
        mod = _module(name)
        assert mod.EXPECTED_GB_CODE in known, name
        if hasattr(mod, "EXPECTED_SKIP_CODE"):
            assert mod.EXPECTED_SKIP_CODE in known, name


@pytest.mark.parametrize("name", SCENARIOS)
def test_fixed_matches_workload_in_eager(name: str) -> None:
    w = load_target(name, "cpu")
    f = load_target(f"scenarios/{name}.py:fixed", "cpu")
    expected = w()
    torch.testing.assert_close(f(), expected)
    torch.testing.assert_close(w(), expected)  # deterministic


@pytest.mark.parametrize("name", WITH_BREAK)
def test_workload_breaks_where_stated(name: str) -> None:
    mod = _module(name)
    path = Path(mod.__file__)
    cap = capture(load_target(name, "cpu"))
    assert cap.breaks, f"{name}: no graph break captured"
    for br in cap.breaks:
        assert br.codes[0] == mod.EXPECTED_GB_CODE, (name, br.codes)
        assert br.innermost_in(path) == mod.EXPECTED_LINE, (name, br.user_stack)
    skip = getattr(mod, "EXPECTED_SKIP_CODE", None)
    if skip is not None:
        assert any(skip in br.codes for br in cap.breaks), (name, [b.codes for b in cap.breaks])
        assert any(fail == "Unsupported" for _, _, _, fail in cap.compiles), cap.compiles
    else:
        assert all("GB7000" not in br.codes for br in cap.breaks), name
        assert all(fail is None for _, _, _, fail in cap.compiles), cap.compiles


@pytest.mark.parametrize("name", sorted(set(WITH_BREAK) - FULLGRAPH_DOES_NOT_RAISE_ROOT))
def test_workload_fullgraph_error(name: str) -> None:
    mod = _module(name)
    w = load_target(name, "cpu")
    with pytest.raises(torch._dynamo.exc.Unsupported) as info:
        torch.compile(w.fn, backend="eager", fullgraph=True)(*w.args, **w.kwargs)
    err = info.value
    gb_id = torch._dynamo.exc._load_gb_type_to_gb_id_map().get(err.gb_type)
    assert gb_id == mod.EXPECTED_GB_CODE, (name, err.gb_type)
    assert err.real_stack[-1].lineno == mod.EXPECTED_LINE
    assert Path(err.real_stack[-1].filename).resolve() == Path(mod.__file__).resolve()


@pytest.mark.parametrize("name", SCENARIOS)
def test_fixed_has_no_break(name: str) -> None:
    """No break, or only the one the fix keeps on purpose (`FIXED_KEEPS`: its code, e.g. a
    bookkeeping helper run eagerly once per call after the compiled loop)."""
    kept = getattr(_module(name), "FIXED_KEEPS", None)
    f = load_target(f"scenarios/{name}.py:fixed", "cpu")
    cap = capture(f, calls=4)
    codes = [b.codes[0] for b in cap.breaks]
    assert codes == ([kept] if kept else []), (name, [(b.codes, b.line) for b in cap.breaks])
    assert all(fail is None for _, _, _, fail in cap.compiles), cap.compiles
    assert cap.recompiles == 0, cap.compiles
    if kept:
        torch.testing.assert_close(f(), f())
        return
    torch._dynamo.reset()
    out = harness.compiled_call(f, "eager", fullgraph=True)()
    torch.testing.assert_close(out, f())


def test_clean_mlp_is_one_graph() -> None:
    w = load_target("clean_mlp", "cpu")
    cap = capture(w)
    assert cap.breaks == []
    assert [(fid, fcid) for fid, fcid, _, _ in cap.compiles] == [(0, 0)]
    torch._dynamo.reset()
    torch.compile(w.fn, backend="eager", fullgraph=True)(*w.args)


def test_dynamic_shapes_recompile_recompiles() -> None:
    mod = _module("dynamic_shapes_recompile")
    cap = capture(load_target("dynamic_shapes_recompile", "cpu"))
    assert cap.breaks == []
    assert cap.recompiles == mod.EXPECTED_RECOMPILES, cap.compiles
    assert {name for _, _, name, _ in cap.compiles} == {"forward"}
    fixed = capture(load_target("scenarios/dynamic_shapes_recompile.py:fixed", "cpu"))
    assert fixed.recompiles == 0 and len(fixed.compiles) == 1, fixed.compiles
