"""The library zoo's tuning / held-out split: the two lists, fixed before any advisor output was
seen, and the rule that made them from the survey (tests/test_libzoo.py checks that the rule,
applied to survey.json, gives these lists)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# The rule (`split_models` below applies it to the survey's records). Groups: each library,
# and the user-code entries as one group of their own, taken in name order. Within a group:
# the models with graph breaks (a crashing default compile counts) sorted by name, then the
# models without breaks sorted by name. Models alternate between the halves, each group
# starting on the half that so far has fewer models with breaks (then fewer models; then
# tuning). So each half gets about half of the breaking models and half of each library's
# models, and every group of two or more models has some in both.
TUNING_MODELS: tuple[str, ...] = (
    "botorch_qlogei",
    "gp_variational",
    "kornia_canny",
    "monai_swin_unetr",
    "nf_realnvp",
    "pyro_potential",
    "pyro_hmm",
    "pyg_gat",
    "pyg_graph_unet",
    "ode_dopri5",
    "tm_accuracy",
    "tm_ssim_module",
    "sde_euler",
    "user_lambda_flow",
    "user_moe_lambda",
)
HELD_OUT_MODELS: tuple[str, ...] = (
    "e3nn_tensor_product",
    "einops_mixer",
    "gp_exact_predict",
    "kornia_augment",
    "kornia_warp",
    "monai_sliding_window",
    "monai_unet",
    "nf_spline",
    "pyro_svi_elbo",
    "pyg_gcn",
    "pyg_topk_pool",
    "ode_rk4",
    "tm_auroc",
    "user_eval_step",
    "user_layer_loop",
)


def split_models(records: Iterable[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """The tuning / held-out rule above, applied to survey records: groups (each
    library; the user-code entries form one group of their own), in name order; within a group,
    the models with breaks (a crashing default compile counts) by name, then the rest by name;
    alternate between the halves, each group starting on the half with fewer models with breaks
    so far (then fewer models; then tuning)."""
    groups: dict[str, list[tuple[bool, str]]] = {}
    for rec in records:
        group = "user code" if rec.get("user_code") else str(rec["library"])
        breaks = bool(rec.get("breaks")) or "error" in rec.get("default", {})
        groups.setdefault(group, []).append((breaks, str(rec["model"])))
    tuning: list[str] = []
    held_out: list[str] = []
    broken: set[str] = set()
    for group in sorted(groups):
        members = sorted(groups[group], key=lambda m: (not m[0], m[1]))
        broken.update(name for has_breaks, name in members if has_breaks)

        def load(half: list[str]) -> tuple[int, int]:
            return (sum(name in broken for name in half), len(half))

        halves = [tuning, held_out] if load(tuning) <= load(held_out) else [held_out, tuning]
        for i, (_, name) in enumerate(members):
            halves[i % 2].append(name)
    return tuning, held_out
