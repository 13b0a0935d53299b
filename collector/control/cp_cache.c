// SPDX-License-Identifier: Apache-2.0
/* The control-plane cache (cp_cache.h): two small tables, token hash -> record and environment
 * -> settings rows, each entry stamped with when the store last gave it; the oldest entry is
 * replaced when a table is full. Only an outage (store_fault_is_outage()) falls back to an entry.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>

#include "control/cp_cache.h"
#include "store/store_fault.h"

struct cached_token {
	struct token_record record;
	int64_t at; /* 0: empty slot */
};

struct cached_settings {
	char environment[STORE_NAME_MAX];
	struct settings_record *rows;
	size_t n;
	int64_t at;
};

struct cp_cache {
	struct cp_store base;
	struct cp_store *inner;
	pthread_mutex_t lock;
	struct cached_token tokens[CP_CACHE_TOKENS];
	struct cached_settings settings[CP_CACHE_ENVIRONMENTS];
};

static struct cp_cache *to_cache(struct cp_store *s)
{
	return (struct cp_cache *)s;
}

static struct cp_store *inner(struct cp_store *s)
{
	return to_cache(s)->inner;
}

static int64_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + 1; /* never 0, the empty mark */
}

static bool fresh_enough(int64_t at)
{
	return at && now_s() - at <= CP_CACHE_MAX_AGE_S;
}

