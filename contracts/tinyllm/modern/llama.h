/* tinyllm/modern/llama.h: a Llama-family decoder that loads Hugging Face
 * checkpoints (L7.9, the Llama half).
 *
 * The model is Hugging Face's LlamaForCausalLM (and MistralForCausalLM,
 * Qwen2ForCausalLM, DeepseekV3ForCausalLM), built from the lessons before it:
 *
 *     h_0 = E[ids]                                              model.embed_tokens
 *     h'  = h_{l-1} + Attn_l(RMSNorm_1(h_{l-1}), positions)     L7.1 + L7.5 (or L7.6)
 *     h_l = h' + MLP_l(RMSNorm_2(h'))                           L7.1 + L7.2 (or L7.8)
 *     hidden = RMSNorm_f(h_L)                                   model.norm
 *     logits = hidden W_head^T,  W_head = E when tied           lm_head
 *
 * RoPE is L7.3's, its frequencies L7.4's; windows and sink tokens are L7.7's
 * masks. Layer l's MLP is an MoE (L7.8) when the config has experts and
 * l >= first_k_dense_replace; its attention is MLA (L7.6) for deepseek_v3 and
 * for tl_attention = "mla".
 *
 * ---- config.json -> LlamaConfig (llama_config_from_hf) -------------------
 * model_type must be "llama", "mistral", "qwen2" or "deepseek_v3"; anything
 * else is refused by name. Every key has HF's name; a key the config leaves
 * out takes the default of that model_type's HF config class (LlamaConfig,
 * MistralConfig, Qwen2Config, DeepseekV3Config), as transformers does:
 *   head_dim               absent, null or 0: hidden_size / num_attention_heads
 *                          (deepseek_v3: qk_nope_head_dim + qk_rope_head_dim
 *                          for q and k, v_head_dim for v, qk_rope_head_dim rotated)
 *   num_key_value_heads    absent or null: llama num_attention_heads; mistral 8;
 *                          qwen2 32; deepseek_v3 128 (null: num_attention_heads)
 *   tie_word_embeddings    false for all four
 *   biases                 llama: attention_bias (q, k, v AND o), mlp_bias;
 *                          qwen2: q, k, v always (implied by model_type, no key),
 *                          o never; mistral: none; deepseek_v3: attention_bias
 *                          (q_a_proj, kv_a_proj_with_mqa, o_proj)
 *   windows                mistral: top-level sliding_window on every layer
 *                          (absent: 4096, null: none); qwen2: layer l slides iff
 *                          use_sliding_window and (layer_types[l] ==
 *                          "sliding_attention", else l >= max_window_layers);
 *                          llama, deepseek_v3: none
 *   RoPE                   4.x: top-level rope_theta, rope_scaling {"type" or
 *                          "rope_type", ...}; 5.x: rope_parameters {"rope_type",
 *                          "rope_theta", ...}. The dict is rope_scaling when it
 *                          is a non-empty object, else rope_parameters; its
 *                          type is "rope_type", else "type", else "default";
 *                          rope_theta is the dict's, else the top level's, else
 *                          10000. Then L7.4 (rope_config_from_json) reads it.
 *   dtype                  "torch_dtype" (4.x) or "dtype" (5.x), kept as text
 * A deepseek_v3 checkpoint's MTP layers (model.layers.N.* for N >=
 * num_hidden_layers, num_nextn_predict_layers) are not part of the model.
 * Refused with a message saying why: a quantization_config (weights that are
 * not floats), qwen2's use_mrope, sizes that are not positive, heads that kv
 * heads do not divide, an odd rotary width, an unknown hidden_act or rope type.
 *
 * The course's own keys (tl_*), for configurations HF has no class for:
 *   tl_attention       "gqa" (default) or "mla": MLA in every layer of a llama
 *                      config, with tl_mla_rank (kv_lora_rank, required),
 *                      tl_mla_q_rank (q_lora_rank; absent or null: none) and
 *                      tl_mla_rope_dim (qk_rope_head_dim; default head_dim / 2);
 *                      qk_nope_head_dim = head_dim - tl_mla_rope_dim, v_head_dim =
 *                      head_dim, rope_interleave false
 *   tl_num_experts     E > 0: from layer first_k_dense_replace (default 0) on, the
 *                      MLP is a Qwen2-MoE-style MoE (keys mlp.gate,
 *                      mlp.experts.{e}.gate_proj|up_proj|down_proj, softmax top-k)
 *                      with HF's keys num_experts_per_tok (default 2),
 *                      moe_intermediate_size (default intermediate_size),
 *                      norm_topk_prob (default false), shared_expert_intermediate_size
 *                      (default 0: none; else a shared expert with its sigmoid gate)
 *                      and router_aux_loss_coef (default 0.001)
 *   tl_sliding_window  W > 0: every layer sees the last W keys (llama configs, or
 *                      instead of a family's window; not both)
 *   tl_sink_tokens     S > 0: with a window, the first S tokens stay visible
 *                      (StreamingLLM's attention sinks)
 *   tl_learned_sinks   true: every attention layer has gpt-oss's learned sinks
 *                      (self_attn.sinks [num_attention_heads]); GQA only
 *
 * ---- the checkpoint contract (llama_from_pretrained) ------------------------
 * Parameters are registered in HF's order, so the state dict has exactly HF's
 * keys in HF's order (hf-numerics.md section 10):
 *     model.embed_tokens.weight
 *     model.layers.{l}.self_attn.{q,k,v,o}_proj.weight (.bias where present)
 *     model.layers.{l}.mlp.{gate,up,down}_proj.weight (or the MoE's keys, L7.8)
 *     model.layers.{l}.input_layernorm.weight, .post_attention_layernorm.weight
 *     model.norm.weight
 *     lm_head.weight                        (only when untied)
 * A tied model registers the embedding once and has no lm_head.weight. Loading
 * is strict: every key the model has must be in the checkpoint with the
 * model's shape, and the checkpoint may hold nothing else, except what is
 * dropped before the check: a stored lm_head.weight of a tied model, legacy
 * rotary_emb.inv_freq buffers, and deepseek_v3's MTP layers.
 *
 * Memory and autograd follow tensor.h, nn.h and autograd.h: the module tree
 * (LlamaForCausalLM.module) owns the parameters; forwards build their results
 * from recorded ops in the current scope, so a model made by llama_init trains
 * (the tied embedding collects gradient from both of its uses). A model made
 * by llama_from_pretrained holds the checkpoint's tensors in place (read-only,
 * BF16 kept BF16): it is for inference; to train one, copy it (llama_init,
 * then tl_module_load_state_dict from its state dict).
 *
 * Errors: a function that fails returns NULL (or -1) with a message from
 * tl_error() naming the function, what was wrong and what to do; a NULL tensor
 * input keeps the message of the call that made it.
 */
