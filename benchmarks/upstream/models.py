"""Real upstream fixes of graph breaks, as workloads: the release of a published package from
before its maintainers removed the breaks (`release=old`) and the release after
(`release=new`), built as tiny random-init models with the same seeded weights and inputs.

    python -m benchmarks.upstream.install        # once: installs the releases into .upstream/
    advisor run benchmarks/upstream/models.py:build --param release=old
    advisor run benchmarks/upstream/models.py:build --param release=new
    advisor run benchmarks/upstream/models.py:build --param package=tabpfn --param release=old

Packages (see README.md beside this file for the upstream changes and the observed breaks):
- `aimnet` (default): the AIMNet2 interatomic potential, energy of two small molecules
  (`layout=dense`: batched (B, N) atoms; `layout=flat`: packed atoms with a neighbour matrix,
  the calculator's layout for larger systems). `forces=true` computes forces too, by autograd
  around the model, which is then the compiled module (`compiled_module`).
- `tabpfn`: the TabPFN v3 architecture, one in-context forward on a small random table.

A process loads one release of a package: its folder goes first on `sys.path` before the
package is imported, and building the other release in the same process is an error.

`python -m benchmarks.upstream.models --package aimnet --release old` compiles the workload
with backend="eager" and prints one JSON line: the graph breaks (code, file:line), the number
of graphs, and sums of the outputs, for comparing releases without the advisor.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from advisor import Workload
from advisor.core.errors import AdvisorError

# The package specs live here, not in install.py: `advisor run FILE:build` loads this file by
# path, where the `benchmarks` package may not be importable.
UPSTREAM_DIR = Path(__file__).resolve().parents[2] / ".upstream"
RELEASES = ("old", "new")


@dataclass(frozen=True)
class Package:
    """A package whose maintainers removed graph breaks between two releases."""

    name: str  # import name, and the prefix of its folders under .upstream/
    dist: str  # the distribution name on the package index
    releases: Mapping[str, str]  # "old" / "new" -> version
    deps: tuple[str, ...]  # pinned requirements for .upstream/PKG-deps/, shared by both releases


PACKAGES: dict[str, Package] = {
    # AIMNet2 interatomic potential; the fix is isayevlab/aimnetcentral PR #109.
    "aimnet": Package(
        name="aimnet",
        dist="aimnet",
        releases={"old": "0.2.0", "new": "0.2.5"},
        deps=("warp-lang==1.19.0", "nvalchemi-toolkit-ops==0.5.0"),
    ),
    # TabPFN tabular foundation model; the fix is PriorLabs/TabPFN PR #1165.
    "tabpfn": Package(
        name="tabpfn",
        dist="tabpfn",
        releases={"old": "8.2.0", "new": "8.3.0"},
        deps=("pandas==2.3.3", "pytz==2026.6", "pydantic-settings==2.16.3", "python-dotenv==1.2.4"),
    ),
}


def release_dir(package: Package, release: str) -> Path:
    return UPSTREAM_DIR / f"{package.name}-{package.releases[release]}"


def deps_dir(package: Package) -> Path:
    return UPSTREAM_DIR / f"{package.name}-deps"


def holds(folder: Path, requirement: str) -> bool:
    """Whether `folder` holds the distribution `requirement` ("name==version"): its
    .dist-info folder is there."""
    name, version = requirement.split("==")
    return (folder / f"{name.replace('-', '_').lower()}-{version}.dist-info").is_dir()


LAYOUTS = ("dense", "flat")
# Two small molecules (atomic numbers): a CH3OH-like one and a 5-atom one, so the dense layout
# is padded and the flat layout holds two molecules.
MOLECULES = ((6, 1, 1, 1, 8, 1), (6, 6, 1, 1, 1))


def build(
    device: str,
    release: str = "old",
    package: str = "aimnet",
    layout: str = "dense",
    forces: bool = False,
    seed: int = 0,
) -> Workload:
    """The `package` model at its `release` ("old": with the breaks, "new": without)."""
    if release not in RELEASES:
        raise AdvisorError(f"release must be one of {', '.join(RELEASES)}, not {release!r}")
    if package not in PACKAGES:
        raise AdvisorError(f"package must be one of {', '.join(PACKAGES)}, not {package!r}")
    if package != "aimnet" and (layout != "dense" or forces):
        raise AdvisorError("layout and forces apply to package=aimnet only")
    spec = PACKAGES[package]
    _activate(spec, release)
    name = f"{package}-{spec.releases[release]}"
    if package == "aimnet":
        return _aimnet(device, name, layout, forces, seed)
    return _tabpfn(device, name, seed)


def absent(package: Package, release: str) -> list[str]:
    """The requirements of `release` not installed in its .upstream/ folders, as "REQ in DIR"."""
    wanted = [(release_dir(package, release), f"{package.dist}=={package.releases[release]}")]
    wanted += [(deps_dir(package), requirement) for requirement in package.deps]
    return [
        f"{requirement} in {folder}"
        for folder, requirement in wanted
        if not holds(folder, requirement)
    ]


def _activate(package: Package, release: str) -> None:
    """Put the release's folders first on sys.path, so that importing the package loads it."""
    folders = [release_dir(package, release), deps_dir(package)]
    version = package.releases[release]
    not_there = absent(package, release)
    if not_there:
        raise AdvisorError(
            f"{package.name} {version} is not installed (no {not_there[0]}): "
            "run `python -m benchmarks.upstream.install` from the repository root"
        )
    loaded = sys.modules.get(package.name)
    if loaded is not None:
        where = Path(getattr(loaded, "__file__", None) or "?").resolve()
        if not where.is_relative_to(folders[0].resolve()):
            raise AdvisorError(
                f"{package.name} is already imported from {where}, not release {version}: "
                "a process loads one release, so build old and new in separate processes"
            )
    for folder in reversed(folders):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    importlib.invalidate_caches()


