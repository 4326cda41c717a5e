# The fake Hugging Face Hub (tools/hub, hub-protocol.md): libtlhub.a, which
# tests start in-process; tl-hub, the same server as a program (`tl-hub serve
# DIR`, what `ol hub serve` runs); and its tests (tests/hub).
# Users include "tinyllm/testing/hub.h" (contracts/: the API, documented) and
# link $(HUB_LINK).

HUB_LIB   := $(BUILD)/lib/libtlhub.a
HUB_BIN   := $(BUILD)/bin/tl-hub
HUB_SRCS  := $(filter-out tools/hub/tl_hub_main.c,$(sort $(wildcard tools/hub/*.c)))
HUB_LINK  := $(HUB_LIB) $(MHD_LIBS) $(CJSON_LIBS) -lcrypto -lpthread
HUB_TESTS := $(sort $(wildcard tests/hub/test_*.c))
HUB_TEST_CLIENT := $(BUILD)/obj/tests/hub/client.o
HUB_SUITE := $(BUILD)/tests/hub/run

CPPFLAGS += -Itools

$(HUB_LIB): $(HUB_SRCS:%.c=$(BUILD)/obj/%.o)
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $^

$(HUB_BIN): $(BUILD)/obj/tools/hub/tl_hub_main.o $(HUB_LIB)
	@mkdir -p $(dir $@)
	$(CC) $< -o $@ $(LDFLAGS) $(HUB_LINK)

$(eval $(call check_suite,$(HUB_SUITE),hub,$(HUB_TESTS),$(HUB_TEST_CLIENT) $(HUB_LIB) $(MHD_LIBS) $(CURL_LIBS)))

ALL_TARGETS  += $(HUB_LIB) $(HUB_BIN) $(HUB_SUITE)
TEST_TARGETS += test-hub

.PHONY: test-hub test-hub-suite valgrind-hub
# The Check suite, then real clients against tl-hub: curl and Python's
# urllib, and the official JavaScript client @huggingface/hub (pinned by
# tests/hub/js/package-lock.json, installed once into build/npm/hub).
test-hub: $(HUB_SUITE) $(HUB_BIN)
	@echo "== fake Hub tests (tests/hub) =="
	@CK_FORK=yes $(HUB_SUITE)
	@bash tests/hub/real_clients.sh $(HUB_BIN)
	@HUB_JS_DIR=$(BUILD)/npm/hub bash tests/hub/js_client.sh $(HUB_BIN)

# The Check suite alone (what `make asan` runs in its sanitized tree).
test-hub-suite: $(HUB_SUITE)
	@echo "== fake Hub tests (tests/hub), the suite =="
	@CK_FORK=yes $(HUB_SUITE)

# No fork, so valgrind follows every test; a definite leak fails the run.
valgrind-hub: $(HUB_SUITE)
	CK_FORK=no valgrind --leak-check=full --errors-for-leak-kinds=definite \
	  --error-exitcode=1 $(HUB_SUITE)
