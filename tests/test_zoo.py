"""The model zoo (benchmarks/zoo): tiny random-init transformers models and their manifest."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.measure.torch_adapter import compare_outputs
from advisor.measure.workload import load_target, scenario_names
from benchmarks.zoo.hf_models import MODELS, build  # imports transformers only when building
from tests.support.compile import capture_workload

pytest.importorskip("transformers")
tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ZOO = Path(__file__).resolve().parent.parent / "benchmarks" / "zoo"


@pytest.mark.parametrize("model", ["reformer", "albert", "mixtral_eager_experts"])
def test_zoo_model_is_deterministic(model: str) -> None:
    """A decoder with breaks, an encoder and an MoE: two builds and two calls agree."""
    first, second = build("cpu", model), build("cpu", model)
    assert first.name == f"hf.{model}"
    out = first()
    assert compare_outputs(out, first()).matches
    assert compare_outputs(out, second()).matches


def test_zoo_target_loads_with_params() -> None:
    workload = load_target(str(ZOO / "hf_models.py") + ":build", "cpu", {"model": "albert"})
    assert workload.name == "hf.albert"
    assert "input_ids" in workload.kwargs


def test_zoo_break_is_captured() -> None:
    """Flaubert's `assert lengths.max().item() <= slen` is one `.item()` break (GB0124)."""
    workload = build("cpu", "flaubert")
    capture = capture_workload(workload.fn, workload.args, workload.kwargs, backend="eager")
    assert [s.gb_code for s in capture.sites] == ["GB0124"]
    (site,) = capture.sites
    assert site.where.file.endswith("transformers/models/flaubert/modeling_flaubert.py")


def test_unknown_model_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown zoo model"):
        build("cpu", "no_such_model")


def test_manifest_lists_every_model_and_scenario() -> None:
    manifest = tomllib.loads((ZOO / "zoo.toml").read_text())
    assert manifest["sweep"]["name"] == "transformers-zoo"
    defaults = manifest["defaults"]
    assert defaults["device"] == "cpu"
    # A whole-zoo sweep must fit a CI-sized machine: one thread and few rounds.
    assert defaults["threads"] == 1
    assert defaults["repeats"] > 0 and defaults["budget"] > 0
    targets = manifest["targets"]
    names = [t["name"] for t in targets]
    assert len(names) == len(set(names))
    zoo_targets = [t for t in targets if "params" in t]
    assert all(t["target"] == "hf_models.py:build" for t in zoo_targets)
    assert all((ZOO / t["target"].split(":")[0]).is_file() for t in zoo_targets)
    assert all(t["params"]["model"] in MODELS for t in zoo_targets)
    assert {t["params"]["model"] for t in zoo_targets} == set(MODELS)
    # the training scenarios are in benchmarks/trainzoo/trainzoo.toml (tests/test_trainzoo.py)
    inference_scenarios = {n for n in scenario_names() if not n.startswith("train_")}
    assert {t["target"] for t in targets if "params" not in t} == inference_scenarios
