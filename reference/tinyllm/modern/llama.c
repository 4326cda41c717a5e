/* LlamaForCausalLM (L7.9): the reference.
 *
 * The lessons before this one are the parts; this file registers them under
 * HF's names in HF's order and runs them as two pre-norm residual steps per
 * layer. Every forward is built from recorded ops, so the model trains.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tinyllm/autograd.h"
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/llama.h"

static const char *const CLASS_NAMES[] = {"LlamaForCausalLM", "MistralForCausalLM",
                                          "Qwen2ForCausalLM", "DeepseekV3ForCausalLM"};

/* ---- building ------------------------------------------------------------------- */

/* An RMSNorm whose weight appears under HF's name as a child module's "weight". */
static int add_norm(tl_module *parent, const char *name, RMSNorm *norm, int64_t dim, double eps) {
    if (rmsnorm_init(norm, dim, eps, false) != 0) return -1;
    tl_module *child = tl_module_add(parent, name, tl_module_new("RMSNorm"));
    if (!child || tl_module_param_share(child, "weight", norm->weight) != 0) return -1;
    return 0;
}

static MoEConfig moe_config(const LlamaConfig *c) {
    bool deepseek = c->model_type == LLAMA_MODEL_DEEPSEEK_V3;
    int64_t shared = deepseek ? c->moe_intermediate_size * c->n_shared_experts
                              : c->shared_expert_intermediate_size;
    return (MoEConfig){
        .family = deepseek ? MOE_DEEPSEEK_V3 : MOE_QWEN2_MOE,
        .hidden = c->hidden_size,
        .n_experts = c->n_routed_experts,
        .expert_intermediate = c->moe_intermediate_size,
        .top_k = (int)c->num_experts_per_tok,
        .norm_topk_prob = c->norm_topk_prob,
        .act = c->hidden_act,
        .shared_intermediate = shared,
        .shared_expert_gate = !deepseek && shared > 0,
        .n_group = deepseek ? (int)c->n_group : 0,
        .topk_group = deepseek ? (int)c->topk_group : 0,
        .routed_scaling_factor = c->routed_scaling_factor,
    };
}

static int add_attention(LlamaDecoderLayer *layer, const LlamaConfig *c, const RopeSpec *rope) {
    layer->latent = c->mla;
    if (layer->latent) {     /* DeepSeek-V3's latent attention (L7.6) */
        MLAConfig mc;
        if (llama_mla_config(c, &mc) != 0 || mla_init(&layer->mla, &mc, rope, NULL) != 0)
            return -1;
        return tl_module_add(layer->module, "self_attn", layer->mla.module) ? 0 : -1;
    }
    bool llama = c->model_type == LLAMA_MODEL_LLAMA;
    GQAConfig g = {
        .hidden = c->hidden_size,
        .n_heads = c->num_attention_heads,
        .n_kv_heads = c->num_key_value_heads,
        .head_dim = c->head_dim,
        .qkv_bias = c->model_type == LLAMA_MODEL_QWEN2 || (llama && c->attention_bias),
        .o_bias = llama && c->attention_bias,
    };
    if (gqa_init(&layer->attn, &g, rope, NULL) != 0) return -1;
    if (c->tl_learned_sinks && gqa_add_learned_sinks(&layer->attn, NULL) != 0) return -1;
    return tl_module_add(layer->module, "self_attn", layer->attn.module) ? 0 : -1;
}

static int add_mlp(LlamaDecoderLayer *layer, const LlamaConfig *c, int64_t l) {
    /* The first first_k_dense_replace layers stay dense. */
    layer->sparse = c->n_routed_experts > 0 && l >= c->first_k_dense_replace;
    if (layer->sparse) {
        MoEConfig mc = moe_config(c);
        if (moe_init(&layer->moe, &mc, NULL) != 0) return -1;
        return tl_module_add(layer->module, moe_module_name(mc.family), layer->moe.module) ? 0
                                                                                         : -1;
    }
    if (gated_mlp_init(&layer->dense, c->hidden_size, c->intermediate_size, c->hidden_act,
                       c->mlp_bias, NULL) != 0)
        return -1;
    return tl_module_add(layer->module, "mlp", layer->dense.module) ? 0 : -1;
}

