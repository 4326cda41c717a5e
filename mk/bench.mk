# Benchmarks: bench/. `make bench` runs every BENCH_TARGETS entry; a bench
# prints medians and ratios measured in one run (speed is never a test).

BENCH_KERNELS := $(BUILD)/bench/bench_kernels

$(BENCH_KERNELS): $(BUILD)/obj/bench/bench_kernels.o $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $< -o $@ $(LDFLAGS) $(CORE_LINK)

ALL_TARGETS   += $(BENCH_KERNELS)
BENCH_TARGETS += bench-kernels

# TINYLLM_THREADS picks the threads (default 2 here). About 10 s; memory:
# 4x the last-level cache, from 512 MiB to 4 GiB.
.PHONY: bench-kernels
bench-kernels: $(BENCH_KERNELS)
	@echo "== kernel benchmark (bench/bench_kernels.c) =="
	@$(BENCH_KERNELS)

# The decode benchmark: a SmolLM2-135M-shaped random checkpoint (F32 and
# BF16, made once by make_smollm2 and kept under build/bench/), then the
# model written from ops, timed on 1 and 2 threads. About 2 minutes; 1.4 GB
# of disk and about 1 GB of memory.
MAKE_SMOLLM2  := $(BUILD)/bench/make_smollm2
BENCH_DECODE  := $(BUILD)/bench/bench_decode
SMOLLM2_F32   := $(BUILD)/bench/smollm2-135m-f32
SMOLLM2_BF16  := $(BUILD)/bench/smollm2-135m-bf16

$(MAKE_SMOLLM2): $(BUILD)/obj/bench/make_smollm2.o $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $< -o $@ $(LDFLAGS) $(CORE_LINK)

$(BENCH_DECODE): $(BUILD)/obj/bench/bench_decode.o $(BUILD)/obj/bench/read_bound.o \
                 $(BUILD)/obj/tools/tinyllm/machine.o $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(filter %.o,$^) -o $@ $(LDFLAGS) $(CORE_LINK)

$(SMOLLM2_F32)/config.json: | $(MAKE_SMOLLM2)
	@mkdir -p $(dir $@)
	$(MAKE_SMOLLM2) $(dir $@) F32

$(SMOLLM2_BF16)/config.json: | $(MAKE_SMOLLM2)
	@mkdir -p $(dir $@)
	$(MAKE_SMOLLM2) $(dir $@) BF16

ALL_TARGETS   += $(MAKE_SMOLLM2) $(BENCH_DECODE)
BENCH_TARGETS += bench-decode

.PHONY: bench-decode
bench-decode: $(BENCH_DECODE) $(SMOLLM2_F32)/config.json $(SMOLLM2_BF16)/config.json
	@echo "== decode benchmark (bench/bench_decode.c) =="
	@$(BENCH_DECODE) $(SMOLLM2_F32) $(SMOLLM2_BF16)

# tinyllm generate's own path (tools/tinyllm/generator.c on the reference
# lessons) on the same checkpoints, each figure against a bound measured in
# the same run (bench/bench_generate.c). About 6 minutes on a quiet machine
# (24 runs of 128 + 64 tokens, then 2,000 tokens); 1 GB of memory.
BENCH_GENERATE := $(BUILD)/bench/bench_generate
BENCH_GENERATE_OBJS := $(BUILD)/obj/bench/bench_generate.o $(BUILD)/obj/bench/read_bound.o \
  $(BUILD)/obj/tools/tinyllm/generator.o $(BUILD)/obj/tools/tinyllm/machine.o \
  $(patsubst %.c,$(BUILD)/obj/%.o,$(sort $(wildcard reference/tinyllm/modern/*.c)))

$(BENCH_GENERATE): $(BENCH_GENERATE_OBJS) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_GENERATE_OBJS) -o $@ $(LDFLAGS) $(CORE_LINK)

ALL_TARGETS   += $(BENCH_GENERATE)
BENCH_TARGETS += bench-generate

.PHONY: bench-generate
bench-generate: $(BENCH_GENERATE) $(SMOLLM2_F32)/config.json $(SMOLLM2_BF16)/config.json
	@echo "== tinyllm generate benchmark (bench/bench_generate.c) =="
	@$(BENCH_GENERATE) $(SMOLLM2_F32) $(SMOLLM2_BF16)
