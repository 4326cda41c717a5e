# The runtime: reference/tinyllm/core (library), reference/tinyllm/testing
# (the test-support header's code), tests/core.

CORE_SRCS    := $(sort $(wildcard reference/tinyllm/core/*.c))
TESTING_SRCS := $(sort $(wildcard reference/tinyllm/testing/*.c))
CORE_TESTS   := $(sort $(wildcard tests/core/test_*.c))

$(CORE_LIB): $(CORE_SRCS:%.c=$(BUILD)/obj/%.o)
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $^

$(TESTING_LIB): $(TESTING_SRCS:%.c=$(BUILD)/obj/%.o)
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $^

$(eval $(call check_suite,$(BUILD)/tests/core/run,core,$(CORE_TESTS),))

ALL_TARGETS  += $(CORE_LIB) $(TESTING_LIB) $(TESTGEN) $(BUILD)/tests/core/run
TEST_TARGETS += test-core

.PHONY: test-core valgrind-core
# One process per test file, two at a time (tests/run_cases.sh): the tests
# are single-threaded, and under ASan or valgrind they are most of make test.
test-core: $(BUILD)/tests/core/run
	@echo "== runtime tests (tests/core) =="
	@bash tests/core/layers.sh $(BUILD)/obj/reference/tinyllm/core
	@CK_FORK=yes bash tests/run_cases.sh 2 $(BUILD)/tests/core/run $(notdir $(CORE_TESTS))

# valgrind needs no fork to follow each test; leaks fail the run.
valgrind: $(BUILD)/tests/core/run
	@CK_FORK=no bash tests/run_cases.sh 2 $(BUILD)/tests/core/run $(notdir $(CORE_TESTS)) -- \
	  valgrind -q --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite \
	  --error-exitcode=1
