# ol, the course driver (tools/ol): build/bin/ol; its tests (tests/ol); the
# proof that every lesson holds together (test-lessons); and `make demo`.

OL_BIN  := $(BUILD)/bin/ol
OL_SRCS := $(filter-out tools/ol/testgen_main.c,$(sort $(wildcard tools/ol/*.c)))
OL_OBJS := $(OL_SRCS:%.c=$(BUILD)/obj/%.o)

# ol compiles students' code and tests: it links what the Makefile found.
$(BUILD)/obj/tools/ol/build.o: CPPFLAGS += \
  -DOL_CHECK_CFLAGS='"$(shell pkg-config --cflags check 2>/dev/null)"' \
  -DOL_CHECK_LIBS='"$(CHECK_LIBS)"' -DOL_BLAS_LIBS='"$(BLAS_LIBS)"'

$(OL_BIN): $(OL_OBJS) $(HUB_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(OL_OBJS) -o $@ $(LDFLAGS) $(HUB_LINK) $(CJSON_LIBS) -lcrypto -lm

ALL_TARGETS += $(OL_BIN)
