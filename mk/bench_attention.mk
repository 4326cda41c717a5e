# L7.5's decode step beside its read bound (bench/bench_attention.c), on the
# reference lessons (attention.c, rope.c). About 10 s; 300 MB at most.

BENCH_ATTENTION := $(BUILD)/bench/bench_attention
BENCH_ATTENTION_OBJS := $(BUILD)/obj/bench/bench_attention.o \
  $(BUILD)/obj/reference/tinyllm/modern/attention.o $(BUILD)/obj/reference/tinyllm/modern/rope.o

$(BENCH_ATTENTION): $(BENCH_ATTENTION_OBJS) $(CORE_LIB) $(TESTING_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_ATTENTION_OBJS) -o $@ $(LDFLAGS) $(TESTING_LIB) $(CORE_LINK)

ALL_TARGETS   += $(BENCH_ATTENTION)
BENCH_TARGETS += bench-attention

.PHONY: bench-attention
bench-attention: $(BENCH_ATTENTION)
	@echo "== attention decode benchmark (bench/bench_attention.c) =="
	@$(BENCH_ATTENTION)
