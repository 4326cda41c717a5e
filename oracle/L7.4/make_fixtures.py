#!/usr/bin/python3
"""Golden data for L7.4 (long-context RoPE scaling).

Run from the repository root:  /usr/bin/python3 oracle/L7.4/make_fixtures.py OUT_DIR
Writes into OUT_DIR/L7.4/: config.<case>.json (the config.json texts the tests parse),
rope_scaling.safetensors (inverse frequencies and cos/sin tables) and rope_scaling.json
(attention factors, correction ranges, tolerances, metadata).

The oracle. transformers is not installed here, so what the course matches is
re-implemented from transformers 5's src/transformers/modeling_rope_utils.py:
  - RotaryEmbeddingConfigMixin.convert_rope_params_to_dict and standardize_rope_params
    (which dict wins, rope_type from "rope_type" or "type", rope_theta's default,
    original_max_position_embeddings for llama3/yarn/longrope, partial_rotary_factor);
  - _compute_linear_scaling_rope_parameters, _compute_dynamic_ntk_parameters,
    _compute_yarn_parameters, _compute_longrope_parameters, _compute_llama3_parameters
    and the default of models/llama/modeling_llama.py, line for line, in torch;
  - dynamic_rope_update (dynamic_frequency_update, longrope_frequency_update) and
    LlamaRotaryEmbedding.forward, for the update rule and the cos/sin tables.
The rotary dimension is passed in (the C function takes it) instead of being read from
head_dim: every formula is the same.

Reproducible: one seeded generator, one thread, sorted writers, so a rerun gives the
same bytes (`ol fixtures L7.4 --check`).
"""
import json
import math
import os
import sys

import numpy as np
import torch

# HF's file layout, written once for every oracle: oracle/common/fixture_io.py
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from fixture_io import safetensors_bytes, write_atomic, write_json  # noqa: E402

SEED = 20240704
DEFAULT_THETA = 10000.0

# Per-test tolerances, read by the course tests and the model-answer tests. The
# frequencies are a handful of float32 operations: the reference agrees with torch to
# an ulp or two (glibc's powf against torch's vectorised Sleef pow; a correct variant
# computing in double differs by an ulp elsewhere); attention factors are double
# arithmetic on the same formula. The tables at position 4097 multiply such an error of
# inv_freq (up to two ulps, 2.4e-7 relative) by 4097 * inv * a: up to 1e-3 for inv < 1,
# a <= 1.35, hence their atol; every mutant that reaches them moves them by more than 0.3.
TOLERANCES = {
    "test_hand_example_llama31_bands": {"rtol": 1e-5, "atol": 0.0},
    "test_golden_inv_freq_every_type": {"rtol": 1e-6, "atol": 0.0},
    "test_golden_attention_factors": {"rtol": 1e-12, "atol": 1e-12},
    "test_yarn_worked_values": {"rtol": 1e-12, "atol": 1e-12},
    "test_dynamic_ntk_beyond_max_position": {"rtol": 1e-6, "atol": 0.0},
    "test_dynamic_update_rule_matches_hf": {"rtol": 1e-6, "atol": 0.0},
    "test_longrope_switch_at_original": {"rtol": 1e-6, "atol": 0.0},
    "test_golden_scaled_tables_match_hf": {"rtol": 0.0, "atol": 1e-3},
}


# ---- config.json texts: each in the form its model ships ---------------------------
def phi3_factors(gen, n):
    short = 1.0 + 0.1 * torch.rand(n, generator=gen, dtype=torch.float64)
    long = torch.sort(1.0 + 50.0 * torch.rand(n, generator=gen, dtype=torch.float64)).values
    return [round(float(v), 6) for v in short], [round(float(v), 6) for v in long]