/* One decoder block, registered as HF's: self_attn, mlp, input_layernorm,
 * post_attention_layernorm. */
static int add_layer(LlamaForCausalLM *m, int64_t l, const RopeSpec *rope) {
    const LlamaConfig *c = &m->config;
    LlamaDecoderLayer *layer = &m->decoder[l];
    layer->module = tl_module_list_append(m->layers, tl_module_new("LlamaDecoderLayer"));
    if (!layer->module || add_attention(layer, c, rope) != 0 || add_mlp(layer, c, l) != 0 ||
        add_norm(layer->module, "input_layernorm", &layer->input_layernorm, c->hidden_size,
                 c->rms_norm_eps) != 0 ||
        add_norm(layer->module, "post_attention_layernorm", &layer->post_attention_layernorm,
                 c->hidden_size, c->rms_norm_eps) != 0)
        return -1;
    layer->window = llama_layer_window(c, l);
    layer->sink_tokens = layer->window > 0 ? c->tl_sink_tokens : 0;
    return 0;
}

/* HF's _init_weights: every matrix (Linear, Embedding, router) and every learned
 * sink from N(0, initializer_range^2), in state-dict order; vectors keep their
 * init (norms 1, biases and e_score_correction_bias 0). */
static int draw_weights(LlamaForCausalLM *m, tl_pcg32 *rng) {
    tl_state_dict sd = tl_module_state_dict(m->module);
    if (!sd.items) return -1;
    double std = m->config.initializer_range;
    for (int i = 0; i < sd.count; i++) {
        tl_tensor *t = sd.items[i].tensor;
        size_t len = strlen(sd.items[i].name);
        bool sinks = len >= 6 && strcmp(sd.items[i].name + len - 6, ".sinks") == 0;
        if (sd.items[i].shared || (t->ndim != 2 && !sinks)) continue;
        float *v = tl_f32(t);
        for (int64_t k = 0; v && k < tl_numel(t); k++) v[k] = (float)(std * tl_pcg32_normal(rng));
    }
    tl_state_dict_free(&sd);
    return 0;
}

int llama_init(LlamaForCausalLM *m, const LlamaConfig *c, tl_pcg32 *rng) {
    if (!m) return tl_fail_status("llama_init: the LlamaForCausalLM pointer is NULL");
    memset(m, 0, sizeof *m);
    if (!c) return tl_fail_status("llama_init: the config is NULL");
    /* The config must be one from_hf would give: check it the same way. */
    char *json = llama_config_to_hf(c);
    LlamaConfig checked;
    int rc = json ? llama_config_from_hf(json, &checked) : -1;
    free(json);
    if (rc != 0) return tl_fail_status("llama_init: the config is not valid: %s", tl_error());
    m->config = *c;

    RopeSpec rope;
    if (llama_rope_spec(c, 0, &rope) != 0) return tl_fail_status("llama_init: %s", tl_error());
    m->decoder = calloc((size_t)c->num_hidden_layers, sizeof *m->decoder);
    m->router_logits = calloc((size_t)c->num_hidden_layers, sizeof *m->router_logits);
    m->module = tl_module_new(CLASS_NAMES[c->model_type]);
    m->model = tl_module_add(m->module, "model", tl_module_new("LlamaModel"));
    m->embed_tokens = tl_module_add(m->model, "embed_tokens",
                                    tl_embedding_new(c->vocab_size, c->hidden_size, NULL));
    m->layers = tl_module_add(m->model, "layers", tl_module_list_new());
    rc = m->decoder && m->router_logits && m->embed_tokens && m->layers ? 0 : -1;
    for (int64_t l = 0; rc == 0 && l < c->num_hidden_layers; l++) rc = add_layer(m, l, &rope);
    if (rc == 0) rc = add_norm(m->model, "norm", &m->norm, c->hidden_size, c->rms_norm_eps);
    if (rc == 0 && c->tie_word_embeddings) {
        m->head_weight = tl_module_param(m->embed_tokens, "weight");   /* one tensor, two uses */
    } else if (rc == 0) {
        m->lm_head = tl_module_add(m->module, "lm_head",
                                   tl_linear_new(c->hidden_size, c->vocab_size, false, NULL));
        m->head_weight = m->lm_head ? tl_module_param(m->lm_head, "weight") : NULL;
    }
    if (rc == 0 && !m->head_weight) rc = -1;
    if (rc == 0 && rng) rc = draw_weights(m, rng);
    if (rc != 0) {
        tl_fail("llama_init: could not build the model: %s",
                tl_error() ? tl_error() : "out of memory");
        llama_free(m);
        return -1;
    }
    return 0;
}

