#!/usr/bin/python3
"""Golden data for L7.6 (MLAttention: multi-head latent attention).

Run from the repository root:  /usr/bin/python3 oracle/L7.6/make_fixtures.py OUT_DIR
Writes OUT_DIR/L7.6/mla.safetensors and OUT_DIR/L7.6/mla.json; the course's own
copy lives in fixtures/ (so OUT_DIR is `fixtures` there).

The oracle. transformers is not installed here, so the attention of
transformers 5 is re-implemented from its source, in float32 and eager mode:

  models/deepseek_v3/modeling_deepseek_v3.py
      DeepseekV3RMSNorm (eps 1e-6 for q_a_layernorm and kv_a_layernorm),
      DeepseekV3RotaryEmbedding.forward, rotate_half, apply_rotary_pos_emb,
      apply_rotary_pos_emb_interleave (rope_interleave: view [d/2, 2],
      transpose, flatten, then rotate_half), yarn_get_mscale,
      DeepseekV3Attention (q_proj or q_a_proj/q_a_layernorm/q_b_proj,
      kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj; attention_bias on
      q_a_proj, kv_a_proj_with_mqa and o_proj; scaling = qk_head_dim**-0.5
      times yarn_get_mscale(factor, mscale_all_dim)**2 when the rope_type is
      not "default"), eager_attention_forward
  models/deepseek_v2/modeling_deepseek_v2.py
      DeepseekV2RotaryEmbedding.forward (freqs_cis = polar(1, freqs) * a) and
      apply_rotary_emb (the rope features as complex pairs: interleaved)
  modeling_rope_utils.py   compute_default_rope_parameters, _compute_yarn_parameters
  cache_utils.py           DynamicLayer.update: cat along the sequence
  masking_utils.py         causal / padding masks, eager_mask (0 or finfo.min)

    q = q_proj(x)  or  q_b_proj(RMS(q_a_proj(x)))  -> [B, n, T, dn + dr]
    c, k_rope = split(kv_a_proj_with_mqa(x), [r_kv, dr])
    k_nope, v = split(kv_b_proj(RMS(c)).view(B, T, n, dn + dv), [dn, dv])
    q_rope, k_rope = RoPE(q_rope), RoPE(k_rope)     (k_rope one head, expanded to n)
    y = o_proj(softmax(cat(q) @ cat(k).T * scaling + mask) @ v)

The latent cache's golden contents are RMS(c) and the rotated k_rope (in the
order the rotation leaves it: de-interleaved for rope_interleave).

Reproducible: one seeded generator, one thread, and a writer that sorts
everything, so a rerun gives the same bytes (`ol fixtures L7.6 --check`).
"""
import math
import os
import sys

import numpy as np
import torch

# HF's file layout, written once for every oracle: oracle/common/fixture_io.py
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from fixture_io import safetensors_bytes, write_atomic, write_json  # noqa: E402

SEED = 20240706
B, T, HIDDEN = 2, 6, 16
N_HEADS, NOPE, ROPE, V_DIM, KV_RANK, Q_RANK = 3, 6, 8, 5, 12, 10
THETA = 10000.0
POSITIONS = [[3, 4, 5, 6, 7, 8], [0, 1, 2, 3, 4, 5]]
# DeepSeek-V3's own rope dict (config.json of deepseek-ai/DeepSeek-V3).
YARN = {"rope_type": "yarn", "rope_theta": THETA, "factor": 40.0,
        "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1,
        "mscale": 1.0, "mscale_all_dim": 1.0}
MAX_POSITIONS = 163840
# Every width differs (dn 6, dr 8, dv 5, r_kv 12, r_q 10), so a slice of the
# wrong width or a scale from the wrong one cannot pass by accident.
CASES = {
    "lora_interleave": dict(q_lora_rank=Q_RANK, rope_interleave=True, attention_bias=False,
                            family="v3", rope="default"),
    "lora_half": dict(q_lora_rank=Q_RANK, rope_interleave=False, attention_bias=False,
                      family="v3", rope="default"),
    "noq_interleave": dict(q_lora_rank=0, rope_interleave=True, attention_bias=False,
                           family="v3", rope="default"),
    "v2_pairs": dict(q_lora_rank=0, rope_interleave=False, attention_bias=False,
                     family="v2", rope="default"),
    "yarn_bias": dict(q_lora_rank=Q_RANK, rope_interleave=True, attention_bias=True,
                      family="v3", rope="yarn"),
}
CHUNKS = (3, 1, 2)          # the cached golden: prefill 3, then 1, then 2 tokens
PADDED = 2                  # row 1 of the masked golden is left-padded by 2 tokens
# Weights N(0, (WEIGHT_GAIN / sqrt(in))^2) so that attention is peaked and a
# wrong scale or slice moves the outputs by O(0.1); norm weights 1 + N(0, 0.3^2).
WEIGHT_GAIN = 2.0

