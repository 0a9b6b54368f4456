"""How each model of the transformers zoo is configured: the zoo's sizes, a model's spec
(`ModelSpec`: a config class with its keyword arguments, the model class, its inputs) and one
small function per family of configs. `hf_catalogue.py` names the models; `hf_models.py`
builds them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

BATCH = 2
SEQ_LEN = 16  # encoder / decoder tokens
TARGET_LEN = 8  # decoder tokens of an encoder-decoder model
IMAGE_SIZE = 32
NEW_TOKENS = 8  # generate workloads
VOCAB = 512

FAMILIES = ("decoder", "moe", "encoder", "encoder-decoder", "vision", "multimodal", "generate")
INPUTS = ("text", "seq2seq", "seq2seq-labels", "pixels", "audio", "text+pixels", "qwen-vl", "table")
FIRST_TOKEN = 16  # random token ids start here, above every special id the configs use
# Special token ids inside the tiny vocabulary (the defaults are real checkpoints' ids, > VOCAB).
SPECIAL_TOKENS = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}


@dataclass(frozen=True)
class ModelSpec:
    """How to build one zoo model: a transformers config class with its keyword arguments, the
    model class to instantiate from it, and what inputs it takes."""

    family: str  # one of FAMILIES
    config: str  # transformers config class name, e.g. "MixtralConfig"
    model_class: str  # transformers model class name, e.g. "MixtralForCausalLM"
    options: Mapping[str, Any] = field(default_factory=dict)  # config keyword arguments
    inputs: str = "text"  # one of INPUTS
    call: Mapping[str, Any] = field(default_factory=dict)  # extra forward keyword arguments
    experts: str | None = None  # MoE experts implementation ("eager": the per-expert loop)


# --- configs, one small function per family ------------------------------------------------------


def decoder(config: str, model_class: str, **overrides: Any) -> ModelSpec:
    """A Llama-style decoder LM (most modern decoders share these config names)."""
    options: dict[str, Any] = {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": VOCAB,
        "max_position_embeddings": 128,
        **SPECIAL_TOKENS,
    }
    options.update(overrides)
    return ModelSpec("decoder", config, model_class, options, call={"use_cache": False})


def moe(config: str, model_class: str, **overrides: Any) -> ModelSpec:
    """A decoder LM whose MLPs are a mixture of experts (4 experts, top-2)."""
    spec = decoder(config, model_class, **overrides)
    return ModelSpec("moe", spec.config, spec.model_class, spec.options, call=spec.call)


def encoder(config: str, model_class: str, **overrides: Any) -> ModelSpec:
    """A BERT-style encoder."""
    options: dict[str, Any] = {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "vocab_size": VOCAB,
        "max_position_embeddings": 128,
    }
    options.update(overrides)
    return ModelSpec("encoder", config, model_class, options)


# A BART-style encoder-decoder's sizes, in the config names BART, Marian, Pegasus and Whisper share.
BART_SIZES: dict[str, Any] = {
    "d_model": 64,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "encoder_ffn_dim": 128,
    "decoder_ffn_dim": 128,
    "vocab_size": VOCAB,
}


def seq2seq(config: str, model_class: str, **overrides: Any) -> ModelSpec:
    """A BART-style encoder-decoder (the config names BART, Marian, Pegasus... share)."""
    options: dict[str, Any] = {
        **BART_SIZES,
        "max_position_embeddings": 128,
        "pad_token_id": 1,
        "decoder_start_token_id": 2,
    }
    options.update(overrides)
    return ModelSpec(
        "encoder-decoder", config, model_class, options, "seq2seq", {"use_cache": False}
    )


def t5(
    config: str, model_class: str, family: str = "encoder-decoder", **overrides: Any
) -> ModelSpec:
    """T5 and its relatives (Switch Transformers): d_kv per head, relative position buckets."""
    options: dict[str, Any] = {
        "d_model": 64,
        "d_kv": 16,
        "d_ff": 128,
        "num_layers": 2,
        "num_decoder_layers": 2,
        "num_heads": 4,
        "vocab_size": VOCAB,
        "relative_attention_num_buckets": 8,
        "decoder_start_token_id": 0,
    }
    options.update(overrides)
    return ModelSpec(family, config, model_class, options, "seq2seq", {"use_cache": False})


def xlm(config: str, model_class: str) -> ModelSpec:
    """XLM and Flaubert: their own config names; sequence lengths come from `pad_index`."""
    options = {
        "emb_dim": 64,
        "n_layers": 2,
        "n_heads": 4,
        "vocab_size": VOCAB,
        "max_position_embeddings": 128,
        "pad_index": 2,
    }
    return ModelSpec("encoder", config, model_class, options)


def whisper() -> ModelSpec:
    """Whisper: log-mel input features (random) of 2 * max_source_positions frames."""
    options = {
        **BART_SIZES,
        "num_mel_bins": 16,
        "max_source_positions": 32,
        "max_target_positions": 64,
        "pad_token_id": 0,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "decoder_start_token_id": 1,
    }
    return ModelSpec(
        "encoder-decoder",
        "WhisperConfig",
        "WhisperForConditionalGeneration",
        options,
        "audio",
        {"use_cache": False},
    )


def vit(config: str, model_class: str, **overrides: Any) -> ModelSpec:
    """A ViT-style image transformer on 32x32 images with 8x8 patches."""
    options: dict[str, Any] = {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "image_size": IMAGE_SIZE,
        "patch_size": 8,
        "num_labels": 10,
    }
    options.update(overrides)
    return ModelSpec("vision", config, model_class, options, "pixels")


def convnet(config: str, model_class: str, **options: Any) -> ModelSpec:
    """A hierarchical vision model (conv stages or windowed attention): options given whole."""
    return ModelSpec("vision", config, model_class, {"num_labels": 10, **options}, "pixels")


def clip() -> ModelSpec:
    text = {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "vocab_size": VOCAB,
        "max_position_embeddings": 64,
        **SPECIAL_TOKENS,
    }
    vision = {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "image_size": IMAGE_SIZE,
        "patch_size": 8,
    }
    options = {"text_config": text, "vision_config": vision, "projection_dim": 32}
    return ModelSpec("multimodal", "CLIPConfig", "CLIPModel", options, "text+pixels")


def qwen2_vl() -> ModelSpec:
    """Qwen2-VL: a vision tower (patches of 8x8x2 frames, merged 2x2) feeding a decoder with
    multimodal RoPE; special ids inside the tiny vocabulary."""
    text = {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": VOCAB,
        "max_position_embeddings": 128,
        # mrope sections (temporal, height, width) sum to head_dim / 2 = 8
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": 10000.0,
            "mrope_section": [2, 3, 3],
        },
        **SPECIAL_TOKENS,
    }
    vision = {
        "depth": 2,
        "embed_dim": 32,
        "hidden_size": 64,
        "num_heads": 2,
        "mlp_ratio": 2,
        "patch_size": 8,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
    }
    options = {
        "text_config": text,
        "vision_config": vision,
        "image_token_id": 5,
        "video_token_id": 6,
        "vision_start_token_id": 7,
        "vision_end_token_id": 8,
    }
    return ModelSpec(
        "multimodal",
        "Qwen2VLConfig",
        "Qwen2VLForConditionalGeneration",
        options,
        "qwen-vl",
        {"use_cache": False},
    )


def generate(base: ModelSpec) -> ModelSpec:
    """Greedy `model.generate` of NEW_TOKENS tokens (with the KV cache) from a text prompt."""
    return ModelSpec("generate", base.config, base.model_class, base.options, "text")


def eager_experts(base: ModelSpec) -> ModelSpec:
    """The same MoE with transformers' "eager" experts implementation: a Python loop over the
    experts that were hit (`nonzero`), the classic MoE graph break. transformers >= 5 defaults
    to a grouped matmul (`grouped_mm`) that has no break."""
    return ModelSpec(
        "moe", base.config, base.model_class, base.options, call=base.call, experts="eager"
    )
