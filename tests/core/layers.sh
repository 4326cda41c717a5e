#!/usr/bin/env bash
# The runtime's files call each other one way (issue 7, item 7): each object
# of reference/tinyllm/core may call only objects of lower layers, except the
# ops and autograd, which call each other by nature (an op records a node;
# a backward runs ops). Tensors therefore never depend on autograd.
# Usage: tests/core/layers.sh OBJ_DIR (the folder of core's .o files).
set -euo pipefail
dir=${1:?usage: layers.sh OBJ_DIR}

layer_of() {
    case $1 in
    error|bf16|pcg32|pool|prefetch|gemm_amx|gemm_avx512|json_keys) echo 0 ;;   # no runtime calls
    shape|elements|kernels|model_config|files) echo 1 ;;
    scope) echo 2 ;;                             # storage and headers
    kernels_multi) echo 2 ;;                     # few rows: the GEMVs' sibling
    tensor) echo 3 ;;                            # creation and element access
    inputs|broadcast) echo 4 ;;                  # what ops do with their inputs
    cast|views|autograd|ops_*) echo 5 ;;         # the ops-autograd cycle
    nn|nn_fuse|nn_pack|safetensors) echo 6 ;;
    nn_layers|nn_load|safetensors_write|checkpoint) echo 7 ;;
    nn_adopt) echo 8 ;;
    # the tokenizer and chat templates (tokenizer.h, chat_template.h)
    tokenizer_text|jinja_value|jinja_case) echo 1 ;;
    tokenizer_pattern|tokenizer_bpe|tokenizer_vocab|jinja_context|jinja_lex|jinja_parse) echo 2 ;;
    tokenizer_normalize|tokenizer_pretokenize|jinja_builtins) echo 3 ;;
    tokenizer_encode|tokenizer_decode|jinja_eval) echo 4 ;;
    tokenizer_load|chat_template) echo 6 ;;
    *) echo "layers.sh: $1.c has no layer; add it to tests/core/layers.sh" >&2; exit 2 ;;
    esac
}

declare -A owner
for o in "$dir"/*.o; do
    name=$(basename "$o" .o)
    layer_of "$name" >/dev/null
    while read -r sym; do owner[$sym]=$name; done < <(nm --defined-only -g "$o" | awk '{print $3}')
done

bad=0
for o in "$dir"/*.o; do
    from=$(basename "$o" .o)
    lf=$(layer_of "$from")
    while read -r sym; do
        to=${owner[$sym]:-}
        [[ -z $to || $to == "$from" ]] && continue
        lt=$(layer_of "$to")
        if (( lt > lf || (lt == lf && lf != 5) )); then
            echo "layers.sh: $from.c (layer $lf) calls $sym of $to.c (layer $lt):" \
                 "move the function down or the caller up" >&2
            bad=1
        fi
    done < <(nm --undefined-only "$o" | awk '{print $2}')
done
(( bad == 0 )) && echo "layers: every call of reference/tinyllm/core goes to a lower layer" \
                       "(ops and autograd excepted)"
exit $bad
