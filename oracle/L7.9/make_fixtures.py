#!/usr/bin/python3
"""Golden data for L7.9, the Llama half: tiny Hugging Face checkpoints and their logits.

Run from the repository root:  /usr/bin/python3 oracle/L7.9/make_fixtures.py OUT_DIR
Writes OUT_DIR/L7.9/<checkpoint>/ (config.json, generation_config.json, model.safetensors
or shards with model.safetensors.index.json, and the tiny tokenizer where one exists),
OUT_DIR/L7.9/llama.safetensors (inputs and logits) and OUT_DIR/L7.9/llama.json (parameter
counts, state-dict keys, greedy token ids, tolerances).

The oracle. transformers is not installed here, so the four model families are
re-implemented from transformers' sources, in float32 and eager mode, the way
`from_pretrained(dir, dtype=torch.float32, attn_implementation="eager")` runs them:

  models/llama/modeling_llama.py      LlamaRMSNorm, LlamaRotaryEmbedding (+ dynamic_rope_update),
                                      rotate_half / apply_rotary_pos_emb, repeat_kv,
                                      eager_attention_forward, LlamaAttention (attention_bias on
                                      q, k, v and o), LlamaMLP (mlp_bias), LlamaDecoderLayer,
                                      LlamaModel, LlamaForCausalLM (tie_word_embeddings)
  models/mistral/modeling_mistral.py  the same blocks, no biases, a sliding window on every
                                      layer (configuration_mistral.py: sliding_window 4096)
  models/qwen2/modeling_qwen2.py      q, k, v biased, o not; layer_types from
                                      use_sliding_window and max_window_layers
  models/deepseek_v3/modeling_deepseek_v3.py
                                      DeepseekV3Attention (q_a/q_b with q_a_layernorm,
                                      kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, the rope
                                      part shared by all heads, apply_rotary_pos_emb_interleave,
                                      the softmax scale times yarn's mscale(mscale_all_dim)^2),
                                      DeepseekV3TopkRouter (sigmoid, e_score_correction_bias for
                                      the choice, groups, norm_topk_prob, routed_scaling_factor),
                                      DeepseekV3MoE (shared experts), first_k_dense_replace
  modeling_rope_utils.py              default, dynamic, yarn and llama3 inverse frequencies
  masking_utils.py                    causal (kv <= q) and sliding-window (kv > q - W) masks,
                                      additive with finfo(float32).min
  models/gpt_oss/modeling_gpt_oss.py  learned sinks (cat, subtract the max, softmax, drop)
  models/qwen2_moe/modeling_qwen2_moe.py
                                      Qwen2MoeSparseMoeBlock (softmax top-k, norm_topk_prob,
                                      shared_expert with a sigmoid shared_expert_gate)
  models/mixtral/modeling_mixtral.py  load_balancing_loss_func (the aux loss)
The sources were read at transformers commits 00b676f8 and f5a9ec51 (deepseek_v3),
caa31776 (qwen2 configuration) and 0b07a74c (mistral configuration); transformers 5 keeps
this arithmetic and moves the rope into rope_parameters, which the configs below use in
both forms. The course's own keys (tl_attention "mla", tl_num_experts, tl_sliding_window,
tl_sink_tokens, tl_learned_sinks; contracts/tinyllm/modern/llama.h) compose these same
blocks: MLA is DeepseekV3Attention, the experts are Qwen2-MoE's, sink tokens widen the
sliding-window mask with kv < S.

Weights are drawn with larger scales than HF's initializer (std 0.02 would make every
logit nearly equal): so that logits differ, greedy choices have margins far above
float32 rounding, and every part (each norm, each bias, the correction bias) moves the
output. Every routing choice is checked to have a margin too.

Reproducible: one seeded generator, one thread, sorted output (`ol fixtures L7.9 --check`).
"""
import copy
import math
import os
import shutil
import sys

import numpy as np
import torch
import torch.nn.functional as F

# HF's file layout, written once for every oracle: oracle/common/fixture_io.py
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from fixture_io import safetensors_bytes, write_atomic, write_json  # noqa: E402

SEED = 20240709
MIN = torch.finfo(torch.float32).min
VOCAB = 512               # the tiny tokenizers' 500-503 ids fit
B, T = 2, 12              # golden inputs: longer than every window below
PROMPT_LEN, NEW_TOKENS = 6, 24
# The smallest margins the oracle accepts: between the greedy token and the next logit,
# and between the last chosen and the first unchosen routing score. The reference's
# router logits and logits agree with the oracle's to ~1e-6 and ~1e-5.
GREEDY_FLOOR, ROUTING_FLOOR = 2e-3, 2e-4

# Tolerances per test, read by the course tests and the model answers. float32 sums
# in another order agree to a few ulp per op. Measured through the whole tiny models
# (|logit| up to ~30): the reference stays within 0.071 of the logits' tolerance on
# every checkpoint (llama-mqa-tied's worst element; 0.020 to 0.064 on the others),
# and every pitfall mutant that changes the logits moves them by at least 8,874
# tolerances (s02); the others are refused by the strict load (s01, s06, s08, s10,
# s12) or break the cached decode (s03: 14,700) or the counts (s07).
TOLERANCES = {
    "test_tiny_hf_logits_golden": {"rtol": 1e-4, "atol": 1e-4},
    "test_cached_decode_equals_full_forward": {"rtol": 1e-4, "atol": 1e-4},
    "test_latent_attention_and_experts": {"rtol": 1e-4, "atol": 1e-4},
    "test_sink_tokens_stream_like_full_attention": {"rtol": 1e-4, "atol": 1e-4},
    "test_save_load_roundtrip_and_shards": {"rtol": 1e-4, "atol": 1e-4},
    "test_gradients_reach_every_parameter": {"max_rel_error": 2e-2},
    "test_aux_loss": {"rtol": 1e-4, "atol": 1e-5},
}


# ---- configs: each checkpoint's config.json, as HF writes it -------------------------

def base_config(model_type, **kw):
    arch = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM",
            "qwen2": "Qwen2ForCausalLM", "deepseek_v3": "DeepseekV3ForCausalLM"}[model_type]
    c = {"architectures": [arch], "model_type": model_type, "vocab_size": VOCAB,
         "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "hidden_act": "silu",
         "max_position_embeddings": 256, "rms_norm_eps": 1e-5, "initializer_range": 0.02,
         "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2,
         "attention_dropout": 0.0, "use_cache": True}
    c.update(kw)
    return c


