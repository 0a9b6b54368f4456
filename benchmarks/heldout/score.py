"""The held-out campaign scored (#59): each workload's first action from an advisor sweep of
`heldout.toml` against the hand-written reference of `variants.py`, measured by
`benchmarks/reference_ab.py` in fresh processes on the same host.

    python -m benchmarks.heldout.score --reference reports/benchmarks/heldout/reference \\
        --sweep before=reports/benchmarks/heldout/sweep_before \\
        --sweep after=reports/benchmarks/heldout/sweep_after --out reports/benchmarks/heldout

`--kept LABEL=FILE` takes a column from an earlier scoring's heldout.json (the sweeps behind
it are git-ignored and may be gone): the before/after columns stay while a later sweep is
scored beside them.

The reference's best is the variant with the largest saving (a share of its own default step,
paired by round) whose 95% interval lies above zero; "keep" (the default step) where none does.
The advisor's first action is the first one it lists as something to do (`outcome` "do"), or
"keep" where it lists none. It is matched to the reference variant that makes the same change:
the same knobs; a `setup_hoist` patch to the hand hoist; another generated patch to the hand
rewrite of the same code; a placement, the optimizer option or not compiling to the variant of
that kind ("module", the model compiled in place with the step eager, to "regional"). Variants
added after the first reference run (`reference/supplement/`, their own baseline beside them)
join it as shares of their own run's default step. It is
right when the reference cannot tell it from the best: the matched variant's interval holds the
best's saving (the decision of record), or both are "keep". An action with no counterpart among
the variants, or an estimate, is not right: the reference has no number for it.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from typing import Any

from tabulate import tabulate

from benchmarks.heldout.models import MODELS
from benchmarks.heldout.variants import VARIANTS
from benchmarks.study_output import write_study

SAME_KIND = {"module": "regional", "split": "regional"}


def reference_best(data: dict[str, Any]) -> tuple[str, float]:
    """The variant with the largest saving share whose interval is above zero, else keep."""
    best, share = "default", 0.0
    for name, s in data["savings"].items():
        ci = s.get("ci95_share")
        if s.get("mean_share") is None or ci is None or ci[0] <= 0:
            continue
        if s["mean_share"] > share:
            best, share = name, s["mean_share"]
    return best, share


def first_action(report: dict[str, Any]) -> dict[str, Any] | None:
    """The first action the report lists as something to do; None: nothing to do."""
    return next((a for a in report.get("actions", []) if a.get("outcome", "do") == "do"), None)


def _knobs(text: str) -> frozenset[str]:
    return frozenset(part.split("=", 1)[0].strip().lower() for part in text.split(" + ") if part)


def matched(workload: str, action: dict[str, Any] | None) -> str | None:
    """The reference variant that makes the advisor's change; None where none does."""
    if action is None or action.get("kind") == "keep":
        return "default"
    if not action.get("measured"):
        return None  # an estimate: the reference measured no such change
    kind = SAME_KIND.get(action["kind"], action["kind"])
    variants = VARIANTS[workload]
    if kind == "knob":
        wanted = _knobs(action.get("knob") or "")
        for name, spec, vkind in variants:
            given = frozenset(p.split("=", 1)[0].lower() for p in spec.split("+")[1:])
            if vkind == "knob" and given == wanted:
                return name
        return None
    if kind == "patch":
        patch = action.get("patch") or {}
        kind = "hoist" if patch.get("kind") == "setup_hoist" else "code"
        plain = [n for n, spec, k in variants if k == kind and "+" not in spec]
        plain += [n for n, _, k in variants if k == "patch"] if kind == "code" else []
        return next((n for n in plain if not n.endswith("fullgraph")), None)
    return next((n for n, _, k in variants if k == kind), None)


def right(data: dict[str, Any], best: str, name: str | None) -> bool:
    """The reference cannot tell the matched variant from its best."""
    if name is None:
        return False
    if name == "default" or best == "default":
        return name == best
    saving = data["savings"].get(name) or {}
    ci = saving.get("ci95_share")
    best_share = data["savings"][best]["mean_share"]
    return ci is not None and ci[0] <= best_share <= ci[1]


def label(action: dict[str, Any] | None) -> str:
    if action is None:
        return "keep (nothing to do)"
    kind = action["kind"]
    if kind == "knob":
        return f"knob {action.get('knob')}"
    if kind == "patch":
        return f"patch {(action.get('patch') or {}).get('kind')}"
    basis = "" if action.get("measured") else " (estimated)"
    return f"{kind}{basis}"