void llama_free(LlamaForCausalLM *m) {
    if (!m) return;
    for (int64_t l = 0; m->decoder && l < m->config.num_hidden_layers; l++) {
        LlamaDecoderLayer *layer = &m->decoder[l];
        gqa_free(&layer->attn);
        mla_free(&layer->mla);
        gated_mlp_free(&layer->dense);
        moe_free(&layer->moe);
        rmsnorm_free(&layer->input_layernorm);
        rmsnorm_free(&layer->post_attention_layernorm);
    }
    rmsnorm_free(&m->norm);
    tl_module_free(m->module);
    free(m->decoder);
    free(m->router_logits);
    memset(m, 0, sizeof *m);
}

/* ---- the forward ---------------------------------------------------------------- */

/* What a layer's sublayers need beyond their input. */
typedef struct {
    LlamaDecoderLayer *layer;
    tl_tensor *positions;
    KVCache *cache;
    int index;
    tl_tensor **router_logits;
} layer_step;

/* The window's additive mask, built from the cache positions of this update. */
static tl_tensor *window_mask(const layer_step *s, int64_t t) {
    tl_tensor *query_pos, *key_pos;
    if (!s->cache) {
        query_pos = key_pos = tl_arange(0, t);
    } else if (kv_cache_positions(s->cache, s->index, t, &query_pos, &key_pos) != 0) {
        return NULL;
    }
    return attention_mask(query_pos, key_pos, s->layer->window, s->layer->sink_tokens);
}

static tl_tensor *attention_sublayer(tl_tensor *x, void *ctx) {
    layer_step *s = ctx;
    const LlamaDecoderLayer *layer = s->layer;
    if (layer->latent) {
        tl_tensor *mask = layer->window > 0 ? window_mask(s, x->shape[1]) : NULL;
        if (layer->window > 0 && !mask) return NULL;
        return mla_forward(&layer->mla, x, s->positions, mask, s->cache, s->index);
    }
    if (layer->window > 0)   /* the window's mask, from the cache's positions */
        return gqa_window_forward(&layer->attn, x, s->positions, layer->window,
                                  layer->sink_tokens, s->cache, s->index);
    return gqa_forward(&layer->attn, x, s->positions, NULL, s->cache, s->index);
}

static tl_tensor *mlp_sublayer(tl_tensor *x, void *ctx) {
    layer_step *s = ctx;
    if (s->layer->sparse) return moe_forward(&s->layer->moe, x, s->router_logits);
    return gated_mlp_forward(&s->layer->dense, x);
}