# Per-test tolerances, read by the course tests and the model-answer tests.
# float32 products and softmax sums agree to a few ulp, not bit for bit
# (hf-numerics.md). Measured (the chapter's section 5 note): the reference, both
# paths and the wheats stay within 0.22 of each tolerance (the worst: V2's complex
# pairing on the absorbed path); every mutant that changes numbers moves a golden
# by at least 2.7e4 tolerances.
TOLERANCES = {
    "test_hand_example_one_latent_two_heads": {"rtol": 1e-5, "atol": 1e-5},
    "test_golden_outputs_match_hf": {"rtol": 1e-4, "atol": 1e-5},
    "test_golden_gradients_match_hf": {"rtol": 1e-4, "atol": 1e-4},
    "test_golden_explicit_mask": {"rtol": 1e-4, "atol": 1e-5},
    "test_latent_cache_holds_normed_latent_and_rotated_k_rope": {"rtol": 1e-5, "atol": 1e-6},
    "test_cached_decode_one_token_at_a_time": {"rtol": 1e-4, "atol": 1e-5},
    "test_cached_decode_uneven_chunks": {"rtol": 1e-4, "atol": 1e-5},
    "test_absorbed_equals_naive": {"rtol": 1e-4, "atol": 1e-5},
    "test_causality_future_inputs_do_not_matter": {"rtol": 0.0, "atol": 1e-6},
    "test_nope_part_ignores_positions": {"rtol": 0.0, "atol": 1e-5},
    "test_bf16_input_is_widened_exactly": {"rtol": 1e-4, "atol": 1e-5},
    "test_gradcheck_x_and_every_weight": {"max_rel_error": 1e-2},
}


# ---- transformers 5, re-implemented -----------------------------------------

def default_inv_freq(dim, base):
    """modeling_rope_utils.compute_default_rope_parameters (all float32)."""
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))


def get_mscale(scale, mscale=1):
    """yarn_get_mscale / get_mscale."""
    if scale <= 1:
        return 1.0
    return 0.1 * mscale * math.log(scale) + 1.0


def yarn_inv_freq(rp, dim):
    """modeling_rope_utils._compute_yarn_parameters -> (inv_freq, attention_factor)."""
    base, factor, orig = rp["rope_theta"], rp["factor"], rp["original_max_position_embeddings"]
    mscale, mscale_all_dim = rp.get("mscale"), rp.get("mscale_all_dim")
    if mscale and mscale_all_dim:
        attention_factor = float(get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim))
    else:
        attention_factor = get_mscale(factor)
    beta_fast, beta_slow = rp.get("beta_fast") or 32, rp.get("beta_slow") or 1

    def correction_dim(num_rotations):
        return (dim * math.log(orig / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

    low = max(math.floor(correction_dim(beta_fast)), 0)
    high = min(math.ceil(correction_dim(beta_slow)), dim - 1)
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    pos_freqs = base ** (torch.arange(0, dim, 2).to(dtype=torch.float) / dim)
    extrapolation, interpolation = 1.0 / pos_freqs, 1.0 / (factor * pos_freqs)
    ef = 1 - ramp
    return interpolation * (1 - ef) + extrapolation * ef, attention_factor


def rotary_cos_sin(inv_freq, position_ids, attention_scaling):
    """DeepseekV3RotaryEmbedding.forward: position_ids [B, T] -> cos, sin [B, T, dr]."""
    inv_freq_expanded = inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
    position_ids_expanded = position_ids[:, None, :].float()
    freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos() * attention_scaling, emb.sin() * attention_scaling


def rotary_freqs_cis(inv_freq, position_ids, attention_scaling):
    """DeepseekV2RotaryEmbedding.forward: complex [B, T, dr / 2]."""
    inv_freq_expanded = inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
    position_ids_expanded = position_ids[:, None, :].float()
    freqs = (inv_freq_expanded @ position_ids_expanded).transpose(1, 2)
    return torch.polar(torch.ones_like(freqs), freqs) * attention_scaling


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def apply_rotary_pos_emb_interleave(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    b, h, s, d = q.shape
    q = q.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
    b, h, s, d = k.shape
    k = k.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def apply_rotary_emb(xq, xk, freqs_cis):
    """DeepSeek-V2: the rope features as complex numbers (x0 + i x1, ...)."""
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = freqs_cis.unsqueeze(1)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3).type_as(xq)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3).type_as(xk)
    return xq_out, xk_out


class RMSNorm(torch.nn.Module):
    """DeepseekV3RMSNorm (= DeepseekV2RMSNorm)."""

    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


def eager_attention_forward(query, key, value, attention_mask, scaling):
    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask[:, :, :, : key.shape[-2]]
    attn_weights = torch.nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32)
    attn_output = torch.matmul(attn_weights.to(query.dtype), value)
    return attn_output.transpose(1, 2).contiguous()


