"""The training zoo (benchmarks/trainzoo): its manifest lists every model in both forms and every
training scenario, the tuning/held-out split is a fixed partition, and a model trains in both
forms. Only torch_geometric's GraphSAGE is built here (fast to import and to step); the survey
(benchmarks/trainzoo/survey.py) covers the rest."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from advisor.measure.workload import scenario_names
from benchmarks.trainzoo.models import FORMS, HELD_OUT_MODELS, MODELS, TUNING_MODELS, build
from tests.support.dynamo_trace import compiled_eager, dynamo_reset_on_one_thread

tomllib = pytest.importorskip("tomllib")  # Python 3.11+
TRAINZOO = Path(__file__).resolve().parent.parent / "benchmarks" / "trainzoo"
ZOO = TRAINZOO.parent / "zoo"


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    with dynamo_reset_on_one_thread():
        yield


def test_manifest_lists_every_model_form_and_training_scenario() -> None:
    manifest = tomllib.loads((TRAINZOO / "trainzoo.toml").read_text())
    zoo = tomllib.loads((ZOO / "zoo.toml").read_text())
    assert manifest["defaults"] == zoo["defaults"]
    targets = manifest["targets"]
    names = [t["name"] for t in targets]
    assert len(names) == len(set(names))
    model_targets = [t for t in targets if "params" in t]
    assert all(t["target"] == "models.py:build" for t in model_targets)
    pairs = {(t["params"]["model"], t["params"]["form"]) for t in model_targets}
    assert pairs == {(m, f) for m in MODELS for f in FORMS}
    scenarios = {t["target"] for t in targets if "params" not in t}
    assert scenarios == {n for n in scenario_names() if n.startswith("train_")}


def test_split_is_a_partition_in_halves_with_every_library() -> None:
    assert set(TUNING_MODELS).isdisjoint(HELD_OUT_MODELS)
    assert set(TUNING_MODELS) | set(HELD_OUT_MODELS) == set(MODELS)
    assert abs(len(TUNING_MODELS) - len(HELD_OUT_MODELS)) <= 1
    libraries = {library for library, _ in MODELS.values()}
    assert len(libraries) >= 3 and len(MODELS) >= 6


def test_unknown_model_or_form_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown trainzoo model"):
        build("cpu", "no_such_model")
    with pytest.raises(ValueError, match="unknown form"):
        build("cpu", "graphsage", form="inference")


@pytest.mark.parametrize("form", FORMS)
def test_graphsage_trains_in_both_forms(form: str) -> None:
    pytest.importorskip("torch_geometric")
    w = build("cpu", "graphsage", form)
    assert (w.compiled_module is not None) == (form == "module")
    step = compiled_eager(w)
    losses = [step() for _ in range(3)]
    assert all(loss.ndim == 0 and torch.isfinite(loss) for loss in losses)
    eager = build("cpu", "graphsage", form)
    assert torch.isfinite(eager())


def test_the_manifest_folder_can_load_the_transformers_configs() -> None:
    """`advisor sweep` loads models.py by its path from the manifest's folder, where the repo
    root is not on sys.path: the transformers models' configs must load all the same."""
    import subprocess
    import sys

    script = (
        "import importlib.util, sys\n"
        "spec = importlib.util.spec_from_file_location('trainzoo_models', 'models.py')\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "sys.modules['trainzoo_models'] = module\n"
        "spec.loader.exec_module(module)\n"
        "module.build('cpu', model='bert', form='module')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=TRAINZOO,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONSAFEPATH": "1"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