def form_4x(c, theta, scaling=None):
    """transformers 4.x: rope_theta at the top, rope_scaling beside it."""
    c = dict(c, rope_theta=theta, rope_scaling=scaling, torch_dtype="float32",
             transformers_version="4.46.0")
    return c


def form_5x(c, theta, params=None):
    """transformers 5: rope_parameters with rope_theta inside."""
    p = {"rope_type": "default"} if params is None else dict(params)
    p["rope_theta"] = theta
    return dict(c, rope_parameters=p, dtype="float32", transformers_version="5.0.0")


CHECKPOINTS = [
    # name, config, options
    ("llama-gqa", form_4x(base_config("llama"), 10000.0),
     {"inv_freq_buffers": True, "what": "Llama GQA (4 heads, 2 kv heads), untied, no head_dim "
      "key, 4.x config, legacy rotary_emb.inv_freq buffers in the file"}),
    ("llama-mqa-tied", form_5x(base_config("llama", num_key_value_heads=1, tie_word_embeddings=True,
                                           num_hidden_layers=3), 100000.0),
     {"store_tied_head": True, "what": "Llama MQA (1 kv head), tied, with the tied head's copy "
      "stored anyway, 5.x config with rope_theta 1e5 in rope_parameters"}),
    ("mistral-window", form_5x(base_config("mistral", head_dim=16, sliding_window=5), 10000.0),
     {"tokenizer": "tiny-sentencepiece", "what": "Mistral, sliding_window 5 < 12 tokens, "
      "explicit head_dim, 5.x config"}),
    ("qwen2-window-bias", form_4x(base_config("qwen2", num_hidden_layers=3,
                                              tie_word_embeddings=True,
                                              use_sliding_window=True, sliding_window=6,
                                              max_window_layers=1, rms_norm_eps=1e-6), 1e6),
     {"what": "Qwen2: q, k, v biases implied by model_type, tied, use_sliding_window with "
      "max_window_layers 1 (layers 1, 2 slide over 6), 4.x config"}),
    ("llama3-bias", form_5x(base_config("llama", head_dim=24, attention_bias=True, mlp_bias=True,
                                        num_key_value_heads=4),
                            500000.0, {"rope_type": "llama3", "factor": 8.0,
                                       "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                       "original_max_position_embeddings": 64}),
     {"what": "Llama with attention_bias (q, k, v, o) and mlp_bias, head_dim 24 != 64 / 4, "
      "Llama-3 rope (factor 8, bands 16..64) in 5.x rope_parameters"}),
    ("llama-yarn", form_4x(base_config("llama", max_position_embeddings=128), 10000.0,
                           {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32}),
     {"what": "Llama with YaRN rope (factor 4 over 32, attention factor 1.139) in a 4.x "
      "rope_scaling with the old \"type\" key"}),
    ("llama-dynamic", form_4x(base_config("llama", max_position_embeddings=8), 10000.0,
                              {"rope_type": "dynamic", "factor": 2.0}),
     {"what": "Llama with dynamic NTK rope: max_position_embeddings 8, so 12 tokens rescale the "
      "frequencies (HF's dynamic_rope_update)"}),
    ("llama-sinks", form_5x(base_config("llama", tl_sliding_window=4, tl_sink_tokens=2,
                                        tl_learned_sinks=True), 10000.0),
     {"what": "Llama with the course's tl_sliding_window 4, tl_sink_tokens 2 and "
      "tl_learned_sinks (gpt-oss's self_attn.sinks)"}),
    ("deepseek-v3", form_4x(base_config("deepseek_v3", num_hidden_layers=3, num_key_value_heads=4,
                                        intermediate_size=48, q_lora_rank=24, kv_lora_rank=16,
                                        qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=12,
                                        n_routed_experts=8, num_experts_per_tok=2, n_group=2,
                                        topk_group=1, moe_intermediate_size=32, n_shared_experts=1,
                                        first_k_dense_replace=1, routed_scaling_factor=2.5,
                                        norm_topk_prob=True, rope_interleave=True,
                                        num_nextn_predict_layers=1, topk_method="noaux_tc",
                                        scoring_func="sigmoid", max_position_embeddings=256,
                                        rms_norm_eps=1e-6),
                            10000.0, {"type": "yarn", "factor": 4.0, "mscale": 1.0,
                                      "mscale_all_dim": 1.0, "beta_fast": 32, "beta_slow": 1,
                                      "original_max_position_embeddings": 64}),
     {"mtp_layer": True, "what": "DeepSeek-V3: MLA (q_lora_rank 24, kv_lora_rank 16, rope 8 "
      "interleaved, yarn with mscale_all_dim), MoE from layer 1 (8 experts in 2 groups, "
      "top-2 of 1 group, a shared expert, correction bias), an MTP layer in the file"}),
    ("llama-mla-moe", form_5x(base_config("llama", head_dim=16, tl_attention="mla", tl_mla_rank=16,
                                          tl_mla_q_rank=None, tl_mla_rope_dim=8,
                                          tl_num_experts=4, num_experts_per_tok=2,
                                          moe_intermediate_size=32,
                                          shared_expert_intermediate_size=32,
                                          first_k_dense_replace=1), 10000.0),
     {"what": "Llama with the course's tl_attention \"mla\" (latent 16, rope 8, no q_lora) and "
      "tl_num_experts 4 from layer 1 (Qwen2-MoE experts with a gated shared expert)"}),
    ("llama-bf16-sharded", dict(form_4x(base_config("llama", num_hidden_layers=3), 10000.0),
                                torch_dtype="bfloat16"),
     {"bf16": True, "shard_bytes": 60000, "what": "Llama in BF16, sharded into "
      "model-0000k-of-0000n.safetensors with model.safetensors.index.json"}),
]


# ---- real config.json files from the Hub, as published -----------------------------------
# What from_hf must read; each with the parameter count its model card (or HF's
# num_parameters()) gives, which every test reproduces from the config alone.

SMOLLM2 = {
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 576,
    "initializer_range": 0.041666666666666664, "intermediate_size": 1536, "is_llama_config": True,
    "max_position_embeddings": 8192, "mlp_bias": False, "model_type": "llama",
    "num_attention_heads": 9, "num_hidden_layers": 30, "num_key_value_heads": 3,
    "pad_token_id": 2, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_interleaved": False,
    "rope_scaling": None, "rope_theta": 100000, "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "transformers.js_config": {"kv_cache_dtype": {"q4f16": "float16", "fp16": "float16"}},
    "transformers_version": "4.42.3", "use_cache": True, "vocab_size": 49152}
SMOLLM2_V5 = {k: v for k, v in SMOLLM2.items()
              if k not in ("rope_scaling", "rope_theta", "torch_dtype", "transformers_version")}
SMOLLM2_V5.update({"rope_parameters": {"rope_theta": 100000.0, "rope_type": "default"},
                   "dtype": "bfloat16", "transformers_version": "5.0.0"})
LLAMA32_1B = {
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": 128001, "head_dim": 64, "hidden_act": "silu",
    "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 8192,
    "max_position_embeddings": 131072, "mlp_bias": False, "model_type": "llama",
    "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    "transformers_version": "4.45.0.dev0", "use_cache": True, "vocab_size": 128256}
LLAMA31_8B = {
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "hidden_act": "silu",
    "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
    "max_position_embeddings": 131072, "mlp_bias": False, "model_type": "llama",
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "transformers_version": "4.42.3", "use_cache": True, "vocab_size": 128256}
TINYLLAMA = {
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "bos_token_id": 1,
    "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
    "intermediate_size": 5632, "max_position_embeddings": 2048, "model_type": "llama",
    "num_attention_heads": 32, "num_hidden_layers": 22, "num_key_value_heads": 4,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 10000.0,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.35.0",
    "use_cache": True, "vocab_size": 32000}
MISTRAL_V01 = {
    "architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
    "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mistral",
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.34.0.dev0",
    "use_cache": True, "vocab_size": 32000}
MISTRAL_V03 = {
    "architectures": ["MistralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1,
    "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mistral",
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "sliding_window": None,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.42.0.dev0",
    "use_cache": True, "vocab_size": 32768}
QWEN25_05B = {
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
    "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 21,
    "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24,
    "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
    "sliding_window": 32768, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    "transformers_version": "4.43.1", "use_cache": True, "use_sliding_window": False,
    "vocab_size": 151936}
QWEN25_05B_V5 = {k: v for k, v in QWEN25_05B.items()
                 if k not in ("rope_theta", "torch_dtype", "transformers_version")}
QWEN25_05B_V5.update({"rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"},
                      "layer_types": ["full_attention"] * 24, "sliding_window": None,
                      "dtype": "bfloat16", "transformers_version": "5.0.0"})
DEEPSEEK_V3 = {
    "architectures": ["DeepseekV3ForCausalLM"], "attention_bias": False,
    "attention_dropout": 0.0, "aux_loss_alpha": 0.001, "bos_token_id": 0, "eos_token_id": 1,
    "ep_size": 1, "first_k_dense_replace": 3, "hidden_act": "silu", "hidden_size": 7168,
    "initializer_range": 0.02, "intermediate_size": 18432, "kv_lora_rank": 512,
    "max_position_embeddings": 163840, "model_type": "deepseek_v3", "moe_intermediate_size": 2048,
    "moe_layer_freq": 1, "n_group": 8, "n_routed_experts": 256, "n_shared_experts": 1,
    "norm_topk_prob": True, "num_attention_heads": 128, "num_experts_per_tok": 8,
    "num_hidden_layers": 61, "num_key_value_heads": 128, "num_nextn_predict_layers": 1,
    "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                            "weight_block_size": [128, 128]},
    "rms_norm_eps": 1e-06,
    "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                     "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                     "type": "yarn"},
    "rope_theta": 10000, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid",
    "seq_aux": True, "tie_word_embeddings": False, "topk_group": 4, "topk_method": "noaux_tc",
    "torch_dtype": "bfloat16", "transformers_version": "4.33.1", "use_cache": True,
    "v_head_dim": 128, "vocab_size": 129280}
DEEPSEEK_V3_BF16 = {k: v for k, v in DEEPSEEK_V3.items() if k != "quantization_config"}

# file: (config, source, parameter count; None where the model is refused)
REAL_CONFIGS = {
    "smollm2-135m-instruct.json": (SMOLLM2, "HuggingFaceTB/SmolLM2-135M-Instruct", 134515008),
    "smollm2-135m-instruct-v5.json": (SMOLLM2_V5, "the same, saved by transformers 5",
                                      134515008),
    "llama-3.2-1b.json": (LLAMA32_1B, "meta-llama/Llama-3.2-1B", 1235814400),
    "llama-3.1-8b-instruct.json": (LLAMA31_8B, "meta-llama/Llama-3.1-8B-Instruct", 8030261248),
    "tinyllama-1.1b-chat.json": (TINYLLAMA, "TinyLlama/TinyLlama-1.1B-Chat-v1.0", 1100048384),
    "mistral-7b-v0.1.json": (MISTRAL_V01, "mistralai/Mistral-7B-v0.1", 7241732096),
    "mistral-7b-instruct-v0.3.json": (MISTRAL_V03, "mistralai/Mistral-7B-Instruct-v0.3",
                                      7248023552),
    "qwen2.5-0.5b-instruct.json": (QWEN25_05B, "Qwen/Qwen2.5-0.5B-Instruct", 494032768),
    "qwen2.5-0.5b-instruct-v5.json": (QWEN25_05B_V5, "the same, saved by transformers 5",
                                      494032768),
    "deepseek-v3.json": (DEEPSEEK_V3, "deepseek-ai/DeepSeek-V3 (FP8: refused)", None),
    "deepseek-v3-bf16.json": (DEEPSEEK_V3_BF16, "deepseek-ai/DeepSeek-V3 dequantized to BF16 "
                              "(the main model; the MTP layer is not counted)", 671026404352),
}


# ---- the standardised config the modules read --------------------------------------

class Cfg:
    """What transformers' config classes make of a config.json (their defaults included)."""

    def __init__(self, raw):
        self.raw = raw
        t = raw["model_type"]
        self.model_type = t
        g = raw.get
        self.vocab, self.hidden = g("vocab_size"), g("hidden_size")
        self.inter = g("intermediate_size")
        self.layers, self.heads = g("num_hidden_layers"), g("num_attention_heads")
        self.kv_heads = g("num_key_value_heads") or self.heads
        self.head_dim = g("head_dim") or self.hidden // self.heads
        self.eps = g("rms_norm_eps")
        self.tied = g("tie_word_embeddings", False)
        llama = t == "llama"
        self.qkv_bias = t == "qwen2" or (llama and g("attention_bias", False))
        self.o_bias = llama and g("attention_bias", False)
        self.mlp_bias = llama and g("mlp_bias", False)
        self.max_pos = g("max_position_embeddings")
        # rope: rope_scaling when a non-empty dict, else rope_parameters (5.x)
        d = g("rope_scaling") or g("rope_parameters") or {}
        self.rope = dict(d)
        self.rope_type = d.get("rope_type", d.get("type", "default"))
        self.theta = d.get("rope_theta", g("rope_theta", 10000.0))
        # windows
        self.windows = [0] * self.layers
        if t == "mistral":
            w = g("sliding_window", 4096)
            self.windows = [w or 0] * self.layers
        elif t == "qwen2":
            w = g("sliding_window", 4096) if g("use_sliding_window", False) else None
            for i in range(self.layers):
                if w is not None and i >= g("max_window_layers", 28):
                    self.windows[i] = w
        if g("tl_sliding_window"):
            self.windows = [g("tl_sliding_window")] * self.layers
        self.sinks = g("tl_sink_tokens", 0) or 0
        self.learned_sinks = bool(g("tl_learned_sinks", False))
        # MLA
        self.mla = t == "deepseek_v3" or g("tl_attention") == "mla"
        if t == "deepseek_v3":
            self.q_lora, self.kv_lora = g("q_lora_rank"), g("kv_lora_rank")
            self.nope, self.rope_dim = g("qk_nope_head_dim"), g("qk_rope_head_dim")
            self.v_dim = g("v_head_dim")
            self.interleave = g("rope_interleave", True)
            self.mla_bias = g("attention_bias", False)
        elif self.mla:
            self.q_lora, self.kv_lora = g("tl_mla_q_rank"), g("tl_mla_rank")
            self.rope_dim = g("tl_mla_rope_dim", self.head_dim // 2)
            self.nope, self.v_dim = self.head_dim - self.rope_dim, self.head_dim
            self.interleave = False
            self.mla_bias = g("attention_bias", False)
        # experts
        self.experts = 0
        if t == "deepseek_v3":
            self.experts, self.top_k = g("n_routed_experts"), g("num_experts_per_tok")
            self.moe_inter = g("moe_intermediate_size")
            self.first_dense = g("first_k_dense_replace")
            self.shared = g("moe_intermediate_size") * g("n_shared_experts")
            self.n_group, self.topk_group = g("n_group"), g("topk_group")
            self.norm_topk, self.scaling = g("norm_topk_prob", True), g("routed_scaling_factor")
            self.moe_kind = "deepseek_v3"
        elif g("tl_num_experts"):
            self.experts, self.top_k = g("tl_num_experts"), g("num_experts_per_tok", 2)
            self.moe_inter = g("moe_intermediate_size", self.inter)
            self.first_dense = g("first_k_dense_replace", 0)
            self.shared = g("shared_expert_intermediate_size", 0) or 0
            self.norm_topk = g("norm_topk_prob", False)
            self.moe_kind = "qwen2_moe"

    def rope_width(self):
        return self.rope_dim if self.mla else self.head_dim


# ---- modeling_rope_utils.py --------------------------------------------------------------

def default_inv_freq(base, dim):
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(torch.float) / dim))


def yarn_get_mscale(scale=1, mscale=1):
    if scale <= 1:
        return 1.0
    return 0.1 * mscale * math.log(scale) + 1.0


def rope_init(cfg, seq_len=None):
    """(inv_freq, attention_scaling) of ROPE_INIT_FUNCTIONS[rope_type]."""
    dim, base, r = cfg.rope_width(), cfg.theta, cfg.rope
    kind = cfg.rope_type
    if kind == "default":
        return default_inv_freq(base, dim), 1.0
    if kind == "dynamic":
        factor, max_pos = r["factor"], cfg.max_pos
        if seq_len is None:
            seq_len = max_pos
        else:   # a tensor: computed in float32 as HF's forward does
            seq_len = torch.maximum(seq_len, torch.tensor(max_pos, dtype=seq_len.dtype))
        base = base * ((factor * seq_len / max_pos) - (factor - 1)) ** (dim / (dim - 2))
        inv = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(torch.float) / dim))
        return inv, 1.0
    if kind == "llama3":
        inv = default_inv_freq(base, dim)
        factor, low, high = r["factor"], r["low_freq_factor"], r["high_freq_factor"]
        old = r["original_max_position_embeddings"]
        low_wl, high_wl = old / low, old / high
        wavelen = 2 * math.pi / inv
        inv_l = torch.where(wavelen > low_wl, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
        medium = ~(wavelen < high_wl) * ~(wavelen > low_wl)
        return torch.where(medium, smoothed, inv_l), 1.0
    if kind == "yarn":
        factor = r["factor"]
        orig = r.get("original_max_position_embeddings") or cfg.max_pos
        att = r.get("attention_factor")
        mscale, mscale_all = r.get("mscale"), r.get("mscale_all_dim")
        if att is None:
            if mscale and mscale_all:
                att = float(yarn_get_mscale(factor, mscale) / yarn_get_mscale(factor, mscale_all))
            else:
                att = yarn_get_mscale(factor)
        beta_fast, beta_slow = r.get("beta_fast") or 32, r.get("beta_slow") or 1

        def corr_dim(rot):
            return (dim * math.log(orig / (rot * 2 * math.pi))) / (2 * math.log(base))

        lo, hi = corr_dim(beta_fast), corr_dim(beta_slow)
        if r.get("truncate", True):
            lo, hi = math.floor(lo), math.ceil(hi)
        lo, hi = max(lo, 0), min(hi, dim - 1)
        if lo == hi:
            hi += 0.001
        ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - lo) / (hi - lo), 0, 1)
        pos_freqs = base ** (torch.arange(0, dim, 2).to(dtype=torch.float) / dim)
        extra, inter = 1.0 / pos_freqs, 1.0 / (factor * pos_freqs)
        ef = 1 - ramp
        return inter * (1 - ef) + extra * ef, att
    raise ValueError("rope type %s not in this oracle" % kind)


