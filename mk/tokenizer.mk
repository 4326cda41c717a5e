# The runtime's tokenizer (reference/tinyllm/core/tokenizer*.c, chat_template.c,
# jinja*.c): its Check tests (tests/tokenizer/test_*.c) and its agreement with
# the JavaScript oracles (tests/tokenizer/compare.c against
# oracle/tokenizer/oracle.mjs on real tokenizers from the npm registry) and,
# for chat templates, with Jinja2 itself (oracle/tokenizer/jinja2_oracle.py,
# Debian's python3-jinja2, in transformers' environment).
#
# The oracle's npm packages (oracle/tokenizer/package-lock.json, pinned with
# integrity hashes) are installed once into a folder named after the lock
# file's hash, so a fresh clone reuses it and nothing is downloaded again.
# TOKENIZER_NPM moves it.

TOKENIZER_TESTS   := $(sort $(wildcard tests/tokenizer/test_*.c))
TOKENIZER_COMPARE := $(BUILD)/tests/tokenizer/compare
TOKENIZER_LOCK    := oracle/tokenizer/package-lock.json
TOKENIZER_NPM     ?= $(HOME)/.cache/tinyllm/npm-$(shell sha256sum $(TOKENIZER_LOCK) | cut -c1-16)
TOKENIZER_ORACLE  := $(BUILD)/tokenizer-oracle
LENML             := $(TOKENIZER_NPM)/node_modules/@lenml
# NAME=FOLDER of every tokenizer compared: eight real ones and the fixtures' tiny ones
# (Llama 3.2 for its Sequence post-processor and tool-calling template with
# strftime_now, Qwen2.5 for its default system prompt and tool template)
TOKENIZER_SUBJECTS := \
  llama3=$(LENML)/tokenizer-llama3/models qwen3=$(LENML)/tokenizer-qwen3/models \
  deepseek_v3=$(LENML)/tokenizer-deepseek_v3/models gpt4o=$(LENML)/tokenizer-gpt4o/models \
  llama2=$(LENML)/tokenizer-llama2/models gemma3=$(LENML)/tokenizer-gemma3/models \
  llama3_2=$(LENML)/tokenizer-llama3_2/models qwen2_5=$(LENML)/tokenizer-qwen2_5/models \
  $(foreach d,$(sort $(wildcard fixtures/tokenizer/*/tokenizer.json)),\
    $(notdir $(patsubst %/,%,$(dir $(d))))=$(patsubst %/,%,$(dir $(d))))

$(eval $(call check_suite,$(BUILD)/tests/tokenizer/run,tokenizer,$(TOKENIZER_TESTS),))
$(BUILD)/tests/tokenizer/run: tests/tokenizer/tk_test_util.h

$(TOKENIZER_COMPARE): $(BUILD)/obj/tests/tokenizer/compare.o $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $< -o $@ $(LDFLAGS) $(CORE_LINK)

ALL_TARGETS  += $(BUILD)/tests/tokenizer/run $(TOKENIZER_COMPARE)
TEST_TARGETS += test-tokenizer

# npm ci into a scratch folder, then one rename: a folder under the final
# name is always complete, and two builds racing each keep a whole copy.
$(TOKENIZER_NPM)/.installed: $(TOKENIZER_LOCK) oracle/tokenizer/package.json
	@command -v npm >/dev/null || { echo "tokenizer: npm is missing (make deps installs it)"; exit 1; }
	@mkdir -p $(dir $(TOKENIZER_NPM))
	@tmp=$$(mktemp -d $(TOKENIZER_NPM).tmp-XXXXXX) && \
	  cp oracle/tokenizer/package.json $(TOKENIZER_LOCK) $$tmp/ && \
	  echo "tokenizer: installing the oracle's pinned npm packages into $(TOKENIZER_NPM)" && \
	  (cd $$tmp && npm ci --no-audit --no-fund --prefer-offline --loglevel=error) && \
	  touch $$tmp/.installed && \
	  { mv -T $$tmp $(TOKENIZER_NPM) 2>/dev/null || rm -rf $$tmp; }

.PHONY: test-tokenizer test-tokenizer-unit valgrind-tokenizer tokenizer-oracle
# The Check tests alone (make asan runs them under ASan and UBSan). A test's
# time limit is 60 s, not Check's 4: sanitizers and a shared machine slow them.
test-tokenizer-unit: $(BUILD)/tests/tokenizer/run
	@echo "== tokenizer tests (tests/tokenizer) =="
	@CK_FORK=yes OL_TEST_TIMEOUT=60 $(BUILD)/tests/tokenizer/run

# Under valgrind (make test-memory): the Check tests, and the comparison on the
# fixtures' tiny tokenizers (the oracle's output is made by test-tokenizer).
valgrind-tokenizer: $(BUILD)/tests/tokenizer/run $(TOKENIZER_COMPARE) tokenizer-oracle
	@echo "== tokenizer tests under valgrind =="
	@CK_FORK=no valgrind -q --leak-check=full --show-leak-kinds=definite \
	  --errors-for-leak-kinds=definite --error-exitcode=1 $(BUILD)/tests/tokenizer/run
	@for d in $(sort $(wildcard fixtures/tokenizer/*/tokenizer.json)); do \
	  dir=$$(dirname $$d); name=$$(basename $$dir); \
	  valgrind -q --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite \
	    --error-exitcode=1 $(TOKENIZER_COMPARE) $(TOKENIZER_ORACLE)/$$name.json $$dir \
	    tests/tokenizer/conversations.json || exit 1; \
	done

tokenizer-oracle: $(TOKENIZER_NPM)/.installed
	@rm -rf $(TOKENIZER_ORACLE) && mkdir -p $(TOKENIZER_ORACLE)
	@ORACLE_NPM=$(TOKENIZER_NPM) node oracle/tokenizer/oracle.mjs $(TOKENIZER_ORACLE) \
	  tests/tokenizer/corpus tests/tokenizer/conversations.json $(TOKENIZER_SUBJECTS)
	@/usr/bin/python3 oracle/tokenizer/jinja2_oracle.py $(TOKENIZER_ORACLE) \
	  tests/tokenizer/conversations.json $(TOKENIZER_SUBJECTS)

test-tokenizer: test-tokenizer-unit $(TOKENIZER_COMPARE) $(TINYLLM_BIN) tokenizer-oracle
	@echo "== tokenizer command-line verbs (tests/tokenizer/test_verbs.sh) =="
	@TINYLLM=$(TINYLLM_BIN) FIXTURES=fixtures bash tests/tokenizer/test_verbs.sh
	@echo "== tokenizer against the JavaScript oracles =="
	@status=0; for s in $(TOKENIZER_SUBJECTS); do \
	  name=$${s%%=*}; dir=$${s#*=}; \
	  $(TOKENIZER_COMPARE) $(TOKENIZER_ORACLE)/$$name.json $$dir \
	    tests/tokenizer/conversations.json $(TOKENIZER_ORACLE)/$$name.jinja2.json || status=1; \
	done; exit $$status

# The benchmark: encode MB/s beside tokenizers.js in the same run, and linear
# time on long words and whitespace runs (bench/bench_tokenizer.c).
BENCH_TOKENIZER := $(BUILD)/bench/bench_tokenizer

$(BENCH_TOKENIZER): $(BUILD)/obj/bench/bench_tokenizer.o $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $< -o $@ $(LDFLAGS) $(CORE_LINK)

ALL_TARGETS   += $(BENCH_TOKENIZER)
BENCH_TARGETS += bench-tokenizer

.PHONY: bench-tokenizer
bench-tokenizer: $(BENCH_TOKENIZER) $(TOKENIZER_NPM)/.installed
	@echo "== tokenizer benchmark (bench/bench_tokenizer.c) =="
	@ORACLE_NPM=$(TOKENIZER_NPM) $(BENCH_TOKENIZER) $(LENML)/tokenizer-llama3/models \
	  $(LENML)/tokenizer-gemma3/models
