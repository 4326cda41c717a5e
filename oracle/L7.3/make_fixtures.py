#!/usr/bin/python3
"""Golden data for L7.3 (rotary position embedding).

Run from the repository root:  /usr/bin/python3 oracle/L7.3/make_fixtures.py OUT_DIR
Writes OUT_DIR/L7.3/rope.safetensors and OUT_DIR/L7.3/rope.json; the course's
own copy lives in fixtures/ (so OUT_DIR is `fixtures` there).

The oracle. transformers is not installed here, so what the course matches is
re-implemented from the transformers 5 sources, in float32 with torch:

  - LlamaRotaryEmbedding (models/llama/modeling_llama.py): the default inverse
    frequencies of compute_default_rope_parameters,
        inv_freq = 1 / base ** (arange(0, dim, 2).float() / dim),
    and forward():
        freqs = (inv_freq[None, :, None] @ position_ids[:, None, :].float()).transpose(1, 2)
        emb = cat((freqs, freqs), -1); cos = emb.cos() * attention_scaling (sin alike)
  - rotate_half and apply_rotary_pos_emb (same file): x * cos + rotate_half(x) * sin,
    rotate_half(x) = cat((-x2, x1)), on q of layout [B, H, T, D] (unsqueeze_dim 1);
  - partial rotary as models/phi/modeling_phi.py and models/gpt_neox do it:
    rotate x[..., :rotary_dim], concatenate x[..., rotary_dim:] unchanged;
  - the interleaved pairing as models/gptj/modeling_gptj.py (rotate_every_two,
    repeat_interleave of the half-width tables), cross-checked below against
    Meta's original llama/model.py (precompute_freqs_cis, apply_rotary_emb with
    view_as_complex): the two must agree within 1e-5 or this script stops;
  - the checkpoint converter's permute() (models/llama/convert_llama_weights_to_hf.py):
        w.view(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(1, 2).reshape(dim1, dim2)

Reproducible: one seeded generator, one thread, and a writer that sorts
everything, so a rerun gives the same bytes (`ol fixtures L7.3 --check`).
"""
import math
import os
import sys

import numpy as np
import torch

# HF's file layout, written once for every oracle: oracle/common/fixture_io.py
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from fixture_io import safetensors_bytes, write_atomic, write_json  # noqa: E402

SEED = 20240703
GPT_OSS_ATTENTION_SCALING = 1.3465735902799727   # hf-numerics.md section 4, YaRN

# Per-test tolerances, read by the course tests and the model-answer tests.
# Elementwise float32 work: the reference agrees with torch to a few ulp (cos
# and sin of the same float32 angle differ by at most an ulp between glibc and
# torch's vectorised kernels). Measured worst cases are in the closing note of
# the lesson (course/L7.3/README.md, "What the tests check").
TOLERANCES = {
    "test_hand_example_d4_one_position": {"rtol": 0.0, "atol": 2e-6},
    "test_golden_default_inv_freq": {"rtol": 1e-6, "atol": 0.0},
    "test_golden_cos_sin_tables": {"rtol": 0.0, "atol": 1e-6},
    "test_golden_half_matches_hf": {"rtol": 1e-5, "atol": 1e-5},
    "test_golden_long_positions": {"rtol": 1e-5, "atol": 1e-5},
    "test_golden_interleaved_matches_meta": {"rtol": 1e-5, "atol": 1e-5},
    "test_golden_partial_rotary": {"rtol": 1e-5, "atol": 1e-5},
    "test_golden_gradients_match_hf": {"rtol": 1e-5, "atol": 1e-5},
    "test_converter_permutation_meta_to_hf": {"rtol": 1e-5, "atol": 1e-5},
    "test_relative_position_property": {"rtol": 1e-4, "atol": 1e-4},
    "test_norm_preserved_per_pair": {"rtol": 1e-5, "atol": 1e-5},
    "test_offset_sequence_equals_tail": {"rtol": 0.0, "atol": 1e-6},
    "test_layouts_and_shared_tables_agree": {"rtol": 0.0, "atol": 1e-6},
    "test_gradcheck_x": {"max_rel_error": 1e-2},
}