def configs(gen):
    short96, long96 = phi3_factors(gen, 48)
    short16, long16 = phi3_factors(gen, 16)
    return {
        # SmolLM2-135M, saved by transformers 5: rope_parameters with rope_theta inside.
        "default_smollm2": {"model_type": "llama", "hidden_size": 576, "num_attention_heads": 9,
                            "max_position_embeddings": 8192,
                            "rope_parameters": {"rope_type": "default", "rope_theta": 100000.0}},
        # Mixtral without rope_theta: its config class defaults to 1e6.
        "default_mixtral": {"model_type": "mixtral", "hidden_size": 4096,
                            "num_attention_heads": 32, "max_position_embeddings": 32768,
                            "rope_scaling": None},
        # 4.x, keyed by "type" (Code Llama-era linear scaling).
        "linear": {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 8,
                   "max_position_embeddings": 4096, "rope_theta": 10000.0,
                   "rope_scaling": {"type": "linear", "factor": 4.0}},
        # 5.x, partial rotary in the dict: rotary_dim 32 of head_dim 64.
        "linear_partial": {"model_type": "phi", "hidden_size": 512, "num_attention_heads": 8,
                           "max_position_embeddings": 2048,
                           "rope_parameters": {"rope_type": "linear", "factor": 2.0,
                                               "rope_theta": 10000.0,
                                               "partial_rotary_factor": 0.5}},
        "dynamic": {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 8,
                    "max_position_embeddings": 256, "rope_theta": 10000.0,
                    "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}},
        # gpt-oss: no truncation of the correction range.
        "yarn_gpt_oss": {"model_type": "gpt_oss", "hidden_size": 2880, "head_dim": 64,
                         "num_attention_heads": 64, "max_position_embeddings": 131072,
                         "rope_theta": 150000.0,
                         "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                                          "original_max_position_embeddings": 4096,
                                          "rope_type": "yarn", "truncate": False}},
        # DeepSeek-V3: "type", mscale = mscale_all_dim, rope on qk_rope_head_dim = 64.
        "yarn_deepseek_v3": {"model_type": "deepseek_v3", "hidden_size": 7168,
                             "num_attention_heads": 128, "qk_rope_head_dim": 64,
                             "max_position_embeddings": 163840, "rope_theta": 10000,
                             "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40,
                                              "mscale": 1.0, "mscale_all_dim": 1.0,
                                              "original_max_position_embeddings": 4096,
                                              "type": "yarn"}},
        # Qwen3-style yarn in the 5.x form: defaults for beta, truncate and a.
        "yarn_qwen_v5": {"model_type": "qwen3", "hidden_size": 4096, "head_dim": 128,
                         "num_attention_heads": 32, "max_position_embeddings": 131072,
                         "rope_parameters": {"rope_type": "yarn", "factor": 4.0,
                                             "original_max_position_embeddings": 32768,
                                             "rope_theta": 1000000.0}},
        # factor null (derived: 8192 / 2048 = 4), an explicit attention_factor, beta_fast 16.
        "yarn_derived_factor": {"model_type": "llama", "hidden_size": 512,
                                "num_attention_heads": 8, "max_position_embeddings": 8192,
                                "rope_theta": 10000.0,
                                "rope_scaling": {"type": "yarn", "factor": None,
                                                 "attention_factor": 0.8, "beta_fast": 16,
                                                 "original_max_position_embeddings": 2048}},
        # Phi-3-mini-128k's shape: "type" longrope, the pretraining length at the top level.
        "longrope_phi3": {"model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 32,
                          "max_position_embeddings": 131072,
                          "original_max_position_embeddings": 4096, "rope_theta": 10000.0,
                          "rope_scaling": {"type": "longrope", "short_factor": short96,
                                           "long_factor": long96}},
        # 5.x longrope with an explicit factor and attention_factor.
        "longrope_explicit": {"model_type": "phi3", "hidden_size": 256,
                              "num_attention_heads": 8, "max_position_embeddings": 16384,
                              "rope_parameters": {"rope_type": "longrope", "factor": 8.0,
                                                  "attention_factor": 1.25,
                                                  "short_factor": short16,
                                                  "long_factor": long16,
                                                  "original_max_position_embeddings": 2048,
                                                  "rope_theta": 10000.0}},
        # Llama-3.1-8B: head_dim 128 from 4096 / 32.
        "llama3_llama31": {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
                           "max_position_embeddings": 131072, "rope_theta": 500000.0,
                           "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0,
                                            "low_freq_factor": 1.0,
                                            "original_max_position_embeddings": 8192,
                                            "rope_type": "llama3"}},
        # Llama-3.2-1B: factor 32, head_dim 64.
        "llama3_llama32": {"model_type": "llama", "hidden_size": 2048, "num_attention_heads": 32,
                           "max_position_embeddings": 131072, "rope_theta": 500000.0,
                           "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0,
                                            "low_freq_factor": 1.0,
                                            "original_max_position_embeddings": 8192,
                                            "rope_type": "llama3"}},
    }


