# ol, the course driver (tools/ol): build/bin/ol; its tests (tests/ol); the
# proof that every lesson holds together (test-lessons); and `make demo`.

OL_BIN  := $(BUILD)/bin/ol
OL_SRCS := $(filter-out tools/ol/testgen_main.c,$(sort $(wildcard tools/ol/*.c)))
OL_OBJS := $(OL_SRCS:%.c=$(BUILD)/obj/%.o)
# ol's code without main and the Hub command, for its unit tests
OL_LIB  := $(BUILD)/lib/libol.a
OL_UNIT_TESTS := $(sort $(wildcard tests/ol/test_*.c))
OL_UNIT       := $(BUILD)/tests/ol/run
OL_REPORT_CHECK := $(BUILD)/tests/ol/report-check

CPPFLAGS += -Itools

# ol compiles students' code and tests: it links what the Makefile found.
$(BUILD)/obj/tools/ol/build.o: CPPFLAGS += \
  -DOL_CHECK_CFLAGS='"$(shell pkg-config --cflags check 2>/dev/null)"' \
  -DOL_CHECK_LIBS='"$(CHECK_LIBS)"' -DOL_BLAS_LIBS='"$(BLAS_LIBS)"'

$(OL_BIN): $(OL_OBJS) $(HUB_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(OL_OBJS) -o $@ $(LDFLAGS) $(HUB_LINK) $(CJSON_LIBS) -lcrypto -lm

$(OL_LIB): $(filter-out %/main.o %/cmd_hub.o,$(OL_OBJS))
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $^

$(eval $(call check_suite,$(OL_UNIT),ol,$(OL_UNIT_TESTS),$(OL_LIB) -lcrypto))

$(OL_REPORT_CHECK): $(BUILD)/obj/tests/ol/report_check.o
	@mkdir -p $(dir $@)
	$(CC) $< -o $@ $(LDFLAGS) $(CJSON_LIBS)

ALL_TARGETS  += $(OL_BIN) $(OL_UNIT) $(OL_REPORT_CHECK)
BENCH_TARGETS += bench-ol
TEST_TARGETS += test-ol test-lessons

.PHONY: test-ol test-lessons bench-ol
# What grading costs: ol check L7.1 with the model answers, cold and warm, median of 5
# (OL_BENCH_BASELINE=path/to/another/ol compares, in turn).
bench-ol: $(OL_BIN) $(CORE_LIB) $(TESTING_LIB)
	@echo "== ol check benchmark (bench/ol_check.sh) =="
	@bash bench/ol_check.sh $(OL_BIN) 5 $(OL_BENCH_BASELINE)

# The layers of tools/ol (no circle of includes or calls), its README's file
# table, the contract headers' form, the documents files point to, lines
# within 100 columns; the parsers and formats (Check); then ol itself on
# L7.1 (start, tests, check and its failure modes, the reports, the
# instructor verbs); then a hostile
# student's attacks on the sandbox and the grade (hostile.sh).
test-ol: $(OL_BIN) $(OL_UNIT) $(OL_REPORT_CHECK) $(CORE_LIB) $(TESTING_LIB)
	@echo "== ol (tests/ol) =="
	@python3 tests/ol/layers.py tools/ol $(BUILD)/obj/tools/ol
	@bash tests/ol/file_table.sh
	@bash tests/ol/contracts.sh
	@bash tests/ol/docs.sh
	@bash tests/ol/columns.sh
	@CK_FORK=yes $(OL_UNIT)
	@bash tests/ol/e2e.sh $(OL_BIN) $(OL_REPORT_CHECK)
	@bash tests/ol/hostile.sh $(OL_BIN)

# For every lesson (`ol lesson list`), or only LESSON=L7.x: lesson.json is
# valid, the stub fails the course tests with "not implemented", the
# reference passes them, every mutant verifies, the model-answer tests reach
# the rung. Two lessons at a time (OL_LESSONS_PARALLEL).
LESSON ?=
test-lessons: $(OL_BIN) $(CORE_LIB) $(TESTING_LIB) $(HUB_LIB)
	@echo "== every lesson holds together ($(if $(LESSON),$(LESSON),ol lesson list)) =="
	@bash tests/ol/lessons.sh $(OL_BIN) $(LESSON)

# The student's flow on L7.1, in a scratch workspace (build/demo): start,
# the reference as the student's code, the model-answer tests, the grade.
demo: deps
	@$(MAKE) --no-print-directory $(OL_BIN) $(CORE_LIB) $(TESTING_LIB)
	@bash tests/ol/demo.sh $(OL_BIN) $(BUILD)/demo
