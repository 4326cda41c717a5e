# The `tinyllm` command line (tools/tinyllm): one file per verb, listed in
# tools/tinyllm/verbs.h. A verb that needs more libraries adds them to
# TINYLLM_LIBS (before CORE_LINK, in link order).

TINYLLM_BIN  := $(BUILD)/bin/tinyllm
TINYLLM_SRCS := $(sort $(wildcard tools/tinyllm/*.c))
TINYLLM_LIBS := $(CORE_LINK)
# `info` and `logits` run the course's model: the reference lessons (the
# milestone builds the same verbs with a student's lessons instead).
TINYLLM_SRCS += $(sort $(wildcard reference/tinyllm/modern/*.c))

$(TINYLLM_BIN): $(TINYLLM_SRCS:%.c=$(BUILD)/obj/%.o) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(filter %.o,$^) -o $@ $(LDFLAGS) $(TINYLLM_LIBS)

ALL_TARGETS  += $(TINYLLM_BIN)
TEST_TARGETS += test-tinyllm

.PHONY: test-tinyllm
test-tinyllm: $(TINYLLM_BIN)
	@echo "== tinyllm command line (tests/tinyllm) =="
	@TINYLLM=$(TINYLLM_BIN) FIXTURES=fixtures bash tests/tinyllm/test_inspect.sh
	@TINYLLM=$(TINYLLM_BIN) FIXTURES=fixtures bash tests/tinyllm/test_info_logits.sh