#ifndef TINYLLM_MODERN_LLAMA_H
#define TINYLLM_MODERN_LLAMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "tinyllm/model_config.h"
#include "tinyllm/nn.h"
#include "tinyllm/pcg32.h"
#include "tinyllm/tensor.h"
#include "tinyllm/modern/attention.h"
#include "tinyllm/modern/mask.h"
#include "tinyllm/modern/mla.h"
#include "tinyllm/modern/mlp.h"
#include "tinyllm/modern/moe.h"
#include "tinyllm/modern/rmsnorm.h"
#include "tinyllm/modern/rope.h"
#include "tinyllm/modern/rope_scaling.h"

/* The most layers a LlamaConfig describes (its per-layer flags are a fixed array,
 * so the config stays a plain value), and the most eos ids it keeps. */
#define LLAMA_MAX_LAYERS 512
#define LLAMA_MAX_EOS 8

/* config.json's model_type. */
typedef enum {
    LLAMA_MODEL_LLAMA,        /* "llama" */
    LLAMA_MODEL_MISTRAL,      /* "mistral" */
    LLAMA_MODEL_QWEN2,        /* "qwen2" */
    LLAMA_MODEL_DEEPSEEK_V3,  /* "deepseek_v3" */
    LLAMA_MODEL_TYPE_COUNT    /* the number of model types, not one of them */
} llama_model_type;