# The rotary dimension of each case (int(head_dim * partial_rotary_factor)) and the
# sequence lengths it is evaluated at (0: initialisation, seq_len=None in HF).
CASES = {
    "default_smollm2": (64, [0]),
    "default_mixtral": (128, [0]),
    "linear": (32, [0]),
    "linear_partial": (32, [0]),
    "dynamic": (32, [0, 200, 256, 300, 1000]),
    "yarn_gpt_oss": (64, [0]),
    "yarn_deepseek_v3": (64, [0]),
    "yarn_qwen_v5": (128, [0]),
    "yarn_derived_factor": (64, [0]),
    "longrope_phi3": (96, [0, 4096, 4097, 10000]),
    "longrope_explicit": (32, [0, 2049]),
    "llama3_llama31": (128, [0]),
    "llama3_llama32": (64, [0]),
}
DYNAMIC_SEQUENCE = [100, 300, 280, 500, 256, 100, 300]     # max(position) + 1 per forward
TABLE_POSITIONS = [0, 1, 7, 100, 4097]


# ---- RotaryEmbeddingConfigMixin (configuration_utils / modeling_rope_utils) ----------
class Config:
    """What a PreTrainedConfig holds after __init__: every config.json key as an
    attribute, rope_scaling folded into a standardised rope_parameters."""

    def __init__(self, d):
        kwargs = json.loads(json.dumps(d))          # a deep copy
        self.default_theta = 1e6 if kwargs.get("model_type") == "mixtral" else DEFAULT_THETA
        self.rope_parameters = kwargs.pop("rope_parameters", None)
        rope_scaling = kwargs.pop("rope_scaling", None)
        rope_theta_kw = kwargs.pop("rope_theta", None)
        for k, v in kwargs.items():
            setattr(self, k, v)
        # convert_rope_params_to_dict
        self.rope_parameters = rope_scaling or self.rope_parameters
        self.rope_parameters = self.rope_parameters if self.rope_parameters is not None else {}
        rope_theta = rope_theta_kw if rope_theta_kw is not None else self.default_theta
        self.rope_parameters.setdefault("rope_theta", rope_theta)
        prf = kwargs.get("partial_rotary_factor", getattr(self, "partial_rotary_factor", None))
        if prf is not None:
            self.rope_parameters.setdefault("partial_rotary_factor", prf)
        self.standardize_rope_params(rope_theta)

    def standardize_rope_params(self, rope_theta):
        rp = self.rope_parameters
        prf = getattr(self, "partial_rotary_factor", None)
        rp.setdefault("rope_type", rp.get("type", "default"))
        rp.setdefault("rope_theta", rope_theta)
        if prf is not None:
            rp["partial_rotary_factor"] = prf
        if rp["rope_type"] in ["llama3", "yarn", "longrope"]:
            if hasattr(self, "original_max_position_embeddings"):
                rp["original_max_position_embeddings"] = self.original_max_position_embeddings
            else:
                rp.setdefault("original_max_position_embeddings", self.max_position_embeddings)


