# L7.6's decode step on both attention paths beside its read bound
# (bench/bench_mla.c), on the reference lessons. About 20 s; 250 MB at most.

BENCH_MLA := $(BUILD)/bench/bench_mla
BENCH_MLA_OBJS := $(BUILD)/obj/bench/bench_mla.o \
  $(addprefix $(BUILD)/obj/reference/tinyllm/modern/,mla.o attention.o rmsnorm.o rope.o)

$(BENCH_MLA): $(BENCH_MLA_OBJS) $(CORE_LIB) $(TESTING_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_MLA_OBJS) -o $@ $(LDFLAGS) $(TESTING_LIB) $(CORE_LINK)

ALL_TARGETS   += $(BENCH_MLA)
BENCH_TARGETS += bench-mla

.PHONY: bench-mla
bench-mla: $(BENCH_MLA)
	@echo "== MLA decode benchmark (bench/bench_mla.c) =="
	@$(BENCH_MLA)
