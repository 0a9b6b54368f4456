"""Copy every target's measurements of a sweep of scenarios.toml into this folder, gzipped, for
the tests that judge and render each scenario's saved record (tests/test_render_failure.py).

    .venv/bin/advisor sweep tests/data/scenarios/scenarios.toml --out /tmp/scenarios
    .venv/bin/python tests/data/scenarios/collect.py /tmp/scenarios

writes NAME.measurements.json.gz here for every target of the manifest; a target the sweep
left without measurements is named and the script exits 1.
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import tomllib

HERE = Path(__file__).resolve().parent


def main(sweep: str) -> int:
    manifest = tomllib.loads((HERE / "scenarios.toml").read_text(encoding="utf-8"))
    missing = []
    for target in manifest["targets"]:
        name = target["name"]
        source = Path(sweep) / name / "measurements.json"
        if not source.is_file():
            missing.append(name)
            continue
        out = HERE / f"{name}.measurements.json.gz"
        out.write_bytes(gzip.compress(source.read_bytes(), mtime=0))
        print(f"{out.name}: {out.stat().st_size} bytes")
    if missing:
        print(f"no measurements for: {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