static void cache_close(struct cp_store *s)
{
	struct cp_cache *c = to_cache(s);

	if (!c)
		return;
	for (size_t i = 0; i < CP_CACHE_ENVIRONMENTS; i++)
		free(c->settings[i].rows);
	c->inner->ops->close(c->inner);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* The slot holding key (match), else the empty or oldest one. */
#define SLOT_FOR(table, n, match)                                                                  \
	({                                                                                         \
		size_t pick_ = 0;                                                                  \
		for (size_t i_ = 0; i_ < (n); i_++) {                                              \
			if ((table)[i_].at && (match)) {                                           \
				pick_ = i_;                                                        \
				break;                                                             \
			}                                                                          \
			if ((table)[i_].at < (table)[pick_].at)                                    \
				pick_ = i_;                                                        \
		}                                                                                  \
		pick_;                                                                             \
	})

static int cache_token_find(struct cp_store *s, const uint8_t hash[32], struct token_record *ret)
{
	struct cp_cache *c = to_cache(s);
	int err = c->inner->ops->token_find_by_hash(c->inner, hash, ret);
	struct cached_token *slot;

	if (err != 0 && !store_fault_is_outage(err))
		return err;
	pthread_mutex_lock(&c->lock);
	slot = &c->tokens[SLOT_FOR(c->tokens, CP_CACHE_TOKENS,
				   memcmp(c->tokens[i_].record.hash, hash, 32) == 0)];
	if (!err) {
		slot->record = *ret;
		slot->at = now_s();
	} else if (slot->at && memcmp(slot->record.hash, hash, 32) == 0 && fresh_enough(slot->at)) {
		*ret = slot->record;
		err = 0;
	}
	pthread_mutex_unlock(&c->lock);
	return err;
}

static int copy_rows(const struct settings_record *rows, size_t n, struct settings_record **ret)
{
	*ret = NULL;
	if (!n)
		return 0;
	*ret = malloc(n * sizeof(*rows));
	if (!*ret)
		return -ENOMEM;
	memcpy(*ret, rows, n * sizeof(*rows));
	return 0;
}

/* Under the lock: remembers the store's answer for environment. */
static void remember_settings(struct cached_settings *slot, const char *environment,
			      const struct settings_record *rows, size_t n)
{
	struct settings_record *copy;

	if (copy_rows(rows, n, &copy))
		return; /* not remembered: a later outage answers 503, as without a cache */
	free(slot->rows);
	snprintf(slot->environment, sizeof(slot->environment), "%s", environment);
	slot->rows = copy;
	slot->n = n;
	slot->at = now_s();
}

static int cache_settings_list(struct cp_store *s, const char *environment,
			       struct settings_record **ret, size_t *ret_n)
{
	struct cp_cache *c = to_cache(s);
	int err = c->inner->ops->settings_list(c->inner, environment, ret, ret_n);
	struct cached_settings *slot;

	if (err != 0 && !store_fault_is_outage(err))
		return err;
	pthread_mutex_lock(&c->lock);
	slot = &c->settings[SLOT_FOR(c->settings, CP_CACHE_ENVIRONMENTS,
				     strcmp(c->settings[i_].environment, environment) == 0)];
	if (!err) {
		remember_settings(slot, environment, *ret, *ret_n);
	} else if (slot->at && strcmp(slot->environment, environment) == 0 &&
		   fresh_enough(slot->at)) {
		err = copy_rows(slot->rows, slot->n, ret);
		if (!err)
			*ret_n = slot->n;
	}
	pthread_mutex_unlock(&c->lock);
	return err;
}

/* ------------------------------------------------- everything else goes to the store ---- */

static int cache_environment_create(struct cp_store *s, const char *name, int64_t *ret_id)
{
	return inner(s)->ops->environment_create(inner(s), name, ret_id);
}

static int cache_environment_get(struct cp_store *s, const char *name, int64_t *ret_id)
{
	return inner(s)->ops->environment_get(inner(s), name, ret_id);
}

static int cache_token_create(struct cp_store *s, const struct token_record *t, int64_t *ret_id)
{
	return inner(s)->ops->token_create(inner(s), t, ret_id);
}

static int cache_token_list(struct cp_store *s, struct token_record **ret, size_t *ret_n)
{
	return inner(s)->ops->token_list(inner(s), ret, ret_n);
}

static int cache_token_revoke(struct cp_store *s, int64_t id)
{
	return inner(s)->ops->token_revoke(inner(s), id);
}

static int cache_settings_get(struct cp_store *s, const char *environment, const char *service,
			      struct settings_record *ret)
{
	return inner(s)->ops->settings_get(inner(s), environment, service, ret);
}

static int cache_settings_put(struct cp_store *s, const struct settings_record *r,
			      const struct audit_record *a)
{
	return inner(s)->ops->settings_put(inner(s), r, a);
}

static int cache_audit_list(struct cp_store *s, const char *environment, int64_t since,
			    size_t limit, struct audit_record **ret, size_t *ret_n)
{
	return inner(s)->ops->audit_list(inner(s), environment, since, limit, ret, ret_n);
}

static int cache_deployment_add(struct cp_store *s, const struct deployment_record *d,
				int64_t *ret_id)
{
	return inner(s)->ops->deployment_add(inner(s), d, ret_id);
}

static int cache_deployment_list(struct cp_store *s, const char *environment, const char *service,
				 int64_t start, int64_t end, struct deployment_record **ret,
				 size_t *ret_n)
{
	return inner(s)->ops->deployment_list(inner(s), environment, service, start, end, ret,
					      ret_n);
}

static int cache_agent_report_put(struct cp_store *s, const struct agent_report *r)
{
	return inner(s)->ops->agent_report_put(inner(s), r);
}

static int cache_agent_report_list(struct cp_store *s, const char *environment,
				   struct agent_report **ret, size_t *ret_n)
{
	return inner(s)->ops->agent_report_list(inner(s), environment, ret, ret_n);
}

static const struct cp_store_ops cache_ops = {
    .close = cache_close,
    .environment_create = cache_environment_create,
    .environment_get = cache_environment_get,
    .token_create = cache_token_create,
    .token_find_by_hash = cache_token_find,
    .token_list = cache_token_list,
    .token_revoke = cache_token_revoke,
    .settings_get = cache_settings_get,
    .settings_list = cache_settings_list,
    .settings_put = cache_settings_put,
    .audit_list = cache_audit_list,
    .deployment_add = cache_deployment_add,
    .deployment_list = cache_deployment_list,
    .agent_report_put = cache_agent_report_put,
    .agent_report_list = cache_agent_report_list,
};

int cp_cache_wrap(struct cp_store *wrapped, struct cp_store **ret)
{
	struct cp_cache *c = calloc(1, sizeof(*c));

	*ret = NULL;
	if (!c)
		return -ENOMEM;
	c->base.ops = &cache_ops;
	c->inner = wrapped;
	pthread_mutex_init(&c->lock, NULL);
	*ret = &c->base;
	return 0;
}
