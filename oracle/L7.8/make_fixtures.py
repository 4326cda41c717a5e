#!/usr/bin/python3
"""Golden data for L7.8 (mixture of experts: routers, shared experts, aux loss).

Run from the repository root:  /usr/bin/python3 oracle/L7.8/make_fixtures.py OUT_DIR
Writes OUT_DIR/L7.8/moe.safetensors and OUT_DIR/L7.8/moe.json; the course's
own copy lives in fixtures/ (so OUT_DIR is `fixtures` there).

The oracle. transformers is not installed here, so the three sparse MoE
blocks are re-implemented from transformers 5's sources and run in float32
with torch:

  models/mixtral/modeling_mixtral.py
    MixtralTopKRouter.forward: logits = F.linear(x, weight); p = softmax(logits.float());
        top_value, idx = topk(p, top_k); top_value /= top_value.sum(-1, keepdim=True)
    MixtralExperts.forward (experts fused in memory: gate_up_proj [E, 2I, H], down_proj [E, H, I]):
        for each expert hit, in ascending id: top_k_pos, token_idx = where(mask[e]);
        gate, up = linear(x[token_idx], gate_up_proj[e]).chunk(2, -1)
        h = linear(act(gate) * up, down_proj[e]) * top_k_weights[token_idx, top_k_pos, None]
        final.index_add_(0, token_idx, h)
    load_balancing_loss_func(gate_logits, num_experts, top_k) without attention mask:
        p = softmax(cat(gate_logits)); _, sel = topk(p, top_k); mask = one_hot(sel, E)
        tokens_per_expert = mean(mask.float(), 0); prob = mean(p, 0)
        aux = sum(tokens_per_expert * prob[None]) * E
  models/qwen2_moe/modeling_qwen2_moe.py
    Qwen2MoeTopKRouter: as Mixtral's, the renormalisation only if norm_topk_prob
    Qwen2MoeSparseMoeBlock: experts(x) + sigmoid(shared_expert_gate(x)) * shared_expert(x)
  models/deepseek_v3/modeling_deepseek_v3.py
    DeepseekV3TopkRouter: logits = F.linear(x.float(), weight.float())
    DeepseekV3MoE.route_tokens_to_experts: s = logits.sigmoid(); c = s + e_score_correction_bias
        group_scores = c.view(-1, n_group, E // n_group).topk(2, -1)[0].sum(-1)
        keep topk_group groups; c outside them = 0.0; idx = topk(c, top_k)
        w = s.gather(1, idx); if norm_topk_prob: w /= (w.sum(-1, keepdim=True) + 1e-20)
        w *= routed_scaling_factor
    DeepseekV3MoE.forward: experts(x, idx, w) + shared_experts(x)

The weights are written under the checkpoint files' per-expert keys (what
every transformers version saves and loads; v5 concatenates w1/w3 or
gate_proj/up_proj into gate_up_proj at load time, as done here before the
forward), so a test can load them by the names its module registers.

Selection margins. Routing is a discrete choice: if two candidates' scores
were within float32 noise (~1e-7), a correct implementation could pick the
other one. Every token here is drawn again until, for its case, the k-th and
(k+1)-th choice scores, the kept and dropped group scores (DeepSeek-V3) and
the smallest kept choice score (> 0, so HF's 0.0 and DeepSeek's -inf fills agree) all
clear MARGIN; the smallest margins reached are in the metadata.

Reproducible: one seeded generator, one thread, and a writer that sorts
everything, so a rerun gives the same bytes (`ol fixtures L7.8 --check`).
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

# HF's file layout, written once for every oracle: oracle/common/fixture_io.py
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from fixture_io import safetensors_bytes, write_atomic, write_json  # noqa: E402

SEED = 20240708
B, T, H = 2, 5, 8
N = B * T
MARGIN = 1e-3

CASES = {
    "mixtral": {"family": "mixtral", "n_experts": 4, "expert_intermediate": 6, "top_k": 2,
                "norm_topk_prob": True, "shared_intermediate": 0, "shared_expert_gate": False,
                "n_group": 0, "topk_group": 0, "routed_scaling_factor": 1.0,
                "module": "block_sparse_moe"},
    "qwen2_moe": {"family": "qwen2_moe", "n_experts": 6, "expert_intermediate": 6, "top_k": 2,
                  "norm_topk_prob": False, "shared_intermediate": 10, "shared_expert_gate": True,
                  "n_group": 0, "topk_group": 0, "routed_scaling_factor": 1.0, "module": "mlp"},
    "deepseek_v3": {"family": "deepseek_v3", "n_experts": 16, "expert_intermediate": 6,
                    "top_k": 3, "norm_topk_prob": True, "shared_intermediate": 6,
                    "shared_expert_gate": False, "n_group": 4, "topk_group": 2,
                    "routed_scaling_factor": 2.5, "module": "mlp"},
}
# The same weights and inputs as deepseek_v3, without the renormalisation.
DEEPSEEK_NONORM = "deepseek_v3_nonorm"

# Per-test tolerances, read by the course tests and the model-answer tests.
# Measured: the reference and the three wheats stay within 0.26 of each
# tolerance (the closest: deepseek_v3_nonorm's y where routed and shared
# parts cancel to -0.0846; every other golden within 0.09), and every mutant
# that changes a number moves a golden by at least 2.6e3 tolerances.
TOLERANCES = {
    "test_golden_mixtral": {"rtol": 1e-5, "atol": 1e-6},
    "test_golden_qwen2_moe_shared_expert_gate": {"rtol": 1e-5, "atol": 1e-6},
    "test_golden_deepseek_v3_routing": {"rtol": 1e-5, "atol": 1e-6},
    "test_golden_router_weights": {"rtol": 1e-5, "atol": 1e-7},
    "test_golden_aux_loss": {"rtol": 1e-5, "atol": 1e-7},
    "test_golden_gradients": {"rtol": 1e-4, "atol": 1e-5},
    "test_one_expert_top1_is_a_dense_mlp": {"rtol": 1e-6, "atol": 1e-6},
    "test_hand_example_balanced_router_aux_is_k": {"rtol": 1e-6, "atol": 1e-6},
    "test_hand_example_routing": {"rtol": 0.0, "atol": 1e-6},
    "test_gradcheck_router_and_experts": {"max_rel_error": 1e-2},
}


def silu(v):
    return F.silu(v)


class Experts:
    """MixtralExperts.forward over fused 3-D weights (transformers 5)."""

    def __init__(self, gate_up_proj, down_proj):
        self.gate_up_proj, self.down_proj = gate_up_proj, down_proj
        self.num_experts = gate_up_proj.shape[0]

    def __call__(self, hidden_states, top_k_index, top_k_weights):
        final = torch.zeros_like(hidden_states)
        with torch.no_grad():
            mask = F.one_hot(top_k_index, num_classes=self.num_experts).permute(2, 1, 0)
            hit = torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero()
        for e in hit:
            e = e[0]
            top_k_pos, token_idx = torch.where(mask[e])
            current = hidden_states[token_idx]
            gate, up = F.linear(current, self.gate_up_proj[e]).chunk(2, dim=-1)
            h = F.linear(silu(gate) * up, self.down_proj[e])
            h = h * top_k_weights[token_idx, top_k_pos, None]
            final.index_add_(0, token_idx, h.to(final.dtype))
        return final


def mlp(x, gate_w, up_w, down_w):
    """LlamaMLP / Qwen2MoeMLP / DeepseekV3MLP with silu and no bias."""
    return F.linear(silu(F.linear(x, gate_w)) * F.linear(x, up_w), down_w)


def softmax_topk_route(logits, top_k, norm):
    """MixtralTopKRouter / Qwen2MoeTopKRouter after the linear."""
    probs = F.softmax(logits, dtype=torch.float, dim=-1)
    top_value, idx = torch.topk(probs, top_k, dim=-1)
    if norm:
        top_value = top_value / top_value.sum(dim=-1, keepdim=True)
    return idx, top_value


def deepseek_route(logits, bias, cfg, norm):
    """DeepseekV3MoE.route_tokens_to_experts."""
    E, G, kg, k = cfg["n_experts"], cfg["n_group"], cfg["topk_group"], cfg["top_k"]
    s = logits.sigmoid()
    c = s + bias
    group_scores = c.view(-1, G, E // G).topk(2, dim=-1)[0].sum(dim=-1)
    group_idx = torch.topk(group_scores, k=kg, dim=-1, sorted=False)[1]
    group_mask = torch.zeros_like(group_scores)
    group_mask.scatter_(1, group_idx, 1)
    score_mask = group_mask.unsqueeze(-1).expand(-1, G, E // G).reshape(-1, E)
    choice = c.masked_fill(~score_mask.bool(), 0.0)
    idx = torch.topk(choice, k=k, dim=-1, sorted=False)[1]
    w = s.gather(1, idx)
    if norm:
        w = w / (w.sum(dim=-1, keepdim=True) + 1e-20)
    return idx, w * cfg["routed_scaling_factor"]


def load_balancing_loss_func(gate_logits, num_experts, top_k):
    """models/mixtral/modeling_mixtral.py, without an attention mask."""
    concatenated = torch.cat(list(gate_logits), dim=0)
    routing_weights = F.softmax(concatenated, dim=-1)
    _, selected = torch.topk(routing_weights, top_k, dim=-1)
    expert_mask = F.one_hot(selected, num_experts)
    tokens_per_expert = torch.mean(expert_mask.float(), dim=0)
    router_prob_per_expert = torch.mean(routing_weights, dim=0)
    return torch.sum(tokens_per_expert * router_prob_per_expert.unsqueeze(0)) * num_experts


def margins(logits, cfg, bias):
    """The smallest gaps the routing of one token depends on (a dict)."""
    k = cfg["top_k"]
    if cfg["family"] != "deepseek_v3":
        p = torch.sort(F.softmax(logits, dim=-1), descending=True)[0]
        return {"choice": float(p[k - 1] - p[k]) if k < len(p) else 1.0}
    E, G, kg = cfg["n_experts"], cfg["n_group"], cfg["topk_group"]
    c = logits.sigmoid() + bias
    gs = torch.sort(torch.sort(c.view(G, E // G), dim=-1, descending=True)[0][:, :2].sum(-1),
                    descending=True)
    kept = gs[1][:kg]
    kept_c = torch.sort(torch.cat([c.view(G, E // G)[g] for g in kept]), descending=True)[0]
    # (a tie between a group's 2nd and 3rd best changes nothing: its score is a sum)
    return {"group": float(gs[0][kg - 1] - gs[0][kg]),
            "choice": float(kept_c[k - 1] - kept_c[k]),
            "smallest_kept_choice": float(kept_c[k - 1])}


def make_case(name, cfg, randn, uniform):
    """Weights under their on-disk names, then tokens whose routing clears MARGIN."""
    E, I, Is = cfg["n_experts"], cfg["expert_intermediate"], cfg["shared_intermediate"]
    fam, mod = cfg["family"], cfg["module"]
    names = ("w1", "w3", "w2") if fam == "mixtral" else ("gate_proj", "up_proj", "down_proj")
    p = {"gate.weight": 3.0 * randn(E, H) / H ** 0.5}
    if fam == "deepseek_v3":
        p["gate.e_score_correction_bias"] = uniform(E, -0.1, 0.1)
    for e in range(E):
        p["experts.%d.%s.weight" % (e, names[0])] = 2.0 * randn(I, H) / H ** 0.5
        p["experts.%d.%s.weight" % (e, names[1])] = randn(I, H) / H ** 0.5
        p["experts.%d.%s.weight" % (e, names[2])] = randn(H, I) / I ** 0.5
    if Is:
        sh = "shared_experts" if fam == "deepseek_v3" else "shared_expert"
        p[sh + ".gate_proj.weight"] = 2.0 * randn(Is, H) / H ** 0.5
        p[sh + ".up_proj.weight"] = randn(Is, H) / H ** 0.5
        p[sh + ".down_proj.weight"] = randn(H, Is) / Is ** 0.5
    if cfg["shared_expert_gate"]:
        p["shared_expert_gate.weight"] = randn(1, H) / H ** 0.5
    bias = p.get("gate.e_score_correction_bias")

    rows, worst, tries = [], {}, 0
    while len(rows) < N:
        tries += 1
        assert tries < 10000, "no token clears the margins"
        xt = 1.5 * randn(H)
        m = margins(F.linear(xt, p["gate.weight"]), cfg, bias)
        if min(m.values()) < MARGIN:
            continue
        rows.append(xt)
        for key, v in m.items():
            worst[key] = min(worst.get(key, v), v)
    x = torch.stack(rows).reshape(B, T, H)
    return {"params": p, "x": x, "names": names, "margins": worst, "draws": tries,
            "prefix": "%s.%s." % (name, mod)}


def forward(case, cfg, norm, need_grad):
    """The v5 block on the case's weights; returns y, logits, dense weights
    and the leaves (for gradients)."""
    E, fam = cfg["n_experts"], cfg["family"]
    names = case["names"]
    leaves = {k: v.clone().requires_grad_(need_grad and not k.endswith("correction_bias"))
              for k, v in case["params"].items()}
    x = case["x"].clone().requires_grad_(need_grad)
    flat = x.view(-1, H)
    logits = F.linear(flat, leaves["gate.weight"])
    if fam == "deepseek_v3":
        idx, w = deepseek_route(logits, leaves["gate.e_score_correction_bias"], cfg, norm)
    else:
        idx, w = softmax_topk_route(logits, cfg["top_k"], norm)
    # transformers 5's load-time conversion: per-expert keys to fused 3-D weights
    gate_up = torch.stack([torch.cat([leaves["experts.%d.%s.weight" % (e, names[0])],
                                      leaves["experts.%d.%s.weight" % (e, names[1])]], dim=0)
                           for e in range(E)])
    down = torch.stack([leaves["experts.%d.%s.weight" % (e, names[2])] for e in range(E)])
    y = Experts(gate_up, down)(flat, idx, w)
    if cfg["shared_intermediate"]:
        sh = "shared_experts" if fam == "deepseek_v3" else "shared_expert"
        shared = mlp(flat, leaves[sh + ".gate_proj.weight"], leaves[sh + ".up_proj.weight"],
                     leaves[sh + ".down_proj.weight"])
        if cfg["shared_expert_gate"]:
            shared = torch.sigmoid(F.linear(flat, leaves["shared_expert_gate.weight"])) * shared
        y = y + shared
    dense = torch.zeros(N, E).scatter(1, idx, w.detach())
    return y.reshape(B, T, H), logits, dense, idx, leaves, x


def choices_changed(case, cfg, logits):
    """How many tokens route differently when the group limit or the bias is
    ignored (so the golden data can see those mistakes)."""
    if cfg["family"] != "deepseek_v3":
        return {}
    bias = case["params"]["gate.e_score_correction_bias"]
    k = cfg["top_k"]
    idx, _ = deepseek_route(logits, bias, cfg, True)
    s = logits.sigmoid()
    no_groups = torch.topk(s + bias, k, dim=-1)[1]
    no_bias, _ = deepseek_route(logits, torch.zeros_like(bias), cfg, True)
    same = lambda a, b: [set(r.tolist()) == set(q.tolist()) for r, q in zip(a, b)]
    return {"tokens_routed_otherwise_without_groups": int(N - sum(same(idx, no_groups))),
            "tokens_routed_otherwise_without_bias": int(N - sum(same(idx, no_bias)))}


def build(gen):
    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float32)

    def uniform(n, lo, hi):
        return lo + (hi - lo) * torch.rand(n, generator=gen, dtype=torch.float32)

    out, meta = {}, {}
    for name, cfg in CASES.items():
        case = make_case(name, cfg, randn, uniform)
        upstream = randn(B, T, H)
        runs = [(name, cfg["norm_topk_prob"])]
        if name == "deepseek_v3":
            runs.append((DEEPSEEK_NONORM, False))
        for run, norm in runs:
            y, logits, dense, idx, leaves, x = forward(case, cfg, norm, True)
            y.backward(upstream)
            out[run + ".y"] = y.detach()
            out[run + ".router_logits"] = logits.detach()
            out[run + ".routing_weights"] = dense
            out[run + ".grad_x"] = x.grad
            for k, leaf in leaves.items():
                if leaf.requires_grad:
                    g = leaf.grad if leaf.grad is not None else torch.zeros_like(leaf)
                    out[run + ".grad." + k] = g
        for k, v in case["params"].items():
            out[case["prefix"] + k] = v
        out[name + ".x"] = case["x"]
        out[name + ".upstream"] = upstream
        if cfg["family"] != "deepseek_v3":
            w = case["params"]["gate.weight"].clone().requires_grad_(True)
            aux = load_balancing_loss_func((F.linear(case["x"].view(-1, H), w),),
                                           cfg["n_experts"], cfg["top_k"])
            aux.backward()
            out[name + ".aux"] = aux.detach().reshape(1)
            out[name + ".aux_grad_router"] = w.grad
        meta[name] = dict(cfg, smallest_margins=case["margins"], token_draws=case["draws"],
                          **choices_changed(case, cfg, out[name + ".router_logits"]))
    return {k: v.detach().contiguous().numpy().astype(np.float32) for k, v in out.items()}, meta


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: %s OUT_DIR   (writes OUT_DIR/L7.8/moe.*)" % argv[0])
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(SEED)
    tensors, cases = build(gen)

    out_dir = os.path.join(argv[1], "L7.8")
    os.makedirs(out_dir, exist_ok=True)
    write_atomic(os.path.join(out_dir, "moe.safetensors"), safetensors_bytes(tensors))
    meta = {
        "lesson": "L7.8",
        "oracle": "oracle/L7.8/make_fixtures.py",
        "oracle_semantics": "MixtralSparseMoeBlock (MixtralTopKRouter + MixtralExperts), "
                            "Qwen2MoeSparseMoeBlock, DeepseekV3MoE and load_balancing_loss_func "
                            "re-implemented from transformers 5 (models/mixtral, models/qwen2_moe, "
                            "models/deepseek_v3 modeling files), experts fused to 3-D weights as "
                            "v5 loads them; transformers itself not installed",
        "torch_version": torch.__version__,
        "numpy_version": np.__version__,
        "seed": SEED,
        "shape": [B, T, H],
        "margin": MARGIN,
        "activation": "silu",
        "cases": cases,
        "deepseek_v3_nonorm": "deepseek_v3's weights and x with norm_topk_prob false",
        "tensors": {
            "<case>.<module>.<key>": "the case's parameters under the checkpoint's names "
                                     "(mixtral.block_sparse_moe.experts.0.w1.weight, ...)",
            "<case>.x, <case>.upstream": "input [B, T, H] and dL/dy",
            "<run>.y": "the block's output [B, T, H]",
            "<run>.router_logits": "W_r x, [N, E]",
            "<run>.routing_weights": "each token's combine weight per expert, [N, E] (0: unchosen)",
            "<run>.grad_x, <run>.grad.<key>": "d sum(y * upstream) / d x and each parameter "
                                             "(zero for experts no token chose)",
            "<case>.aux, <case>.aux_grad_router": "load_balancing_loss_func over the case's "
                                                  "logits [1], and its gradient for gate.weight",
        },
        "tolerances": TOLERANCES,
    }
    write_json(os.path.join(out_dir, "moe.json"), meta)


if __name__ == "__main__":
    main(sys.argv)
