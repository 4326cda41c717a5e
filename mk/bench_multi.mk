# A few rows against one matrix (bench/bench_multi.c): the multi-row GEMVs
# beside the GEMM path at prefill's M, and attention's products over a cache
# beside the old paths and the read bound. About 2 minutes on a loaded machine;
# 400 MB at most.

BENCH_MULTI := $(BUILD)/bench/bench_multi

$(BENCH_MULTI): $(BUILD)/obj/bench/bench_multi.o $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $< -o $@ $(LDFLAGS) $(CORE_LINK)

ALL_TARGETS   += $(BENCH_MULTI)
BENCH_TARGETS += bench-multi

.PHONY: bench-multi
bench-multi: $(BENCH_MULTI)
	@echo "== multi-row GEMV benchmark (bench/bench_multi.c) =="
	@$(BENCH_MULTI)