# ---- modeling_rope_utils.py's compute functions (dim passed in) ----------------------
def exponents(dim):
    """torch.arange(0, dim, 2, dtype=torch.int64).to(dtype=torch.float) / dim"""
    return torch.arange(0, dim, 2, dtype=torch.int64).to(dtype=torch.float) / dim


def compute_default(cfg, dim, seq_len=None):
    base = cfg.rope_parameters["rope_theta"]
    inv_freq = 1.0 / (base ** exponents(dim))
    return inv_freq, 1.0


def compute_linear(cfg, dim, seq_len=None):
    rp = cfg.rope_parameters
    factor = rp["factor"]
    base = rp["rope_theta"]
    inv_freq = 1.0 / (base ** exponents(dim))
    inv_freq /= factor
    return inv_freq, 1.0


def compute_dynamic(cfg, dim, seq_len=None):
    rp = cfg.rope_parameters
    base = rp["rope_theta"]
    factor = rp["factor"]
    if seq_len is None:
        seq_len = cfg.max_position_embeddings
    elif isinstance(seq_len, torch.Tensor):
        seq_len = torch.maximum(seq_len, torch.tensor(cfg.max_position_embeddings,
                                                      dtype=seq_len.dtype))
    else:
        seq_len = max(seq_len, cfg.max_position_embeddings)
    base = base * ((factor * seq_len / cfg.max_position_embeddings)
                   - (factor - 1)) ** (dim / (dim - 2))
    inv_freq = 1.0 / (base ** exponents(dim))
    return inv_freq, 1.0


def find_correction_dim(num_rotations, dim, base, max_position_embeddings):
    return ((dim * math.log(max_position_embeddings / (num_rotations * 2 * math.pi)))
            / (2 * math.log(base)))


def find_correction_range(low_rot, high_rot, dim, base, max_position_embeddings, truncate):
    low = find_correction_dim(low_rot, dim, base, max_position_embeddings)
    high = find_correction_dim(high_rot, dim, base, max_position_embeddings)
    if truncate:
        low = math.floor(low)
        high = math.ceil(high)
    return max(low, 0), min(high, dim - 1)


def linear_ramp_factor(min, max, dim):
    if min == max:
        max += 0.001
    linear_func = (torch.arange(dim, dtype=torch.float32) - min) / (max - min)
    return torch.clamp(linear_func, 0, 1)


def get_mscale(scale, mscale=1):
    if scale <= 1:
        return 1.0
    return 0.1 * mscale * math.log(scale) + 1.0


def compute_yarn(cfg, dim, seq_len=None):
    rp = cfg.rope_parameters
    base = rp["rope_theta"]
    factor = rp["factor"]
    attention_factor = rp.get("attention_factor")
    mscale = rp.get("mscale")
    mscale_all_dim = rp.get("mscale_all_dim")
    orig = rp["original_max_position_embeddings"]
    if factor is None:
        factor = cfg.max_position_embeddings / orig
    if attention_factor is None:
        if mscale and mscale_all_dim:
            attention_factor = float(get_mscale(factor, mscale)
                                     / get_mscale(factor, mscale_all_dim))
        else:
            attention_factor = get_mscale(factor)
    beta_fast = rp.get("beta_fast") or 32
    beta_slow = rp.get("beta_slow") or 1
    pos_freqs = base ** (torch.arange(0, dim, 2).to(dtype=torch.float) / dim)
    inv_freq_extrapolation = 1.0 / pos_freqs
    inv_freq_interpolation = 1.0 / (factor * pos_freqs)
    truncate = rp.get("truncate", True)
    low, high = find_correction_range(beta_fast, beta_slow, dim, base, orig, truncate)
    inv_freq_extrapolation_factor = 1 - linear_ramp_factor(low, high, dim // 2).to(
        dtype=torch.float)
    inv_freq = (inv_freq_interpolation * (1 - inv_freq_extrapolation_factor)
                + inv_freq_extrapolation * inv_freq_extrapolation_factor)
    return inv_freq, attention_factor, (low, high)