# ---- transformers 5, models/llama/modeling_llama.py ---------------------------
def default_inv_freq(base, dim):
    """compute_default_rope_parameters (base ** fp32 exponent, all float32)."""
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(dtype=torch.float) / dim))


def rotary_cos_sin(inv_freq, position_ids, attention_scaling=1.0):
    """LlamaRotaryEmbedding.forward: position_ids [B, T] -> cos, sin [B, T, dim]."""
    inv_freq_expanded = inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
    position_ids_expanded = position_ids[:, None, :].float()
    freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos = emb.cos() * attention_scaling
    sin = emb.sin() * attention_scaling
    return cos, sin


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, cos, sin, unsqueeze_dim=1):
    """q [B, H, T, D] (HF's layout), cos/sin [B, T, D]."""
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin)


def apply_partial_half(q, cos, sin):
    """models/phi/modeling_phi.py: rotate the first rotary_dim features only."""
    rotary_dim = cos.shape[-1]
    q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]
    return torch.cat((apply_rotary_pos_emb(q_rot, cos, sin), q_pass), dim=-1)


# ---- models/gptj/modeling_gptj.py: the interleaved pairing --------------------
def rotate_every_two(x):
    x1 = x[:, :, :, ::2]
    x2 = x[:, :, :, 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)


def apply_interleaved(q_bthd, cos, sin):
    """GPT-J: q [B, T, H, D], the half-width tables repeated pairwise."""
    half = cos.shape[-1] // 2
    sin = torch.repeat_interleave(sin[:, :, None, :half], 2, 3)
    cos = torch.repeat_interleave(cos[:, :, None, :half], 2, 3)
    return (q_bthd * cos) + (rotate_every_two(q_bthd) * sin)


def apply_partial_interleaved(q_bthd, cos, sin):
    """GPT-J's rotary_dim < head_dim: rotate q[..., :rotary_dim], pass the rest."""
    rotary_dim = cos.shape[-1]
    q_rot, q_pass = q_bthd[..., :rotary_dim], q_bthd[..., rotary_dim:]
    return torch.cat((apply_interleaved(q_rot, cos, sin), q_pass), dim=-1)


# ---- Meta's llama/model.py: the interleaved pairing with complex numbers ---------
def meta_rotate(x_bthd, inv_freq, positions_t):
    """precompute_freqs_cis + apply_rotary_emb, at explicit positions [T]."""
    freqs = torch.outer(positions_t.float(), inv_freq).float()
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)               # [T, D/2]
    x_ = torch.view_as_complex(x_bthd.float().reshape(*x_bthd.shape[:-1], -1, 2))
    freqs_cis = freqs_cis.view(1, x_.shape[1], 1, x_.shape[-1])
    return torch.view_as_real(x_ * freqs_cis).flatten(3).type_as(x_bthd)


