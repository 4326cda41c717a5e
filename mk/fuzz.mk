# libFuzzer harnesses (tests/fuzz) for the safetensors reader, the sharded
# index loader and `tinyllm inspect`. A manual target, not part of `make
# test`: it needs clang with its sanitizer and OpenMP runtimes
# (apt-get install clang libclang-rt-14-dev libomp-dev).
#
#   make fuzz                        each harness for FUZZ_SECONDS (60) in turn
#   make fuzz FUZZ_SECONDS=300 FUZZ_HARNESSES=fuzz_index    one, longer
#   build/fuzz/fuzz_st_open FILE     replay one input (a crash or a regression)
#
# Corpora grow in build/fuzz/corpus/<harness>, seeded from fixtures/ and
# tests/fuzz/seeds; crashes land in build/fuzz/artifacts/. Once fixed, copy
# the input to tests/fuzz/regressions/ with a row in
# tests/core/test_safetensors_regressions.c, which replays it in test-core.

FUZZ_CC        ?= clang
FUZZ_SECONDS   ?= 60
FUZZ_DIR       := $(BUILD)/fuzz
FUZZ_ALL       := fuzz_st_open fuzz_index fuzz_inspect
FUZZ_HARNESSES ?= $(FUZZ_ALL)
FUZZ_SAN       := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
# No -Werror: the runtime is written for gcc, and clang warns about other
# things (such as `omp simd` loops it does not vectorize at -O1).
FUZZ_CFLAGS    := $(CSTD) -O1 -g -Wall -Wextra -Wno-pass-failed -fopenmp $(FUZZ_SAN) -fsanitize=fuzzer-no-link
FUZZ_LIB_OBJS  := $(CORE_SRCS:%.c=$(FUZZ_DIR)/obj/%.o) $(FUZZ_DIR)/obj/tools/tinyllm/inspect.o

$(FUZZ_DIR)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@

$(FUZZ_ALL:%=$(FUZZ_DIR)/%): $(FUZZ_DIR)/%: $(FUZZ_DIR)/obj/tests/fuzz/%.o $(FUZZ_LIB_OBJS)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -fopenmp $^ -o $@ $(CJSON_LIBS) $(BLAS_LIBS) -lm -lpthread

-include $(shell find $(FUZZ_DIR)/obj -name '*.d' 2>/dev/null)

# The inspect harness's first byte picks file (even) or index (odd) mode:
# its seeds are the others' with that byte in front.
.PHONY: fuzz
fuzz: $(FUZZ_HARNESSES:%=$(FUZZ_DIR)/%)
	@mkdir -p $(FUZZ_DIR)/artifacts $(FUZZ_DIR)/seeds/fuzz_inspect \
	  $(FUZZ_HARNESSES:%=$(FUZZ_DIR)/corpus/%)
	@for f in fixtures/core/*.safetensors fixtures/L7.1/*.safetensors tests/fuzz/seeds/st/* \
	    tests/fuzz/regressions/*.safetensors; do \
	  { printf '\0'; cat "$$f"; } >$(FUZZ_DIR)/seeds/fuzz_inspect/st-$${f##*/}; done
	@for f in tests/fuzz/seeds/index/* tests/fuzz/regressions/*.index.json; do \
	  { printf '\1'; cat "$$f"; } >$(FUZZ_DIR)/seeds/fuzz_inspect/index-$${f##*/}; done
	@set -e; for h in $(FUZZ_HARNESSES); do \
	  case $$h in \
	    fuzz_st_open) seeds="fixtures/core fixtures/L7.1 tests/fuzz/seeds/st tests/fuzz/regressions" ;; \
	    fuzz_index) seeds="fixtures/core/sharded tests/fuzz/seeds/index tests/fuzz/regressions" ;; \
	    *) seeds="$(FUZZ_DIR)/seeds/fuzz_inspect" ;; \
	  esac; \
	  echo "== $$h: $(FUZZ_SECONDS) s =="; \
	  $(FUZZ_DIR)/$$h $(FUZZ_DIR)/corpus/$$h $$seeds -dict=tests/fuzz/safetensors.dict \
	    -max_total_time=$(FUZZ_SECONDS) -timeout=10 -close_fd_mask=3 -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_DIR)/artifacts/$$h-; \
	done
