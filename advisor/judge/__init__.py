"""Judging: saved measurements in, a `Report` out (attribute, root causes, cost, advise).
Nothing here imports torch."""

from advisor.judge.pipeline import judge, judge_partial, judge_saved

__all__ = ["judge", "judge_partial", "judge_saved"]
