"""What kind of break a site is, which fixes apply, and which config knob (if any) removes it.

Classification goes by registry code first, then by the gb_type text and the source line, so
codes we have never seen still land in a sensible category. Facts and judgements only: the
words (titles, recipes) live in `advisor.render.prose`, keyed by category.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeVar

from advisor.core.model import BreakSite, Location
from advisor.core.paths import is_installed

T = TypeVar("T")

FIXES = ("isolate", "rewrite", "delete")


@dataclass(frozen=True)
class Knob:
    """A Dynamo config change that can remove a break, measured as a what-if."""

    name: str  # e.g. "capture_scalar_outputs=True"
    setting: str  # the config attribute
    value_spec: str  # how to build the value: "true", "print", "logger:<method>"
    fix: str  # what the knob amounts to: "isolate" (the code still runs), "rewrite", "delete"
    behaviour: str | None = None  # a known behaviour change (key, see render.prose)
    # "knob": it removes the breaks it targets (measured by which it removes); "setting": it
    # changes how the whole step runs (measured by the step alone, the breaks may stay).
    kind: str = "knob"
    # a combination: the knobs set together (each with its own setting and value); () for one
    parts: tuple[Knob, ...] = ()

    @property
    def knobs(self) -> tuple[Knob, ...]:
        """The single knobs it sets: itself, or its parts."""
        return self.parts or (self,)


# Joins the names of knobs set together, in a what-if's and an action's `knob`.
KNOB_JOIN = " + "
# Combinations of more knobs than this are not planned pair by pair (their count grows as
# 2^k): the pairs of up to four knobs are six arms, all of them together one more.
MAX_PAIRED_KNOBS = 4


def data_dependent_knobs() -> tuple[Knob, ...]:
    """The knobs that let Dynamo capture data-dependent values (a scalar read from a tensor, an
    output whose shape depends on the data): code that reads one often uses it as the other
    (a count as a size, a mask's indices), so where one is met they are tried together."""
    return tuple(
        k for key in ("scalar_extraction", "dynamic_shape") if (k := _CATEGORIES[key].knob)
    )


def combined(knobs: tuple[Knob, ...]) -> Knob:
    """The knobs set together, as one knob: one what-if measures them at once. Its behaviour
    change is the first part's that has one (a print's change shows in the stdout compared
    anyway); its fix is theirs where they agree, else "rewrite" (the code keeps running
    compiled, as a rewrite makes it)."""
    fixes = {k.fix for k in knobs}
    behaviour = next((k.behaviour for k in knobs if k.behaviour), None)
    return Knob(
        KNOB_JOIN.join(k.name for k in knobs),
        ",".join(k.setting for k in knobs),
        "combined",
        fixes.pop() if len(fixes) == 1 else "rewrite",
        behaviour,
        parts=knobs,
    )


def knob_combinations(knobs: list[Knob]) -> tuple[list[tuple[Knob, ...]], str | None]:
    """Which combinations of distinct break-removing knobs to measure (each alone is measured
    on its own): every pair, and all together where there are three or more; past
    `MAX_PAIRED_KNOBS`, all together only. The second value says why pairs were skipped."""
    return pairs_and_all([k for k in knobs if k.kind == "knob" and not k.parts], "knobs")


def pairs_and_all(items: list[T], noun: str) -> tuple[list[tuple[T, ...]], str | None]:
    """Every pair of `items` and all of them together (three or more); past
    `MAX_PAIRED_KNOBS`, all together only, and why pairs were skipped (`noun`: what they are)."""
    if len(items) < 2:
        return [], None
    everything = [tuple(items)] if len(items) > 2 else []
    if len(items) > MAX_PAIRED_KNOBS:
        return everything, f"{len(items)} {noun}: their pairs were not measured, all together was"
    pairs = [(a, b) for i, a in enumerate(items) for b in items[i + 1 :]]
    return pairs + everything, None


@dataclass(frozen=True)
class Category:
    key: str
    action: str  # the verdict when the break is worth fixing: "rewrite" or "isolate"
    fix: str  # the recommended fix: "isolate" | "rewrite" | "delete"
    fixes: tuple[str, ...]  # every fix that applies
    knob: Knob | None = None


_CATEGORIES: dict[str, Category] = {
    c.key: c
    for c in (
        Category("data_dependent_branch", "rewrite", "rewrite", ("rewrite",)),
        Category(
            "scalar_extraction",
            "rewrite",
            "rewrite",
            ("rewrite",),
            Knob("capture_scalar_outputs=True", "capture_scalar_outputs", "true", "rewrite"),
        ),
        Category(
            "dynamic_shape",
            "rewrite",
            "rewrite",
            ("rewrite",),
            Knob(
                "capture_dynamic_output_shape_ops=True",
                "capture_dynamic_output_shape_ops",
                "true",
                "rewrite",
            ),
        ),
        Category("numpy", "rewrite", "rewrite", ("rewrite",)),
        Category(
            "print",
            "isolate",
            "isolate",
            ("isolate", "delete"),
            Knob(
                "reorderable_logging_functions={print}",
                "reorderable_logging_functions",
                "print",
                "isolate",
                "nested_prints_dropped",
            ),
        ),
        Category(
            "logging",
            "isolate",
            "isolate",
            ("isolate", "delete"),
            Knob(
                "ignore_logging_functions={Logger.<method>}",
                "ignore_logging_functions",
                "logger",
                "delete",
                "logging_noop",
            ),
        ),
        Category("disabled", "isolate", "isolate", ("isolate", "rewrite")),
        Category("third_party", "isolate", "isolate", ("isolate",)),
        Category("explicit", "rewrite", "delete", ("delete",)),
        # backward, optimizer step or zero_grad inside the compiled function: a placement to
        # change (what is compiled), not a line to rewrite
        Category(
            "training",
            "isolate",
            "isolate",
            ("isolate",),
            Knob("compiled_autograd=True", "compiled_autograd", "true", "isolate", kind="setting"),
        ),
        Category("other", "rewrite", "rewrite", ("rewrite", "isolate")),
        # DistributedDataParallel's own forward (its logger, the context manager around the
        # wrapped module): DDP runs it eagerly and compiles the module as a frame of its own
        Category("ddp", "isolate", "isolate", ()),
    )
}

# What `torch._dynamo.config.optimize_ddp=False` does: one graph per frame, compiled whole,
# so the gradients' all-reduce no longer overlaps the backward (measured against the default,
# which splits the graph at DDP's gradient buckets).
DDP_KNOB = Knob(
    "optimize_ddp=False", "optimize_ddp", "false", "isolate", "ddp_no_overlap", kind="setting"
)
DDP_FILE = "torch/nn/parallel/distributed.py"

LOOP_SKIP_CODE = "GB7000"  # "graph break in loop": chained after the break that caused it

_CODE_CATEGORY = {
    "GB0170": "data_dependent_branch",
    "GB0124": "scalar_extraction",
    "GB0033": "scalar_extraction",
    "GB0036": "dynamic_shape",
    "GB0098": "disabled",
    "GB0099": "disabled",
    "GB0291": "logging",
    "GB6215": "logging",
    "GB0025": "explicit",
    "GB0007": "third_party",
    "GB0008": "third_party",
    "GB0009": "third_party",
    "GB0147": "third_party",
    "GB0148": "third_party",
    "GB0194": "third_party",
}

_TYPE_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"data-dependent branch|generic_jump", re.I), "data_dependent_branch"),
    (
        re.compile(r"\.item\(\)|tolist|scalar output|data dependent operator", re.I),
        "scalar_extraction",
    ),
    (re.compile(r"dynamic shape|dynamic output shape", re.I), "dynamic_shape"),
    (re.compile(r"numpy", re.I), "numpy"),
    (re.compile(r"logging|logger", re.I), "logging"),
    (re.compile(r"torch\.compiler\.disable", re.I), "disabled"),
    (
        re.compile(
            r"marked as skipped|C extension|unsupported function call|unsupported method", re.I
        ),
        "third_party",
    ),
    (re.compile(r"graph_break\(\)", re.I), "explicit"),
)