class Rotary:
    """LlamaRotaryEmbedding with dynamic_rope_update."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.inv_freq, self.scaling = rope_init(cfg)
        self.original = self.inv_freq
        self.max_seq_len_cached = self.original_max = cfg.max_pos

    def update(self, position_ids):
        if self.cfg.rope_type != "dynamic":
            return
        seq_len = torch.max(position_ids) + 1
        if seq_len > self.max_seq_len_cached:
            self.inv_freq, self.scaling = rope_init(self.cfg, seq_len)
            self.max_seq_len_cached = seq_len
        if seq_len < self.original_max and self.max_seq_len_cached > self.original_max:
            self.inv_freq, self.max_seq_len_cached = self.original, self.original_max

    def __call__(self, position_ids):
        self.update(position_ids)
        inv = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        freqs = (inv @ position_ids[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos() * self.scaling, emb.sin() * self.scaling


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(q, k, cos, sin):
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def apply_rope_interleave(q, k, cos, sin):
    b, h, s, d = q.shape
    q = q.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
    b, h, s, d = k.shape
    k = k.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
    return apply_rope(q, k, cos, sin)


# ---- modules ----------------------------------------------------------------------------

def rms_norm(x, w, eps):
    h = x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return w * h


def linear(x, p, name, bias=False):
    return F.linear(x, p[name + ".weight"], p.get(name + ".bias") if bias else None)


def mlp(x, p, pre, bias=False):
    g = linear(x, p, pre + ".gate_proj", bias)
    return linear(F.silu(g) * linear(x, p, pre + ".up_proj", bias), p, pre + ".down_proj", bias)


def repeat_kv(x, n):
    b, h, s, d = x.shape
    if n == 1:
        return x
    return x[:, :, None, :, :].expand(b, h, n, s, d).reshape(b, h * n, s, d)


def eager_attention(q, k, v, mask, scaling, sinks=None):
    groups = q.shape[1] // k.shape[1]
    k, v = repeat_kv(k, groups), repeat_kv(v, groups)
    w = torch.matmul(q, k.transpose(2, 3)) * scaling + mask[:, :, :, : k.shape[-2]]
    if sinks is None:
        w = F.softmax(w, dim=-1, dtype=torch.float32)
    else:       # gpt-oss: the sink joins each row, takes mass, adds no value
        s = sinks.reshape(1, -1, 1, 1).expand(q.shape[0], -1, q.shape[-2], -1)
        comb = torch.cat([w, s], dim=-1)
        comb = comb - comb.max(dim=-1, keepdim=True).values
        w = F.softmax(comb, dim=-1, dtype=comb.dtype)[..., :-1]
    return torch.matmul(w, v).transpose(1, 2).contiguous()


def make_mask(q_pos, k_pos, window, sinks):
    """[1, 1, T, S] additive: causal, kv > q - W with a window, kv < S sinks stay."""
    q, k = q_pos[:, None], k_pos[None, :]
    ok = k <= q
    if window:
        ok = ok & ((k > q - window) | (k < sinks))
    return torch.where(ok, 0.0, MIN)[None, None].to(torch.float32)


class Cache:
    """DynamicCache: per layer, every key and value so far."""

    def __init__(self):
        self.k, self.v = {}, {}

    def seq_len(self):
        return self.k[0].shape[-2] if 0 in self.k else 0

    def update(self, k, v, layer):
        if layer in self.k:
            k = torch.cat([self.k[layer], k], dim=-2)
            v = torch.cat([self.v[layer], v], dim=-2)
        self.k[layer], self.v[layer] = k, v
        return k, v


def gqa_attention(cfg, p, pre, x, cos, sin, mask, cache, layer):
    b, t, _ = x.shape
    d = cfg.head_dim
    q = linear(x, p, pre + ".q_proj", cfg.qkv_bias).view(b, t, -1, d).transpose(1, 2)
    k = linear(x, p, pre + ".k_proj", cfg.qkv_bias).view(b, t, -1, d).transpose(1, 2)
    v = linear(x, p, pre + ".v_proj", cfg.qkv_bias).view(b, t, -1, d).transpose(1, 2)
    q, k = apply_rope(q, k, cos, sin)
    if cache is not None:
        k, v = cache.update(k, v, layer)
    sinks = p.get(pre + ".sinks") if cfg.learned_sinks else None
    o = eager_attention(q, k, v, mask, d ** -0.5, sinks).reshape(b, t, -1)
    return linear(o, p, pre + ".o_proj", cfg.o_bias)


def mla_attention(cfg, p, pre, x, cos, sin, mask, cache, layer):
    b, t, _ = x.shape
    qk = cfg.nope + cfg.rope_dim
    if cfg.q_lora is None:
        q = linear(x, p, pre + ".q_proj")
    else:
        qa = linear(x, p, pre + ".q_a_proj", cfg.mla_bias)
        q = linear(rms_norm(qa, p[pre + ".q_a_layernorm.weight"], 1e-6), p, pre + ".q_b_proj")
    q = q.view(b, t, -1, qk).transpose(1, 2)
    q_pass, q_rot = torch.split(q, [cfg.nope, cfg.rope_dim], dim=-1)
    ckv = linear(x, p, pre + ".kv_a_proj_with_mqa", cfg.mla_bias)
    k_pass, k_rot = torch.split(ckv, [cfg.kv_lora, cfg.rope_dim], dim=-1)
    k_pass = rms_norm(k_pass, p[pre + ".kv_a_layernorm.weight"], 1e-6)
    k_pass = linear(k_pass, p, pre + ".kv_b_proj")
    k_pass = k_pass.view(b, t, -1, cfg.nope + cfg.v_dim).transpose(1, 2)
    k_pass, value = torch.split(k_pass, [cfg.nope, cfg.v_dim], dim=-1)
    k_rot = k_rot.view(b, 1, t, cfg.rope_dim)
    if cfg.interleave:
        q_rot, k_rot = apply_rope_interleave(q_rot, k_rot, cos, sin)
    else:
        q_rot, k_rot = apply_rope(q_rot, k_rot, cos, sin)
    k_rot = k_rot.expand(*k_pass.shape[:-1], -1)
    query = torch.cat((q_pass, q_rot), dim=-1)
    key = torch.cat((k_pass, k_rot), dim=-1)
    if cache is not None:
        key, value = cache.update(key, value, layer)
    scaling = qk ** -0.5
    if cfg.rope_type != "default" and cfg.rope.get("mscale_all_dim"):
        m = yarn_get_mscale(cfg.rope["factor"], cfg.rope["mscale_all_dim"])
        scaling = scaling * m * m
    o = eager_attention(query, key, value, mask, scaling).reshape(b, t, -1)
    return linear(o, p, pre + ".o_proj", cfg.mla_bias)


def deepseek_moe(cfg, p, pre, x, router_logits):
    shape = x.shape
    h = x.view(-1, shape[-1])
    logits = F.linear(h.float(), p[pre + ".gate.weight"].float())
    router_logits.append(logits)
    scores = logits.sigmoid()
    choice = scores + p[pre + ".gate.e_score_correction_bias"].unsqueeze(0)
    e = cfg.experts
    group_scores = choice.view(-1, cfg.n_group, e // cfg.n_group).topk(2, dim=-1)[0].sum(dim=-1)
    group_idx = torch.topk(group_scores, k=cfg.topk_group, dim=-1, sorted=False)[1]
    group_mask = torch.zeros_like(group_scores).scatter_(1, group_idx, 1)
    score_mask = group_mask.unsqueeze(-1).expand(-1, cfg.n_group, e // cfg.n_group).reshape(-1, e)
    masked = choice.masked_fill(~score_mask.bool(), 0.0)
    idx = torch.topk(masked, k=cfg.top_k, dim=-1, sorted=False)[1]
    check_margin("deepseek groups", group_scores, cfg.topk_group)
    check_margin("deepseek experts", masked, cfg.top_k)
    w = scores.gather(1, idx)
    if cfg.norm_topk:
        w = w / (w.sum(dim=-1, keepdim=True) + 1e-20)
    w = w * cfg.scaling
    out = experts_loop(cfg, p, pre, h, idx, w)
    return out.view(*shape) + mlp(x, p, pre + ".shared_experts")


def qwen2_moe(cfg, p, pre, x, router_logits):
    shape = x.shape
    h = x.view(-1, shape[-1])
    logits = F.linear(h, p[pre + ".gate.weight"])
    router_logits.append(logits)
    probs = F.softmax(logits, dim=1, dtype=torch.float)
    check_margin("qwen2_moe experts", probs, cfg.top_k)
    w, idx = torch.topk(probs, cfg.top_k, dim=-1)
    if cfg.norm_topk:
        w = w / w.sum(dim=-1, keepdim=True)
    out = experts_loop(cfg, p, pre, h, idx, w)
    if cfg.shared:
        gate = torch.sigmoid(F.linear(h, p[pre + ".shared_expert_gate.weight"]))
        out = out + gate * mlp(h, p, pre + ".shared_expert")
    return out.view(*shape)


def experts_loop(cfg, p, pre, h, idx, w):
    out = torch.zeros_like(h)
    mask = F.one_hot(idx, num_classes=cfg.experts).permute(2, 0, 1)
    for e in range(cfg.experts):
        tok, slot = torch.where(mask[e])
        if tok.numel() > 0:
            y = mlp(h[tok], p, "%s.experts.%d" % (pre, e)) * w[tok, slot].unsqueeze(-1)
            out.index_add_(0, tok, y)
    return out


MARGINS = {"routing": float("inf"), "greedy": float("inf")}


def check_margin(what, scores, k):
    """The k-th and (k+1)-th scores of every row must differ: a near tie could go either
    way in another summation order."""
    if k >= scores.shape[-1]:
        return
    top = torch.topk(scores.detach(), k + 1, dim=-1)[0]
    gap = float((top[..., k - 1] - top[..., k]).min())
    MARGINS["routing"] = min(MARGINS["routing"], gap)


class Model:
    def __init__(self, cfg, params):
        self.cfg, self.p = cfg, params
        self.rotary = Rotary(cfg)

    def forward(self, ids, cache=None, positions=None, router_logits=None):
        cfg, p = self.cfg, self.p
        t = ids.shape[1]
        past = cache.seq_len() if cache is not None else 0
        cache_pos = torch.arange(past, past + t)
        pos = cache_pos.unsqueeze(0) if positions is None else positions
        key_pos = torch.arange(0, past + t)
        h = F.embedding(ids, p["model.embed_tokens.weight"])
        cos, sin = self.rotary(pos)
        router_logits = [] if router_logits is None else router_logits
        for layer in range(cfg.layers):
            pre = "model.layers.%d" % layer
            mask = make_mask(cache_pos, key_pos, cfg.windows[layer], cfg.sinks)
            x = rms_norm(h, p[pre + ".input_layernorm.weight"], cfg.eps)
            attn = mla_attention if cfg.mla else gqa_attention
            h = h + attn(cfg, p, pre + ".self_attn", x, cos, sin, mask, cache, layer)
            x = rms_norm(h, p[pre + ".post_attention_layernorm.weight"], cfg.eps)
            if cfg.experts and layer >= cfg.first_dense:
                moe = deepseek_moe if cfg.moe_kind == "deepseek_v3" else qwen2_moe
                h = h + moe(cfg, p, pre + ".mlp", x, router_logits)
            else:
                h = h + mlp(x, p, pre + ".mlp", cfg.mlp_bias)
        h = rms_norm(h, p["model.norm.weight"], cfg.eps)
        head = p["model.embed_tokens.weight"] if cfg.tied else p["lm_head.weight"]
        return F.linear(h, head)


def load_balancing_loss(router_logits, num_experts, top_k):
    """models/mixtral/modeling_mixtral.py, load_balancing_loss_func without a mask."""
    logits = torch.cat(router_logits, dim=0)
    weights = F.softmax(logits, dim=-1)
    _, selected = torch.topk(weights, top_k, dim=-1)
    mask = F.one_hot(selected, num_experts)
    tokens_per_expert = torch.mean(mask.float(), dim=0)
    prob_per_expert = torch.mean(weights, dim=0)
    return torch.sum(tokens_per_expert * prob_per_expert.unsqueeze(0)) * num_experts


# ---- parameters: HF's names, in HF's state-dict order -------------------------------------

def param_shapes(cfg):
    """[(name, shape, kind)] in registration order; kind: matrix, norm, bias, sinks, buffer."""
    d, out = cfg.hidden, []
    out.append(("model.embed_tokens.weight", (cfg.vocab, d), "embed"))
    for l in range(cfg.layers):
        pre = "model.layers.%d" % l
        a = pre + ".self_attn"
        if cfg.mla:
            qk = cfg.nope + cfg.rope_dim
            if cfg.q_lora is None:
                out.append((a + ".q_proj.weight", (cfg.heads * qk, d), "matrix"))
            else:
                out.append((a + ".q_a_proj.weight", (cfg.q_lora, d), "matrix"))
                if cfg.mla_bias:
                    out.append((a + ".q_a_proj.bias", (cfg.q_lora,), "bias"))
                out.append((a + ".q_a_layernorm.weight", (cfg.q_lora,), "norm"))
                out.append((a + ".q_b_proj.weight", (cfg.heads * qk, cfg.q_lora), "matrix"))
            out.append((a + ".kv_a_proj_with_mqa.weight", (cfg.kv_lora + cfg.rope_dim, d),
                        "matrix"))
            if cfg.mla_bias:
                out.append((a + ".kv_a_proj_with_mqa.bias", (cfg.kv_lora + cfg.rope_dim,), "bias"))
            out.append((a + ".kv_a_layernorm.weight", (cfg.kv_lora,), "norm"))
            out.append((a + ".kv_b_proj.weight", (cfg.heads * (cfg.nope + cfg.v_dim), cfg.kv_lora),
                        "matrix"))
            out.append((a + ".o_proj.weight", (d, cfg.heads * cfg.v_dim), "matrix"))
            if cfg.mla_bias:
                out.append((a + ".o_proj.bias", (d,), "bias"))
        else:
            if cfg.learned_sinks:
                out.append((a + ".sinks", (cfg.heads,), "sinks"))
            qd, kvd = cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
            for name, rows, bias in (("q_proj", qd, cfg.qkv_bias), ("k_proj", kvd, cfg.qkv_bias),
                                     ("v_proj", kvd, cfg.qkv_bias)):
                out.append(("%s.%s.weight" % (a, name), (rows, d), "matrix"))
                if bias:
                    out.append(("%s.%s.bias" % (a, name), (rows,), "bias"))
            out.append((a + ".o_proj.weight", (d, qd), "matrix"))
            if cfg.o_bias:
                out.append((a + ".o_proj.bias", (d,), "bias"))
        m = pre + ".mlp"
        if cfg.experts and l >= cfg.first_dense:
            def expert(prefix, inter):
                return [(prefix + ".gate_proj.weight", (inter, d), "matrix"),
                        (prefix + ".up_proj.weight", (inter, d), "matrix"),
                        (prefix + ".down_proj.weight", (d, inter), "matrix")]
            if cfg.moe_kind == "deepseek_v3":   # experts, gate, shared_experts
                for e in range(cfg.experts):
                    out += expert("%s.experts.%d" % (m, e), cfg.moe_inter)
                out.append((m + ".gate.weight", (cfg.experts, d), "matrix"))
                out.append((m + ".gate.e_score_correction_bias", (cfg.experts,), "buffer"))
                out += expert(m + ".shared_experts", cfg.shared)
            else:                               # gate, experts, shared_expert, its gate
                out.append((m + ".gate.weight", (cfg.experts, d), "matrix"))
                for e in range(cfg.experts):
                    out += expert("%s.experts.%d" % (m, e), cfg.moe_inter)
                if cfg.shared:
                    out += expert(m + ".shared_expert", cfg.shared)
                    out.append((m + ".shared_expert_gate.weight", (1, d), "matrix"))
        else:
            for name, shape in (("gate_proj", (cfg.inter, d)), ("up_proj", (cfg.inter, d)),
                                ("down_proj", (d, cfg.inter))):
                out.append(("%s.%s.weight" % (m, name), shape, "matrix"))
                if cfg.mlp_bias:
                    out.append(("%s.%s.bias" % (m, name), (shape[0],), "bias"))
        out.append((pre + ".input_layernorm.weight", (d,), "norm"))
        out.append((pre + ".post_attention_layernorm.weight", (d,), "norm"))
    out.append(("model.norm.weight", (d,), "norm"))
    if not cfg.tied:
        out.append(("lm_head.weight", (cfg.vocab, d), "matrix"))
    return out


def draw_params(cfg, gen, bf16):
    """Weights with scales that make every part matter (see the docstring)."""
    p = {}
    for name, shape, kind in param_shapes(cfg):
        r = torch.randn(*shape, generator=gen, dtype=torch.float32)
        if kind == "embed":
            v = r
        elif kind == "matrix":
            fan_in = shape[1]
            gain = 3.0 if name == "lm_head.weight" else 1.0
            v = r * gain / math.sqrt(fan_in)
        elif kind == "norm":
            v = 1.0 + 0.3 * r
        elif kind == "bias":
            v = 0.3 * r
        elif kind == "sinks":
            v = 0.5 + r
        else:                       # the correction bias: enough to change some choices
            v = 0.3 * r
        if bf16:
            v = v.to(torch.bfloat16).to(torch.float32)   # what the BF16 file holds
        p[name] = v
    return p


# ---- writing files as HF does -------------------------------------------------------------

def write_checkpoint(folder, cfg, raw_config, params, opts):
    os.makedirs(folder, exist_ok=True)
    dtype = torch.bfloat16 if opts.get("bf16") else torch.float32
    stored = {name: v.to(dtype) for name, v in params.items()}
    if opts.get("store_tied_head"):          # some tied checkpoints keep the copy
        stored["lm_head.weight"] = stored["model.embed_tokens.weight"].clone()
    if opts.get("inv_freq_buffers"):          # transformers < 4.31 saved these buffers
        inv, _ = rope_init(cfg)
        for l in range(cfg.layers):
            stored["model.layers.%d.self_attn.rotary_emb.inv_freq" % l] = inv.to(dtype)
    if opts.get("mtp_layer"):                 # DeepSeek-V3's multi-token prediction layer
        g = torch.Generator().manual_seed(7)
        n = "model.layers.%d" % cfg.layers
        for name, shape in ((".enorm.weight", (cfg.hidden,)), (".hnorm.weight", (cfg.hidden,)),
                            (".eh_proj.weight", (cfg.hidden, 2 * cfg.hidden)),
                            (".shared_head.norm.weight", (cfg.hidden,))):
            stored[n + name] = torch.randn(*shape, generator=g).to(dtype)
    shard = opts.get("shard_bytes")
    if shard:
        # huggingface_hub's split: in state-dict order, a shard closes when the next
        # tensor would overflow it.
        order = [n for n, _, _ in param_shapes(cfg) if n in stored]
        shards, cur, size = [], {}, 0
        for name in order:
            nbytes = stored[name].numel() * stored[name].element_size()
            if cur and size + nbytes > shard:
                shards.append(cur)
                cur, size = {}, 0
            cur[name] = stored[name]
            size += nbytes
        shards.append(cur)
        weight_map, total = {}, 0
        for k, part in enumerate(shards):
            fname = "model-%05d-of-%05d.safetensors" % (k + 1, len(shards))
            write_atomic(os.path.join(folder, fname), safetensors_bytes(part))
            for name, t in part.items():
                weight_map[name] = fname
                total += t.numel() * t.element_size()
        write_json(os.path.join(folder, "model.safetensors.index.json"),
                   {"metadata": {"total_size": total}, "weight_map": weight_map})
    else:
        write_atomic(os.path.join(folder, "model.safetensors"), safetensors_bytes(stored))
    write_json(os.path.join(folder, "config.json"), raw_config)
    gen_cfg = {"bos_token_id": raw_config.get("bos_token_id"),
               "eos_token_id": raw_config.get("eos_token_id"), "_from_model_config": True}
    write_json(os.path.join(folder, "generation_config.json"), gen_cfg)
    tok = opts.get("tokenizer", "tiny-bytelevel")
    src = os.path.join("fixtures", "tokenizer", tok)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        if os.path.isfile(os.path.join(src, f)):
            shutil.copyfile(os.path.join(src, f), os.path.join(folder, f))


# ---- the goldens -----------------------------------------------------------------------

def greedy(model, prompt, n, use_cache):
    """Greedy ids after the prompt; HF's generate with and without a cache."""
    ids, out = prompt.clone(), []
    cache = Cache() if use_cache else None
    step_input = ids
    for _ in range(n):
        logits = model.forward(step_input if use_cache else ids, cache)[0, -1]
        top = torch.topk(logits, 2).values
        MARGINS["greedy"] = min(MARGINS["greedy"], float(top[0] - top[1]))
        nxt = int(torch.argmax(logits))
        out.append(nxt)
        ids = torch.cat([ids, torch.tensor([[nxt]])], dim=1)
        step_input = torch.tensor([[nxt]])
    return out


