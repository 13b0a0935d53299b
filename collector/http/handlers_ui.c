// SPDX-License-Identifier: Apache-2.0
/* GET / and GET /ui/<file>: the web UI compiled into the binary (ui_assets.h), no token (the
 * page asks for one and sends it to the API itself). Each answer carries its ETag (an
 * If-None-Match that matches gets a 304) and a strict Content-Security-Policy: scripts,
 * styles and API calls from this origin only, nothing inline, no frames, no other origin. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "http/handlers.h"
#include "http/ui_assets.h"

#define UI_CSP                                                                                     \
	"default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "            \
	"img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

static const struct ui_asset *ui_asset_find(const char *path)
{
	for (size_t i = 0; i < ui_assets_count; i++)
		if (strcmp(ui_assets[i].path, path) == 0)
			return &ui_assets[i];
	return NULL;
}

/* Whether an If-None-Match value names this ETag ("*", one tag or a comma-separated list). */
static bool etag_matches(const char *if_none_match, const char *etag)
{
	if (!if_none_match)
		return false;
	return strcmp(if_none_match, "*") == 0 || strstr(if_none_match, etag) != NULL;
}

static void ui_security_headers(struct response *resp, const struct ui_asset *asset)
{
	response__header(resp, "ETag", asset->etag);
	response__header(resp, "Cache-Control", "no-cache"); /* revalidate: a new binary, new UI */
	response__header(resp, "Content-Security-Policy", UI_CSP);
	response__header(resp, "X-Content-Type-Options", "nosniff");
	response__header(resp, "Referrer-Policy", "no-referrer");
}

int handle_ui(const struct request *req, struct response *resp)
{
	const struct ui_asset *asset = ui_asset_find(req->path);
	char *body;

	if (!asset)
		return response__error(resp, 404, "not_found", "no such file of the web UI");
	ui_security_headers(resp, asset);
	if (etag_matches(request__header(req, "If-None-Match"), asset->etag))
		return response__body(resp, 304, asset->content_type, NULL, 0);
	body = malloc(asset->len);
	if (!body)
		return -ENOMEM;
	memcpy(body, asset->data, asset->len);
	return response__body(resp, 200, asset->content_type, body, asset->len);
}
