# Every lesson's reference under AddressSanitizer + UBSan and under valgrind
# (lesson-checklist.md: "the lesson's reference runs clean under ASan+UBSan and
# valgrind"): for each course/*/lesson.json without extra link flags (L7.9's
# downloader has its own valgrind-l7-9), its course tests and its model
# answers built against the reference sources of the lesson and of the lessons
# it needs, as tests/ol/lessons.sh grades them.
#   make lessons-memory    both (part of make test)

# One word per lesson: "ID|MODEL_TESTS_FOLDER|SOURCE|..." (sources relative to reference/).
LM_LESSONS := $(shell python3 tests/ol/lesson_sources.py 2>/dev/null)

# lm_suites ID SOURCES MODEL: the course suite and the model-answer suite of one lesson.
lm_objs = $(patsubst %.c,$(BUILD)/obj/reference/%.o,$(1))
lm_word = $(subst |, ,$(1))
define lm_suites
$(eval $(call check_suite,$(BUILD)/lessons/$(1)/run,$(1),$(sort $(wildcard tests/$(1)/test_*.c)),\
  $(call lm_objs,$(2))))
$(eval $(call check_suite,$(BUILD)/lessons/$(1)/model,$(3),\
  $(sort $(wildcard reference/tests/$(3)/test_*.c)),$(call lm_objs,$(2))))
$(BUILD)/lessons/$(1)/run: $(wildcard tests/$(1)/*.h)
$(BUILD)/lessons/$(1)/model: $(wildcard reference/tests/$(3)/*.h)
LM_SUITES += $(BUILD)/lessons/$(1)/run $(BUILD)/lessons/$(1)/model
endef
$(foreach w,$(LM_LESSONS),$(eval $(call lm_suites,$(word 1,$(call lm_word,$(w))),\
  $(wordlist 3,99,$(call lm_word,$(w))),$(word 2,$(call lm_word,$(w))))))

TEST_TARGETS += lessons-memory
.PHONY: lessons-memory lessons-asan lessons-valgrind lessons-suites
lessons-suites: $(LM_SUITES)

lessons-memory:
	@echo "== each lesson's reference under AddressSanitizer and UBSan (make lessons-asan) =="
	@$(MAKE) --no-print-directory BUILD=build/asan OPT="-O1 -g" \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  lessons-asan
	@echo "== each lesson's reference under valgrind (make lessons-valgrind) =="
	@$(MAKE) --no-print-directory lessons-valgrind

lessons-asan: lessons-suites
	@for s in $(LM_SUITES); do \
	  out=$$(CK_FORK=no OMP_NUM_THREADS=1 $$s 2>&1) || { echo "$$out"; echo "FAIL $$s"; exit 1; }; \
	  echo "$$s: $$(echo "$$out" | tail -1)"; done

lessons-valgrind: lessons-suites
	@for s in $(LM_SUITES); do \
	  out=$$(CK_FORK=no OMP_NUM_THREADS=1 valgrind -q --leak-check=full \
	    --errors-for-leak-kinds=definite --error-exitcode=1 $$s 2>&1) \
	    || { echo "$$out"; echo "FAIL $$s (valgrind)"; exit 1; }; \
	  echo "$$s: $$(echo "$$out" | tail -1)"; done