/* A config.json, read. A plain value (fixed arrays, no pointers): copy it freely. */
typedef struct {
    llama_model_type model_type;
    int64_t vocab_size;              /* V */
    int64_t hidden_size;             /* d */
    int64_t intermediate_size;       /* f: the dense MLP's width */
    int64_t num_hidden_layers;       /* L, at most LLAMA_MAX_LAYERS */
    int64_t num_attention_heads;     /* H */
    int64_t num_key_value_heads;     /* H_kv (after its default) */
    int64_t head_dim;                /* d_h after its default (never 0) */
    tl_activation hidden_act;        /* the MLPs' (and experts') activation */
    int64_t max_position_embeddings;
    double rms_norm_eps;
    double initializer_range;        /* the std of llama_init's normal draws (0.02) */
    bool tie_word_embeddings;
    bool attention_bias;             /* llama: q, k, v, o; deepseek_v3: q_a, kv_a, o */
    bool mlp_bias;                   /* llama only */
    RopeConfig rope;                 /* the standardised rope (L7.4) */

    /* Windows (L7.7). */
    int64_t sliding_window;          /* the config's sliding_window (0: null / none) */
    bool use_sliding_window;         /* qwen2 */
    int64_t max_window_layers;       /* qwen2 */
    bool layer_sliding[LLAMA_MAX_LAYERS];  /* layer l slides (HF's layer_types, resolved) */
    int64_t tl_sliding_window;       /* 0: none */
    int64_t tl_sink_tokens;          /* 0: none */
    bool tl_learned_sinks;

    /* MLA (deepseek_v3, or tl_attention = "mla"). */
    bool mla;
    int64_t q_lora_rank;             /* 0: none (q_proj) */
    int64_t kv_lora_rank;
    int64_t qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
    bool rope_interleave;            /* deepseek_v3's default: true */

    /* Experts (deepseek_v3, or tl_num_experts > 0). n_routed_experts 0: dense. */
    int64_t n_routed_experts;        /* deepseek_v3 n_routed_experts; tl_num_experts */
    int64_t num_experts_per_tok;
    int64_t moe_intermediate_size;
    int64_t n_shared_experts;        /* deepseek_v3 */
    int64_t shared_expert_intermediate_size;   /* tl_num_experts */
    int64_t first_k_dense_replace;   /* layers before it are dense */
    int64_t n_group, topk_group;     /* deepseek_v3 */
    bool norm_topk_prob;
    double routed_scaling_factor;    /* deepseek_v3 (1 for tl_num_experts) */
    double router_aux_loss_coef;

    /* Token ids (-1: null) and the stored dtype, carried for save_pretrained. */
    int64_t bos_token_id, pad_token_id;
    int64_t eos_token_id[LLAMA_MAX_EOS];
    int n_eos;                       /* 0: null; 1 is written as a number, more as a list */
    char torch_dtype[16];            /* "float32", "bfloat16", ... or "" */
} LlamaConfig;

/* HF's name of a model type ("llama", ...), or NULL (with an error naming
 * llama_model_type_name) for a value that is not one. */
const char *llama_model_type_name(llama_model_type type);

/* Reads a config.json (its text) into *out, as the header says.
 * Returns 0, or -1 with an error naming llama_config_from_hf (and *out zeroed):
 * out NULL; json NULL, not JSON (the byte of the syntax error) or not an object;
 * model_type missing, not a string, or not one of the four (the message lists
 * them); a key of the wrong JSON type (naming the key and what it must be); a
 * size not a whole number >= 1 (vocab_size, hidden_size, intermediate_size,
 * num_hidden_layers up to LLAMA_MAX_LAYERS, num_attention_heads,
 * num_key_value_heads, head_dim, max_position_embeddings, the MLA and MoE
 * sizes); num_key_value_heads not dividing num_attention_heads; hidden_size not
 * divisible by num_attention_heads when head_dim must be derived; an odd rotary
 * width; rms_norm_eps negative or not finite; an unknown hidden_act (the
 * message lists HF's names); every refusal of rope_config_from_json; a
 * quantization_config; use_mrope true; layer_types of the wrong length or with
 * a type other than "full_attention" / "sliding_attention"; tl_attention other
 * than "gqa" or "mla"; tl_attention "mla" without tl_mla_rank, or with a rope
 * dim that is odd or not below head_dim; tl_num_experts with deepseek_v3;
 * num_experts_per_tok outside [1, experts]; first_k_dense_replace > layers;
 * tl_sliding_window beside a family's window; tl_sink_tokens without a window;
 * tl_learned_sinks with MLA; more than LLAMA_MAX_EOS eos ids. */