# ---- models/llama/convert_llama_weights_to_hf.py --------------------------------
def converter_permute(w, n_heads, dim1, dim2):
    return w.view(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(1, 2).reshape(dim1, dim2)


def bthd(t):   # HF's [B, H, T, D] -> the course's [B, T, H, D]
    return t.transpose(1, 2).contiguous()


def bhtd(t):
    return t.transpose(1, 2)


def build(gen):
    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float32)

    out = {}

    # 1. Default inverse frequencies: (head_dim, rotary_dim, theta). The exponent
    #    divides by rotary_dim (GPT-J: 64 of 256; Phi-2: 32 of 80).
    inv_cases = [(8, 8, 10000.0), (16, 16, 500000.0), (64, 64, 100000.0),
                 (128, 128, 1000000.0), (80, 32, 10000.0), (256, 64, 10000.0)]
    for head_dim, rotary_dim, theta in inv_cases:
        out["inv_freq.D%d.d%d.theta%g" % (head_dim, rotary_dim, theta)] = \
            default_inv_freq(theta, rotary_dim)

    # 2. Half pairing, Llama: x [B, T, H, D] = [2, 5, 3, 8], positions per batch row
    #    (the second row continues a cache of 7 tokens), theta 10000.
    x = randn(2, 5, 3, 8)
    upstream = randn(2, 5, 3, 8)
    pos = torch.tensor([[0, 1, 2, 3, 4], [7, 8, 9, 10, 11]], dtype=torch.int64)
    inv = default_inv_freq(10000.0, 8)
    out["half.x"], out["half.upstream"], out["half.positions"] = x, upstream, pos.float()
    for name, a in (("", 1.0), ("scaled.", GPT_OSS_ATTENTION_SCALING)):
        cos, sin = rotary_cos_sin(inv, pos, a)
        xg = x.clone().requires_grad_(True)
        y = bthd(apply_rotary_pos_emb(bhtd(xg), cos, sin))
        y.backward(upstream)
        out["half.%scos" % name], out["half.%ssin" % name] = cos, sin
        out["half.%sy" % name], out["half.%sgrad_x" % name] = y.detach(), xg.grad

    # 3. Long positions, theta 500000 (Llama-3), D = 16, positions [T] shared by
    #    the batch: float32 angles up to 32767 rad.
    xl = randn(1, 6, 2, 16)
    pl = torch.tensor([[0, 1, 1023, 4095, 8191, 32767]], dtype=torch.int64)
    cos, sin = rotary_cos_sin(default_inv_freq(500000.0, 16), pl)
    out["long.x"], out["long.positions"] = xl, pl[0].float()
    out["long.cos"], out["long.sin"] = cos[0], sin[0]
    out["long.y"] = bthd(apply_rotary_pos_emb(bhtd(xl), cos, sin))

    # 4. Interleaved pairing (GPT-J / Meta), same x and positions as 2.
    cos, sin = rotary_cos_sin(inv, pos)
    xg = x.clone().requires_grad_(True)
    y = apply_interleaved(xg, cos, sin)
    y.backward(upstream)
    for b in range(2):   # Meta's complex-number code must agree, row by row
        meta = meta_rotate(x[b:b + 1], inv, pos[b])
        assert torch.allclose(meta, y[b:b + 1].detach(), rtol=1e-5, atol=1e-5), \
            "GPT-J and Meta interleaved rotations disagree"
    out["interleaved.y"], out["interleaved.grad_x"] = y.detach(), xg.grad

    # 5. Partial rotary: half pairing, Phi-2's ratio (0.4: 4 of 10), and
    #    interleaved, GPT-J's (0.25: 4 of 16); positions [T] from 3 on.
    pp = torch.tensor([[3, 4, 5, 6]], dtype=torch.int64)
    xp = randn(2, 4, 2, 10)
    up = randn(2, 4, 2, 10)
    cos, sin = rotary_cos_sin(default_inv_freq(10000.0, 4), pp)
    xg = xp.clone().requires_grad_(True)
    y = bthd(apply_partial_half(bhtd(xg), cos, sin))
    y.backward(up)
    out["partial_half.x"], out["partial_half.upstream"] = xp, up
    out["partial_half.positions"] = pp[0].float()
    out["partial_half.y"], out["partial_half.grad_x"] = y.detach(), xg.grad
    xq = randn(1, 4, 2, 16)
    cos, sin = rotary_cos_sin(default_inv_freq(10000.0, 4), pp)
    out["partial_interleaved.x"] = xq
    out["partial_interleaved.y"] = apply_partial_interleaved(xq, cos, sin)

    # 6. The converter: Meta's q and k weights (2 heads of 8, input width 6), the
    #    permuted HF weights, and what each side computes at positions 5..9.
    n_heads, head_dim, width = 2, 8, 6
    wq, wk = randn(n_heads * head_dim, width), randn(n_heads * head_dim, width)
    xin = randn(1, 5, width)
    pc = torch.tensor([[5, 6, 7, 8, 9]], dtype=torch.int64)
    inv8 = default_inv_freq(10000.0, head_dim)
    cos, sin = rotary_cos_sin(inv8, pc)
    out["converter.x"], out["converter.positions"] = xin, pc[0].float()
    out["converter.wq_meta"], out["converter.wk_meta"] = wq, wk
    for name, w in (("q", wq), ("k", wk)):
        w_hf = converter_permute(w, n_heads, n_heads * head_dim, width)
        out["converter.w%s_hf" % name] = w_hf
        h = torch.nn.functional.linear(xin, w_hf).view(1, 5, n_heads, head_dim)
        out["converter.%s_hf" % name] = bthd(apply_rotary_pos_emb(bhtd(h), cos, sin))
    # Meta's attention scores, per head: q_t . k_s after Meta's own rotation.
    qm = meta_rotate(torch.nn.functional.linear(xin, wq).view(1, 5, n_heads, head_dim), inv8, pc[0])
    km = meta_rotate(torch.nn.functional.linear(xin, wk).view(1, 5, n_heads, head_dim), inv8, pc[0])
    out["converter.scores_meta"] = torch.einsum("bthd,bshd->bhts", qm, km)
    return {k: v.detach().contiguous().numpy().astype(np.float32) for k, v in out.items()}


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: %s OUT_DIR   (writes OUT_DIR/L7.3/rope.*)" % argv[0])
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(SEED)
    tensors = build(gen)

    out_dir = os.path.join(argv[1], "L7.3")
    os.makedirs(out_dir, exist_ok=True)
    write_atomic(os.path.join(out_dir, "rope.safetensors"), safetensors_bytes(tensors))
    meta = {
        "lesson": "L7.3",
        "oracle": "oracle/L7.3/make_fixtures.py",
        "oracle_semantics": "LlamaRotaryEmbedding, rotate_half and apply_rotary_pos_emb "
                            "re-implemented from transformers 5 (models/llama/modeling_llama.py); "
                            "partial rotary as models/phi/modeling_phi.py; interleaved as "
                            "models/gptj/modeling_gptj.py, cross-checked with Meta's "
                            "llama/model.py; permute() of "
                            "models/llama/convert_llama_weights_to_hf.py; transformers itself "
                            "not installed",
        "torch_version": torch.__version__,
        "numpy_version": np.__version__,
        "seed": SEED,
        "gpt_oss_attention_scaling": GPT_OSS_ATTENTION_SCALING,
        "tensors": {
            "inv_freq.D<head_dim>.d<rotary_dim>.theta<theta>": "[d/2] default inverse frequencies",
            "half.x, half.upstream, half.positions": "x [2, 5, 3, 8] (B, T, H, D), dL/dy, "
                                                     "positions [2, 5] (rows 0.. and 7..)",
            "half.cos, half.sin, half.y, half.grad_x": "theta 10000, attention_scaling 1: "
                                                       "tables [2, 5, 8], output, gradient",
            "half.scaled.*": "the same with attention_scaling = gpt_oss_attention_scaling",
            "long.*": "x [1, 6, 2, 16], positions [6] up to 32767, theta 500000: "
                      "tables [6, 16] and output",
            "interleaved.y, interleaved.grad_x": "half.x rotated with interleaved pairs",
            "partial_half.*": "x [2, 4, 2, 10], rotary_dim 4, positions [4] = 3..6, half pairs",
            "partial_interleaved.*": "x [1, 4, 2, 16], rotary_dim 4, positions as partial_half",
            "converter.*": "Meta's wq/wk [16, 6] (2 heads of 8), HF's permuted wq/wk_hf, input "
                           "x [1, 5, 6], positions 5..9, HF's rotated q/k_hf [1, 5, 2, 8], "
                           "Meta's scores [1, 2, 5, 5]",
        },
        "tolerances": TOLERANCES,
    }
    write_json(os.path.join(out_dir, "rope.json"), meta)


if __name__ == "__main__":
    main(sys.argv)
