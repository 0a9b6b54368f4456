"""The transformers zoo's halves for the accuracy benchmark (models of benchmarks/zoo/hf_models.py).

Chosen from benchmarks/zoo/SURVEY.md before the cost model was tuned on real models: models whose
breaks have a measured all-fixed reference (fullgraph compiles and matches eager, or a knob removes
the breaks), and in each half models without one. Two pairs share code (xlm/flaubert,
big_bird/bigbird_pegasus), one of each pair per half. The cost model is changed only while
looking at the tuning half.
"""

from __future__ import annotations

TUNING_MODELS: tuple[str, ...] = (
    "xlm",
    "jetmoe",
    "bigbird_pegasus",
    "mixtral_eager_experts",
    "reformer",
)
HELD_OUT_MODELS: tuple[str, ...] = (
    "flaubert",
    "big_bird",
    "olmoe_eager_experts",
    "longformer",
    "gpt2_generate",
)
