"""Install the upstream releases that `benchmarks/upstream/models.py` builds, each into its own
folder under `.upstream/` at the repository root (third-party code: never committed):

    python -m benchmarks.upstream.install            # every package
    python -m benchmarks.upstream.install aimnet     # one package

`.upstream/PKG-VERSION/` holds one release of a package, installed without dependencies;
`.upstream/PKG-deps/` holds the pinned dependencies both releases need that the project's
environment does not have. Every requirement is installed with `--no-deps` and a constraint
pinning the installed torch and numpy, so nothing here can replace them. A folder that already
holds its requirements is skipped, so running this again is cheap.
"""

from __future__ import annotations

import argparse
import fcntl
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

from benchmarks.upstream.models import (
    PACKAGES,
    RELEASES,
    UPSTREAM_DIR,
    Package,
    deps_dir,
    holds,
    release_dir,
)

# Other processes on a shared machine install with pip too; one pip at a time.
PIP_LOCK = Path(tempfile.gettempdir()) / "pip.lock"


def missing(folder: Path, requirements: Sequence[str]) -> list[str]:
    return [r for r in requirements if not holds(folder, r)]


@contextmanager
def _pip_lock() -> Iterator[None]:
    with open(PIP_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _pip_install(folder: Path, requirements: Sequence[str]) -> None:
    pins = "".join(f"{d}=={metadata.version(d)}\n" for d in ("torch", "numpy"))
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as constraint:
        constraint.write(pins)
        constraint.flush()
        command = [
            sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
            "--only-binary=:all:", "--upgrade", "--target", str(folder),
            "-c", constraint.name, *requirements,
        ]  # fmt: skip
        with _pip_lock():
            subprocess.run(command, check=True)


def install(package: Package) -> None:
    """Install both releases of `package` and its shared dependencies; one line each."""
    folders = [
        (release_dir(package, r), [f"{package.dist}=={package.releases[r]}"]) for r in RELEASES
    ]
    folders.append((deps_dir(package), list(package.deps)))
    for folder, requirements in folders:
        todo = missing(folder, requirements)
        where = folder.relative_to(UPSTREAM_DIR.parent)
        if not todo:
            print(f"already installed: {', '.join(requirements)} in {where}/")
            continue
        _pip_install(folder, todo)
        print(f"installed: {', '.join(todo)} into {where}/")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "packages", nargs="*", metavar="PACKAGE", help=f"{' or '.join(PACKAGES)} (default: all)"
    )
    args = parser.parse_args(argv)
    unknown = [name for name in args.packages if name not in PACKAGES]
    if unknown:
        parser.error(f"unknown package {unknown[0]!r}: choose from {', '.join(PACKAGES)}")
    for name in args.packages or PACKAGES:
        install(PACKAGES[name])
    return 0


if __name__ == "__main__":
    sys.exit(main())
