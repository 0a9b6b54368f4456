"""A zoo of tiny random-init Hugging Face `transformers` models for running the advisor on real
third-party model code.

Every model is built from a config object (no `from_pretrained`, no hub access, no tokenizer or
image processor) with a few layers and a hidden size of 32-64, so one eager forward takes a few
milliseconds on CPU. Inputs are random tensors from a seeded generator; the model is seeded
before it is built, put in eval mode and its parameters frozen (`requires_grad_(False)`, so the
module itself is the function to compile and no autograd graph is recorded).

    advisor run benchmarks/zoo/hf_models.py:build --param model=mixtral

The workload's `fn` is what a user would compile: the `nn.Module` itself, called with keyword
arguments (`input_ids=...`, `pixel_values=...`) and returning its `ModelOutput`; for the
`*_generate` entries a small function that calls `model.generate` (greedy, 8 new tokens).
The `*_eager_experts` entries are MoE models with transformers' per-expert Python loop instead of
its default grouped matmul.

The models' configs are in `hf_specs.py` (one function per family) and `hf_catalogue.py` (the
models by name); this file builds them.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _repository_importable() -> None:
    """Put the repository on sys.path when this file is loaded by its path from elsewhere
    (`advisor run benchmarks/zoo/hf_models.py:build`), so that `benchmarks.*` imports."""
    if importlib.util.find_spec("benchmarks") is None:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))


_repository_importable()

import torch  # noqa: E402

from advisor.measure.workload import Workload  # noqa: E402
from benchmarks.zoo.hf_catalogue import MODELS  # noqa: E402
from benchmarks.zoo.hf_specs import (  # noqa: E402
    BATCH,
    FIRST_TOKEN,
    IMAGE_SIZE,
    NEW_TOKENS,
    SEQ_LEN,
    TARGET_LEN,
    ModelSpec,
)

# What the zoo offers its readers (the surveys, the training zoo): its models, the factory, the
# inputs of a spec and their batch size.
__all__ = ["BATCH", "MODELS", "ModelSpec", "build", "parameter_count"]


# --- the factory -----------------------------------------------------------------------------


def build(device: str = "cpu", model: str = "gpt2") -> Workload:
    """The advisor factory: zoo model `model` on `device`, with its seeded inputs."""
    spec = MODELS.get(model)
    if spec is None:
        raise ValueError(f"unknown zoo model '{model}' (known: {', '.join(sorted(MODELS))})")
    module, config = _instantiate(spec)
    module = module.to(device)
    generator = torch.Generator().manual_seed(1)
    inputs = {k: v.to(device) for k, v in _inputs(spec, config, generator).items()}
    if spec.family == "generate":
        return Workload(_generate_fn(module), (), inputs, name=f"hf.{model}")
    return Workload(module, (), {**inputs, **spec.call}, name=f"hf.{model}")


def parameter_count(fn: Callable[..., Any]) -> int | None:
    """Parameters of a zoo workload's model (through a generate function's closure too)."""
    module = fn if isinstance(fn, torch.nn.Module) else getattr(fn, "model", None)
    if not isinstance(module, torch.nn.Module):
        return None
    return sum(p.numel() for p in module.parameters())


def _instantiate(spec: ModelSpec) -> tuple[torch.nn.Module, Any]:
    import transformers

    torch.manual_seed(0)
    config = getattr(transformers, spec.config)(**spec.options)
    module = getattr(transformers, spec.model_class)(config)
    if spec.experts is not None:
        module.set_experts_implementation(spec.experts)
    module.eval().requires_grad_(False)
    return module, config


def _vocab_size(config: Any) -> int:
    text_config = getattr(config, "text_config", None)
    return int(getattr(text_config, "vocab_size", None) or config.vocab_size)


def _inputs(spec: ModelSpec, config: Any, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """Random inputs for the spec's input kind (token ids avoid the first few special ids)."""

    def tokens(length: int) -> torch.Tensor:
        high = _vocab_size(config)
        return torch.randint(FIRST_TOKEN, high, (BATCH, length), generator=generator)

    def pixels() -> torch.Tensor:
        channels = int(getattr(getattr(config, "vision_config", config), "num_channels", 3))
        return torch.randn(BATCH, channels, IMAGE_SIZE, IMAGE_SIZE, generator=generator)

    def text() -> dict[str, torch.Tensor]:
        mask = torch.ones(BATCH, SEQ_LEN, dtype=torch.long)
        return {"input_ids": tokens(SEQ_LEN), "attention_mask": mask}

    if spec.inputs == "text":
        return text()
    if spec.inputs == "seq2seq":
        return {**text(), "decoder_input_ids": tokens(TARGET_LEN)}
    if spec.inputs == "seq2seq-labels":  # an evaluation step: the model shifts labels itself
        return {**text(), "labels": tokens(TARGET_LEN)}
    if spec.inputs == "audio":
        frames = 2 * config.max_source_positions
        features = torch.randn(BATCH, config.num_mel_bins, frames, generator=generator)
        return {"input_features": features, "decoder_input_ids": tokens(TARGET_LEN)}
    if spec.inputs == "pixels":
        return {"pixel_values": pixels()}
    if spec.inputs == "text+pixels":
        return {**text(), "pixel_values": pixels()}
    if spec.inputs == "table":
        return {**text(), "token_type_ids": _table_token_types()}
    if spec.inputs == "qwen-vl":
        return _qwen_vl_inputs(config, tokens(SEQ_LEN), generator)
    raise ValueError(f"unknown input kind '{spec.inputs}'")