def hf_param_count(cfg):
    """num_parameters(): parameters only (not the correction buffer), a tied head once."""
    return sum(math.prod(s) for _, s, k in param_shapes(cfg) if k != "buffer")


def build(gen, out_dir):
    tensors, meta = {}, {}
    for name, raw, opts in CHECKPOINTS:
        cfg = Cfg(raw)
        params = draw_params(cfg, gen, opts.get("bf16", False))
        write_checkpoint(os.path.join(out_dir, name), cfg, raw, params, opts)
        ids = torch.randint(3, VOCAB, (B, T), generator=gen, dtype=torch.int64)
        model = Model(cfg, params)
        router = []
        with torch.no_grad():
            logits = model.forward(ids, router_logits=router)
        tensors[name + ".ids"] = ids
        tensors[name + ".logits"] = logits.contiguous()
        entry = {"what": opts["what"], "hf_param_count": hf_param_count(cfg),
                 "state_dict_keys": [n for n, _, _ in param_shapes(cfg)]}
        if cfg.experts:
            aux = load_balancing_loss(router, cfg.experts, cfg.top_k)
            tensors[name + ".aux_loss"] = aux.reshape(1).contiguous()
        prompt = ids[:1, :PROMPT_LEN]
        with torch.no_grad():
            entry["prompt_ids"] = prompt[0].tolist()
            entry["greedy_ids"] = greedy(Model(cfg, params), prompt, NEW_TOKENS, False)
            entry["greedy_ids_cached"] = greedy(Model(cfg, params), prompt, NEW_TOKENS, True)
        meta[name] = entry
    return tensors, meta


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: %s OUT_DIR   (writes OUT_DIR/L7.9/...)" % argv[0])
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(SEED)
    out_dir = os.path.join(argv[1], "L7.9")
    os.makedirs(out_dir, exist_ok=True)
    tensors, checkpoints = build(gen, out_dir)
    for what, floor in (("greedy", GREEDY_FLOOR), ("routing", ROUTING_FLOOR)):
        if MARGINS[what] < floor:
            sys.exit("oracle: the smallest %s margin is %.3g < %.3g: a near tie; change SEED"
                     % (what, MARGINS[what], floor))
    write_atomic(os.path.join(out_dir, "llama.safetensors"), safetensors_bytes(tensors))
    meta = {
        "lesson": "L7.9",
        "oracle": "oracle/L7.9/make_fixtures.py",
        "oracle_semantics": "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM and "
                            "DeepseekV3ForCausalLM re-implemented from transformers' sources "
                            "(modeling_llama.py, modeling_mistral.py, modeling_qwen2.py, "
                            "modeling_deepseek_v3.py, modeling_rope_utils.py, masking_utils.py, "
                            "gpt_oss and qwen2_moe for sinks and experts), float32, eager; "
                            "transformers itself not installed",
        "torch_version": torch.__version__,
        "numpy_version": np.__version__,
        "seed": SEED,
        "inputs": {"B": B, "T": T, "prompt_len": PROMPT_LEN, "new_tokens": NEW_TOKENS},
        # two significant digits: a margin is a difference of logits up to ~30, so its
        # further digits are float32 rounding that another CPU's sum order changes
        # (`ol fixtures L7.9 --check` compares JSON values exactly)
        "margins": {"greedy_min": float("%.2g" % MARGINS["greedy"]),
                    "routing_min": float("%.2g" % MARGINS["routing"])},
        "checkpoints": checkpoints,
        "tensors": {
            "<checkpoint>.ids": "I64 [B, T]: token ids, positions 0 .. T-1",
            "<checkpoint>.logits": "F32 [B, T, vocab]: HF's logits of those ids",
            "<checkpoint>.aux_loss": "F32 [1]: load_balancing_loss_func over every MoE layer's "
                                     "router logits of that forward (MoE checkpoints)",
        },
        "tolerances": TOLERANCES,
    }
    meta["real_configs"] = {f: {"source": src, "param_count": n}
                            for f, (_, src, n) in REAL_CONFIGS.items() if n is not None}
    os.makedirs(os.path.join(out_dir, "configs"), exist_ok=True)
    for f, (cfg, _, _) in REAL_CONFIGS.items():
        write_json(os.path.join(out_dir, "configs", f), cfg)
    write_json(os.path.join(out_dir, "llama.json"), meta)


if __name__ == "__main__":
    main(sys.argv)