def _frozen(model: torch.nn.Module, device: str) -> torch.nn.Module:
    model = model.to(device).eval()
    model.requires_grad_(False)
    return model


# --- aimnet ---------------------------------------------------------------------------------


def _aimnet(device: str, name: str, layout: str, forces: bool, seed: int) -> Workload:
    if layout not in LAYOUTS:
        raise AdvisorError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    import warp  # aimnet's kernel dependency: its start-up banner is info-level

    warp.config.log_level = warp.LOG_WARNING
    import aimnet
    from aimnet.config import build_module, load_yaml

    # The packaged AIMNet2 architecture with narrower MLPs: same modules and code paths.
    config: Any = load_yaml(str(Path(aimnet.__file__).parent / "models" / "aimnet2.yaml"))
    options = config["kwargs"]
    options["hidden"] = [[32, 24], [32, 24], [32, 24, 24]]
    options["aim_size"] = 16
    energy_head = options["outputs"]["energy_mlp"]["kwargs"]
    energy_head["n_in"] = 16
    energy_head["mlp"]["hidden"] = [16, 16]
    torch.manual_seed(seed)  # both releases draw the same initial weights in the same order
    model = _frozen(build_module(config), device)

    inputs = _molecules(layout, seed, device)
    if not forces:

        def energy(**batch: torch.Tensor) -> torch.Tensor:
            # the model writes its masks into the dict it is given: a fresh one every call
            return model(dict(batch))["energy"]

        return Workload(energy, kwargs=inputs, name=f"{name}-{layout}-energy")

    def energy_and_forces(**batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        coord = batch["coord"].detach().requires_grad_(True)
        energy = model({**batch, "coord": coord})["energy"]
        (gradient,) = torch.autograd.grad(energy.sum(), coord)
        return energy.detach(), -gradient

    return Workload(
        energy_and_forces,
        kwargs=inputs,
        name=f"{name}-{layout}-forces",
        compiled_module=model,
    )


def _molecules(layout: str, seed: int, device: str) -> dict[str, torch.Tensor]:
    """MOLECULES with random coordinates (Angstrom), neutral, in the model's input layout."""
    generator = torch.Generator().manual_seed(seed + 1)
    coords = [torch.randn(len(m), 3, generator=generator) * 1.5 for m in MOLECULES]
    charge = torch.zeros(len(MOLECULES))
    if layout == "dense":  # (molecules, atoms), zero-padded: atomic number 0 is padding
        width = max(map(len, MOLECULES))
        coord = torch.zeros(len(MOLECULES), width, 3)
        numbers = torch.zeros(len(MOLECULES), width, dtype=torch.long)
        for i, (atoms, xyz) in enumerate(zip(MOLECULES, coords, strict=True)):
            coord[i, : len(atoms)] = xyz
            numbers[i, : len(atoms)] = torch.tensor(atoms)
        batch = {"coord": coord, "numbers": numbers, "charge": charge}
    else:  # packed atoms plus one trailing padding atom, all-pairs neighbour lists
        coord = torch.cat([*coords, torch.zeros(1, 3)])
        numbers = torch.tensor([*(z for m in MOLECULES for z in m), 0])
        owner = [i for i, m in enumerate(MOLECULES) for _ in m]
        mol_idx = torch.tensor([*owner, len(MOLECULES) - 1])
        padding = len(owner)  # the padding atom's index fills unused neighbour slots
        nbmat = torch.full((padding + 1, max(map(len, MOLECULES)) - 1), padding, dtype=torch.int32)
        for i in range(padding):
            neighbours = [j for j in range(padding) if j != i and owner[j] == owner[i]]
            nbmat[i, : len(neighbours)] = torch.tensor(neighbours, dtype=torch.int32)
        batch = {"coord": coord, "numbers": numbers, "charge": charge, "mol_idx": mol_idx}
        batch |= {"nbmat": nbmat, "nbmat_lr": nbmat.clone()}
    return {key: value.to(device) for key, value in batch.items()}


# --- tabpfn ---------------------------------------------------------------------------------


def _tabpfn(device: str, name: str, seed: int) -> Workload:
    from tabpfn.architectures import tabpfn_v3

    # The tiny configuration TabPFN's own compile test uses (PriorLabs/TabPFN PR #1166).
    config = tabpfn_v3.TabPFNV3Config(
        max_num_classes=10,
        num_buckets=5,
        embed_dim=48,
        nlayers=1,
        icl_num_heads=3,
        dist_embed_num_heads=3,
        feat_agg_num_heads=3,
    )
    torch.manual_seed(seed)
    model = tabpfn_v3.get_architecture(config, cache_trainset_representation=False)
    model = _frozen(model.to(torch.float32), device)
    generator = torch.Generator().manual_seed(seed + 1)
    # 30 rows (the first 15 labelled: the in-context training set), 2 tables, 5 features
    x = torch.randn(30, 2, 5, generator=generator) * 0.1
    y = torch.randint(0, 10, (15, 2), generator=generator).to(torch.float32)
    return Workload(model, args=(x.to(device), y.to(device)), name=f"{name}-classify")


# --- a quick look without the advisor --------------------------------------------------------

_BREAK_AT = re.compile(r"Graph break in user code at (\S+):(\d+)")
_BREAK_CODE = re.compile(r"/gb/(gb\d+)\.html")


def _break(payload: str) -> dict[str, Any]:
    """One `dynamo_graph_break_reason` trace artifact: its codes and where it broke."""
    at = _BREAK_AT.search(payload)
    where = f"{at.group(1)}:{at.group(2)}" if at else "?"
    codes = list(dict.fromkeys(c.upper() for c in _BREAK_CODE.findall(payload)))
    return {"codes": codes, "at": where}


def _compiled(workload: Workload) -> Callable[[], Any]:
    if workload.compiled_module is not None:
        workload.compiled_module.compile(backend="eager")
        return workload
    compiled = torch.compile(workload.fn, backend="eager")
    return lambda: compiled(*workload.args, **workload.kwargs)


def _sums(output: Any) -> list[float]:
    """The sum and the absolute sum of each output tensor (forces sum to about zero)."""
    if isinstance(output, torch.Tensor):
        values = output.detach().double()
        return [float(values.sum()), float(values.abs().sum())]
    return [s for item in output for s in _sums(item)]


def summary(workload: Workload) -> dict[str, Any]:
    """Breaks and graphs of one backend="eager" compile of `workload` (two calls), the sums of
    its eager outputs, and a rough time of one eager call. Graphs and breaks are read from
    Dynamo's structured trace (the torch adapter's listener): one `dynamo_output_graph` record
    per graph handed to the backend, one `dynamo_graph_break_reason` artifact per break."""
    from advisor.measure import torch_adapter as ta

    eager = workload()
    started = time.perf_counter()
    workload()
    eager_ms = (time.perf_counter() - started) * 1e3
    ta.reset_dynamo()
    with ta.StructuredTraceListener() as trace:
        call = _compiled(workload)
        call()
        compiled = call()
    records = trace.records
    return {
        "name": workload.name,
        "graphs": sum(r.event == "dynamo_output_graph" for r in records),
        "breaks": [
            _break(r.payload or "") for r in records if r.event == "dynamo_graph_break_reason"
        ],
        "output_sums": _sums(eager),
        "compiled_matches_eager": _sums(compiled) == _sums(eager),
        "rough_eager_ms": round(eager_ms, 2),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Graph breaks of one upstream release.")
    parser.add_argument("--package", default="aimnet", choices=list(PACKAGES))
    parser.add_argument("--release", default="old", choices=list(RELEASES))
    parser.add_argument("--layout", default="dense", choices=list(LAYOUTS))
    parser.add_argument("--forces", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    try:
        workload = build("cpu", args.release, args.package, args.layout, args.forces)
    except AdvisorError as error:
        print(error, file=sys.stderr)
        return 2
    print(json.dumps(summary(workload)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
