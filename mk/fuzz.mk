# SPDX-License-Identifier: Apache-2.0
# libFuzzer targets (clang -fsanitize=fuzzer,address,undefined), one per parser of outside
# bytes: tests/fuzz/fuzz-<target>.c, seeds in tests/fuzz/corpus/<target>/. The archives are
# rebuilt with fuzzer instrumentation in $(FUZZ_BUILD) (a separate tree).
#   make fuzz [FUZZ_SECONDS=60] [FUZZ_TARGETS="pprof gzip"]   run each target that long
#     (make check runs tests/fuzz/test-fuzz.sh bounded by FUZZ_RUNS=10000 inputs a target)
#   make fuzz-build                                           only build the fuzzers
# New inputs go to $(FUZZ_BUILD)/work/<target>/, crashes to $(FUZZ_BUILD)/artifacts/; a crash
# is fixed and then committed to tests/fuzz/corpus/<target>/ as a regression input.

FUZZ_BUILD ?= $(BUILD)/fuzz
FUZZ_CC ?= clang
FUZZ_CFLAGS ?= -O1 -g -w -fsanitize=fuzzer-no-link,address,undefined \
	-fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_LDFLAGS ?= -fsanitize=fuzzer,address,undefined
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=

FUZZ_SRCS := $(wildcard tests/fuzz/fuzz-*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzzers/%,$(FUZZ_SRCS))

.PHONY: fuzz-build fuzz-targets

$(BUILD)/fuzzers/fuzz-%: $(BUILD)/tests/fuzz/fuzz-%.o $(BUILD)/libagent.a \
		$(BUILD)/libcollector.a $(BUILD)/libroottrace.a
	@mkdir -p $(@D)
	@echo "  FUZZLD  $@"
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(TEST_LIBS) -o $@

fuzz-targets: $(FUZZ_BINS)

# CFLAGS through the environment so the Makefile's `CFLAGS +=` still adds paths and -std.
fuzz-build:
	$(Q)env CFLAGS="$(FUZZ_CFLAGS)" LDFLAGS="$(FUZZ_LDFLAGS)" $(MAKE) --no-print-directory \
		BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) fuzz-targets

fuzz:
	$(Q)FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_RUNS=0 FUZZ_TARGETS="$(FUZZ_TARGETS)" FUZZ_BUILD=$(FUZZ_BUILD) \
		ROOTTRACE_BUILD=$(BUILD) bash tests/fuzz/test-fuzz.sh
