# SPDX-License-Identifier: Apache-2.0
# The web UI (ui/*.html, *.js, *.css) compiled into the collector: scripts/ui-embed.py writes
# $(BUILD)/ui/ui_assets.c (byte arrays, content types, ETags; fails over the 150 KB budget),
# whose object joins libcollector.a. Editing a file of ui/ rebuilds only this object.
UI_FILES := $(wildcard ui/*.html ui/*.js ui/*.css)
UI_ASSETS_C := $(BUILD)/ui/ui_assets.c
UI_ASSETS_O := $(BUILD)/ui/ui_assets.o

$(UI_ASSETS_C): $(UI_FILES) scripts/ui-embed.py
	@mkdir -p $(@D)
	@echo "  UI      $@"
	$(Q)python3 scripts/ui-embed.py ui $@

$(UI_ASSETS_O): $(UI_ASSETS_C) collector/http/ui_assets.h
	@echo "  CC      $@"
	$(Q)$(CC) $(CFLAGS) -Icollector -c $< -o $@

$(BUILD)/libcollector.a: $(UI_ASSETS_O)
