# SPDX-License-Identifier: Apache-2.0
# Sanitizer build: the unit tests, collector, agent and test helpers rebuilt with
# AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer at exit) in $(SAN_BUILD).
#   make sanitize          build and run tests/sanitize/test-sanitize.sh (PASS/FAIL lines)
#   make sanitize-build    only build (what the test script calls)
# Warnings are the main build's job (-w here): -O1 plus instrumentation makes GCC's
# flow-based warnings noisy, and a warning must not hide a sanitizer finding.

SAN_BUILD ?= $(BUILD)/asan
SAN_CC ?= clang
SAN_CFLAGS ?= -O1 -g -w -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
SAN_LDFLAGS ?= -fsanitize=address,undefined

.PHONY: sanitize sanitize-build sanitize-targets

# Inner make: the CFLAGS/LDFLAGS must come through the environment, because a command-line
# CFLAGS would replace the Makefile's `CFLAGS +=` (include paths, -std) instead of extending it.
sanitize-build:
	$(Q)env CFLAGS="$(SAN_CFLAGS)" LDFLAGS="$(SAN_LDFLAGS)" $(MAKE) --no-print-directory \
		BUILD=$(SAN_BUILD) CC=$(SAN_CC) sanitize-targets

sanitize-targets: $(UNIT_BINS) $(HELPER_BINS) $(COLLECTOR_BIN) $(AGENT_BIN)

sanitize:
	$(Q)./tests/run-tests.sh --build $(BUILD) --only sanitize
