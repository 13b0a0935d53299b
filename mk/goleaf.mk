# SPDX-License-Identifier: Apache-2.0
# Go unwinder fixture (agent/unwind/go_rows.c): tests/helpers/goleaf built with its DWARF
# (.debug_frame: the oracle of tests/unit/test-go-rows.c) and stripped (-s -w), into
# $(BUILD)/goleaf. Module mode, no network, the local toolchain, a cache under the build.
GOLEAF_SRC := tests/helpers/goleaf
GOLEAF_DIR := $(BUILD)/goleaf
GOLEAF_ENV := GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local GOCACHE=$(abspath $(BUILD))/gocache \
	CGO_ENABLED=0
GOLEAF_BINS := $(GOLEAF_DIR)/goleaf $(GOLEAF_DIR)/goleaf-stripped

.PHONY: goleaf-fixtures
goleaf-fixtures: $(GOLEAF_BINS)
all: goleaf-fixtures

# Order-only: the unit test reads the binaries but does not link them.
$(BUILD)/tests/test-go-rows: | $(GOLEAF_BINS)

$(GOLEAF_DIR)/goleaf: $(GOLEAF_SRC)/main.go $(GOLEAF_SRC)/go.mod
	@mkdir -p $(@D)
	@echo "  GO      $@"
	$(Q)cd $(GOLEAF_SRC) && $(GOLEAF_ENV) go build -o $(abspath $@) .

$(GOLEAF_DIR)/goleaf-stripped: $(GOLEAF_SRC)/main.go $(GOLEAF_SRC)/go.mod
	@mkdir -p $(@D)
	@echo "  GO      $@"
	$(Q)cd $(GOLEAF_SRC) && $(GOLEAF_ENV) go build -ldflags='-s -w' -o $(abspath $@) .
