"""The held-out campaign's scorer (#59) on synthetic records: the reference's best, the match of
an advisor action to the variant that makes the same change, and "right" as the decision of
record has it (the matched variant's interval holds the best's saving)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.heldout import score


def saving(share: float, half: float) -> dict[str, Any]:
    return {"mean_share": share, "ci95_share": [share - half, share + half]}


REFERENCE = {
    "variants": {},
    "savings": {
        "eager": saving(-0.10, 0.02),
        "fullgraph": {"mean_share": None, "ci95_share": None},
        "scalars": saving(0.30, 0.05),
        "where": saving(0.33, 0.04),
        "where_fullgraph": saving(0.20, 0.02),
    },
}


def test_the_best_is_the_largest_saving_above_zero() -> None:
    assert score.reference_best(REFERENCE) == ("where", 0.33)
    nothing = {"savings": {"eager": saving(0.01, 0.05)}}
    assert score.reference_best(nothing) == ("default", 0.0)


def test_actions_match_the_variant_that_makes_the_same_change() -> None:
    knob = {"kind": "knob", "knob": "capture_scalar_outputs=True", "measured": True}
    assert score.matched("dct_compress", knob) == "scalars"
    pair = {**knob, "knob": "capture_dynamic_output_shape_ops=True + capture_scalar_outputs=True"}
    assert score.matched("pml_triplet_train", pair) == "dynamic_scalars"
    patch = {"kind": "patch", "measured": True, "patch": {"kind": "tensor_branch"}}
    assert score.matched("dct_compress", patch) == "where"  # the hand rewrite, not fullgraph
    hoist = {"kind": "patch", "measured": True, "patch": {"kind": "setup_hoist"}}
    assert score.matched("geomloss_inline", hoist) == "hoist"
    assert score.matched("ema_train", {"kind": "module", "measured": True}) == "regional"
    assert score.matched("dct_compress", None) == "default"
    assert score.matched("dct_compress", {"kind": "code", "measured": False}) is None


def test_right_when_the_reference_cannot_tell_it_from_the_best() -> None:
    assert score.right(REFERENCE, "where", "scalars")  # 0.33 inside [0.25, 0.35]
    assert not score.right(REFERENCE, "where", "where_fullgraph")
    assert not score.right(REFERENCE, "where", "default")
    assert not score.right(REFERENCE, "where", None)
    assert score.right({"savings": {}}, "default", "default")


def test_a_sweep_is_scored_workload_by_workload(tmp_path: Path) -> None:
    ref = tmp_path / "reference"
    ref.mkdir()
    data = {
        **REFERENCE,
        "variants": {
            name: {"round_ms": [1.0] * 5, "median_ms": 1.0, "failed_rounds": []}
            for name in ("default", *REFERENCE["savings"])
        },
    }
    (ref / "dct_compress.json").write_text(json.dumps(data))
    sweep = tmp_path / "sweep" / "dct_compress"
    sweep.mkdir(parents=True)
    actions = [
        {"kind": "knob", "knob": "x=True", "measured": True, "outcome": "slower"},
        {"kind": "patch", "measured": True, "patch": {"kind": "tensor_branch"}, "outcome": "do"},
    ]
    (sweep / "report.json").write_text(json.dumps({"actions": actions}))
    (row,) = score.score(ref, {"after": tmp_path / "sweep"})
    assert row["best"] == "where"
    assert row["after"] == {"action": "patch tensor_branch", "matched": "where", "right": True}


def test_a_supplement_adds_the_variants_the_first_run_lacks(tmp_path: Path) -> None:
    extra = {
        "variants": {"eager_fused": {"round_ms": [1.0], "median_ms": 1.0, "failed_rounds": []}},
        "savings": {"eager_fused": saving(0.4, 0.05), "scalars": saving(0.9, 0.01)},
    }
    path = tmp_path / "w.json"
    path.write_text(json.dumps(extra))
    merged = score.with_supplement(REFERENCE, path)
    assert merged["savings"]["eager_fused"]["mean_share"] == 0.4
    assert merged["savings"]["scalars"] == REFERENCE["savings"]["scalars"]  # the first run's
    assert score.reference_best(merged) == ("eager_fused", 0.4)
    assert score.with_supplement(REFERENCE, tmp_path / "none.json") is REFERENCE
