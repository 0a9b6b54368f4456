"""advisor: a profiler-integrated performance advisor for torch.compile graph breaks.

Pipeline: workload -> harness -> capture -> profile -> attribute -> advise -> render.
"""

from advisor.workload import Workload

__all__ = ["Workload", "__version__"]
__version__ = "0.1.0"
