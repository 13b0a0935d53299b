# SPDX-License-Identifier: Apache-2.0
# Symboliser fixtures: small ELF files with known functions, built into $(BUILD)/fixtures:
# PIE, non-PIE, stripped (.dynsym only), static and stripped (no symbol table at all), a
# shared library and its user, C++, a tiny JIT, and a PIE linked by gold (its .eh_frame comes
# before .eh_frame_hdr in the section table: agent/unwind/eh_frame_image.h).
FIXTURE_SRC := tests/fixtures/elf
FIXTURE_DIR := $(BUILD)/fixtures
FIXTURE_CFLAGS := -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer
FIXTURES := $(addprefix $(FIXTURE_DIR)/,fixture-pie fixture-nopie fixture-stripped \
	fixture-static-stripped libfixture.so fixture-uses-lib fixture-cpp fixture-jit fixture-gold)

.PHONY: fixtures
fixtures: $(FIXTURES)
all: fixtures

# Order-only: the unit tests run the fixtures but do not link them.
$(BUILD)/tests/test-symbolizer: | $(FIXTURES)

$(FIXTURE_DIR)/fixture-pie: $(FIXTURE_SRC)/fixture_main.c $(FIXTURE_SRC)/fixture_common.h
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(FIXTURE_CFLAGS) -fPIE -pie $< -o $@

$(FIXTURE_DIR)/fixture-gold: $(FIXTURE_SRC)/fixture_main.c $(FIXTURE_SRC)/fixture_common.h
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(FIXTURE_CFLAGS) -fPIE -pie -fuse-ld=gold $< -o $@

$(FIXTURE_DIR)/fixture-nopie: $(FIXTURE_SRC)/fixture_main.c $(FIXTURE_SRC)/fixture_common.h
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(FIXTURE_CFLAGS) -fno-pie -no-pie $< -o $@

# -rdynamic exports the functions into .dynsym; strip --strip-all removes .symtab.
$(FIXTURE_DIR)/fixture-stripped: $(FIXTURE_SRC)/fixture_main.c $(FIXTURE_SRC)/fixture_common.h
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(FIXTURE_CFLAGS) -fPIE -pie -rdynamic $< -o $@.tmp
	$(Q)strip --strip-all $@.tmp && mv $@.tmp $@

# Static, then stripped: neither .symtab nor .dynsym (libc.a comes with libc6-dev).
$(FIXTURE_DIR)/fixture-static-stripped: $(FIXTURE_SRC)/fixture_main.c $(FIXTURE_SRC)/fixture_common.h
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(FIXTURE_CFLAGS) -static $< -o $@.tmp
	$(Q)strip --strip-all $@.tmp && mv $@.tmp $@

$(FIXTURE_DIR)/libfixture.so: $(FIXTURE_SRC)/fixture_lib.c
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(FIXTURE_CFLAGS) -fPIC -shared $< -o $@

$(FIXTURE_DIR)/fixture-uses-lib: $(FIXTURE_SRC)/fixture_uses_lib.c $(FIXTURE_DIR)/libfixture.so
	@echo "  CC      $@"
	$(Q)$(CC) $(FIXTURE_CFLAGS) $< -o $@ -L$(FIXTURE_DIR) -lfixture -Wl,-rpath,'$$ORIGIN'

$(FIXTURE_DIR)/fixture-cpp: $(FIXTURE_SRC)/fixture_cpp.cc $(FIXTURE_SRC)/fixture_common.h
	@mkdir -p $(@D)
	@echo "  CXX     $@"
	$(Q)$(CXX) $(FIXTURE_CFLAGS) $< -o $@

$(FIXTURE_DIR)/fixture-jit: $(FIXTURE_SRC)/fixture_jit.c
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(FIXTURE_CFLAGS) -pthread $< -o $@

# Symboliser benchmark (bench/bench-symbolizer.sh), linked against the agent's modules.
$(BUILD)/bench/bench-symbolizer: bench/bench_symbolizer.c $(BUILD)/libagent.a $(BUILD)/libroottrace.a
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS) $^ $(AGENT_LIBS) -o $@
$(BUILD)/tests/test-cfi-compile: | $(FIXTURES)
$(BUILD)/tests/test-gopclntab: | $(FIXTURES)
