/* logits.c: `tinyllm logits DIR --ids 1,2,3 [--out FILE.safetensors]` runs the
 * model of a checkpoint folder on one sequence at positions 0 .. T-1 and
 * writes its float32 logits as the tensor "logits" F32 [1, T, V], or, without
 * --out, prints the most likely next token at each position (PyTorch's
 * argmax: ties to the lower id). The folder is loaded as llama_from_pretrained
 * loads it (mapped, strict, its own dtype); the forward is under no_grad.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"
#include "tinyllm/safetensors.h"
#include "tinyllm/modern/llama.h"
#include "folder.h"
#include "options.h"
#include "output.h"
#include "verbs.h"

static const char USAGE[] =
    "usage: tinyllm logits DIR --ids ID,ID,... [--out FILE.safetensors]\n"
    "  DIR    a checkpoint folder in Hugging Face's layout (config.json and weights)\n"
    "  --ids  the token ids of one sequence, comma-separated (positions 0 .. T-1)\n"
    "  --out  write the logits as tensor \"logits\" F32 [1, T, vocab] to FILE;\n"
    "         without it, print the argmax token at each position\n"
    "Exit status: 0 done, 1 failed, 2 a usage error (an --ids that is not a list of\n"
    "ids, or an id outside the model's vocabulary).\n";

static int write_logits(const char *path, tl_tensor *logits) {
    tl_named_tensor item = {"logits", logits, false};
    tl_state_dict sd = {&item, 1};
    return tl_st_save(path, &sd, TL_F32, NULL, NULL, 0);
}

static void print_argmax(tl_tensor *logits, const int64_t *ids) {
    int64_t t = logits->shape[1], v = logits->shape[2];
    tl_tensor *best = tl_argmax(logits, 2, false);
    tl_tensor *top = tl_max(logits, 2, false);
    printf("position  token  next (argmax)  logit\n");
    for (int64_t i = 0; i < t; i++)
        printf("%8" PRId64 "  %5" PRId64 "  %13" PRId64 "  %.6g\n", i, ids[i],
               (int64_t)tl_item_at(best, i), tl_item_at(top, i));
    printf("(%" PRId64 " positions, vocab %" PRId64 ")\n", t, v);
}

int tinyllm_logits(int argc, char **argv) {
    const char *dir = NULL, *ids_text = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(USAGE, stdout);
            return 0;
        }
        if ((strcmp(argv[i], "--ids") == 0 || strcmp(argv[i], "--out") == 0) && i + 1 < argc) {
            *(argv[i][2] == 'i' ? &ids_text : &out) = argv[i + 1];
            i++;
        } else if (argv[i][0] == '-' || dir) {
            fprintf(stderr, "tinyllm logits: unexpected argument '%s'\n%s", argv[i], USAGE);
            return 2;
        } else {
            dir = argv[i];
        }
    }
    if (!dir || !ids_text) {
        fprintf(stderr, "tinyllm logits: %s\n%s", dir ? "--ids is required" : "DIR is required",
                USAGE);
        return 2;
    }
    tl_clear_error();
    int64_t *ids = NULL;
    /* A malformed --ids is a usage error (2), as in generate, said before the folder is
     * read; so is an id past config.json's vocab_size, said before the load. */
    int64_t n = parse_id_list(ids_text, &ids);
    if (n < 0) {
        print_failure("logits", NULL);
        free(ids);
        return 2;
    }
    LlamaConfig cfg;
    LlamaForCausalLM m = {0};
    int rc = folder_check(dir, true) == 0 ? folder_parse_config(dir, &cfg) : -1;
    if (rc == 0 && out) rc = output_path_check("--out", out, dir);
    for (int64_t i = 0; rc == 0 && i < n; i++)
        if (ids[i] >= cfg.vocab_size) {
            fprintf(stderr, "tinyllm logits: --ids: id %" PRId64 " (item %" PRId64 ") is "
                    "outside the vocabulary of %s (0 .. %" PRId64 ")\n", ids[i], i + 1, dir,
                    cfg.vocab_size - 1);
            free(ids);
            return 2;
        }
    if (rc == 0 && llama_from_pretrained(&m, dir, -1) != 0) rc = folder_explain_load_failure(dir);
    if (rc == 0) {
        tl_scope_push();
        tl_no_grad_push();
        tl_tensor *logits = llama_forward(&m, tl_from_i64(ids, TL_SHAPE(1, n)), NULL, NULL);
        tl_no_grad_pop();
        if (!logits) rc = -1;
        else if (out) rc = write_logits(out, logits);
        else print_argmax(logits, ids);
        if (rc == 0 && out) printf("wrote %s: logits F32 [1, %" PRId64 ", %" PRId64 "]\n", out,
                                   n, m.config.vocab_size);
        tl_scope_pop();
    }
    if (rc != 0) print_failure("logits", "failed");
    llama_free(&m);
    free(ids);
    return rc == 0 ? 0 : 1;
}