def compute_longrope(cfg, dim, seq_len=None):
    rp = cfg.rope_parameters
    base = rp["rope_theta"]
    long_factor = rp["long_factor"]
    short_factor = rp["short_factor"]
    factor = rp.get("factor")
    attention_factor = rp.get("attention_factor")
    orig = rp["original_max_position_embeddings"]
    if factor is None:
        factor = cfg.max_position_embeddings / orig
    if attention_factor is None:
        if factor <= 1.0:
            attention_factor = 1.0
        else:
            attention_factor = math.sqrt(1 + math.log(factor) / math.log(orig))
    if seq_len and seq_len > orig:
        ext_factors = torch.tensor(long_factor, dtype=torch.float32)
    else:
        ext_factors = torch.tensor(short_factor, dtype=torch.float32)
    inv_freq_shape = torch.arange(0, dim, 2, dtype=torch.int64).float() / dim
    inv_freq = 1.0 / (ext_factors * base ** inv_freq_shape)
    return inv_freq, attention_factor


def compute_llama3(cfg, dim, seq_len=None):
    rp = cfg.rope_parameters
    base = rp["rope_theta"]
    inv_freq = 1.0 / (base ** exponents(dim))
    factor = rp["factor"]
    low_freq_factor = rp["low_freq_factor"]
    high_freq_factor = rp["high_freq_factor"]
    old_context_len = rp["original_max_position_embeddings"]
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = ((old_context_len / wavelen - low_freq_factor)
                     / (high_freq_factor - low_freq_factor))
    smoothed_inv_freq = ((1 - smooth_factor) * inv_freq_llama / factor
                         + smooth_factor * inv_freq_llama)
    is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    inv_freq_llama = torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)
    return inv_freq_llama, 1.0


INIT = {"default": compute_default, "linear": compute_linear, "dynamic": compute_dynamic,
        "yarn": lambda c, d, s=None: compute_yarn(c, d, s)[:2], "longrope": compute_longrope,
        "llama3": compute_llama3}