int llama_config_from_hf(const char *json, LlamaConfig *out);

/* The config as a config.json: a malloc'd string (free it), HF's keys for its
 * model_type (architectures, model_type, every size, the rope in both forms:
 * top-level rope_theta with rope_scaling, and rope_parameters), plus the tl_*
 * keys it uses; two-space indent, keys sorted. llama_config_from_hf of the
 * result gives back exactly *c (from_hf(to_hf(c)) == c). Returns NULL with an
 * error naming llama_config_to_hf when c is NULL, its model_type is not one of
 * the four, or memory runs out. */
char *llama_config_to_hf(const LlamaConfig *c);

/* M05.1's tl_model_config of a dense GQA config (vocab, sizes, heads, head_dim,
 * tied, the biases), so tl_model_config_param_count(out) is the model's count.
 * Returns 0, or -1 with an error naming llama_model_config when c or out is
 * NULL, or c has what M05.1 does not describe: MLA, experts, learned sinks
 * (then use llama_config_param_count). */
int llama_model_config(const LlamaConfig *c, tl_model_config *out);

/* The MLA layer shape of an MLA config (deepseek_v3, or tl_attention "mla"):
 * its widths, attention_bias, rope_interleave, and the rope's factor and
 * mscale_all_dim when the rope is scaled (else 0). Returns 0, or -1 with an
 * error naming llama_mla_config when c or out is NULL or c has no MLA. */
int llama_mla_config(const LlamaConfig *c, MLAConfig *out);

/* The number of parameters a model of this config has, as HF's num_parameters()
 * counts them (a tied head once; buffers such as e_score_correction_bias not
 * at all), from the config alone: tl_model_config_param_count for dense GQA,
 * and the sum of the parts (L7.2, L7.5, L7.6, L7.8's counts) otherwise.
 * SmolLM2-135M: 134,515,008. Returns -1 with an error naming
 * llama_config_param_count when c is NULL or describes no model (the errors of
 * tl_model_config_param_count), or when the count overflows 64 bits on any path
 * (sizes far too large, as in a damaged config.json: "... overflows ..."). */
int64_t llama_config_param_count(const LlamaConfig *c);

/* Layer l's window: 0 (full causal attention), or the number of keys a query
 * sees, its own included (tl_sliding_window, else sliding_window where
 * layer_sliding[l]). -1 with an error naming llama_layer_window when c is NULL
 * or l is out of range. */
int64_t llama_layer_window(const LlamaConfig *c, int64_t l);

/* The RopeSpec (L7.3) every attention layer rotates with, for a forward whose
 * largest position is seq_len - 1: head width head_dim (MLA: qk_rope_head_dim),
 * partial rotary from the config, half pairing (an MLA layer with
 * rope_interleave de-interleaves its rope features first, L7.6), frequencies
 * and attention_scaling from L7.4 (rope_spec_from_config at seq_len; 0 means
 * at initialisation).
 * Returns 0, or -1 with an error naming llama_rope_spec (the errors of
 * rope_spec_from_config) when c or out is NULL or seq_len < 0. */
int llama_rope_spec(const LlamaConfig *c, int64_t seq_len, RopeSpec *out);

/* ---- the model ---------------------------------------------------------------- */

/* One decoder block: children self_attn, mlp, input_layernorm,
 * post_attention_layernorm (HF's order). */
typedef struct {
    tl_module *module;                /* owned by the model's layers list */
    bool latent;                      /* true: self_attn is mla, else attn */
    GQAttention attn;                 /* self_attn, when !latent */
    MLAttention mla;                  /* self_attn, when latent */
    bool sparse;                      /* true: mlp is moe, else dense */
    GatedMLP dense;                   /* mlp, when !sparse */
    MoE moe;                          /* mlp, when sparse */
    RMSNorm input_layernorm, post_attention_layernorm;  /* weights shared into module */
    int64_t window;                   /* 0: full attention; else the keys a query sees */
    int64_t sink_tokens;              /* with a window: the first tokens kept visible */
} LlamaDecoderLayer;