def _table_token_types(question: int = 4, columns: int = 3) -> torch.Tensor:
    """TAPAS token types (segment, column, row, then 4 ranking types left 0): a question of
    `question` tokens, then the table's cells row by row."""
    types = torch.zeros(BATCH, SEQ_LEN, 7, dtype=torch.long)
    cells = torch.arange(SEQ_LEN - question)
    types[:, question:, 0] = 1
    types[:, question:, 1] = cells % columns + 1
    types[:, question:, 2] = cells // columns + 1
    return types


def _qwen_vl_inputs(
    config: Any, text: torch.Tensor, generator: torch.Generator
) -> dict[str, torch.Tensor]:
    """One image per row, as Qwen2-VL's processor lays it out: flattened patches with their
    (t, h, w) grid, and a prompt <vision_start> <image> x merged patches <vision_end> text."""
    vision = config.vision_config
    grid = IMAGE_SIZE // vision.patch_size
    merged = grid * grid // vision.spatial_merge_size**2
    patch_dim = vision.in_channels * vision.temporal_patch_size * vision.patch_size**2

    def column(token_id: int, width: int = 1) -> torch.Tensor:
        return torch.full((BATCH, width), token_id, dtype=torch.long)

    input_ids = torch.cat(
        [
            column(config.vision_start_token_id),
            column(config.image_token_id, merged),
            column(config.vision_end_token_id),
            text,
        ],
        dim=1,
    )
    return {
        "input_ids": input_ids,
        "attention_mask": torch.ones_like(input_ids),
        "mm_token_type_ids": (input_ids == config.image_token_id).long(),  # 1: image token
        "pixel_values": torch.randn(BATCH * grid * grid, patch_dim, generator=generator),
        "image_grid_thw": torch.tensor([[1, grid, grid]] * BATCH),
    }


def _generate_fn(model: Any) -> Callable[..., torch.Tensor]:
    """What a user compiles to speed up generation: a function around `model.generate`."""

    def generate(input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return model.generate(
            input_ids=input_ids,
            attention_mask=attention_mask,
            max_new_tokens=NEW_TOKENS,
            min_new_tokens=NEW_TOKENS,
            do_sample=False,
            pad_token_id=0,
        )

    generate.model = model  # type: ignore[attr-defined]
    return generate