class DynamicLayer:
    """cache_utils.DynamicLayer: keys and values concatenated along the sequence."""

    def __init__(self):
        self.keys = None
        self.values = None

    def update(self, key_states, value_states):
        if self.keys is None:
            self.keys, self.values = key_states, value_states
        else:
            self.keys = torch.cat([self.keys, key_states], dim=-2)
            self.values = torch.cat([self.values, value_states], dim=-2)
        return self.keys, self.values

    def get_seq_length(self):
        return 0 if self.keys is None else self.keys.shape[-2]


class MLAttention(torch.nn.Module):
    """DeepseekV3Attention (family "v3") and DeepseekV2Attention ("v2")."""

    def __init__(self, q_lora_rank, rope_interleave, attention_bias, family, rope_parameters):
        super().__init__()
        self.family = family
        self.rope_interleave = rope_interleave
        self.q_lora_rank = q_lora_rank or None
        self.qk_head_dim = NOPE + ROPE
        if self.q_lora_rank is None:
            self.q_proj = torch.nn.Linear(HIDDEN, N_HEADS * self.qk_head_dim, bias=False)
        else:
            self.q_a_proj = torch.nn.Linear(HIDDEN, q_lora_rank, bias=attention_bias)
            self.q_a_layernorm = RMSNorm(q_lora_rank)
            self.q_b_proj = torch.nn.Linear(q_lora_rank, N_HEADS * self.qk_head_dim, bias=False)
        self.kv_a_proj_with_mqa = torch.nn.Linear(HIDDEN, KV_RANK + ROPE, bias=attention_bias)
        self.kv_a_layernorm = RMSNorm(KV_RANK)
        self.kv_b_proj = torch.nn.Linear(KV_RANK, N_HEADS * (NOPE + V_DIM), bias=False)
        self.o_proj = torch.nn.Linear(N_HEADS * V_DIM, HIDDEN, bias=attention_bias)
        self.scaling = self.qk_head_dim ** (-0.5)
        if family == "v3" and rope_parameters.get("rope_type", "default") != "default":
            mscale_all_dim = rope_parameters.get("mscale_all_dim", 0)
            scaling_factor = rope_parameters["factor"]
            if mscale_all_dim:
                mscale = get_mscale(scaling_factor, mscale_all_dim)
                self.scaling = self.scaling * mscale * mscale

    def latents(self, hidden_states, position_embeddings):
        """Everything before the cache: (q_pass, q_rot, normalised c, k_rot [B, 1, T, dr])."""
        batch_size, seq_length = hidden_states.shape[:-1]
        if self.q_lora_rank is None:
            q_states = self.q_proj(hidden_states)
        else:
            q_states = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(hidden_states)))
        q_states = q_states.view(batch_size, seq_length, -1, self.qk_head_dim).transpose(1, 2)
        q_pass, q_rot = torch.split(q_states, [NOPE, ROPE], dim=-1)
        compressed_kv = self.kv_a_proj_with_mqa(hidden_states)
        k_pass, k_rot = torch.split(compressed_kv, [KV_RANK, ROPE], dim=-1)
        c = self.kv_a_layernorm(k_pass)
        k_rot = k_rot.view(batch_size, 1, seq_length, ROPE)
        if self.family == "v2":
            q_rot, k_rot = apply_rotary_emb(q_rot, k_rot, position_embeddings)
        else:
            cos, sin = position_embeddings
            if self.rope_interleave:
                q_rot, k_rot = apply_rotary_pos_emb_interleave(q_rot, k_rot, cos, sin)
            else:
                q_rot, k_rot = apply_rotary_pos_emb(q_rot, k_rot, cos, sin)
        return q_pass, q_rot, c, k_rot

    def forward(self, hidden_states, position_embeddings, attention_mask, cache=None):
        batch_size, seq_length = hidden_states.shape[:-1]
        q_pass, q_rot, c, k_rot = self.latents(hidden_states, position_embeddings)
        key_shape = (batch_size, seq_length, -1, NOPE + V_DIM)
        k_pass = self.kv_b_proj(c).view(key_shape).transpose(1, 2)
        k_pass, value_states = torch.split(k_pass, [NOPE, V_DIM], dim=-1)
        k_rot = k_rot.expand(*k_pass.shape[:-1], -1)
        query_states = torch.cat((q_pass, q_rot), dim=-1)
        key_states = torch.cat((k_pass, k_rot), dim=-1)
        if cache is not None:
            key_states, value_states = cache.update(key_states, value_states)
        attn_output = eager_attention_forward(query_states, key_states, value_states,
                                              attention_mask, self.scaling)
        attn_output = attn_output.reshape(batch_size, seq_length, -1).contiguous()
        return self.o_proj(attn_output)