def score(reference: Path, sweeps: dict[str, Path]) -> list[dict[str, Any]]:
    rows = []
    for workload in VARIANTS:
        path = _found(reference / f"{workload}.json")
        if path is None:
            continue
        data = with_supplement(read_json(path), reference / "supplement" / f"{workload}.json")
        best, share = reference_best(data)
        row: dict[str, Any] = {
            "workload": workload,
            "library": MODELS[workload][0],
            "form": MODELS[workload][1],
            "best": best,
            "best_share": share,
            "variants": _variants(data),
        }
        for label_, folder in sweeps.items():
            report_path = folder / workload / "report.json"
            if not report_path.exists():
                row[label_] = {"action": "no report", "matched": None, "right": False}
                continue
            action = first_action(json.loads(report_path.read_text(encoding="utf-8")))
            name = matched(workload, action)
            row[label_] = {
                "action": label(action),
                "matched": name,
                "right": right(data, best, name),
            }
        rows.append(row)
    return rows


def with_kept(rows: list[dict[str, Any]], kept: dict[str, Path]) -> list[dict[str, Any]]:
    """Each row with the kept labels' cells from an earlier scoring's JSON (read, not judged
    again: the sweep it scored is not kept)."""
    for label_, path in kept.items():
        earlier = {r["workload"]: r for r in read_json(path)["rows"]}
        for row in rows:
            cell = earlier.get(row["workload"], {}).get(label_)
            row[label_] = cell or {"action": "not scored", "matched": None, "right": False}
    return rows


def _found(path: Path) -> Path | None:
    """The JSON file, or its gzipped copy (the committed references are gzipped)."""
    gzipped = path.with_name(path.name + ".gz")
    return path if path.exists() else gzipped if gzipped.exists() else None


def read_json(path: Path) -> Any:
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    return json.loads(path.read_text(encoding="utf-8"))


def with_supplement(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """The reference with the variants a later run added (its own baseline and eager beside
    them; shares of that run's own default step, the same host): those the first run lacks."""
    found = _found(path)
    if found is None:
        return data
    extra = read_json(found)
    out = {**data, "savings": dict(data["savings"]), "variants": dict(data["variants"])}
    for name, saving in extra["savings"].items():
        if name not in out["savings"]:
            out["savings"][name] = saving
            out["variants"][name] = extra["variants"][name]
    return out


def _variants(data: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for name, summary in data["variants"].items():
        saving = data["savings"].get(name)
        out[name] = {
            "round_ms": summary["round_ms"],
            "median_ms": summary["median_ms"],
            "share": saving.get("mean_share") if saving else 0.0,
            "ci95_share": saving.get("ci95_share") if saving else None,
            "per_round_share": saving.get("per_round_share") if saving else None,
            "failed": bool(summary["failed_rounds"]) and summary["median_ms"] is None,
        }
    return out


def table(rows: list[dict[str, Any]], labels: list[str]) -> str:
    head = ["workload", "library", "form", "reference best", *(f"{x} first action" for x in labels)]
    body = []
    for r in rows:
        cells = [r["workload"], r["library"], r["form"], f"{r['best']} ({r['best_share']:+.1%})"]
        for x in labels:
            got = r[x]
            mark = "right" if got["right"] else "wrong"
            cells.append(f"{got['action']} -> {got['matched'] or 'no variant'}: {mark}")
        body.append(cells)
    return tabulate(body, head, tablefmt="github")


def variants_table(rows: list[dict[str, Any]]) -> str:
    body = []
    for r in rows:
        for name, v in r["variants"].items():
            ci = v["ci95_share"]
            interval = f"[{ci[0]:+.1%}, {ci[1]:+.1%}]" if ci else ""
            rounds = ", ".join(f"{ms:.3f}" if ms is not None else "-" for ms in v["round_ms"])
            saving = (
                "failed" if v["failed"] or v["share"] is None else f"{v['share']:+.1%} {interval}"
            )
            body.append([r["workload"], name, saving, rounds])
    return tabulate(body, ["workload", "variant", "saving (share)", "round medians ms"], "github")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.heldout.score")
    parser.add_argument("--reference", type=Path, required=True)
    parser.add_argument("--sweep", action="append", default=[], help="LABEL=FOLDER")
    parser.add_argument(
        "--kept",
        action="append",
        default=[],
        help="LABEL=heldout.json: that label's column from an earlier scoring (its sweep gone)",
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    sweeps = {s.split("=", 1)[0]: Path(s.split("=", 1)[1]) for s in args.sweep}
    kept = {s.split("=", 1)[0]: Path(s.split("=", 1)[1]) for s in args.kept}
    rows = with_kept(score(args.reference, sweeps), kept)
    labels = [*kept, *sweeps]
    totals = {x: sum(r[x]["right"] for r in rows) for x in labels}
    text = "\n\n".join(
        [
            "# Held-out first actions against the hand-written reference\n\n"
            + ", ".join(f"{x}: {totals[x]} of {len(rows)} right" for x in labels),
            table(rows, labels),
            "## Reference variants (shares of each run's own default step, 5 rounds)",
            variants_table(rows),
        ]
    )
    write_study(args.out, "heldout", {"rows": rows, "right": totals}, text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
