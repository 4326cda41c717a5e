# The `tinyllm` command line (tools/tinyllm): one file per verb, listed in
# tools/tinyllm/verbs.h. A verb that needs more libraries adds them to
# TINYLLM_LIBS (before CORE_LINK, in link order). `tinyllm pull` runs the
# course's downloader, the reference's (reference/tinyllm/io/hf.c): its
# object joins the verbs', libcurl and libcrypto the libraries.

TINYLLM_BIN  := $(BUILD)/bin/tinyllm
TINYLLM_SRCS := $(sort $(wildcard tools/tinyllm/*.c)) reference/tinyllm/io/hf.c
TINYLLM_LIBS := $(CURL_LIBS) $(CORE_LINK)
# `info` and `logits` run the course's model: the reference lessons (the
# milestone builds the same verbs with a student's lessons instead).
TINYLLM_SRCS += $(sort $(wildcard reference/tinyllm/modern/*.c))

$(TINYLLM_BIN): $(TINYLLM_SRCS:%.c=$(BUILD)/obj/%.o) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(filter %.o,$^) -o $@ $(LDFLAGS) $(TINYLLM_LIBS)

ALL_TARGETS  += $(TINYLLM_BIN)
TEST_TARGETS += test-tinyllm

# inspect on the fixtures; pull against the fake Hub run as a program (tl-hub).
.PHONY: test-tinyllm
test-tinyllm: $(TINYLLM_BIN) $(HUB_BIN)
	@echo "== tinyllm command line (tests/tinyllm) =="
	@TINYLLM=$(TINYLLM_BIN) FIXTURES=fixtures bash tests/tinyllm/test_inspect.sh
	@TINYLLM=$(TINYLLM_BIN) FIXTURES=fixtures bash tests/tinyllm/test_info_logits.sh
	@TINYLLM=$(TINYLLM_BIN) TL_HUB=$(HUB_BIN) bash tests/tinyllm/test_pull.sh
	@TINYLLM=$(TINYLLM_BIN) FIXTURES=fixtures bash tests/tinyllm/test_generate.sh

# `ol milestone MS-L7` end to end (tests/ol/milestone.sh): --smoke on the
# reference, the stub, a pitfall, --ref-deps, Gradescope's file, the model
# missing from the cache. About 40 s.
TEST_TARGETS += test-milestone
.PHONY: test-milestone
test-milestone: $(OL_BIN) $(TINYLLM_BIN) $(CORE_LIB) $(TESTING_LIB) $(HUB_LIB)
	@echo "== ol milestone (tests/ol/milestone.sh) =="
	@bash tests/ol/milestone.sh $(OL_BIN)
