"""SURVEY.md of the library zoo, written from its survey records (survey.json): the tables,
the notes observed while building the zoo, and the tuning / held-out split."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.libzoo.split import split_models

# Observed while building the zoo (torch 2.13.0+cpu and the versions above); they explain some
# rows of the table.
NOTES = (
    "- `fullgraph=True` can succeed where the default compile breaks: with `fullgraph=True` "
    "Dynamo's ShapeEnv allows scalar outputs and dynamic output shapes (torch/_dynamo/"
    "output_graph.py: `allow_scalar_outputs=one_graph or config.capture_scalar_outputs`, the "
    "same for dynamic output shape ops). So a GB0036/GB0124 break that a knob removes often "
    "compiles with fullgraph (tm_accuracy, pyg_gcn, pyg_gat, nf_spline, the user_* entries).",
    "- Where a break's line is in one of Dynamo's polyfills (its `all()`/`any()`), the survey "
    "reports the line that called it (sde_euler).",
    "- gpytorch uses Pyro's distribution base class when pyro-ppl is installed: the GP models' "
    "GB0006 at `pyro/distributions/distribution.py:26` exists only because pyro-ppl is in the "
    "same environment.",
    "- torchmetrics checks `_XLA_AVAILABLE` (a lazy lightning_utilities requirement check) on "
    "its first call: compiled before any eager call, tm_accuracy crashes with "
    "`InternalTorchDynamoError: PackageNotFoundError: No package metadata was found for "
    "torch_xla`. After one eager call the result is cached and the compile works; the survey "
    "always runs eager first.",
    "- pyg_graph_unet's compile crashes inside Dynamo (`IndexError: tuple index out of range` "
    "in torch/_dynamo/pgo.py's automatic-dynamic stride check, while Dynamo wraps a view's base "
    "tensor in a torch_geometric resume function, `torch_geometric/utils/loop.py:128`); with "
    "`dynamic=False` it compiles, in 61 graphs. Every knob and Inductor crash the same way.",
    "- tm_ssim_module has no break but recompiles on every call: torchmetrics' `Metric.forward` "
    "increments the int attribute `self._update_count`, and Dynamo guards on an nn.Module's int "
    "attributes (`self._update_count == 2` fails on the next call). Called 12 times it compiled "
    "one graph on each of the first 8 calls and none after (`recompile_limit` is 8: the frame "
    "then runs eagerly).",
    "- ode_dopri5's default compile works with the eager backend but fails with Inductor: "
    "`InductorError: LoweringException: DynamicOutputShapeException: aten._unique2.default` "
    "at `torchdiffeq/_impl/rk_common.py:232` (`torch.cat([step_t, jump_t]).unique("
    "return_counts=True)` on empty tensors: Dynamo puts it in a graph, Inductor cannot lower "
    "it). So `torch.compile(odeint)` with dopri5 raises on CPU here.",
    "- kornia_augment and sde_euler recompile inside a call (a list's length, a Python float "
    "specialised per step) and again on the second call.",
    "- Library code that the user writes by design (a Pyro model, a GPyTorch model class, an "
    "ODE or SDE drift) lives in this repository (the zoo's models_*.py), so its lines are user "
    "code: the Pyro entries' GB0142 at the model's `with pyro.plate(...)` line is a user-code "
    "break reached through Pyro.",
)


def one_line(rec: Mapping[str, Any]) -> str:
    if "error" in rec:
        return f"ERROR {rec['error']}"
    crash = " (crashed)" if "error" in rec["default"] else ""
    return (
        f"~{rec['eager_ms_rough']:.1f} ms, {rec['default']['graphs']} graphs{crash}, "
        f"{len(rec['breaks'])} break sites, fullgraph {_fullgraph_cell(rec)}, "
        f"knobs {_knobs_cell(rec) or '-'}"
    )


def _diff_cell(value: float | None) -> str:
    if value is None:
        return "differs (structure)"
    if value == 0.0:
        return "= eager"
    return f"max abs diff {value:.1e}"


def _failure_cell(failure: Mapping[str, Any]) -> str:
    where = f" `{failure['where']}`" if failure.get("where") else ""
    if failure.get("gb_code"):
        return f"fails: {failure['gb_code']} {failure['gb_type']}{where}"
    return f"fails: {failure['error_type']}: {failure['message'][:90]}{where}"


def _fullgraph_cell(rec: Mapping[str, Any]) -> str:
    full = rec["fullgraph"]
    if full.get("ok"):
        return "ok, " + _diff_cell(full["max_abs_diff"])
    return _failure_cell(full)


def _knobs_cell(rec: Mapping[str, Any]) -> str:
    base = len(rec["breaks"])
    parts = []
    for label, res in rec.get("knobs", {}).items():
        if "error" in res:
            parts.append(f"{label}: crash ({res['error']['error_type']})")
            continue
        note = "" if res["max_abs_diff"] == 0.0 else f", {_diff_cell(res['max_abs_diff'])}"
        parts.append(f"{label} {base}→{res['breaks']} ({res['graphs']} graphs{note})")
    return "; ".join(parts)


def _break_cell(brk: Mapping[str, Any]) -> str:
    owner = "lib" if brk["in_library"] else "**user**"
    skipped = ", frame skipped" if brk["frame_skipped"] else ""
    repeat = f", ×{brk['count']}" if brk["count"] > 1 else ""
    return f"{brk['gb_code'] or '?'} `{brk['where']}` ({owner}{skipped}{repeat})"


def _default_cell(rec: Mapping[str, Any]) -> str:
    default = rec["default"]
    if "error" in default:
        return "crash: " + _failure_cell(default["error"]).removeprefix("fails: ")
    text = _diff_cell(default["max_abs_diff"])
    later = default.get("graphs_per_call", [])[1:]
    if any(later):
        text += f"; recompiles: calls 2-{len(later) + 1} compiled {'+'.join(map(str, later))}"
    return text


def render_markdown(survey: Mapping[str, Any], compiled_calls: int) -> str:
    """SURVEY.md; `compiled_calls`: how many calls of the default compile the survey made."""
    records = survey["models"]
    lines = [
        "# Library zoo survey",
        "",
        f"torch {survey['torch']}, CPU, {survey['threads']} thread(s). Written by "
        "`python -m benchmarks.libzoo.survey`; data in `survey.json`. Every model is a tiny "
        "random-init model from a pip library other than transformers (the user-code entries "
        "wrap one), seeded, in eval mode with frozen parameters; `models.py` lists the modules "
        "that say what each computes.",
        "",
        *_libraries(survey),
        *_models(records, compiled_calls),
        *_inductor([r for r in records if "error" not in r and "inductor" in r]),
        *_closing([r for r in records if "error" not in r]),
    ]
    return "\n".join(lines)


def _libraries(survey: Mapping[str, Any]) -> list[str]:
    lines = [
        "## Libraries",
        "",
        "Installed into the project venv with `pip install -c constraints.txt PKG==VERSION`, "
        "the constraints pinning torch==2.13.0 and this environment's numpy, scipy, sympy, "
        "networkx, jinja2 and matplotlib.",
        "",
        "| library | version | installed cleanly with torch 2.13 pinned | models (with user-code "
        "entries) |",
        "|---|---|---|---:|",
    ]
    counts: dict[str, int] = {}
    for rec in survey["models"]:
        counts[rec.get("library", "?")] = counts.get(rec.get("library", "?"), 0) + 1
    for dist, version in survey["libraries"].items():
        clean = "yes" if version else "not installed"
        lines.append(f"| {dist} | {version or '-'} | {clean} | {counts.get(dist, 0)} |")
    for dist, reason in survey["not_installed"].items():
        lines.append(f"| {dist} | - | no: {reason} | 0 |")
    return lines


def _models(records: Sequence[Mapping[str, Any]], compiled_calls: int) -> list[str]:
    ok = [r for r in records if "error" not in r]
    with_breaks = [r for r in ok if r["breaks"] or "error" in r["default"]]
    lines = [
        "",
        "## Models",
        "",
        f"{len(ok)} of {len(records)} models ran; {len(with_breaks)} have graph breaks (or a "
        'crashing default compile). All compiles use `backend="eager"` (Dynamo\'s graphs and '
        "breaks do not depend on the backend). *eager ms*: median of 10 calls, **rough** (a "
        "shared 2-core machine; not a result). *graphs*: graphs of the default compile's first "
        "call. *breaks*: one entry per registry code, line and skip state, at the line where "
        "Dynamo broke (package-relative; `benchmarks/...` is user code), *lib* or **user**, "
        "*frame skipped* when Dynamo gave up on the frame it was compiling, ×N when reported N "
        "times (recompiles, restarts). *default*: the default compile's output vs eager over "
        f"{compiled_calls} calls, and graphs compiled again by calls after the first. "
        "*fullgraph*: `fullgraph=True`. *knobs*: break entries left with "
        "`capture_scalar_outputs` (scalar), `capture_dynamic_output_shape_ops` (dynamic) or "
        "both.",
        "",
        "| model | library | family | params | eager ms (rough) | graphs | breaks | default "
        "| fullgraph | knobs |",
        "|---|---|---|---:|---:|---:|---|---|---|---|",
    ]
    for rec in records:
        if "error" in rec:
            lines.append(f"| {rec['model']} | | | | | | error: {rec['error']} | | | |")
            continue
        breaks = "<br>".join(_break_cell(b) for b in rec["breaks"]) or "0"
        family = rec["family"] + (" (user code)" if rec["user_code"] else "")
        lines.append(
            f"| {rec['model']} | {rec['library']} | {family} | {rec['params']:,} | "
            f"{rec['eager_ms_rough']:.2f} | {rec['default']['graphs']} | {breaks} | "
            f"{_default_cell(rec)} | {_fullgraph_cell(rec)} | {_knobs_cell(rec) or '-'} |"
        )
    return lines


def _inductor(records: Sequence[Mapping[str, Any]]) -> list[str]:
    if not records:
        return []
    lines = [
        "",
        "## Inductor output vs eager",
        "",
        "The default compile with Inductor (`torch.compile(fn)`, what the advisor times), "
        "first call: whether it runs, and its output vs eager (`survey.py --inductor`):",
        "",
        "| model | Inductor |",
        "|---|---|",
    ]
    for rec in records:
        res = rec["inductor"]
        cell = _diff_cell(res["max_abs_diff"]) if res.get("ok") else _failure_cell(res)
        lines.append(f"| {rec['model']} | {cell} |")
    return lines


def _closing(ok: Sequence[Mapping[str, Any]]) -> list[str]:
    """What each model computes, the notes and the split."""
    tuning, held_out = split_models(ok)
    return [
        "",
        "## What each model computes",
        "",
        "| model | computes |",
        "|---|---|",
        *(f"| {r['model']} | {r.get('computes', '')} |" for r in ok),
        "",
        "## Notes",
        "",
        *NOTES,
        "",
        "## Tuning / held-out split",
        "",
        "`models.TUNING_MODELS` and `models.HELD_OUT_MODELS`, by the rule in `split.py` "
        "(`split.split_models` applies it to this survey):",
        "",
        f"- tuning ({len(tuning)}): {', '.join(tuning)}",
        f"- held-out ({len(held_out)}): {', '.join(held_out)}",
        "",
    ]
