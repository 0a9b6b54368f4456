"""The run-level spread of a saving, pooled over the reruns campaigns: what
`policy.SAVING_RUN_SPREAD` is set from (nothing here measures).

Each campaign of `benchmarks.reruns` reads, for every action measured in two runs of one
target, how far its share of the step moved beyond what the two runs' waves show
(`reruns.share_spread`: a method-of-moments variance over pairs of runs). One campaign rests on
60-75 pairs and came out between 1.9% and 3.0% of the step here, so the policy takes them
pooled: the pairs' variances weighted by their counts, sqrt(sum(n_i s_i^2) / sum(n_i)). The
value the interval uses is that pooled spread rounded up to the next half point: an interval
a little wide costs a saving near the floor its "measured"; one too narrow lets a rerun
disagree with it.

    python -m benchmarks.run_spread [--campaign NAME=PATH ...] [--out DIR]

Results to reports/benchmarks/run_spread/run_spread.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from benchmarks.study_output import write_study

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "reports" / "benchmarks" / "run_spread"
STEP = 0.005  # the policy's value is the pooled spread rounded up to this
# Every reruns campaign at one pinned thread, in the order measured: the first set the 3% the
# interval used until this study; the next two were measured with it in place; "warm" after
# every timed block came to follow an untimed one (#27).
CAMPAIGNS = {
    "first": "reports/benchmarks/reruns/first/reruns.json",
    "rules": "reports/benchmarks/reruns/rules/reruns.json",
    "second": "reports/benchmarks/reruns/second/reruns.json",
    "warm": "reports/benchmarks/reruns/reruns.json",
}


def pooled(spreads: list[dict[str, Any]]) -> dict[str, Any]:
    """Campaigns' run-level spreads (`pairs`, `run_sd`) pooled by their pair counts; None for
    the spread where no campaign has a pair."""
    counted = [s for s in spreads if s.get("pairs") and s.get("run_sd") is not None]
    pairs = sum(s["pairs"] for s in counted)
    if not pairs:
        return {"pairs": 0, "run_sd": None}
    variance = sum(s["pairs"] * s["run_sd"] ** 2 for s in counted) / pairs
    return {"pairs": pairs, "run_sd": math.sqrt(variance)}


def rounded_up(value: float, step: float = STEP) -> float:
    """`value` rounded up to a multiple of `step` (to 1e-9, so 0.02 stays 0.02)."""
    return round(math.ceil(value / step - 1e-9) * step, 6)


def read_campaign(path: Path) -> dict[str, Any]:
    """One campaign's saved run-level spread and when it was measured."""
    data = json.loads(path.read_text(encoding="utf-8"))
    spread = data.get("share_spread") or {}
    if not isinstance(spread, dict) or "pairs" not in spread:
        raise ValueError(f"{path}: no share_spread (not a benchmarks.reruns result)")
    return {"pairs": spread["pairs"], "run_sd": spread.get("run_sd"), "machine": data["machine"]}


def study(campaigns: dict[str, Path]) -> dict[str, Any]:
    read = {name: read_campaign(path) for name, path in campaigns.items()}
    pool = pooled(list(read.values()))
    return {
        "campaigns": {n: {**r, "source": _shown(campaigns[n])} for n, r in read.items()},
        "pooled": pool,
        "policy_value": rounded_up(pool["run_sd"]) if pool["run_sd"] is not None else None,
    }


def _shown(path: Path) -> str:
    """A campaign's path relative to the repository where it lies in it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def render(result: dict[str, Any]) -> str:
    rows = [
        f"| {name} | {c['pairs']} | {_pct(c['run_sd'])} | {c['machine']} |"
        for name, c in result["campaigns"].items()
    ]
    pool = result["pooled"]
    return "\n".join([
        "# A saving's run-level spread, pooled over the reruns campaigns",
        "",
        "`python -m benchmarks.run_spread`: how far a saving's share of the step moves between "
        "two runs of one target beyond what each run's waves show, per `benchmarks.reruns` "
        "campaign (one pinned thread), pooled by pair counts. `policy.SAVING_RUN_SPREAD` is the "
        "pooled value rounded up to a half point.",
        "",
        "| campaign | pairs | run-level SD (share of the step) | measured |",
        "|---|---|---|---|",
        *rows,
        f"| pooled | {pool['pairs']} | {_pct(pool['run_sd'])} | |",
        "",
        f"Value for the interval: {_pct(result['policy_value'])} of the step.",
        "",
    ])  # fmt: skip


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.2f}%"


def _campaigns(pairs: list[str] | None) -> dict[str, Path]:
    if not pairs:
        return {name: ROOT / path for name, path in CAMPAIGNS.items()}
    out = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--campaign wants NAME=PATH, got {pair!r}")
        out[name] = Path(path)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--campaign", action="append", help="NAME=PATH of a reruns.json")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    try:
        result = study(_campaigns(args.campaign))
    except (OSError, ValueError, KeyError) as exc:
        print(f"benchmarks.run_spread: {exc}", file=sys.stderr)
        return 2
    write_study(args.out, "run_spread", result, render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
