"""The library zoo (benchmarks/libzoo): models from pip libraries other than transformers, their
survey, manifest and tuning / held-out split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from benchmarks.libzoo.breaks import BreakRecorder, outputs_equal, parse_break
from benchmarks.libzoo.models import HELD_OUT_MODELS, MODELS, TUNING_MODELS, build
from benchmarks.libzoo.split import split_models

LIBZOO = Path(__file__).resolve().parent.parent / "benchmarks" / "libzoo"
CALLERS = frozenset({str(Path(__file__).resolve())})
# Cheap models (a compile of a few seconds with the eager backend) and the libraries they need.
CHEAP = {
    "tm_accuracy": ("torchmetrics",),
    "kornia_canny": ("kornia",),
    "pyg_gcn": ("torch_geometric",),
    # a user loop over layers: the break in a MONAI layer skips the user's frame
    "user_layer_loop": ("monai", "kornia"),
}


def _survey() -> dict:
    return json.loads((LIBZOO / "survey.json").read_text())


def _recorded(model: str) -> dict:
    return next(rec for rec in _survey()["models"] if rec["model"] == model)


@pytest.mark.parametrize("model", sorted(CHEAP))
def test_model_is_deterministic_and_its_break_is_found(model: str) -> None:
    """Two eager calls agree bitwise, and the first break the survey recorded for the model is
    found again (same registry code, line, owner and skip state) by a default compile."""
    for library in CHEAP[model]:
        pytest.importorskip(library)
    workload = build("cpu", model)
    assert workload.name == f"lib.{model}"
    expected = workload()
    assert outputs_equal(expected, workload())

    recorded = _recorded(model)["breaks"][0]
    torch._dynamo.reset()
    try:
        with BreakRecorder() as recorder:
            out = torch.compile(workload.fn, backend="eager")(*workload.args, **workload.kwargs)
    finally:
        torch._dynamo.reset()
    assert outputs_equal(expected, out)
    found = [b.as_dict(CALLERS) for b in recorder.breaks]
    keys = {(b["gb_code"], b["where"], b["in_library"], b["frame_skipped"]) for b in found}
    key = (recorded["gb_code"], recorded["where"], recorded["in_library"])
    assert (*key, recorded["frame_skipped"]) in keys, found


def test_payload_parsing() -> None:
    """Both payload shapes: a break Dynamo resumes after, and one that skips a frame."""
    resumed = (
        "Graph break in user code at /x/site-packages/lib/mod.py:12\n"
        "Graph Break Reason: Encountered graph break when attempting to trace CALL:\n\n"
        "Data-dependent branching\n  Explanation: ...\n"
        " For more details, visit: https://example.invalid/gb/gb0170.html\n\n"
        "User code traceback:\n"
        '  File "/repo/user.py", line 3, in f\n'
        '  File "/x/site-packages/lib/mod.py", line 12, in g\n'
        "Traceback (most recent call last):\n"
        '  File "/x/site-packages/torch/_dynamo/x.py", line 1, in h\n'
    )
    brk = parse_break(resumed)
    assert brk is not None
    assert (brk.gb_code, brk.gb_type, brk.line, brk.frame_skipped) == (
        "GB0170",
        "Data-dependent branching",
        12,
        False,
    )
    assert brk.in_library and brk.where == "lib/mod.py:12"
    assert brk.as_dict()["user_frame"] == "/repo/user.py:3"
    skipped = resumed.replace(
        "Encountered graph break when attempting to trace CALL:",
        "Failed to handle graph break gracefully. Skipping the function and falling back to "
        "eager. Graph break encountered:",
    )
    assert parse_break(skipped).frame_skipped  # type: ignore[union-attr]


def test_unknown_model_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown libzoo model"):
        build("cpu", "no_such_model")


def test_split_follows_its_rule_and_covers_the_survey() -> None:
    """The committed split is the documented rule applied to the committed survey; every
    library with two or more models has models in both halves."""
    records = [rec for rec in _survey()["models"] if "error" not in rec]
    tuning, held_out = split_models(records)
    assert (tuple(tuning), tuple(held_out)) == (TUNING_MODELS, HELD_OUT_MODELS)
    assert not set(TUNING_MODELS) & set(HELD_OUT_MODELS)
    assert set(TUNING_MODELS) | set(HELD_OUT_MODELS) == set(MODELS)
    groups: dict[str, list[str]] = {}
    for name, entry in MODELS.items():
        groups.setdefault("user" if entry.user_code else entry.library, []).append(name)
    for members in groups.values():
        if len(members) >= 2:
            assert set(members) & set(TUNING_MODELS) and set(members) & set(HELD_OUT_MODELS)


def test_manifest_lists_every_model() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    manifest = tomllib.loads((LIBZOO / "libzoo.toml").read_text())
    defaults = manifest["defaults"]
    assert defaults == {
        "device": "cpu",
        "threads": 1,
        "repeats": 10,
        "budget": 10,
        "profile_calls": 12,
    }
    targets = manifest["targets"]
    assert all(t["target"] == "models.py:build" for t in targets)
    assert [t["params"]["model"] for t in targets] == list(MODELS)
    assert [t["name"] for t in targets] == list(MODELS)


def test_survey_user_lines_are_current() -> None:
    """The survey cites lines of this repository's files (user code) with their source; an edit
    that moves them needs the survey re-run for those models (`survey.py --inductor NAME...`)."""
    root = LIBZOO.parent.parent
    cited = 0
    for rec in _survey()["models"]:
        for brk in rec.get("breaks", []):
            path, _, line = brk["where"].rpartition(":")
            if brk["in_library"] or not path.startswith("benchmarks/"):
                continue
            source = (root / path).read_text().splitlines()[int(line) - 1]
            assert source.strip() == brk["code"], f"{rec['model']}: {brk['where']} moved"
            cited += 1
    assert cited  # the Pyro model's and user_eval_step's own lines