static int check_ids(const char *fn, const tl_tensor *ids, const tl_tensor *positions) {
    char s[64];
    if ((ids->dtype != TL_I64 && ids->dtype != TL_I32) || ids->ndim != 2 || ids->shape[1] < 1)
        return tl_fail_status("%s: ids %s (%s) must be I64 or I32 [B, T] with T >= 1", fn,
                              tl_shape_str(ids, s, sizeof s), tl_dtype_name(ids->dtype));
    if (positions && ((positions->dtype != TL_I64 && positions->dtype != TL_I32) ||
                      positions->ndim < 1 || positions->ndim > 2 ||
                      positions->shape[positions->ndim - 1] != ids->shape[1]))
        return tl_fail_status("%s: positions %s must be I64 or I32 [T] or [B, T] for ids %s",
                              fn, tl_shape_str(positions, s, sizeof s),
                              tl_shape_str(ids, s + 32, 32));
    return 0;
}

/* Dynamic and longrope frequencies depend on the longest position (HF's
 * dynamic_rope_update); the other types never change. */
static int update_rope(LlamaForCausalLM *m, tl_tensor *positions) {
    rope_type type = m->config.rope.type;
    if (type != ROPE_TYPE_DYNAMIC && type != ROPE_TYPE_LONGROPE) return 0;
    int64_t longest = 0;
    for (int64_t i = 0; i < tl_numel(positions); i++) {
        int64_t p = (int64_t)tl_item_at(positions, i);
        if (p + 1 > longest) longest = p + 1;
    }
    int64_t seq_len = rope_update_seq_len(&m->config.rope, longest > 0 ? longest : 1,
                                          &m->rope_seq_len);
    RopeSpec rope;
    if (seq_len < 0 || llama_rope_spec(&m->config, seq_len, &rope) != 0) return -1;
    for (int64_t l = 0; l < m->config.num_hidden_layers; l++) {
        if (m->decoder[l].latent) m->decoder[l].mla.rope = rope;
        else m->decoder[l].attn.rope = rope;
    }
    return 0;
}

/* HF's LlamaModel.forward, its errors naming fn (the function the caller called). */
static tl_tensor *decoder_forward(const char *fn, LlamaForCausalLM *m, tl_tensor *ids,
                                  tl_tensor *positions, KVCache *cache) {
    if (!m || !m->module)
        return tl_fail("%s: the model is NULL or has no module (llama_init first)", fn);
    if (!ids) return tl_propagate("%s: ids is NULL", fn);
    if (check_ids(fn, ids, positions) != 0) return NULL;
    if (cache && cache->rotates_keys && positions)
        return tl_fail("%s: this %s rotates keys at its own positions: pass positions NULL", fn,
                       cache->ops ? cache->ops->kind : "cache");
    if (cache && tl_grad_enabled())
        return tl_fail("%s: a cache keeps keys and values without their autograd history: run "
                       "cached forwards under tl_no_grad_push(), or pass cache NULL to train",
                       fn);
    int64_t t = ids->shape[1];
    /* Positions continue from what the cache already holds. */
    int64_t past = cache ? kv_cache_seq_len(cache, 0) : 0;
    if (past < 0) return tl_fail("%s: %s", fn, tl_error());
    for (int64_t l = 0; cache && l < m->config.num_hidden_layers; l++) {
        tl_tensor *q, *k;   /* every layer must take the tokens: none changes otherwise */
        if (kv_cache_positions(cache, (int)l, t, &q, &k) != 0)
            return tl_fail("%s: %s", fn, tl_error());
    }
    tl_tensor *pos = positions ? positions : tl_arange(past, past + t);
    if (!pos || update_rope(m, pos) != 0) return NULL;
    tl_tensor *layer_pos = cache && cache->rotates_keys ? NULL : pos;

    /* For inference each layer runs in a scope of its own and keeps only its
     * output (and router logits): memory holds one layer's temporaries, not all. */
    bool own_scopes = !tl_grad_enabled();
    tl_tensor *h = tl_embedding_forward(m->embed_tokens, ids);
    if (!h) return tl_fail("%s: %s", fn, tl_error());   /* an id out of range, named */
    for (int64_t l = 0; l < m->config.num_hidden_layers; l++) {
        LlamaDecoderLayer *layer = &m->decoder[l];
        m->router_logits[l] = NULL;
        layer_step step = {layer, layer_pos, cache, (int)l, &m->router_logits[l]};
        if (own_scopes) tl_scope_push();
        h = pre_norm_residual(h, &layer->input_layernorm, attention_sublayer, &step);
        h = pre_norm_residual(h, &layer->post_attention_layernorm, mlp_sublayer, &step);
        if (own_scopes) {
            h = tl_scope_keep(h);
            if (m->router_logits[l]) m->router_logits[l] = tl_scope_keep(m->router_logits[l]);
            tl_scope_pop();
        }
    }
    return rmsnorm_forward(&m->norm, h);
}

