"""advisor: a profiler-integrated performance advisor for torch.compile graph breaks.

Pipeline: workload -> harness -> capture -> profile -> what-ifs -> attribute -> advise ->
render. The words a report uses (region, resume function, eager gap, guard lookup, skipped
frame, root cause, GB code, cost parts, savings) are defined in docs/concepts.md.

`advisor.analyse(fn, *args, **options) -> Report` runs it from Python, and
`advisor.analyse_script("train.py", "--steps", "50")` a script as it is; importing `advisor`
stays cheap (torch loads when `analyse` is first used).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.measure.workload import Workload

if TYPE_CHECKING:
    from advisor.api import analyse, analyse_script

__all__ = ["Workload", "__version__", "analyse", "analyse_script"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "analyse":
        from advisor.api import analyse

        return analyse
    if name == "analyse_script":
        from advisor.api import analyse_script

        return analyse_script
    raise AttributeError(f"module 'advisor' has no attribute {name!r}")