_PRINT_CALL = re.compile(r"(^|[^\w.])print\s*\(")
_LOG_CALL = re.compile(
    r"\b(?:log|logger|logging|LOG|LOGGER|_log|_logger)\w*\.(debug|info|warning|warn|error|"
    r"exception|critical|log)\s*\("
)
_NUMPY_CALL = re.compile(r"\b(np|numpy)\.|\.numpy\(\)")


_TRAINING_CALL = re.compile(r"\.(backward|zero_grad|step)\s*\(|\bautograd\.(grad|backward)\s*\(")
_TRAINING_FILES = ("torch/optim/", "torch/autograd/", "torch/nn/utils/clip_grad")


def is_training_call(site: BreakSite) -> bool:
    """A break at a training step's own machinery: `backward()`, an optimizer's `step()` or
    `zero_grad()`, or torch's optimizer and autograd code they run."""
    if site.gb_code == "GB0123":
        return True
    file = site.where.file.replace("\\", "/")
    if any(part in file for part in _TRAINING_FILES) and is_installed(site.where.file):
        return True
    return bool(_TRAINING_CALL.search(site.where.code)) and site.gb_code in ("GB0008", "GB0123")


def is_ddp_break(site: BreakSite) -> bool:
    """A break in DistributedDataParallel's own forward: its line, or a caller frame of it, is
    in torch/nn/parallel/distributed.py (the logger call), or Dynamo names a DDP method as the
    function it will not trace (the context manager around the wrapped module)."""
    places = (site.where, *site.also_at, *((site.reached_from,) if site.reached_from else ()))
    if any(p.file.replace("\\", "/").endswith(DDP_FILE) for p in places):
        return True
    return "`DistributedDataParallel." in site.explanation


