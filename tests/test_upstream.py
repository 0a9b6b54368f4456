"""Real upstream fixes of graph breaks (benchmarks/upstream): the old release of each package
compiles (backend="eager") into more graphs, with more breaks, than the new release, and both
compute the same output from the same weights and inputs. Each release is built in its own
process, as a process loads one release. Skipped for a package whose releases are not installed
(`python -m benchmarks.upstream.install`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.upstream.models import PACKAGES, RELEASES, absent

ROOT = Path(__file__).resolve().parent.parent


def _summary(package: str, release: str) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.upstream.models"]
    command += ["--package", package, "--release", release]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("package", list(PACKAGES))
def test_old_release_breaks_more_than_new(package: str) -> None:
    if any(absent(PACKAGES[package], release) for release in RELEASES):
        pytest.skip(f"{package} releases not installed: python -m benchmarks.upstream.install")
    old, new = (_summary(package, release) for release in RELEASES)
    assert len(old["breaks"]) > len(new["breaks"]), (old["breaks"], new["breaks"])
    assert old["graphs"] > new["graphs"]
    assert old["compiled_matches_eager"] and new["compiled_matches_eager"]
    assert old["output_sums"] == pytest.approx(new["output_sums"], rel=1e-9, abs=1e-12)
