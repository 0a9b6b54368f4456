"""advisor: a profiler-integrated performance advisor for torch.compile graph breaks.

Pipeline: workload -> harness -> capture -> profile -> what-ifs -> attribute -> advise ->
render. The words a report uses (region, resume function, eager gap, guard lookup, skipped
frame, root cause, GB code, cost parts, savings) are defined in docs/concepts.md.
"""

from advisor.workload import Workload

__all__ = ["Workload", "__version__"]
__version__ = "0.1.0"
