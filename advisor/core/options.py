"""The options that say how a target is measured and judged, defined once: `advisor run` and
`advisor check` add them to their parsers, a sweep manifest validates its `[defaults]` and
per-target `options` against them and turns them back into arguments, and `settings_from`
makes the `Settings` record. Adding an option here adds it everywhere."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from advisor.core import argtypes, policy
from advisor.core.model import Settings


@dataclass(frozen=True)
class Option:
    """One `--name` option: a flag when `parse` is None, else a value checked by `parse`
    (which raises argparse.ArgumentTypeError with a one-line reason)."""

    name: str  # "--repeats"
    help: str
    parse: Callable[[str], Any] | None = None
    default: Any = None
    metavar: str | None = None

    @property
    def dest(self) -> str:
        return self.name.removeprefix("--").replace("-", "_")

    @property
    def flag(self) -> bool:
        return self.parse is None

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        if self.flag:
            parser.add_argument(self.name, action="store_true", help=self.help)
            return
        parser.add_argument(
            self.name, type=self.parse, default=self.default, metavar=self.metavar, help=self.help
        )

    def problem(self, value: Any) -> str | None:
        """Why `value` (from TOML) cannot be given to this option, or None."""
        if self.flag:
            return None if isinstance(value, bool) else "is a flag: write true or false"
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            return "must be a string or a number"
        assert self.parse is not None
        try:
            self.parse(str(value))
        except (argparse.ArgumentTypeError, ValueError, TypeError) as exc:
            return f"is invalid: {exc}"
        return None

    def to_args(self, value: Any) -> list[str]:
        if self.flag:
            return [self.name] if value else []
        return [self.name, str(value)]


def _device(text: str) -> str:
    return text


_DEFAULTS = Settings()

MEASURE_OPTIONS: tuple[Option, ...] = (
    Option("--device", "cpu, cuda, cuda:N or auto (default)", _device, "auto"),
    Option(
        "--warmup",
        "warm-up calls before timing",
        argtypes.int_at_least(0, "zero or more"),
        _DEFAULTS.warmup,
    ),
    Option(
        "--repeats",
        "the minimum number of interleaved timing rounds (timed blocks per mode)",
        argtypes.int_at_least(1, "at least 1"),
        _DEFAULTS.repeats,
    ),
    Option(
        "--target-ci",
        "after --repeats rounds, keep timing until each median's 95%% interval is within "
        "this fraction of it (default 0.02 = ±2%%); 0: exactly --repeats rounds",
        argtypes.fraction,
        _DEFAULTS.target_ci,
    ),
    Option(
        "--budget",
        "the most seconds of timed rounds, for the modes and for each what-if (replicated: "
        "all arms together, split between the --processes waves); a median that has not "
        "reached --target-ci by then is flagged",
        argtypes.positive,
        _DEFAULTS.budget_s,
    ),
    Option(
        "--min-block-ms",
        "each timed block of calls lasts at least this long",
        argtypes.positive,
        _DEFAULTS.min_block_s * 1e3,
    ),
    Option(
        "--threads",
        "torch intra-op threads while measuring, the process pinned to that many CPUs",
        argtypes.int_at_least(1, "at least 1"),
        None,
    ),
    Option(
        "--profile-calls",
        "warm calls of the default mode to profile",
        argtypes.int_at_least(1, "at least 1"),
        _DEFAULTS.profile_calls,
    ),
    Option("--no-what-if", "skip measuring config-knob counterfactuals"),
    Option(
        "--quick",
        "time every arm in this one process (fast, for iterating; its numbers do not replicate: "
        "the report says so on its first line)",
    ),
    Option(
        "--processes",
        "replicated protocol: worker processes per arm (one per wave); the intervals come "
        f"from the spread between them (default {_DEFAULTS.processes}, and up to "
        f"{policy.SETTLE_WAVES} more for a saving that could lead while it is unsettled; "
        "given, exactly N)",
        argtypes.int_at_least(2, "at least 2"),
        None,  # not given: the default, and more waves for an unsettled saving
        "N",
    ),
    Option(
        "--min-effect",
        "a saving counts as measured only when its 95%% interval lies above zero and it is at "
        "least this share of the step (default 0.03 = 3%%)",
        argtypes.fraction,
        _DEFAULTS.min_effect,
    ),
    Option(
        "--ignore-share",
        "breaks cheaper than this share of the step get 'ignore' (default 0.01 = 1%%)",
        argtypes.positive,
        _DEFAULTS.ignore_share,
    ),
)

REDACT_HELP = "remove source text and absolute paths from every output"

# `advisor run` only (a sweep manifest may set them too).
RUN_OPTIONS: tuple[Option, ...] = (
    Option(
        "--isolate",
        "measure each mode and what-if in its own process (a hang or crash costs one mode)",
    ),
    Option(
        "--timeout",
        "with --isolate or --ranks: seconds each process may take before it is killed",
        argtypes.positive,
        None,
        "SECONDS",
    ),
    Option(
        "--ranks",
        "data-parallel training: measure in N rank processes at once (a process group of N: "
        "gloo on CPU, nccl on CUDA; the target's factory builds the DDP model), one merged "
        "report",
        argtypes.int_at_least(1, "at least 1"),
        _DEFAULTS.ranks,
        "N",
    ),
    Option("--redact", REDACT_HELP),
)


def add_options(parser: argparse.ArgumentParser, options: Iterable[Option]) -> None:
    for option in options:
        option.add_to(parser)


def by_dest(options: Iterable[Option]) -> dict[str, Option]:
    return {o.dest: o for o in options}


def settle_waves(processes: int | None) -> int:
    """The more waves a replicated run may add for an unsettled saving: none where a number of
    processes was asked for (that many, as asked)."""
    return 0 if processes else policy.SETTLE_WAVES


def settings_from(values: Mapping[str, Any]) -> Settings:
    """The `Settings` of parsed options (argparse's namespace as a dict): the measurement
    options, and isolation and ranks where the command has them."""
    return Settings(
        warmup=values["warmup"],
        repeats=values["repeats"],
        budget_s=values["budget"],
        min_block_s=values["min_block_ms"] / 1e3,
        threads=values["threads"],
        profile_calls=values["profile_calls"],
        what_if=not values["no_what_if"],
        ignore_share=values["ignore_share"],
        isolate=values.get("isolate", False),
        timeout_s=values.get("timeout"),
        target_ci=values["target_ci"],
        ranks=values.get("ranks") or 1,
        protocol=_protocol(values),
        processes=values.get("processes") or _DEFAULTS.processes,
        settle_waves=settle_waves(values.get("processes")),
        min_effect=values.get("min_effect", _DEFAULTS.min_effect),
    )


# `Settings.protocol` of measurements read from the files a user's own run left (`advisor
# trace`), beside "replicated", "quick" and "isolated": no arm was run or timed, so every
# saving is an estimate and the default mode's times are profiled steps.
FILES_PROTOCOL = "files"


def _protocol(values: Mapping[str, Any]) -> str:
    if values.get("isolate"):
        return "isolated"
    return "quick" if values.get("quick") else "replicated"
