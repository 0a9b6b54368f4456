"""Sweep engines side by side: the same manifest swept one target at a time, two at a time
(`--workers 2`) and as Ray tasks, with each target's wall time, eager and default medians and
the CPU it was pinned to. It shows what running targets at once buys in wall time and what it
does to the timings (on 2 cores, two runs at once share the machine).

Run from the repository root (about 4 minutes on 2 CPU cores with the default manifest):

    .venv/bin/python -m benchmarks.sweep_engines
    .venv/bin/python -m benchmarks.sweep_engines path/to/manifest.toml --out DIR

The default manifest is six zoo decoders (`benchmarks/zoo/six.toml`). Results go to a new folder
reports/benchmarks/sweep_engines-<time>/ (sweep_engines.md, sweep_engines.json); the sweeps'
own folders are left under it in sweeps/ for inspection (git-ignored).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tabulate import tabulate

from benchmarks.machine import wait_until_quiet

ROOT = Path(__file__).resolve().parent.parent
ENGINES: dict[str, list[str]] = {
    "local, 1 worker": [],
    "local, 2 workers": ["--workers", "2"],
    "ray": ["--engine", "ray"],
}


def sweep(manifest: Path, out: Path, extra: list[str]) -> float:
    command = [sys.executable, "-m", "advisor", "sweep", str(manifest), "--out", str(out)]
    started = time.perf_counter()
    proc = subprocess.run([*command, *extra], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command + extra)} failed:\n{proc.stderr[-2000:]}")
    return time.perf_counter() - started


def targets(folder: Path) -> list[dict[str, Any]]:
    index = json.loads((folder / "index.json").read_text())
    rows = []
    for t in index["targets"]:
        report = json.loads((folder / t["report"]).read_text())
        medians = {
            m["mode"]: m["latency"]["median_ms"] for m in report["modes"] if m.get("latency")
        }
        rows.append(
            {
                "name": t["name"],
                "wall_s": t["wall_s"],
                "eager_ms": medians.get("eager"),
                "default_ms": medians.get("default"),
                "cpus": report["environment"].get("cpu_affinity"),
            }
        )
    return rows


def render(result: dict[str, Any]) -> str:
    lines = [
        "# Sweep engines: one at a time, two at a time, Ray",
        "",
        f"Measured {result['when']} on {result['machine']}; {result['quiet']}. "
        f"Manifest: `{result['manifest']}`.",
        "",
    ]
    base = {t["name"]: t for t in result["engines"]["local, 1 worker"]["targets"]}
    summary = []
    for engine, run in result["engines"].items():
        ratios = [
            t[key] / base[t["name"]][key]
            for t in run["targets"]
            for key in ("eager_ms", "default_ms")
            if t[key] and base[t["name"]][key]
        ]
        summary.append([engine, f"{run['wall_s']:.0f}", f"{min(ratios):.2f}-{max(ratios):.2f}"])
    lines += [
        tabulate(
            summary,
            headers=["engine", "sweep wall s", "medians / one-at-a-time medians"],
            tablefmt="github",
        ),
        "",
    ]
    rows = [
        [
            engine,
            t["name"],
            f"{t['wall_s']:.1f}",
            f"{t['eager_ms']:.3f}",
            f"{t['default_ms']:.3f}",
            ",".join(str(c) for c in t["cpus"] or []),
        ]
        for engine, run in result["engines"].items()
        for t in run["targets"]
    ]
    headers = ["engine", "target", "wall s", "eager ms", "default ms", "pinned to CPU"]
    lines += [tabulate(rows, headers=headers, tablefmt="github"), ""]
    return "\n".join(lines)


def _shown(path: Path) -> str:
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("manifest", nargs="?", type=Path, default=ROOT / "benchmarks/zoo/six.toml")
    parser.add_argument("--wait", type=float, default=600.0, help="most seconds to wait for quiet")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    out = (
        args.out or ROOT / "reports/benchmarks" / f"sweep_engines-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    out.mkdir(parents=True, exist_ok=False)
    quiet = wait_until_quiet(args.wait)
    engines: dict[str, Any] = {}
    for engine, extra in ENGINES.items():
        folder = out / "sweeps" / engine.replace(", ", "-").replace(" ", "-")
        wall_s = sweep(args.manifest, folder, extra)
        engines[engine] = {"wall_s": wall_s, "targets": targets(folder)}
        print(f"{engine}: {wall_s:.0f} s", file=sys.stderr)
    result = {
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "quiet": quiet.note(),
        "manifest": _shown(args.manifest),
        "engines": engines,
    }
    (out / "sweep_engines.json").write_text(json.dumps(result, indent=2))
    (out / "sweep_engines.md").write_text(render(result))
    print(render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