tl_tensor *llama_model_forward(LlamaForCausalLM *m, tl_tensor *ids, tl_tensor *positions,
                               KVCache *cache) {
    return decoder_forward("llama_model_forward", m, ids, positions, cache);
}

tl_tensor *llama_forward(LlamaForCausalLM *m, tl_tensor *ids, tl_tensor *positions,
                         KVCache *cache) {
    tl_tensor *hidden = decoder_forward("llama_forward", m, ids, positions, cache);
    return hidden ? tl_linear(hidden, m->head_weight, NULL) : NULL;
}

tl_tensor *llama_aux_loss(const LlamaForCausalLM *m) {
    if (!m || !m->module) return tl_fail("llama_aux_loss: the model is NULL or has no module");
    int64_t layers = m->config.num_hidden_layers, n = 0;
    tl_tensor **parts = calloc((size_t)layers, sizeof *parts);
    if (!parts) return tl_fail("llama_aux_loss: out of memory");
    for (int64_t l = 0; l < layers; l++)
        if (m->router_logits[l]) parts[n++] = m->router_logits[l];
    tl_tensor *aux = NULL;
    if (m->config.n_routed_experts == 0)
        tl_fail("llama_aux_loss: the model has no MoE layer, so there is no router to balance");
    else if (n == 0)
        tl_fail("llama_aux_loss: no forward has run since llama_init; the loss is about the "
                "router logits of the last forward");
    else
        aux = moe_aux_loss(tl_concat(parts, (int)n, 0), (int)m->config.num_experts_per_tok);
    free(parts);
    return aux;
}

int64_t llama_param_count(const LlamaForCausalLM *m) {
    if (!m || !m->module)
        return tl_fail_status("llama_param_count: the model is NULL or has no module");
    int64_t n = tl_module_param_count(m->module);   /* the tied embedding once */
    for (int64_t l = 0; l < m->config.num_hidden_layers; l++)
        if (m->decoder[l].sparse)    /* e_score_correction_bias is a buffer, not counted */
            n -= tl_module_param_count(m->decoder[l].moe.module) -
                 moe_param_count(&m->decoder[l].moe);
    return n;
}

int llama_cache_init(const LlamaForCausalLM *m, KVCache *cache, int64_t batch, int64_t max_len) {
    if (!m || !m->module || !cache || batch < 1)
        return tl_fail_status("llama_cache_init: the model (with a module) and the cache must be "
                              "given, and batch must be >= 1");
    const LlamaConfig *c = &m->config;
    int64_t len = max_len > 0 ? max_len : c->max_position_embeddings;
    MLAConfig mc;
    int rc = c->mla ? llama_mla_config(c, &mc) : 0;
    if (rc == 0 && c->mla) rc = mla_cache_init(cache, &mc, (int)c->num_hidden_layers, batch, len);
    else if (rc == 0) rc = kv_cache_init(cache, (int)c->num_hidden_layers, batch,
                                         c->num_key_value_heads, c->head_dim, c->head_dim, len);
    return rc == 0 ? 0 : tl_fail_status("llama_cache_init: %s", tl_error());
}
