/* SPDX-License-Identifier: Apache-2.0 */
/* The web UI's files (ui/), compiled into the collector: $(BUILD)/ui/ui_assets.c is generated
 * at build time by scripts/ui-embed.py (mk/ui.mk) and is never committed. */
#ifndef ROOTTRACE_UI_ASSETS_H
#define ROOTTRACE_UI_ASSETS_H

#include <stddef.h>

struct ui_asset {
	const char *path;	  /* "/" for ui/index.html, "/ui/NAME" for ui/NAME */
	const char *content_type; /* by the file's extension */
	const char *etag;	  /* quoted: "\"<sha-256 prefix of the content>\"" */
	const unsigned char *data;
	size_t len;
};

extern const struct ui_asset ui_assets[];
extern const size_t ui_assets_count;

#endif