def eager_mask(batch, q_len, kv_len, q_offset=0, padding_mask=None):
    """masking_utils: causal (kv_idx <= q_idx), optionally and a 2D padding mask,
    then eager_mask: 0 where visible, finfo(float32).min elsewhere."""
    q_idx = torch.arange(q_len)[None, None, :, None] + q_offset
    kv_idx = torch.arange(kv_len)[None, None, None, :]
    visible = (kv_idx <= q_idx).expand(batch, 1, q_len, kv_len)
    if padding_mask is not None:
        visible = visible & padding_mask[:, None, None, :kv_len].bool()
    min_dtype = torch.finfo(torch.float32).min
    return torch.where(visible, torch.tensor(0.0), torch.tensor(min_dtype))


# ---- the fixtures -------------------------------------------------------------

def position_embeddings(cfg, positions):
    if cfg["rope"] == "yarn":
        inv_freq, a = yarn_inv_freq(YARN, ROPE)
    else:
        inv_freq, a = default_inv_freq(ROPE, THETA), 1.0
    if cfg["family"] == "v2":
        return rotary_freqs_cis(inv_freq, positions, a)
    return rotary_cos_sin(inv_freq, positions, a)


def slice_embeddings(emb, start, n):
    if isinstance(emb, tuple):
        return emb[0][:, start:start + n], emb[1][:, start:start + n]
    return emb[:, start:start + n]