def category_for(site: BreakSite) -> Category:
    if is_ddp_break(site):
        return _CATEGORIES["ddp"]
    if is_training_call(site):
        return _CATEGORIES["training"]
    key = _CODE_CATEGORY.get(site.gb_code or "")
    text = f"{site.gb_type}\n{site.explanation}"
    code = site.where.code
    if key is None and site.gb_code == "GB0059":
        key = "print" if "`print`" in text or _PRINT_CALL.search(code) else None
    if key is None:
        key = next((c for pattern, c in _TYPE_PATTERNS if pattern.search(text)), None)
    if key is None or key == "other":
        key = _key_from_source(site)
    return _CATEGORIES[key]


def _key_from_source(site: BreakSite) -> str:
    """The source line often tells what the registry type does not."""
    code = site.where.code
    if _PRINT_CALL.search(code):
        return "print"
    if _LOG_CALL.search(code) or "/logging/" in site.where.file:
        return "logging"
    if _NUMPY_CALL.search(code):
        return "numpy"
    if is_installed(site.where.file) and not site.where.file.startswith("<"):
        return "third_party"
    return "other"


def logger_method(code: str) -> str | None:
    match = _LOG_CALL.search(code)
    if not match:
        return None
    method = match.group(1)
    return "warning" if method == "warn" else method


_WARN_CALL = re.compile(r"\bwarn(?:ings\.warn)?\s*\(")


def noop_for(site: BreakSite) -> str | None:
    """The side effect at a break that can be made a no-op to measure deleting it: "print",
    "logger:<method>" or "warn"; None for any other break."""
    key = category_for(site).key
    if key == "print":
        return "print"
    if key == "logging":
        method = logger_method(site.where.code)
        return f"logger:{method}" if method else None
    if _WARN_CALL.search(site.where.code) or site.where.file.endswith("/warnings.py"):
        return "warn"
    return None


# Functions that set an object up rather than compute with it: a break met in one of them, on
# the way from the user's line, is setup work the user's code repeats on every call.
_SETUP_FUNCTION = re.compile(r"^(?:__init__|__new__|_?set_\w+|_?setup\w*|_?build\w*|_?init_\w+)$")
_TORCH_INTERNAL = re.compile(r"[/\\]torch[/\\](?:_dynamo|_compile|compiler|utils[/\\]_)")


def setup_frames(site: BreakSite) -> tuple[Location, ...]:
    """The library frames from the user's line to the break (torch's own machinery left out),
    outermost first, where one of them sets an object up (a constructor, a `set_*` or
    `setup*` call): the break is setup work reached from the user's call. () otherwise."""
    if site.reached_from is None:
        return ()
    frames = tuple(f for f in (*site.via, site.where) if not _TORCH_INTERNAL.search(f.file))
    if not any(_SETUP_FUNCTION.match(f.function or "") for f in frames):
        return ()
    return frames


def skipped_in_loop(site: BreakSite) -> bool:
    return site.frame_skipped and site.skip_code == LOOP_SKIP_CODE


def in_library(site: BreakSite) -> bool:
    """Dynamo breaks in code that is not the user's to edit (installed packages, torch, the
    standard library)."""
    return is_installed(site.where.file)


def knob_for(site: BreakSite) -> Knob | None:
    knob = category_for(site).knob
    if knob is None:
        return None
    if knob.value_spec == "logger":
        method = logger_method(site.where.code)
        if method is None:
            return None
        return Knob(
            f"ignore_logging_functions={{Logger.{method}}}",
            knob.setting,
            f"logger:{method}",
            knob.fix,
            knob.behaviour,
        )
    return knob
