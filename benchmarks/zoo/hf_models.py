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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from advisor.measure.workload import Workload

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


def _decoder(config: str, model_class: str, **overrides: Any) -> ModelSpec:
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


def _moe(config: str, model_class: str, **overrides: Any) -> ModelSpec:
    """A decoder LM whose MLPs are a mixture of experts (4 experts, top-2)."""
    spec = _decoder(config, model_class, **overrides)
    return ModelSpec("moe", spec.config, spec.model_class, spec.options, call=spec.call)


def _encoder(config: str, model_class: str, **overrides: Any) -> ModelSpec:
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
_BART_SIZES: dict[str, Any] = {
    "d_model": 64,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "encoder_ffn_dim": 128,
    "decoder_ffn_dim": 128,
    "vocab_size": VOCAB,
}


def _seq2seq(config: str, model_class: str, **overrides: Any) -> ModelSpec:
    """A BART-style encoder-decoder (the config names BART, Marian, Pegasus... share)."""
    options: dict[str, Any] = {
        **_BART_SIZES,
        "max_position_embeddings": 128,
        "pad_token_id": 1,
        "decoder_start_token_id": 2,
    }
    options.update(overrides)
    return ModelSpec(
        "encoder-decoder", config, model_class, options, "seq2seq", {"use_cache": False}
    )


