/* SPDX-License-Identifier: Apache-2.0 */
/* Who is calling and may they: `Authorization: Collector <token>` (agents, SDKs) or
 * `Bearer <token>` (people, tools), looked up by SHA-256 and checked against a route. */
#ifndef ROOTTRACE_AUTH_H
#define ROOTTRACE_AUTH_H

#include <stddef.h>

#include "http/request.h"
#include "store/store.h"

struct route; /* collector/routes.h: which token kinds and minimum role a route takes */

#define TOKEN_SECRET_BYTES 32
#define TOKEN_TEXT_MAX 80 /* "rtc_" + 64 hex digits + NUL fits */

/* Result of authentication and authorisation; 0 = allowed. */
enum auth_result {
	AUTH_OK = 0,
	AUTH_MISSING,	   /* 401: no or malformed Authorization header */
	AUTH_UNKNOWN,	   /* 401: no such token, or revoked */
	AUTH_WRONG_SCHEME, /* 403: a collector token sent as Bearer, or the reverse */
	AUTH_WRONG_KIND,   /* 403: the route does not take this kind of token */
	AUTH_ROLE_TOO_LOW, /* 403: user token below the route's minimum role */
	AUTH_STORE_ERROR,  /* 503 */
};

/* Authenticates the header value and authorises it for the route; fills ret on AUTH_OK. */
enum auth_result auth_check(struct cp_store *cp, const struct route *route,
			    const char *authorization, struct token_record *ret);
int auth_result_status(enum auth_result r);
const char *auth_result_detail(enum auth_result r);

/* The environment a request acts on is always its token's. A request that names an
 * environment (`named` not NULL and not "") other than its token's gets -EPERM (403). */
int auth_environment(const struct request *req, const char *named, const char **ret_env);

/* A new random secret ("rtc_..." collector, "rtu_..." user) and its SHA-256. 0 or -EIO. */
int auth_token_generate(enum token_kind kind, char secret[TOKEN_TEXT_MAX], uint8_t hash[32]);

/* "viewer", "engineer", "admin" ("none" for TOKEN_ROLE_NONE). */
const char *token_role_name(enum token_role role);
/* TOKEN_ROLE_* for a name, or -EINVAL. */
int token_role_parse(const char *name);
const char *token_kind_name(enum token_kind kind);

#endif
