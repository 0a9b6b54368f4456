"""An independent, replicated A/B reference: what a fix saves, measured in fresh processes.

    python -m benchmarks.reference_ab --variant default=scenarios.print_logging:workload \\
        --variant fixed=scenarios.print_logging:fixed [--rounds 5] [--threads 1] \\
        [--mode default] [--seconds 1.0] [--out FILE.json]

advisor's own numbers are checked against this script, so it shares no code with advisor's
measuring or statistics: it imports nothing from `advisor` (a factory's `Workload` is read by
its fields, `fn`, `args`, `kwargs` and `compiled_module`) but, for a variant with compiler
settings, the torch adapter that sets them (`advisor.measure.torch_adapter`, the project's one
place for torch's private config).

A TARGET is `module:factory` or `path/to/file.py:factory`; the factory is called with the device
name and returns a Workload or a `(fn, args[, kwargs])` tuple. `NAME=TARGET@MODE` sets one
variant's mode: `eager` (not compiled), `default` (`torch.compile(fn)`) or `fullgraph`
(`torch.compile(fn, fullgraph=True)`); a Workload with `compiled_module` has that module compiled
in place (`module.compile()`) and `fn` called eagerly around it. `@MODE+KEY=VALUE` (repeatable)
sets a compiler setting for that variant before it compiles: `KEY` a name in
`torch._dynamo.config`, or `inductor.NAME` for `torch._inductor.config`; `VALUE` read as JSON
(`true`, `8`), else as a string. `--param KEY=VALUE` is passed to every variant's factory.

Rounds are outermost and the variants run once per round, their order rotated by round (A B C,
B C A, C A B, ...), each in a fresh Python process (`--child`): a second compile in one process
is not a first one, and drift of the host over time falls on all variants alike. A child pins
torch's threads, builds the workload, compiles it, times the first call (compile included),
warms up, then times calls for `--seconds` in blocks of about 20 ms and prints one JSON line.
The parent pairs the variants by round: the saving of each variant against the first (the
baseline) is the mean of the per-round differences with a 95% t-interval across rounds, in ms
and as a share of the baseline's round median. The spread between processes is the noise that
matters for a rerun; one process's interval understates it.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.reference_ab_stats import (  # noqa: F401 (T_975: the tests read it here)
    T_975,
    host_info,
    render_table,
    saving,
    torch_version,
)

ROOT = Path(__file__).resolve().parents[1]
MODES = ("eager", "default", "fullgraph")
DEVICE = "cpu"  # the reference is a CPU measurement: no device synchronisation in the timing
BLOCK_S = 0.02
MIN_BLOCKS = 3
WARMUP_CALLS, WARMUP_S = 10, 0.2
CHILD_TIMEOUT_S = 1800.0  # a cold Inductor compile of a large model takes minutes, not hours
RESULT_KEY = "reference_ab"  # marks the child's result line among what the workload prints


@dataclass(frozen=True)
class Variant:
    name: str
    target: str
    mode: str
    config: tuple[tuple[str, Any], ...] = ()  # compiler settings, (key, value)


# --- child: one variant, one fresh process --------------------------------------------------


def load_factory(target: str) -> Callable[..., Any]:
    """The factory a `module:factory` or `path/to/file.py:factory` target names."""
    where, sep, name = target.rpartition(":")
    if not sep or not where or not name:
        raise ValueError(f"target {target!r} is not module:factory or path/to/file.py:factory")
    if where.endswith(".py"):
        path = Path(where).resolve()
        spec = importlib.util.spec_from_file_location(f"reference_ab_target_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        # registered before it runs: dataclasses and pickling look a module up by its name
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    factory = getattr(module, name, None)
    if not callable(factory):
        raise AttributeError(f"{where} has no callable {name!r}")
    return factory


def build_workload(
    target: str, params: dict[str, Any] | None = None
) -> tuple[Callable[..., Any], tuple, dict, Any]:
    """fn, args, kwargs and the module to compile in place (or None) of a target's workload."""
    produced = load_factory(target)(DEVICE, **(params or {}))
    if hasattr(produced, "fn"):  # a Workload, read by its fields
        module = getattr(produced, "compiled_module", None)
        return produced.fn, tuple(produced.args), dict(produced.kwargs), module
    if not isinstance(produced, tuple) or len(produced) not in (2, 3):
        raise TypeError(f"{target} returned {type(produced).__name__}, not a Workload or tuple")
    args = produced[1] if isinstance(produced[1], tuple) else (produced[1],)
    kwargs = dict(produced[2]) if len(produced) == 3 else {}
    return produced[0], args, kwargs, None


def pin_threads(threads: int, mode: str) -> None:
    """Pin torch's intra-op threads (the parent also set OMP_NUM_THREADS for its import)."""
    if mode == "eager" and "torch" not in sys.modules:
        return  # a workload that does not use torch: nothing to pin, and no import to pay
    import torch

    torch.set_num_threads(threads)


