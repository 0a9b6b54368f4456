"""Reference variants of every held-out workload, for benchmarks/reference_ab.py and a scorer.

`VARIANTS[workload]` lists `(name, spec, kind)`: `spec` is `TARGET@MODE[+KEY=VALUE...]` exactly
as `reference_ab --variant NAME=SPEC` reads it (targets relative to the repository root, where
reference_ab runs), the first the baseline (`default`); `kind` is the advisor action kind the
variant stands for: knob, fullgraph, regional, disable, patch, eager, fused, eager_fused
(nothing compiled, the optimizer fused), optimizer, step,
keep, hoist (setup moved out of the hot call) or code (a hand rewrite of user code). A variant
that fails to compile (a `fullgraph` one whose breaks remain) is kept on purpose: it measures
as failed, which is the answer for that action.

    python -m benchmarks.heldout.variants ema_train   # prints the reference_ab command line
"""

from __future__ import annotations

import shlex
import sys

MODELS = "benchmarks/heldout/models.py"
FIXES = "benchmarks/heldout/fixes.py"
SCALARS = "capture_scalar_outputs=true"
DYNAMIC = "capture_dynamic_output_shape_ops=true"


def _base(workload: str) -> list[tuple[str, str, str]]:
    """The three variants every workload has: default (baseline), eager and fullgraph."""
    target = f"{MODELS}:{workload}"
    return [
        ("default", f"{target}@default", "keep"),
        ("eager", f"{target}@eager", "eager"),
        ("fullgraph", f"{target}@fullgraph", "fullgraph"),
    ]


def _fix(workload: str, fix: str, mode: str = "default", *knobs: str) -> str:
    return "+".join([f"{FIXES}:{workload}_{fix}@{mode}", *knobs])


def _knob(workload: str, mode: str, *knobs: str) -> str:
    return "+".join([f"{MODELS}:{workload}@{mode}", *knobs])


VARIANTS: dict[str, list[tuple[str, str, str]]] = {
    "geomloss_sinkhorn": [
        *_base("geomloss_sinkhorn"),
        ("scalars", _knob("geomloss_sinkhorn", "default", SCALARS), "knob"),
        ("diameter", _fix("geomloss_sinkhorn", "diameter"), "code"),
    ],
    "geomloss_inline": [
        *_base("geomloss_inline"),
        ("scalars", _knob("geomloss_inline", "default", SCALARS), "knob"),
        ("hoist", _fix("geomloss_inline", "hoist"), "hoist"),
        ("hoist_scalars", _fix("geomloss_inline", "hoist", "default", SCALARS), "hoist"),
    ],
    "pml_triplet_train": [
        *_base("pml_triplet_train"),
        ("dynamic", _knob("pml_triplet_train", "default", DYNAMIC), "knob"),
        ("dynamic_scalars", _knob("pml_triplet_train", "default", DYNAMIC, SCALARS), "knob"),
        ("regional", _fix("pml_triplet_train", "regional"), "regional"),
        ("disable", _fix("pml_triplet_train", "disable"), "disable"),
        ("fused", _fix("pml_triplet_train", "fused"), "fused"),
        ("eager_fused", _fix("pml_triplet_train", "fused", "eager"), "eager_fused"),
    ],
    "vq_train": [
        *_base("vq_train"),
        ("patch", _fix("vq_train", "patch"), "patch"),
        ("disable", _fix("vq_train", "disable"), "disable"),
        ("regional", _fix("vq_train", "regional", "eager"), "regional"),
        ("fused", _fix("vq_train", "fused"), "fused"),
        ("eager_fused", _fix("vq_train", "fused", "eager"), "eager_fused"),
    ],
    "dct_compress": [
        *_base("dct_compress"),
        ("scalars", _knob("dct_compress", "default", SCALARS), "knob"),
        ("where", _fix("dct_compress", "where"), "code"),
        ("where_fullgraph", _fix("dct_compress", "where", "fullgraph"), "code"),
    ],
    "msssim_ae_train": [
        *_base("msssim_ae_train"),
        ("scalars", _knob("msssim_ae_train", "default", SCALARS), "knob"),
        ("hoist", _fix("msssim_ae_train", "hoist"), "hoist"),
        ("tensor", _fix("msssim_ae_train", "tensor"), "code"),
        ("hoist_tensor", _fix("msssim_ae_train", "hoist_tensor"), "code"),
        ("regional", _fix("msssim_ae_train", "regional"), "regional"),
        ("fused", _fix("msssim_ae_train", "fused"), "fused"),
        ("eager_fused", _fix("msssim_ae_train", "fused", "eager"), "eager_fused"),
    ],
    "rotary_attention": [
        *_base("rotary_attention"),
        ("scalars", _knob("rotary_attention", "default", SCALARS), "knob"),
        ("tensor", _fix("rotary_attention", "tensor"), "code"),
        ("tensor_fullgraph", _fix("rotary_attention", "tensor", "fullgraph"), "code"),
    ],
    "ema_train": [
        *_base("ema_train"),
        ("scalars", _knob("ema_train", "default", SCALARS), "knob"),
        ("disable", _fix("ema_train", "disable"), "disable"),
        ("regional", _fix("ema_train", "regional"), "regional"),
        ("fused", _fix("ema_train", "fused"), "fused"),
        ("eager_fused", _fix("ema_train", "fused", "eager"), "eager_fused"),
    ],
    "kmeans_cluster": [
        *_base("kmeans_cluster"),
        ("disable", _fix("kmeans_cluster", "disable"), "disable"),
        ("hoist", _fix("kmeans_cluster", "hoist"), "hoist"),
        ("regional", _fix("kmeans_cluster", "regional"), "regional"),
    ],
    "zuko_nsf_train": [
        *_base("zuko_nsf_train"),
        ("disable", _fix("zuko_nsf_train", "disable"), "disable"),
        ("regional", _fix("zuko_nsf_train", "regional", "eager"), "regional"),
        ("fused", _fix("zuko_nsf_train", "fused"), "fused"),
        ("eager_fused", _fix("zuko_nsf_train", "fused", "eager"), "eager_fused"),
    ],
}


def command(
    workload: str, rounds: int = 5, seconds: float = 1.0, only: tuple[str, ...] = ()
) -> list[str]:
    """The reference_ab command line for one workload, its JSON under
    reports/benchmarks/heldout/reference/; with `only`, those variants beside the baseline and
    eager, into reference/supplement/ (a variant added after the first campaign)."""
    args = [sys.executable, "-m", "benchmarks.reference_ab", "--rounds", str(rounds)]
    args += ["--threads", "1", "--seconds", str(seconds)]
    for name, spec, _ in VARIANTS[workload]:
        if not only or name in ("default", "eager", *only):
            args += ["--variant", f"{name}={spec}"]
    folder = "reference/supplement" if only else "reference"
    return [*args, "--out", f"reports/benchmarks/heldout/{folder}/{workload}.json"]


if __name__ == "__main__":
    # `--only NAME`: each workload that has NAME, that variant with the baseline and eager
    only = tuple(sys.argv[2:3]) if sys.argv[1:2] == ["--only"] else ()
    names = [] if only else sys.argv[1:]
    for workload in names or list(VARIANTS):
        if not only or any(name == only[0] for name, _, _ in VARIANTS[workload]):
            print(shlex.join(command(workload, only=only)))
