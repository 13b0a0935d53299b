# SPDX-License-Identifier: Apache-2.0
# Line-resolution fixtures (issue 32): a C program built with -g, its copy without debug info
# (strip -g: the agent names it from .symtab), and its
# debug file split two ways: objcopy --only-keep-debug (as Debian's dh_strip: the program headers
# lose their file offsets) and eu-strip -f (they keep them).
LINES_FIXTURE_DIR := $(BUILD)/fixtures/lines
LINES_FIXTURES := $(addprefix $(LINES_FIXTURE_DIR)/,lines-hot lines-hot.stripped lines-hot.debug \
	lines-hot.eu.debug)

all: $(LINES_FIXTURES)
$(BUILD)/tests/test-line-resolver: | $(LINES_FIXTURES)

$(LINES_FIXTURE_DIR)/lines-hot: tests/fixtures/lines/lines_hot.c
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) -O1 -g -fno-omit-frame-pointer $< -o $@

$(LINES_FIXTURE_DIR)/lines-hot.debug: $(LINES_FIXTURE_DIR)/lines-hot
	$(Q)objcopy --only-keep-debug $< $@

$(LINES_FIXTURE_DIR)/lines-hot.stripped: $(LINES_FIXTURE_DIR)/lines-hot
	$(Q)strip --strip-debug $< -o $@

$(LINES_FIXTURE_DIR)/lines-hot.eu.debug: $(LINES_FIXTURE_DIR)/lines-hot
	$(Q)eu-strip -f $@ -o $@.stripped $< && rm -f $@.stripped

# The resolver from the command line (tests/bpf/test_lines_agent.py, bench/bench-line-resolver.sh).
LINES_RESOLVE := $(BUILD)/bench/lines-resolve
all: $(LINES_RESOLVE)
$(LINES_RESOLVE): bench/lines_resolve.c $(BUILD)/libcollector.a $(BUILD)/libroottrace.a
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) -Icollector $(CFLAGS) $^ $(COLLECTOR_LIBS) -o $@