def compiled_call(
    fn: Callable[..., Any], args: tuple, kwargs: dict, module: Any, mode: str
) -> Callable[[], Any]:
    """One call of the workload compiled per `mode` (compilation itself is lazy in torch)."""
    if mode == "eager":
        return lambda: fn(*args, **kwargs)
    import torch

    fullgraph = mode == "fullgraph"
    if module is not None:
        module.compile(fullgraph=fullgraph)  # in place: fn's calls of it go through the compile
        return lambda: fn(*args, **kwargs)
    compiled = torch.compile(fn, fullgraph=fullgraph)
    return lambda: compiled(*args, **kwargs)


def run_block(call: Callable[[], Any], number: int) -> float:
    """Seconds for `number` calls."""
    started = time.perf_counter()
    for _ in range(number):
        call()
    return time.perf_counter() - started


def calls_per_block(call: Callable[[], Any]) -> int:
    """How many calls make a block of about BLOCK_S: doubled until a trial is long enough to
    time well, then scaled."""
    number = 1
    while True:
        elapsed = run_block(call, number)
        if elapsed >= BLOCK_S / 2 or number >= 1 << 22:
            return max(1, round(number * BLOCK_S / max(elapsed, 1e-9)))
        number *= 2


def time_variant(call: Callable[[], Any], seconds: float) -> tuple[int, list[float]]:
    """Warm up, calibrate, then per-call ms of each block until `seconds` have passed."""
    started, calls = time.perf_counter(), 0
    # both: 10 calls settle a slow workload, 0.2 s a fast one (caches, clocks, allocator)
    while calls < WARMUP_CALLS or time.perf_counter() - started < WARMUP_S:
        call()
        calls += 1
    number = calls_per_block(call)
    blocks: list[float] = []
    deadline = time.perf_counter() + seconds
    while len(blocks) < MIN_BLOCKS or time.perf_counter() < deadline:
        blocks.append(run_block(call, number) / number * 1e3)
    return number, blocks


def apply_config(config: Sequence[tuple[str, Any]]) -> None:
    """Compiler settings for this process (it compiles one variant and exits), set through the
    torch adapter: the settings are a compile-config state that it restores to."""
    if not config:
        return
    from advisor.measure import torch_adapter as ta

    known = ta.compile_config_state()
    wanted: dict[str, dict[str, Any]] = {"dynamo": {}, "inductor": {}}
    for key, value in config:
        owner, name = ("inductor", key[9:]) if key.startswith("inductor.") else ("dynamo", key)
        if name not in known[owner]:
            raise ValueError(f"unknown compiler setting {key!r}")
        wanted[owner][name] = value
    ta.restore_compile_config(wanted)


def child_main(
    target: str,
    mode: str,
    threads: int,
    seconds: float,
    params: dict[str, Any] | None = None,
    config: Sequence[tuple[str, Any]] = (),
) -> int:
    fn, args, kwargs, module = build_workload(target, params)
    pin_threads(threads, mode)
    apply_config(config)
    started = time.perf_counter()
    call = compiled_call(fn, args, kwargs, module, mode)
    call()
    first_call_s = time.perf_counter() - started
    number, blocks = time_variant(call, seconds)
    result = {
        RESULT_KEY: 1,
        "median_ms": statistics.median(blocks),
        "blocks_ms": blocks,
        "calls_per_block": number,
        "first_call_s": first_call_s,
    }
    # on a line of its own: the workload may have printed without a newline
    out = sys.__stdout__ or sys.stdout
    out.write("\n" + json.dumps(result) + "\n")
    out.flush()
    return 0


# --- parent: rounds of fresh processes, paired by round ----------------------------------------


def parse_variant(name: str, spec: str, default_mode: str) -> Variant:
    """`TARGET` or `TARGET@MODE` (a factory name cannot hold '@', so a suffix there is a mode)."""
    head, colon, factory = spec.rpartition(":")
    mode, config = default_mode, []
    if "@" in factory:
        factory, _, mode = factory.partition("@")
        mode, *settings = mode.split("+")
        config = [parse_setting(name, item) for item in settings]
    if not name or not colon or not head or not factory:
        raise ValueError(f"variant {name}={spec}: expected NAME=module:factory[@mode]")
    if mode not in MODES:
        raise ValueError(f"variant {name}: mode {mode!r} is not one of {', '.join(MODES)}")
    return Variant(name, f"{head}:{factory}", mode, tuple(config))


def parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_setting(name: str, item: str) -> tuple[str, Any]:
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise ValueError(f"variant {name}: setting {item!r} is not KEY=VALUE")
    return key, parse_value(value)


def child_env(threads: int) -> dict[str, str]:
    env = dict(os.environ)
    # the child runs `-m benchmarks.reference_ab` from the caller's folder (relative targets)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    # sized at torch's import, before the child can call set_num_threads
    env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(threads)
    return env


def result_line(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith("{") and RESULT_KEY in line:
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict) and value.get(RESULT_KEY) == 1:
                return value
    return None


