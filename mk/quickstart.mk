# SPDX-License-Identifier: Apache-2.0
# `make quickstart`: the README's run command (scripts/quickstart.sh), and the demo workload
# it profiles (also used by the end-to-end test). `make quickstart-stop` stops the collector.
DEMO_BIN := $(BUILD)/demo/demo-workload

all: $(DEMO_BIN)

# Frame pointers everywhere, leaf functions included, so every demo stack is complete.
$(DEMO_BIN): demo/demo-workload.c
	@mkdir -p $(@D)
	@echo "  CC      $@"
	$(Q)$(CC) -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer $(WARN) -pthread \
		$< -o $@

.PHONY: quickstart-stop

quickstart:
	$(Q)BUILD=$(BUILD) ./scripts/quickstart.sh

quickstart-stop:
	$(Q)BUILD=$(BUILD) ./scripts/quickstart.sh stop