typedef struct {
    tl_module *module;                /* owned: "LlamaForCausalLM", children model, lm_head */
    tl_module *model;                 /* borrowed: "LlamaModel", children embed_tokens,
                                       * layers, norm */
    tl_module *embed_tokens;          /* borrowed: Embedding [V, d] */
    tl_module *layers;                /* borrowed: ModuleList of L LlamaDecoderLayer */
    tl_module *lm_head;               /* borrowed: Linear(d -> V) without bias; NULL when tied */
    tl_tensor *head_weight;           /* lm_head's weight, or embed_tokens' when tied */
    LlamaDecoderLayer *decoder;       /* owned array of L */
    RMSNorm norm;                     /* model.norm (weight shared into its module) */
    LlamaConfig config;               /* a copy */
    int64_t rope_seq_len;             /* dynamic rope's state (rope_update_seq_len) */
    tl_tensor **router_logits;        /* [L]: each MoE layer's router logits of the last
                                       * forward (in that forward's scope), else NULL */
} LlamaForCausalLM;

/* Fills *m with a model of config c. With rng, every weight is drawn as HF's
 * _init_weights draws it: N(0, initializer_range^2) for each Linear and
 * Embedding weight and each learned sink, in state-dict order, from rng; biases
 * and e_score_correction_bias 0; norms 1. With rng NULL (init=false) every
 * parameter is allocated zero-filled and no number is drawn (a model to load a
 * checkpoint into: SmolLM2's 135 million zeros are not even resident).
 * Returns 0, or -1 with an error naming llama_init when m or c is NULL, c is
 * not a config llama_config_from_hf would return (the same checks), a part's
 * init fails (its message), or memory runs out. On error *m holds no module
 * (llama_free is still safe). */
int llama_init(LlamaForCausalLM *m, const LlamaConfig *c, tl_pcg32 *rng);

/* Frees the layers' parts, the norm and the module tree (the parts before the
 * whole) and clears *m. NULL, a cleared struct and a failed init are no-ops. */
void llama_free(LlamaForCausalLM *m);

/* logits = the model of the header.
 *   ids: I64 or I32 [B, T], T >= 1, each in [0, vocab_size).
 *   positions: the position ids RoPE uses: I64/I32 [T] (shared by the batch) or
 *     [B, T]; NULL means the positions continue from the cache:
 *     kv_cache_seq_len(cache, 0) + 0 .. T-1 (0 .. T-1 without a cache), as HF's
 *     cache_position. With a cache that rotates keys itself (L7.7's
 *     SINK_REPOSITION) positions must be NULL.
 *   cache: NULL, or ONE cache for every layer (each passes its index):
 *     llama_cache_init's, or any KVCache of the model's widths (a
 *     SinkWindowCache of the layers' window and sinks keeps memory bounded).
 *     Cached forwards are inference: run them under tl_no_grad_push().
 *   returns: F32 [B, T, vocab_size], in the current scope.
 * Before the layers run, dynamic rope types (L7.4) update the frequencies for
 * max(position) + 1, as HF's dynamic_rope_update. MoE layers keep their router
 * logits for llama_aux_loss.
 * Errors (NULL, naming llama_forward; a cache is left as it was): m NULL or
 * without a module; ids NULL (its message kept), not [B, T] of an index dtype, or
 * an id out of range (the id and its position named); positions of the wrong
 * dtype or shape; the errors of the layers (a full cache, a cache of other
 * widths, gradients enabled with a cache). */
tl_tensor *llama_forward(LlamaForCausalLM *m, tl_tensor *ids, tl_tensor *positions,
                         KVCache *cache);

/* hidden = the model of the header without its head: HF's LlamaModel.forward
 * (last_hidden_state, after model.norm), so that
 *     llama_forward(m, ids, positions, cache)
 *         == tl_linear(llama_model_forward(m, ids, positions, cache), m->head_weight, NULL)
 * bit for bit. Same arguments, cache updates and router logits as llama_forward.
 *   returns: F32 [B, T, hidden_size], in the current scope.
 * Why it exists: generation needs the logits of the last position only (HF's
 * logits_to_keep=1). The head is the largest product of a small model
 * (SmolLM2-135M: 49152 x 576, a fifth of a prefill's work), so a prompt's
 * prefill applies it to the last row of hidden alone.
 * Errors: llama_forward's, each naming llama_model_forward. */
tl_tensor *llama_model_forward(LlamaForCausalLM *m, tl_tensor *ids, tl_tensor *positions,
                               KVCache *cache);