def run_child(
    variant: Variant, threads: int, seconds: float, params: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One fresh process for one variant: its result, or ok False and the child's last words."""
    command = [
        sys.executable, "-m", "benchmarks.reference_ab", "--child",
        "--target", variant.target, "--mode", variant.mode,
        "--threads", str(threads), "--seconds", repr(seconds),
        "--params-json", json.dumps(params or {}),
        *[x for key, value in variant.config for x in ("--config", f"{key}={json.dumps(value)}")],
    ]  # fmt: skip
    try:
        proc = subprocess.run(
            command, capture_output=True, text=True, env=child_env(threads),
            timeout=CHILD_TIMEOUT_S, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timed out after {CHILD_TIMEOUT_S:g} s"}
    result = result_line(proc.stdout)
    if proc.returncode != 0 or result is None:
        return {"ok": False, "error": child_error(proc.stderr, proc.returncode)}
    result.pop(RESULT_KEY)
    return {"ok": True, **result}


def child_error(stderr: str, returncode: int) -> str:
    """The child's exception line (its type and message: the first unindented line after its
    last traceback; torch adds hint lines after it), else its last line of stderr."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call")]
    if starts:
        raised = [line for line in lines[starts[-1] + 1 :] if not line[0].isspace()]
        if raised:
            return raised[0].strip()
    return lines[-1].strip() if lines else f"exit status {returncode}, no result"


def variant_summary(variant: Variant, runs: list[dict[str, Any]]) -> dict[str, Any]:
    round_ms = [run["median_ms"] if run["ok"] else None for run in runs]
    ok = [ms for ms in round_ms if ms is not None]
    return {
        "target": variant.target,
        "mode": variant.mode,
        "config": dict(variant.config),
        "round_ms": round_ms,
        "median_ms": statistics.median(ok) if ok else None,
        "min_ms": min(ok) if ok else None,
        "max_ms": max(ok) if ok else None,
        "first_call_s": [run.get("first_call_s") for run in runs],
        "calls_per_block": [run.get("calls_per_block") for run in runs],
        "blocks_ms": [run.get("blocks_ms") for run in runs],
        "failed_rounds": [
            {"round": i, "error": run["error"]} for i, run in enumerate(runs) if not run["ok"]
        ],
    }


def measure(
    variants: dict[str, str],
    rounds: int,
    threads: int,
    seconds: float,
    mode: str,
    params: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run the replicated A/B; `variants` maps NAME to `TARGET` or `TARGET@MODE[+KEY=VALUE]`,
    the first being the baseline; `params` go to every factory. Returns the JSON report (see
    `report`)."""
    parsed = [parse_variant(name, spec, mode) for name, spec in variants.items()]
    if not parsed or rounds < 1 or threads < 1 or seconds <= 0 or mode not in MODES:
        raise ValueError("need variants, rounds >= 1, threads >= 1, seconds > 0, a known mode")
    runs: dict[str, list[dict[str, Any]]] = {v.name: [] for v in parsed}
    order: list[list[str]] = []
    for index in range(rounds):
        shift = index % len(parsed)
        ordered = parsed[shift:] + parsed[:shift]
        order.append([v.name for v in ordered])
        for variant in ordered:
            run = run_child(variant, threads, seconds, params)
            runs[variant.name].append(run)
            shown = f"{run['median_ms']:.4f} ms" if run["ok"] else f"FAILED: {run['error']}"
            print(f"round {index + 1}/{rounds} {variant.name}: {shown}", file=sys.stderr)
    settings = {"rounds": rounds, "threads": threads, "seconds": seconds, "params": params or {}}
    return report(parsed, runs, order, settings)


def report(
    parsed: list[Variant],
    runs: dict[str, list[dict[str, Any]]],
    order: list[list[str]],
    settings: dict[str, Any],
) -> dict[str, Any]:
    summaries = {v.name: variant_summary(v, runs[v.name]) for v in parsed}
    base = parsed[0].name
    return {
        "host": host_info(),
        "torch": torch_version(),
        "device": DEVICE,
        **settings,
        "order": order,
        "baseline": base,
        "variants": summaries,
        "savings": {
            v.name: saving(base, summaries[base]["round_ms"], summaries[v.name]["round_ms"])
            for v in parsed[1:]
        },
        "failed": [name for name, s in summaries.items() if s["median_ms"] is None],
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.reference_ab",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=TARGET[@MODE]")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--mode", choices=MODES, default="default")
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--target", help=argparse.SUPPRESS)
    parser.add_argument("--params-json", default="{}", help=argparse.SUPPRESS)
    parser.add_argument("--config", action="append", default=[], help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        if not args.target:
            print("--child needs --target", file=sys.stderr)
            return 2
        config = [parse_setting("child", item) for item in args.config]
        params = json.loads(args.params_json)
        return child_main(args.target, args.mode, args.threads, args.seconds, params, config)
    variants: dict[str, str] = {}
    for item in args.variant:
        name, sep, spec = item.partition("=")
        if not sep or name in variants:
            print(f"--variant {item}: expected a new NAME=TARGET[@MODE]", file=sys.stderr)
            return 2
        variants[name] = spec
    if not variants:
        print("give at least one --variant NAME=TARGET[@MODE]", file=sys.stderr)
        return 2
    try:
        params = dict(parse_setting("--param", item) for item in args.param)
        data = measure(variants, args.rounds, args.threads, args.seconds, args.mode, params)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.out:
        args.out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(render_table(data))
    return 1 if data["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
