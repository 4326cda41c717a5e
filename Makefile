# tinyllm Part 7: the instructor's repository. `make test` installs what is
# missing (tools/install-deps.sh), builds everything and runs every test.
# Each area keeps its rules in mk/<area>.mk; this file holds what they share.

CC       ?= gcc
BUILD    := build
OPT      ?= -O2 -g
WARN     := -Wall -Wextra -Werror
CSTD     := -std=c11
CPPFLAGS += -Icontracts -D_GNU_SOURCE -DTL_SOURCE_ROOT='"$(CURDIR)"'
# GCC 12's -O2 vectorizes a loop only when no scalar remainder or alias check
# is needed (the "very-cheap" cost model), so element-wise loops over n floats
# stayed scalar: a quarter of a prefill outside its GEMMs. Bit for bit the same
# results (no reassociation, no contraction under -std=c11).
VECTORIZE := -fvect-cost-model=dynamic
CFLAGS   += $(CSTD) $(OPT) $(VECTORIZE) $(WARN) -fopenmp -fPIC $(SAN)
LDFLAGS  += -fopenmp $(SAN)

PKG_CFLAGS := $(shell pkg-config --cflags check libcjson libcurl libmicrohttpd openblas 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null)
CJSON_LIBS := -lcjson
TOKENIZER_LIBS := -lonig -lutf8proc   # the tokenizer's regexes (Oniguruma) and Unicode forms
CURL_LIBS  := -lcurl -lcrypto
MHD_LIBS   := -lmicrohttpd
BLAS_LIBS  := $(shell pkg-config --libs openblas 2>/dev/null)
CPPFLAGS   += $(PKG_CFLAGS)

# Libraries every runtime consumer links, in link order.
CORE_LIB    := $(BUILD)/lib/libtinyllm_core.a
TESTING_LIB := $(BUILD)/lib/libtinyllm_testing.a
CORE_LINK   := $(CORE_LIB) $(CJSON_LIBS) $(TOKENIZER_LIBS) $(BLAS_LIBS) -lm -lpthread
TESTGEN     := $(BUILD)/bin/tl-testgen

# Areas append to these.
ALL_TARGETS  :=
TEST_TARGETS :=
BENCH_TARGETS :=

.PHONY: all deps test demo bench asan valgrind clean fixtures
all: build-all

# $(call check_suite,OUT_BINARY,SUITE_NAME,TEST_SOURCES,EXTRA_LINK)
# Builds a Check binary from files of START_TEST blocks.
define check_suite
$(1): $(3) $(TESTGEN) $(CORE_LIB) $(TESTING_LIB) $(4)
	@rm -rf $(1).gen && mkdir -p $(1).gen
	@$(TESTGEN) $(1).gen $(2) $(3)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-unused-function $(1).gen/*.c -o $(1) $(LDFLAGS) $(4) $(TESTING_LIB) $(CORE_LINK) $(CHECK_LIBS)
endef

# Defined above: the area files $(call) check_suite as they are read.
include $(sort $(wildcard mk/*.mk))

build-all: $(ALL_TARGETS)

deps:
	@bash tools/install-deps.sh

# Tests run one area after another so a failure is easy to read.
test: deps
	@$(MAKE) --no-print-directory -j2 build-all
	@set -e; for t in $(TEST_TARGETS); do $(MAKE) --no-print-directory $$t; done
	@$(MAKE) --no-print-directory test-memory
	@echo "make test: every test passed"

# The memory claims of the runtime, its tokenizer and the fake Hub: their tests
# under ASan and UBSan (make asan), then under valgrind (no invalid access, no
# definite leak). The lessons' references are checked the same way by
# test-lessons (ol tests --asan and --valgrind, course tests and model answers).
.PHONY: test-memory
test-memory:
	@echo "== runtime, tokenizer and fake Hub tests under ASan and UBSan (make asan) =="
	@$(MAKE) --no-print-directory asan
	@echo "== runtime tests under valgrind (make valgrind) =="
	@$(MAKE) --no-print-directory valgrind
	@echo "== fake Hub tests under valgrind (make valgrind-hub) =="
	@$(MAKE) --no-print-directory valgrind-hub
	@$(MAKE) --no-print-directory valgrind-tokenizer

bench: deps
	@$(MAKE) --no-print-directory -j2 build-all
	@set -e; for t in $(BENCH_TARGETS); do $(MAKE) --no-print-directory $$t; done

# The runtime's, the tokenizer's and the fake Hub's tests, built with
# AddressSanitizer and UBSan in a tree of their own (build/asan). ASan runs code
# 2-5x slower, so Check's per-test timeouts are stretched to match.
ASAN_MAKE = $(MAKE) --no-print-directory BUILD=build/asan OPT="-O1 -g" \
  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
asan: deps
	@$(ASAN_MAKE) -j2 build/asan/tests/core/run build/asan/tests/hub/run \
	  build/asan/tests/tokenizer/run
	@CK_TIMEOUT_MULTIPLIER=$${CK_TIMEOUT_MULTIPLIER:-5} $(ASAN_MAKE) \
	  test-core test-hub-suite test-tokenizer-unit

clean:
	rm -rf $(BUILD) build

# Reruns every oracle into fixtures/: the runtime's goldens, then each lesson's
# whose lesson.json names an "oracle" (ol lesson list, ol fixtures L7.x).
fixtures: deps
	@$(MAKE) --no-print-directory -j2 build-all
	/usr/bin/python3 oracle/core/make_safetensors_golden.py fixtures
	@set -e; for id in $$($(BUILD)/bin/ol lesson list); do \
	  oracle=$$($(BUILD)/bin/ol lesson show $$id --field oracle); \
	  if [ -n "$$oracle" ]; then $(BUILD)/bin/ol fixtures $$id; fi; \
	done
	@git status --short fixtures/ | sed 's/^/changed: /'; true

# Generic rule: objects mirror sources under $(BUILD)/obj.
$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# tl-testgen: registers START_TEST blocks (see tools/ol/testgen.h).
$(TESTGEN): $(BUILD)/obj/tools/ol/testgen.o $(BUILD)/obj/tools/ol/testgen_main.o
	@mkdir -p $(dir $@)
	$(CC) $^ -o $@ $(LDFLAGS)
