# L7.9, the downloader half (tinyllm/io/hf.c): the course tests (tests/L7.9)
# and the model-answer student tests (reference/tests/l7-9-llama), both built
# against the reference and a fake Hub started in-process (tools/hub), and
# the check that every mutant in course/L7.9/mutants is killed by the tests
# its Caught-by names and by the model answers.
# `ol tests/check/mutants L7.9` do the same through lesson.json.

L7_9_REF      := reference/tinyllm/io/hf.c
# The Llama half links the model and the lessons it composes (reference/tinyllm/modern).
L7_9_MODEL_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(sort $(wildcard reference/tinyllm/modern/*.c)))
L7_9_REF_OBJ  := $(BUILD)/obj/reference/tinyllm/io/hf.o $(L7_9_MODEL_OBJ)
L7_9_LINK     := $(HUB_LIB) $(MHD_LIBS) $(CURL_LIBS)
L7_9_TESTS    := $(sort $(wildcard tests/L7.9/test_*.c))
L7_9_MODEL    := $(sort $(wildcard reference/tests/l7-9-llama/test_*.c))
L7_9_SUITE    := $(BUILD)/tests/L7.9/run
L7_9_MSUITE   := $(BUILD)/tests/l7-9-llama/run
L7_9_MUTANTS  := $(sort $(wildcard course/L7.9/mutants/*.mutant))

$(eval $(call check_suite,$(L7_9_SUITE),L7.9,$(L7_9_TESTS),$(L7_9_REF_OBJ) $(L7_9_LINK)))
$(eval $(call check_suite,$(L7_9_MSUITE),l7-9-llama,$(L7_9_MODEL),$(L7_9_REF_OBJ) $(L7_9_LINK)))
$(L7_9_SUITE): tests/L7.9/hf_fixture.h tests/L7.9/llama_fixture.h contracts/tinyllm/testing/hub.h
$(L7_9_MSUITE): contracts/tinyllm/testing/hub.h reference/tests/l7-9-llama/my_llama.h

ALL_TARGETS  += $(L7_9_SUITE) $(L7_9_MSUITE)
TEST_TARGETS += test-l7-9

.PHONY: test-l7-9 valgrind-l7-9 verify-l7-9-mutants
test-l7-9: $(L7_9_SUITE) $(L7_9_MSUITE) $(BUILD)/bin/tinyllm $(HUB_BIN)
	@echo "== L7.9 downloader: course tests (tests/L7.9) on the reference =="
	@CK_FORK=yes OL_TEST_TIMEOUT=30 $(L7_9_SUITE)
	@echo "== L7.9 downloader: model-answer student tests on the reference =="
	@CK_FORK=yes OL_TEST_TIMEOUT=30 $(L7_9_MSUITE)
	@echo "== tinyllm pull against tl-hub serve (tests/tinyllm/test_pull.sh) =="
	@TINYLLM=$(BUILD)/bin/tinyllm TL_HUB=$(HUB_BIN) bash tests/tinyllm/test_pull.sh

valgrind-l7-9: $(L7_9_SUITE) $(L7_9_MSUITE)
	CK_FORK=no valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=1 $(L7_9_SUITE)
	CK_FORK=no valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=1 $(L7_9_MSUITE)

# Each mutant applies to the reference, compiles, fails the course tests its
# Caught-by names and the model answers; each wheat passes both.
L7_9_MDIR := $(BUILD)/l7_9
verify-l7-9-mutants: $(L7_9_SUITE) $(L7_9_MSUITE)
	@set -e; export CK_FORK=yes OL_TEST_TIMEOUT=30; \
	for m in $(L7_9_MUTANTS) $(sort $(wildcard course/L7.9/wheats/*.wheat)); do \
	  id=$$(basename $$m | cut -d- -f1); d=$(L7_9_MDIR)/$$id; \
	  rm -rf $$d && mkdir -p $$d/reference/tinyllm/io && cp $(L7_9_REF) $$d/$(L7_9_REF); \
	  sed '1,/^---$$/d' $$m | patch -s -p1 -d $$d || { echo "FAIL $$id: does not apply"; exit 1; }; \
	  $(CC) $(CPPFLAGS) $(CFLAGS) -Wno-error -c $$d/$(L7_9_REF) -o $$d/hf.o || { echo "FAIL $$id: does not compile"; exit 1; }; \
	  for s in $(L7_9_SUITE) $(L7_9_MSUITE); do \
	    $(CC) $(CPPFLAGS) $(CFLAGS) -Wno-unused-function $$s.gen/*.c $$d/hf.o -o $$d/$$(basename $$(dirname $$s)) \
	      $(LDFLAGS) $(L7_9_LINK) $(TESTING_LIB) $(CORE_LINK) $(CHECK_LIBS); \
	  done; \
	  course=$$d/L7.9; model=$$d/l7-9-llama; \
	  if [ "$${m##*.}" = wheat ]; then \
	    $$course >$$d/log 2>&1 || { cat $$d/log; echo "FAIL $$id: a wheat fails the course tests"; exit 1; }; \
	    $$model >$$d/log 2>&1 || { cat $$d/log; echo "FAIL $$id: a wheat fails the model answers"; exit 1; }; \
	    echo "ok   $$id (wheat): passes the course tests and the model answers"; continue; \
	  fi; \
	  for t in $$(sed -n 's/^Caught-by: *//p' $$m | tr ',' ' '); do \
	    if $$course -k $$t >$$d/log 2>&1; then echo "FAIL $$id: survives $$t"; exit 1; fi; \
	  done; \
	  if $$model >$$d/log 2>&1; then echo "FAIL $$id: survives the model answers"; exit 1; fi; \
	  echo "ok   $$id: killed by $$(sed -n 's/^Caught-by: *//p' $$m) and by $$(grep -c ':F:\|:E:' $$d/log) model answer(s)"; \
	done

# `tinyllm pull` (tools/tinyllm/pull.c) runs the reference downloader: its
# object joins the command's objects, libcurl and libcrypto its libraries.
$(BUILD)/bin/tinyllm: $(BUILD)/obj/reference/tinyllm/io/hf.o
$(BUILD)/bin/tinyllm: TINYLLM_LIBS += $(CURL_LIBS)
