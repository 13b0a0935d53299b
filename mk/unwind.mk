# SPDX-License-Identifier: Apache-2.0
# Unwinder test programs (tests/bpf/test_unwind.py), GCC -O2: a call chain across a shared
# library built without frame pointers (nofp) and with them (fp: GCC still leaves the leaf
# frameless), plus the workloads of the edge cases. Built into $(BUILD)/unwind.
UNWIND_SRC := tests/fixtures/unwind
UNWIND_DIR := $(BUILD)/unwind
UNWIND_NOFP := -O2 -g -fomit-frame-pointer -fno-optimize-sibling-calls
UNWIND_FP := -O2 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls
UNWIND_PROGS := $(addprefix $(UNWIND_DIR)/,chain-nofp libchain-nofp.so chain-fp libchain-fp.so \
	edge-nofp edge-fp tail-nofp tail-fp)

.PHONY: unwind-fixtures
unwind-fixtures: $(UNWIND_PROGS)
all: unwind-fixtures

$(UNWIND_DIR)/libchain-%.so: $(UNWIND_SRC)/chain_lib.c $(UNWIND_SRC)/chain.h
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(if $(filter nofp,$*),$(UNWIND_NOFP),$(UNWIND_FP)) -fPIC -shared $< -o $@

$(UNWIND_DIR)/chain-%: $(UNWIND_SRC)/chain_main.c $(UNWIND_DIR)/libchain-%.so
	@echo "  CC      $@"
	$(Q)$(CC) $(if $(filter nofp,$*),$(UNWIND_NOFP),$(UNWIND_FP)) $< -o $@ \
		-L$(UNWIND_DIR) -lchain-$* -Wl,-rpath,'$$ORIGIN'

# alternating call chains of one frame layout: the stack tail cache's exactness
$(UNWIND_DIR)/tail-%: $(UNWIND_SRC)/tail.c
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(if $(filter nofp,$*),$(UNWIND_NOFP),$(UNWIND_FP)) -pthread $< -o $@

$(UNWIND_DIR)/edge-%: $(UNWIND_SRC)/edge.c
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) $(if $(filter nofp,$*),$(UNWIND_NOFP),$(UNWIND_FP)) -pthread $< -o $@