class RotaryEmbedding:
    """LlamaRotaryEmbedding with dynamic_rope_update, for one rotary dimension."""

    def __init__(self, cfg, dim):
        self.cfg, self.dim = cfg, dim
        self.rope_type = cfg.rope_parameters["rope_type"]
        self.max_seq_len_cached = cfg.max_position_embeddings
        self.original_max_seq_len = cfg.max_position_embeddings
        self.inv_freq, self.attention_scaling = INIT[self.rope_type](cfg, dim)
        self.original_inv_freq = self.inv_freq

    def update(self, position_ids):                  # dynamic_rope_update's wrapper
        seq_len = torch.max(position_ids) + 1
        if "dynamic" in self.rope_type:
            max_seq_len_cached = self.max_seq_len_cached
            if seq_len > max_seq_len_cached:
                self.inv_freq, self.attention_scaling = INIT[self.rope_type](self.cfg, self.dim,
                                                                             seq_len=seq_len)
                self.max_seq_len_cached = seq_len
            if (seq_len < self.original_max_seq_len
                    and max_seq_len_cached > self.original_max_seq_len):
                self.inv_freq = self.original_inv_freq
                self.max_seq_len_cached = self.original_max_seq_len
        elif self.rope_type == "longrope":
            orig = self.cfg.rope_parameters["original_max_position_embeddings"]
            if seq_len > orig:
                self.inv_freq, _ = INIT["longrope"](self.cfg, self.dim, seq_len=orig + 1)
            else:
                self.inv_freq = self.original_inv_freq

    def forward(self, position_ids):
        self.update(position_ids)
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(
            position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos() * self.attention_scaling, emb.sin() * self.attention_scaling


def build(gen):
    texts = configs(gen)
    tensors, numbers = {}, {}
    for name, (dim, seq_lens) in CASES.items():
        cfg = Config(texts[name])
        values = numbers[name] = {"attention_factor": {}}
        rope_type = cfg.rope_parameters["rope_type"]
        for seq_len in seq_lens:
            if rope_type == "dynamic" and seq_len > cfg.max_position_embeddings:
                # What the forward computes: seq_len is then a tensor (float32 arithmetic).
                rope = RotaryEmbedding(cfg, dim)
                rope.update(torch.arange(seq_len)[None, :])
                inv, a = rope.inv_freq, rope.attention_scaling
            else:
                inv, a = INIT[rope_type](cfg, dim, seq_len if seq_len else None)
            tensors["%s.seq%d.inv_freq" % (name, seq_len)] = inv
            values["attention_factor"]["seq%d" % seq_len] = float(a)
        values["theta"] = float(cfg.rope_parameters["rope_theta"])
        values["rotary_dim"] = dim
        if rope_type == "yarn":
            _, _, (low, high) = compute_yarn(cfg, dim)
            values["correction_low"], values["correction_high"] = float(low), float(high)

    # HF's dynamic update rule over a sequence of forwards of growing and shrinking length.
    cfg = Config(texts["dynamic"])
    rope = RotaryEmbedding(cfg, CASES["dynamic"][0])
    numbers["dynamic"]["max_seq_len_cached"] = {}
    for k, seq_len in enumerate(DYNAMIC_SEQUENCE):
        rope.forward(torch.arange(seq_len)[None, :])
        tensors["dynamic.update%d.inv_freq" % k] = rope.inv_freq
        numbers["dynamic"]["max_seq_len_cached"]["update%d" % k] = int(rope.max_seq_len_cached)

    # The tables HF's forward makes with scaled frequencies (cos, sin times a).
    for name in ("yarn_gpt_oss", "llama3_llama31", "longrope_phi3"):
        cfg = Config(texts[name])
        rope = RotaryEmbedding(cfg, CASES[name][0])
        cos, sin = rope.forward(torch.tensor([TABLE_POSITIONS]))
        tensors["%s.table.cos" % name], tensors["%s.table.sin" % name] = cos[0], sin[0]
    arrays = {k: v.detach().contiguous().numpy().astype(np.float32) for k, v in tensors.items()}
    return texts, arrays, numbers


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: %s OUT_DIR   (writes OUT_DIR/L7.4/...)" % argv[0])
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(SEED)
    texts, arrays, numbers = build(gen)
    out_dir = os.path.join(argv[1], "L7.4")
    os.makedirs(out_dir, exist_ok=True)
    for name, d in texts.items():
        write_json(os.path.join(out_dir, "config.%s.json" % name), d)
    write_atomic(os.path.join(out_dir, "rope_scaling.safetensors"), safetensors_bytes(arrays))
    meta = {
        "lesson": "L7.4",
        "oracle": "oracle/L7.4/make_fixtures.py",
        "oracle_semantics": "modeling_rope_utils.py of transformers 5 re-implemented line for "
                            "line (standardisation, the five scaled types, dynamic_rope_update) "
                            "with LlamaRotaryEmbedding.forward; transformers itself not installed",
        "torch_version": torch.__version__,
        "numpy_version": np.__version__,
        "seed": SEED,
        "cases": {name: {"rotary_dim": dim, "seq_lens": s} for name, (dim, s) in CASES.items()},
        "dynamic_sequence": DYNAMIC_SEQUENCE,
        "table_positions": TABLE_POSITIONS,
        "values": numbers,
        "tensors": {
            "<case>.seq<L>.inv_freq": "[d/2] inverse frequencies at seq_len L (0: at init)",
            "dynamic.update<k>.inv_freq": "after the k-th forward of dynamic_sequence",
            "<case>.table.cos, .sin": "[positions, d] LlamaRotaryEmbedding.forward's tables "
                                      "at table_positions",
        },
        "tolerances": TOLERANCES,
    }
    write_json(os.path.join(out_dir, "rope_scaling.json"), meta)


if __name__ == "__main__":
    main(sys.argv)
