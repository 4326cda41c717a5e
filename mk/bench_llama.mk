# L7.9's loader on a SmolLM2-135M-shaped checkpoint (bench/bench_llama_load.c,
# the checkpoints bench.mk makes with make_smollm2): resident memory against
# the weight bytes, each checkpoint in a process of its own (a second load in
# one process finds the allocator shaped by the first). About 5 s.

BENCH_LLAMA_LOAD := $(BUILD)/bench/bench_llama_load
BENCH_LLAMA_LOAD_OBJS := $(BUILD)/obj/bench/bench_llama_load.o \
  $(patsubst %.c,$(BUILD)/obj/%.o,$(sort $(wildcard reference/tinyllm/modern/*.c)))

$(BENCH_LLAMA_LOAD): $(BENCH_LLAMA_LOAD_OBJS) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_LLAMA_LOAD_OBJS) -o $@ $(LDFLAGS) $(CORE_LINK)

ALL_TARGETS   += $(BENCH_LLAMA_LOAD)
BENCH_TARGETS += bench-llama-load

.PHONY: bench-llama-load
bench-llama-load: $(BENCH_LLAMA_LOAD) $(SMOLLM2_F32)/config.json $(SMOLLM2_BF16)/config.json
	@echo "== L7.9 loader: resident memory against weight bytes (bench/bench_llama_load.c) =="
	@$(BENCH_LLAMA_LOAD) $(SMOLLM2_F32)
	@$(BENCH_LLAMA_LOAD) $(SMOLLM2_BF16)
