# SPDX-License-Identifier: Apache-2.0
# Pyroscope's Node.js SDK (@pyroscope/nodejs, pinned with its whole dependency tree by
# tests/helpers/pyroscope-nodejs/package-lock.json) for tests/integration/test_pyroscope_nodejs.py,
# installed with `npm ci` into $(BUILD)/node: `make check` runs it before the tests, which never
# download anything themselves.
#   make node-sdk
NODE_SDK_SRC := tests/helpers/pyroscope-nodejs
NODE_SDK_DIR := $(BUILD)/node
NODE_SDK_STAMP := $(NODE_SDK_DIR)/node_modules/.package-lock.json

.PHONY: node-sdk

node-sdk: $(NODE_SDK_STAMP)

$(NODE_SDK_STAMP): $(NODE_SDK_SRC)/package.json $(NODE_SDK_SRC)/package-lock.json
	@mkdir -p $(NODE_SDK_DIR)
	@echo "  NPM     $(NODE_SDK_DIR) (@pyroscope/nodejs)"
	$(Q)cp $^ $(NODE_SDK_DIR)/
	$(Q)cd $(NODE_SDK_DIR) && npm ci --no-audit --no-fund --loglevel=error >npm.log 2>&1 || \
		{ cat $(NODE_SDK_DIR)/npm.log >&2; exit 1; }
	$(Q)touch $@
