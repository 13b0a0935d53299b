# SPDX-License-Identifier: Apache-2.0
# Go unwinder fixture (agent/unwind/go_rows.c): tests/helpers/goleaf built with its DWARF
# (.debug_frame: the oracle of tests/unit/test-go-rows.c), stripped (-s -w), and stripped with
# cgo (linked externally: .eh_frame for its C code only), into $(BUILD)/goleaf. Module mode, no
# network, the local toolchain, a cache under the build.
GOLEAF_SRC := tests/helpers/goleaf
GOLEAF_DIR := $(BUILD)/goleaf
GOLEAF_ENV := GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local GOCACHE=$(abspath $(BUILD))/gocache
GOLEAF_GO := $(wildcard $(GOLEAF_SRC)/*.go) $(GOLEAF_SRC)/go.mod
GOLEAF_BINS := $(GOLEAF_DIR)/goleaf $(GOLEAF_DIR)/goleaf-stripped $(GOLEAF_DIR)/goleaf-cgo

.PHONY: goleaf-fixtures
goleaf-fixtures: $(GOLEAF_BINS)
all: goleaf-fixtures

# Order-only: the unit test reads the binaries but does not link them.
$(BUILD)/tests/test-go-rows: | $(GOLEAF_BINS)

$(GOLEAF_DIR)/goleaf: $(GOLEAF_GO)
	@mkdir -p $(@D)
	@echo "  GO      $@"
	$(Q)cd $(GOLEAF_SRC) && $(GOLEAF_ENV) CGO_ENABLED=0 go build -o $(abspath $@) .

$(GOLEAF_DIR)/goleaf-stripped: $(GOLEAF_GO)
	@mkdir -p $(@D)
	@echo "  GO      $@"
	$(Q)cd $(GOLEAF_SRC) && $(GOLEAF_ENV) CGO_ENABLED=0 go build -ldflags='-s -w' -o $(abspath $@) .

$(GOLEAF_DIR)/goleaf-cgo: $(GOLEAF_GO)
	@mkdir -p $(@D)
	@echo "  GO      $@"
	$(Q)cd $(GOLEAF_SRC) && $(GOLEAF_ENV) CGO_ENABLED=1 go build -ldflags='-s -w' -o $(abspath $@) .
