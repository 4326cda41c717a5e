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
