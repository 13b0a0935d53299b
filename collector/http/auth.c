// SPDX-License-Identifier: Apache-2.0
/* Token authentication (Collector, Bearer, Basic with the token as password) and route
 * authorisation (secrets are never stored: a request's token is hashed with SHA-256, found by hash,
 * re-compared in constant time); token kind and role names. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base64.h"
#include "crypto.h"
#include "http/auth.h"
#include "http/routes.h"

#define BASIC_TEXT_MAX 1024 /* base64 of "user:token": far more than any token needs */

/* "Basic base64(user:token)" (Pyroscope's SDKs): the password is a collector token, the user
 * part is ignored. 0 and the token copied, or -EINVAL. */
static int parse_basic(const char *b64, char token[TOKEN_TEXT_MAX])
{
	uint8_t decoded[BASIC_TEXT_MAX / 4 * 3 + 1];
	const char *colon;
	size_t len;

	if (strlen(b64) >= BASIC_TEXT_MAX ||
	    base64_decode(b64, strlen(b64), BASE64_PADDED, decoded, sizeof(decoded) - 1, &len))
		return -EINVAL;
	decoded[len] = '\0';
	colon = memchr(decoded, ':', len);
	if (!colon || strlen(colon + 1) != len - (size_t)(colon + 1 - (const char *)decoded) ||
	    !colon[1] || strlen(colon + 1) >= TOKEN_TEXT_MAX)
		return -EINVAL;
	strcpy(token, colon + 1);
	return 0;
}

/* "Collector <token>", "Bearer <token>" or "Basic base64(user:<token>)" (scheme
 * case-insensitive; Basic carries collector tokens only). */
static int parse_authorization(const char *value, enum token_kind *ret_kind,
			       char token[TOKEN_TEXT_MAX])
{
	static const struct {
		const char *scheme;
		enum token_kind kind;
		bool basic;
	} schemes[] = {
	    {"Collector", TOKEN_KIND_COLLECTOR, false},
	    {"Bearer", TOKEN_KIND_USER, false},
	    {"Basic", TOKEN_KIND_COLLECTOR, true},
	};

	if (!value)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
		size_t n = strlen(schemes[i].scheme);

		if (strncasecmp(value, schemes[i].scheme, n) != 0 || value[n] != ' ')
			continue;
		value += n;
		while (*value == ' ')
			value++;
		*ret_kind = schemes[i].kind;
		if (schemes[i].basic)
			return parse_basic(value, token);
		if (!*value || strlen(value) >= TOKEN_TEXT_MAX)
			return -EINVAL;
		strcpy(token, value);
		return 0;
	}
	return -EINVAL;
}

enum auth_result auth_check(struct cp_store *cp, const struct route *route,
			    const char *authorization, struct token_record *ret)
{
	enum token_kind scheme_kind;
	char secret[TOKEN_TEXT_MAX];
	uint8_t hash[32];
	int err;

	if (parse_authorization(authorization, &scheme_kind, secret))
		return AUTH_MISSING;
	if (sha256(secret, strlen(secret), hash))
		return AUTH_STORE_ERROR;
	err = cp->ops->token_find_by_hash(cp, hash, ret);
	if (err == -ENOENT)
		return AUTH_UNKNOWN;
	if (err)
		return AUTH_STORE_ERROR;
	if (!equal_constant_time(ret->hash, hash, sizeof(hash)) || ret->revoked)
		return AUTH_UNKNOWN;
	if (ret->kind != scheme_kind)
		return AUTH_WRONG_SCHEME;
	if (!(route->kinds & (1u << ret->kind)))
		return AUTH_WRONG_KIND;
	if (ret->kind == TOKEN_KIND_USER && ret->role < route->min_role)
		return AUTH_ROLE_TOO_LOW;
	return AUTH_OK;
}

int auth_result_status(enum auth_result r)
{
	switch (r) {
	case AUTH_OK:
		return 200;
	case AUTH_MISSING:
	case AUTH_UNKNOWN:
		return 401;
	case AUTH_WRONG_SCHEME:
	case AUTH_WRONG_KIND:
	case AUTH_ROLE_TOO_LOW:
		return 403;
	default:
		return 503;
	}
}

const char *auth_result_detail(enum auth_result r)
{
	switch (r) {
	case AUTH_OK:
		return "ok";
	case AUTH_MISSING:
		return "send 'Authorization: Collector <token>', 'Authorization: Bearer <token>' "
		       "or "
		       "Basic auth with a collector token as the password";
	case AUTH_UNKNOWN:
		return "unknown or revoked token";
	case AUTH_WRONG_SCHEME:
		return "collector tokens use the Collector scheme (or Basic, as the password), "
		       "user "
		       "tokens the Bearer scheme";
	case AUTH_WRONG_KIND:
		return "this route does not accept this kind of token";
	case AUTH_ROLE_TOO_LOW:
		return "the token's role is below the one this route needs";
	default:
		return "token store unavailable";
	}
}

int auth_environment(const struct request *req, const char *named, const char **ret_env)
{
	if (named && *named && strcmp(named, req->token->environment) != 0)
		return -EPERM;
	*ret_env = req->token->environment;
	return 0;
}

int auth_token_generate(enum token_kind kind, char secret[TOKEN_TEXT_MAX], uint8_t hash[32])
{
	uint8_t raw[TOKEN_SECRET_BYTES];
	int len, err;

	err = random_bytes(raw, sizeof(raw));
	if (err)
		return err;
	len =
	    snprintf(secret, TOKEN_TEXT_MAX, "%s", kind == TOKEN_KIND_COLLECTOR ? "rtc_" : "rtu_");
	for (size_t i = 0; i < sizeof(raw); i++)
		len += snprintf(secret + len, TOKEN_TEXT_MAX - len, "%02x", raw[i]);
	return sha256(secret, (size_t)len, hash);
}

static const char *const role_names[] = {
    [TOKEN_ROLE_NONE] = "none",
    [TOKEN_ROLE_VIEWER] = "viewer",
    [TOKEN_ROLE_ENGINEER] = "engineer",
    [TOKEN_ROLE_ADMIN] = "admin",
};

const char *token_role_name(enum token_role role)
{
	if ((unsigned int)role >= sizeof(role_names) / sizeof(role_names[0]))
		return "unknown";
	return role_names[role];
}

int token_role_parse(const char *name)
{
	for (int r = TOKEN_ROLE_VIEWER; r <= TOKEN_ROLE_ADMIN; r++)
		if (strcmp(name, role_names[r]) == 0)
			return r;
	return -EINVAL;
}

const char *token_kind_name(enum token_kind kind)
{
	return kind == TOKEN_KIND_COLLECTOR ? "collector"
	       : kind == TOKEN_KIND_USER    ? "user"
					    : "unknown";
}