/* The load-balancing loss (L7.8's moe_aux_loss) over the router logits of every
 * MoE layer of the last forward, concatenated as HF concatenates them, with
 * top_k = num_experts_per_tok: F32 rank 0 in the current scope, recorded (the
 * router gets its gradient). Call it in the scope of that forward. The training
 * loss is cross_entropy + router_aux_loss_coef * aux. Returns NULL with an error
 * naming llama_aux_loss when m is NULL, the model has no MoE layer, or no forward
 * has run since init. */
tl_tensor *llama_aux_loss(const LlamaForCausalLM *m);

/* The number of parameters, HF's num_parameters(): tl_module_param_count of the
 * module (the tied embedding once) less the buffers (deepseek_v3's
 * e_score_correction_bias); equals llama_config_param_count(&m->config).
 * Returns -1 with an error naming llama_param_count when m is NULL or has no
 * module. */
int64_t llama_param_count(const LlamaForCausalLM *m);

/* A plain keep-everything KVCache (L7.5) for m: one layer per decoder layer,
 * batch rows, max_len positions (0: max_position_embeddings), of the widths
 * the model's attention caches: n_kv_heads heads of head_dim for GQA, the
 * latent cache (mla_cache_init: kv_lora_rank + qk_rope_head_dim floats per
 * token) for MLA. Free it with kv_cache_free. Returns 0, or -1
 * with an error naming llama_cache_init (m NULL or without a module; batch < 1;
 * the errors of kv_cache_init, which names the bytes it could not get). */
int llama_cache_init(const LlamaForCausalLM *m, KVCache *cache, int64_t batch,
                     int64_t max_len);

/* ---- Hugging Face folders -------------------------------------------------------- */

/* Loads a checkpoint folder in HF's layout: dir/config.json (llama_config_from_hf),
 * then dir/model.safetensors or dir/model.safetensors.index.json and its shards.
 * The model is built with init=false and adopts the checkpoint in place
 * (tl_module_adopt_checkpoint): every tensor stored in the dtype asked for is a
 * read-only view of the mapped file, so one resident copy of the weights exists.
 *   dtype: TL_F32 (BF16 and F16 weights widened exactly), TL_BF16 (F32 and F16
 *     weights rounded to nearest even, as torch's .to(torch.bfloat16)), or -1:
 *     the checkpoint's own (BF16 when every float tensor is BF16, else F32).
 * Before the strict check, a tied model's stored lm_head.weight, legacy
 * rotary_emb.inv_freq buffers and deepseek_v3's MTP layers are dropped.
 * Returns 0 and fills *m (free it with llama_free), or -1 with an error naming
 * llama_from_pretrained and the folder, leaving *m cleared: m or dir NULL; no
 * config.json, or one that is not a regular file (a FIFO is refused, never
 * waited on: tl_read_whole_file) or is unreadable; its errors
 * (llama_config_from_hf); no weights
 * (the runtime's message); a key the model needs that no file holds, a key no
 * part of the model has, a tensor of the wrong shape (each message names the
 * key, the shape expected and found, and the file: "model.norm.weight has
 * shape [32] in model-00002-of-00002.safetensors; the config gives [64]"), or
 * not a float; dtype not one of the three. */
int llama_from_pretrained(LlamaForCausalLM *m, const char *dir, int dtype);

/* Writes m to dir in HF's layout, creating dir if needed: config.json
 * (llama_config_to_hf, torch_dtype and dtype set to what was saved),
 * generation_config.json (bos, eos and pad ids), and the weights in HF's
 * order without the tied head: one model.safetensors, or, when
 * max_shard_bytes > 0 and the weights are larger,
 * model-0000k-of-0000n.safetensors shards of at most that many bytes (a larger
 * tensor gets one of its own) and model.safetensors.index.json. Each file is
 * written to a temporary name and renamed, so a failed save leaves no half
 * file under a final name.
 *   dtype: TL_F32 (bit-exact) or TL_BF16 (rounded to nearest even).
 * Returns 0, or -1 with an error naming llama_save_pretrained: m NULL or without
 * a module; dir NULL; dtype not TL_F32 or TL_BF16; the file system's errors
 * (naming the path). */
int llama_save_pretrained(const LlamaForCausalLM *m, const char *dir, tl_dtype dtype,
                          size_t max_shard_bytes);

#endif