def build(gen):
    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float32)

    x = randn(B, T, HIDDEN)
    upstream = randn(B, T, HIDDEN)
    positions = torch.tensor(POSITIONS, dtype=torch.int64)
    out = {"x": x, "upstream": upstream, "positions": positions.float()}
    scales = {}

    for name, cfg in CASES.items():
        attn = MLAttention(cfg["q_lora_rank"], cfg["rope_interleave"], cfg["attention_bias"],
                           cfg["family"], YARN if cfg["rope"] == "yarn" else {})
        scales[name] = attn.scaling
        with torch.no_grad():
            for pname, p in attn.named_parameters():
                if pname.endswith("layernorm.weight"):
                    p.copy_(1.0 + 0.3 * randn(*p.shape))
                elif p.ndim == 2:
                    p.copy_(randn(*p.shape) * WEIGHT_GAIN / p.shape[1] ** 0.5)
                else:
                    p.copy_(randn(*p.shape) * 0.5 / p.shape[0] ** 0.5)
        for pname, p in attn.named_parameters():
            out["%s.%s" % (name, pname)] = p.detach().clone()
        emb = position_embeddings(cfg, positions)
        mask = eager_mask(B, T, T)

        xg = x.clone().requires_grad_(True)
        y = attn(xg, emb, mask)
        y.backward(upstream)
        out[name + ".y"] = y.detach()
        out[name + ".grad.x"] = xg.grad
        for pname, p in attn.named_parameters():
            out["%s.grad.%s" % (name, pname)] = p.grad

        with torch.no_grad():
            # What the latent cache holds after a prefill: RMS(c) and rotated k_rope.
            _, _, c, k_rot = attn.latents(x, emb)
            out[name + ".cache.latent"] = c.unsqueeze(1)            # [B, 1, T, r_kv]
            out[name + ".cache.k_rope"] = k_rot                     # [B, 1, T, dr]
            if name != "lora_interleave":
                continue
            # Prefill and decode through HF's DynamicLayer in uneven chunks.
            cache, parts, start = DynamicLayer(), [], 0
            for n in CHUNKS:
                past = cache.get_seq_length()
                parts.append(attn(x[:, start:start + n], slice_embeddings(emb, start, n),
                                  eager_mask(B, n, past + n, q_offset=past), cache))
                start += n
            out[name + ".chunked.y"] = torch.cat(parts, dim=1)
            # Row 1 left-padded by PADDED tokens: its first queries see nothing.
            padding = torch.ones(B, T, dtype=torch.int64)
            padding[1, :PADDED] = 0
            explicit = eager_mask(B, T, T, padding_mask=padding)
            out["masked.mask"] = explicit
            out[name + ".masked.y"] = attn(x, emb, explicit)
    tensors = {k: v.detach().contiguous().numpy().astype(np.float32) for k, v in out.items()}
    return tensors, scales


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: %s OUT_DIR   (writes OUT_DIR/L7.6/mla.*)" % argv[0])
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(SEED)
    tensors, scales = build(gen)

    out_dir = os.path.join(argv[1], "L7.6")
    os.makedirs(out_dir, exist_ok=True)
    write_atomic(os.path.join(out_dir, "mla.safetensors"), safetensors_bytes(tensors))
    meta = {
        "lesson": "L7.6",
        "oracle": "oracle/L7.6/make_fixtures.py",
        "oracle_semantics": "DeepseekV3Attention (q_lora and not, rope_interleave and not, "
                            "attention_bias, yarn's mscale_all_dim squared in the scale) and "
                            "DeepseekV2Attention's complex rope pairing, eager path, "
                            "DynamicLayer.update and masking_utils' causal/padding eager "
                            "masks, re-implemented from transformers 5 "
                            "(models/deepseek_v3/modeling_deepseek_v3.py, "
                            "models/deepseek_v2/modeling_deepseek_v2.py, "
                            "modeling_rope_utils.py, cache_utils.py, masking_utils.py); "
                            "transformers itself not installed",
        "torch_version": torch.__version__,
        "numpy_version": np.__version__,
        "seed": SEED,
        "batch": B, "tokens": T, "hidden": HIDDEN,
        "n_heads": N_HEADS, "qk_nope_head_dim": NOPE, "qk_rope_head_dim": ROPE,
        "v_head_dim": V_DIM, "kv_lora_rank": KV_RANK, "q_lora_rank": Q_RANK,
        "rope_theta": THETA, "yarn": YARN, "max_position_embeddings": MAX_POSITIONS,
        "positions": POSITIONS,
        "cases": CASES,
        "scaling": scales,
        "chunks": list(CHUNKS),
        "padded_tokens_row_1": PADDED,
        "weight_gain": WEIGHT_GAIN,
        "tensors": {
            "x, upstream": "[B, T, hidden] the input and dL/dy for every gradient golden",
            "positions": "[B, T] position ids (stored as F32; convert to I64)",
            "<case>.<param>": "the parameters by HF's names (q_proj.weight or q_a_proj.weight, "
                              "q_a_layernorm.weight, q_b_proj.weight; kv_a_proj_with_mqa.weight, "
                              "kv_a_layernorm.weight, kv_b_proj.weight, o_proj.weight; biases)",
            "<case>.y": "the output with the causal mask, positions as above",
            "<case>.grad.x, <case>.grad.<param>": "gradients of sum(y * upstream)",
            "<case>.cache.latent": "[B, 1, T, kv_lora_rank] RMS(c): the latent cache's keys",
            "<case>.cache.k_rope": "[B, 1, T, qk_rope_head_dim] k_rope after RoPE (de-interleaved "
                                   "with rope_interleave): the latent cache's values",
            "lora_interleave.chunked.y": "the output through a DynamicLayer, prefill and decode "
                                         "in chunks of 3, 1, 2",
            "masked.mask": "[B, 1, T, T] causal mask with row 1 left-padded by 2 tokens",
            "lora_interleave.masked.y": "the output under masked.mask",
        },
        "tolerances": TOLERANCES,
    }
    write_json(os.path.join(out_dir, "mla.json"), meta)


if __name__ == "__main__":
    main(sys.argv)
