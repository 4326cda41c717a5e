/* The gated MLP and HF's activations (L7.2): your implementation.
 *
 * The contract is contracts/tinyllm/modern/mlp.h; the math is section 2 of
 * the chapter (course/L7.2/README.md). Build everything from the ops in
 * tinyllm/ops.h and the Linear of tinyllm/nn.h, and autograd differentiates
 * it for you: never write to a tensor's data in a forward. Replace each
 * tl_fail below, then run `ol tests L7.2`.
 */
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/mlp.h"

int activation_from_name(const char *hf_name, tl_activation *out) {
    /* A table of HF's names, one per tl_activation (section 2.2); compare
     * with strcmp. An unknown name is an error that lists every known one. */
    (void)hf_name; (void)out;
    return tl_fail_status("not implemented: activation_from_name (L7.2)");
}

const char *activation_name(tl_activation act) {
    /* The same table, the other way round; refuse a value outside it. */
    (void)act;
    return tl_fail("not implemented: activation_name (L7.2)");
}

tl_tensor *activation_forward(tl_activation act, tl_tensor *x) {
    /* One case per activation (section 2.2): tl_silu, tl_gelu, tl_gelu_tanh
     * and tl_relu exist; gelu_fast, quick_gelu and relu2 are short chains of
     * tl_mul, tl_mul_scalar, tl_add_scalar, tl_tanh, tl_sigmoid, tl_square. */
    (void)act; (void)x;
    return tl_fail("not implemented: activation_forward (L7.2)");
}

int gated_mlp_init(GatedMLP *m, int64_t hidden, int64_t intermediate, tl_activation act,
                   bool bias, tl_pcg32 *rng) {
    /* Check the arguments, then a tl_module_new("GatedMLP") with three
     * children added in HF's order (tl_module_add): gate_proj and up_proj
     * are tl_linear_new(hidden, intermediate, ...), down_proj is
     * tl_linear_new(intermediate, hidden, ...). Section 2.4. */
    (void)m; (void)hidden; (void)intermediate; (void)act; (void)bias; (void)rng;
    return tl_fail_status("not implemented: gated_mlp_init (L7.2)");
}

int gated_mlp_init_named(GatedMLP *m, int64_t hidden, int64_t intermediate, tl_activation act,
                         bool bias, const char *gate_name, const char *up_name,
                         const char *down_name, tl_pcg32 *rng) {
    /* gated_mlp_init with the children's names given (Mixtral: w1, w3, w2):
     * write one helper that both call. */
    (void)m; (void)hidden; (void)intermediate; (void)act; (void)bias;
    (void)gate_name; (void)up_name; (void)down_name; (void)rng;
    return tl_fail_status("not implemented: gated_mlp_init_named (L7.2)");
}

void gated_mlp_free(GatedMLP *m) {
    /* tl_module_free the module tree, then clear the struct. NULL is a no-op. */
    (void)m;
    tl_fail("not implemented: gated_mlp_free (L7.2)");
}

tl_tensor *gated_mlp_forward(const GatedMLP *m, tl_tensor *x) {
    /* Validate (x's last axis, each projection's weight shape), then
     * down(act(gate(x)) * up(x)) with tl_linear_forward and tl_mul: the
     * activation goes on the gate, before the product. Section 2.1. */
    (void)m; (void)x;
    return tl_fail("not implemented: gated_mlp_forward (L7.2)");
}

int64_t gated_mlp_param_count(const GatedMLP *m) {
    /* From the fields: three matrices, and the biases when m->bias. Section 3. */
    (void)m;
    return tl_fail_status("not implemented: gated_mlp_param_count (L7.2)");
}

tl_tensor *gpt_oss_swiglu(tl_tensor *gate_up, double alpha, double limit) {
    /* Split the interleaved columns with views (tl_reshape to [..., I, 2],
     * tl_narrow, tl_squeeze), clamp (tl_clamp; -INFINITY as the lower bound
     * of the gate), then (u + 1) * g * sigmoid(alpha g). Section 2.5. */
    (void)gate_up; (void)alpha; (void)limit;
    return tl_fail("not implemented: gpt_oss_swiglu (L7.2)");
}