def _t5(
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


def _xlm(config: str, model_class: str) -> ModelSpec:
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


def _whisper() -> ModelSpec:
    """Whisper: log-mel input features (random) of 2 * max_source_positions frames."""
    options = {
        **_BART_SIZES,
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


def _vit(config: str, model_class: str, **overrides: Any) -> ModelSpec:
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


def _convnet(config: str, model_class: str, **options: Any) -> ModelSpec:
    """A hierarchical vision model (conv stages or windowed attention): options given whole."""
    return ModelSpec("vision", config, model_class, {"num_labels": 10, **options}, "pixels")


def _clip() -> ModelSpec:
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


def _qwen2_vl() -> ModelSpec:
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


def _generate(base: ModelSpec) -> ModelSpec:
    """Greedy `model.generate` of NEW_TOKENS tokens (with the KV cache) from a text prompt."""
    return ModelSpec("generate", base.config, base.model_class, base.options, "text")


def _eager_experts(base: ModelSpec) -> ModelSpec:
    """The same MoE with transformers' "eager" experts implementation: a Python loop over the
    experts that were hit (`nonzero`), the classic MoE graph break. transformers >= 5 defaults
    to a grouped matmul (`grouped_mm`) that has no break."""
    return ModelSpec(
        "moe", base.config, base.model_class, base.options, call=base.call, experts="eager"
    )


_LLAMA = _decoder("LlamaConfig", "LlamaForCausalLM")
_GPT2 = ModelSpec(
    "decoder",
    "GPT2Config",
    "GPT2LMHeadModel",
    {
        "n_embd": 64,
        "n_layer": 2,
        "n_head": 4,
        "n_positions": 128,
        "vocab_size": VOCAB,
        **SPECIAL_TOKENS,
    },
    call={"use_cache": False},
)
_T5 = _t5("T5Config", "T5ForConditionalGeneration")
_QWEN3_MOE = _moe(
    "Qwen3MoeConfig",
    "Qwen3MoeForCausalLM",
    head_dim=16,
    num_experts=4,
    num_experts_per_tok=2,
    moe_intermediate_size=64,
)
_OLMOE = _moe("OlmoeConfig", "OlmoeForCausalLM", num_experts=4, num_experts_per_tok=2)
_MIXTRAL = _moe("MixtralConfig", "MixtralForCausalLM", num_local_experts=4, num_experts_per_tok=2)

MODELS: dict[str, ModelSpec] = {
    # decoder LMs
    "gpt2": _GPT2,
    "llama": _LLAMA,
    "mistral": _decoder("MistralConfig", "MistralForCausalLM", sliding_window=8),
    "qwen2": _decoder("Qwen2Config", "Qwen2ForCausalLM"),
    "qwen3": _decoder("Qwen3Config", "Qwen3ForCausalLM", head_dim=16),
    "phi": _decoder("PhiConfig", "PhiForCausalLM"),
    "phi3": _decoder("Phi3Config", "Phi3ForCausalLM"),
    "gemma": _decoder("GemmaConfig", "GemmaForCausalLM", head_dim=16),
    "gemma2": _decoder("Gemma2Config", "Gemma2ForCausalLM", head_dim=16, sliding_window=8),
    "gemma3_text": _decoder("Gemma3TextConfig", "Gemma3ForCausalLM", head_dim=16, sliding_window=8),
    "opt": ModelSpec(
        "decoder",
        "OPTConfig",
        "OPTForCausalLM",
        {
            "hidden_size": 64,
            "ffn_dim": 128,
            "word_embed_proj_dim": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "vocab_size": VOCAB,
            "max_position_embeddings": 128,
            **SPECIAL_TOKENS,
        },
        call={"use_cache": False},
    ),
    "falcon": ModelSpec(
        "decoder",
        "FalconConfig",
        "FalconForCausalLM",
        {
            "hidden_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "vocab_size": VOCAB,
            **SPECIAL_TOKENS,
        },
        call={"use_cache": False},
    ),
    "bloom": ModelSpec(
        "decoder",
        "BloomConfig",
        "BloomForCausalLM",
        {"hidden_size": 64, "n_layer": 2, "n_head": 4, "vocab_size": VOCAB, **SPECIAL_TOKENS},
        call={"use_cache": False},
    ),
    "gpt_neox": _decoder("GPTNeoXConfig", "GPTNeoXForCausalLM", num_key_value_heads=4),
    "gptj": ModelSpec(
        "decoder",
        "GPTJConfig",
        "GPTJForCausalLM",
        {
            "n_embd": 64,
            "n_layer": 2,
            "n_head": 4,
            "rotary_dim": 8,
            "n_positions": 128,
            "vocab_size": VOCAB,
            **SPECIAL_TOKENS,
        },
        call={"use_cache": False},
    ),
    "starcoder2": _decoder("Starcoder2Config", "Starcoder2ForCausalLM"),
    "stablelm": _decoder("StableLmConfig", "StableLmForCausalLM"),
    "olmo2": _decoder("Olmo2Config", "Olmo2ForCausalLM"),
    "granite": _decoder("GraniteConfig", "GraniteForCausalLM"),
    "cohere": _decoder("CohereConfig", "CohereForCausalLM"),
    "reformer": ModelSpec(
        "decoder",
        "ReformerConfig",
        "ReformerModelWithLMHead",
        {
            "hidden_size": 64,
            "num_attention_heads": 2,
            "attention_head_size": 32,
            "feed_forward_size": 128,
            "attn_layers": ["local", "lsh"],
            "axial_pos_shape": [4, 4],  # product = max_position_embeddings = SEQ_LEN
            "axial_pos_embds_dim": [32, 32],  # sum = hidden_size
            "local_attn_chunk_length": 8,
            "lsh_attn_chunk_length": 8,
            "num_buckets": 2,
            "max_position_embeddings": SEQ_LEN,
            "is_decoder": True,
            "vocab_size": VOCAB,
            "pad_token_id": 0,
            "eos_token_id": 2,
        },
        call={"use_cache": False},
    ),
    "mamba": ModelSpec(
        "decoder",
        "MambaConfig",
        "MambaForCausalLM",
        {
            "hidden_size": 64,
            "num_hidden_layers": 2,
            "state_size": 8,
            "expand": 2,
            "conv_kernel": 4,
            "use_mambapy": False,
            "vocab_size": VOCAB,
            **SPECIAL_TOKENS,
        },
        call={"use_cache": False},
    ),
    # mixture of experts
    "mixtral": _MIXTRAL,
    "mixtral_eager_experts": _eager_experts(_MIXTRAL),
    "qwen2_moe": _moe(
        "Qwen2MoeConfig",
        "Qwen2MoeForCausalLM",
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=64,
        shared_expert_intermediate_size=128,
    ),
    "qwen3_moe": _QWEN3_MOE,
    "qwen3_moe_eager_experts": _eager_experts(_QWEN3_MOE),
    "olmoe": _OLMOE,
    "olmoe_eager_experts": _eager_experts(_OLMOE),
    "granitemoe": _moe(
        "GraniteMoeConfig", "GraniteMoeForCausalLM", num_local_experts=4, num_experts_per_tok=2
    ),
    "dbrx": ModelSpec(
        "moe",
        "DbrxConfig",
        "DbrxForCausalLM",
        {
            "d_model": 64,
            "n_heads": 4,
            "n_layers": 2,
            "max_seq_len": 128,
            "vocab_size": VOCAB,
            "attn_config": {"kv_n_heads": 2, "clip_qkv": 8.0, "rope_theta": 10000.0},
            "ffn_config": {"ffn_hidden_size": 128, "moe_num_experts": 4, "moe_top_k": 2},
        },
        call={"use_cache": False},
    ),
    "switch_transformers": _t5(
        "SwitchTransformersConfig",
        "SwitchTransformersForConditionalGeneration",
        family="moe",
        num_sparse_encoder_layers=1,
        num_sparse_decoder_layers=1,
        num_experts=4,
        expert_capacity=16,
    ),
    "jetmoe": _moe(
        "JetMoeConfig",
        "JetMoeForCausalLM",
        num_local_experts=4,
        num_experts_per_tok=2,
        kv_channels=16,
        num_key_value_heads=4,
    ),
    "jamba": _moe(
        "JambaConfig",
        "JambaForCausalLM",
        attn_layer_period=2,
        attn_layer_offset=1,
        expert_layer_period=2,
        expert_layer_offset=1,
        num_experts=4,
        num_experts_per_tok=2,
        mamba_d_state=8,
        mamba_dt_rank=8,
        mamba_expand=2,
        use_mamba_kernels=False,
    ),
    "deepseek_v3": _moe(
        "DeepseekV3Config",
        "DeepseekV3ForCausalLM",
        moe_intermediate_size=32,
        first_k_dense_replace=1,
        n_routed_experts=4,
        num_experts_per_tok=2,
        n_group=2,
        topk_group=1,
        num_key_value_heads=4,
        q_lora_rank=32,
        kv_lora_rank=16,
        qk_rope_head_dim=8,
        qk_nope_head_dim=8,
        v_head_dim=16,
        head_dim=8,
    ),
    "gpt_oss": _moe(
        "GptOssConfig",
        "GptOssForCausalLM",
        intermediate_size=64,
        head_dim=16,
        num_local_experts=4,
        num_experts_per_tok=2,
        sliding_window=8,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},  # no YaRN at 128 tokens
    ),
    # encoders
    "bert": _encoder("BertConfig", "BertModel"),
    "roberta": _encoder("RobertaConfig", "RobertaModel", pad_token_id=1),
    "xlm_roberta": _encoder("XLMRobertaConfig", "XLMRobertaModel", pad_token_id=1),
    "distilbert": ModelSpec(
        "encoder",
        "DistilBertConfig",
        "DistilBertModel",
        {"dim": 64, "hidden_dim": 128, "n_layers": 2, "n_heads": 4, "vocab_size": VOCAB},
    ),
    "albert": _encoder("AlbertConfig", "AlbertModel", embedding_size=32),
    "electra": _encoder("ElectraConfig", "ElectraModel", embedding_size=32),
    "deberta_v2": _encoder("DebertaV2Config", "DebertaV2Model"),
    "mpnet": _encoder("MPNetConfig", "MPNetModel"),
    "longformer": _encoder(
        "LongformerConfig",
        "LongformerModel",
        attention_window=8,
        pad_token_id=1,
        max_position_embeddings=130,
    ),
    "big_bird": _encoder(
        "BigBirdConfig",
        "BigBirdModel",
        attention_type="block_sparse",
        block_size=2,
        num_random_blocks=1,
    ),
    "funnel": ModelSpec(
        "encoder",
        "FunnelConfig",
        "FunnelModel",
        {
            "d_model": 64,
            "n_head": 4,
            "d_head": 16,
            "d_inner": 128,
            "block_sizes": [1, 1],
            "vocab_size": VOCAB,
        },
    ),
    "xlnet": ModelSpec(
        "encoder",
        "XLNetConfig",
        "XLNetModel",
        {"d_model": 64, "n_layer": 2, "n_head": 4, "d_inner": 128, "vocab_size": VOCAB},
    ),
    "tapas": ModelSpec(
        "encoder",
        "TapasConfig",
        "TapasForQuestionAnswering",  # cell selection and aggregation heads: segment reductions
        {
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "vocab_size": VOCAB,
            "max_position_embeddings": 128,
            "type_vocab_sizes": [3, 16, 16, 2, 16, 16, 16],
        },
        "table",
    ),
    "xlm": _xlm("XLMConfig", "XLMModel"),
    "flaubert": _xlm("FlaubertConfig", "FlaubertModel"),
    # encoder-decoders
    "t5": _T5,
    "bart": _seq2seq("BartConfig", "BartForConditionalGeneration"),
    "marian": _seq2seq("MarianConfig", "MarianMTModel", pad_token_id=0, decoder_start_token_id=0),
    "pegasus": _seq2seq(
        "PegasusConfig", "PegasusForConditionalGeneration", pad_token_id=0, decoder_start_token_id=0
    ),
    "whisper": _whisper(),
    "bigbird_pegasus": _seq2seq(
        "BigBirdPegasusConfig",
        "BigBirdPegasusForConditionalGeneration",
        attention_type="block_sparse",
        block_size=2,
        num_random_blocks=1,
        pad_token_id=0,
        decoder_start_token_id=0,
    ),
    "prophetnet": ModelSpec(
        "encoder-decoder",
        "ProphetNetConfig",
        "ProphetNetForConditionalGeneration",
        {
            "hidden_size": 64,
            "encoder_ffn_dim": 128,
            "decoder_ffn_dim": 128,
            "num_encoder_layers": 2,
            "num_decoder_layers": 2,
            "num_encoder_attention_heads": 4,
            "num_decoder_attention_heads": 4,
            "vocab_size": VOCAB,
            "max_position_embeddings": 64,
            "ngram": 2,
            "num_buckets": 8,
            "relative_max_distance": 32,
            "pad_token_id": 0,
            "decoder_start_token_id": 0,
        },
        "seq2seq-labels",  # labels, not decoder_input_ids: the loss path of an eval loop
        {"use_cache": False},
    ),
    "led": ModelSpec(
        "encoder-decoder",
        "LEDConfig",
        "LEDForConditionalGeneration",
        {
            **_BART_SIZES,
            "max_encoder_position_embeddings": 64,
            "max_decoder_position_embeddings": 64,
            "attention_window": 8,
            "pad_token_id": 1,
            "decoder_start_token_id": 2,
        },
        "seq2seq",
        {"use_cache": False},
    ),
    # vision
    "vit": _vit("ViTConfig", "ViTForImageClassification"),
    "deit": _vit("DeiTConfig", "DeiTForImageClassification"),
    "beit": _vit("BeitConfig", "BeitForImageClassification"),
    "dinov2": _vit("Dinov2Config", "Dinov2Model", mlp_ratio=2),
    "swin": _convnet(
        "SwinConfig",
        "SwinForImageClassification",
        image_size=IMAGE_SIZE,
        patch_size=4,
        embed_dim=16,
        depths=[1, 1],
        num_heads=[2, 4],
        window_size=4,
    ),
    "convnext": _convnet(
        "ConvNextConfig",
        "ConvNextForImageClassification",
        num_stages=2,
        hidden_sizes=[16, 32],
        depths=[1, 1],
    ),
    "resnet": _convnet(
        "ResNetConfig",
        "ResNetForImageClassification",
        embedding_size=16,
        hidden_sizes=[16, 32],
        depths=[1, 1],
        layer_type="basic",
    ),
    "segformer": _convnet(
        "SegformerConfig",
        "SegformerForSemanticSegmentation",
        num_encoder_blocks=2,
        depths=[1, 1],
        sr_ratios=[2, 1],
        hidden_sizes=[16, 32],
        patch_sizes=[7, 3],
        strides=[4, 2],
        num_attention_heads=[1, 2],
        mlp_ratios=[2, 2],
        decoder_hidden_size=32,
    ),
    # multimodal
    "clip": _clip(),
    "qwen2_vl": _qwen2_vl(),
    # generation loops
    "gpt2_generate": _generate(_GPT2),
    "llama_generate": _generate(_LLAMA),
    "mixtral_generate": _generate(_MIXTRAL),
    "t5_generate": _generate(_T5),
}


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
