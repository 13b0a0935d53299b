// SPDX-License-Identifier: Apache-2.0
/* The ClickHouse link store: span links in one MergeTree table partitioned by UTC day of the
 * link's time (retention drops whole days, on its own setting, apart from the rollups'), each
 * row naming its stack in the profile store's stacks dictionary (a stack already stored for
 * the rollups in the same day partition costs a link nothing more; ch_stacks.c). Lookup tables
 * filled by materialized views map a trace, a local root span and a span name to span ids, so that
 * every read is a primary-key range of the links table (ordered by span id) rather than a scan. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "store/clickhouse/ch_internal.h"
#include "store/clickhouse/links_ch.h"

/* Stacks this store remembers having stored, with their partition; past it the set
 * starts over (a stack sent twice merges away in the dictionary). */
#define LINK_KNOWN_STACKS_MAX (1u << 20)

/* A span's rows are a few, found by key: granules of 1,024 rows (not 8,192) make each lookup
 * read and decompress an eighth as much, for a primary index 8 times larger (still ~10,000
 * marks for 10M links). */
#define SMALL_GRANULES " SETTINGS index_granularity = 1024"

#define LINK_LOOKUP(name, key)                                                                     \
	"CREATE TABLE {db}." name "(environment String, " key " String, time UInt32,"              \
	" span_id String) ENGINE = ReplacingMergeTree PARTITION BY intDiv(time, 86400)"            \
	" ORDER BY (environment, " key ", span_id)" SMALL_GRANULES,                                \
	    "CREATE MATERIALIZED VIEW {db}." name "_mv TO {db}." name                              \
	    " AS SELECT environment, " key ", time, span_id FROM {db}.span_links"                  \
	    " WHERE " key " != ''"

/* Appended to ch_schema.c's migrations. */
const char *const ch_links_migration[] = {
    "CREATE TABLE {db}.span_links(environment String, time UInt32, service String,"
    " profile_type String, trace_id String, span_id String, parent_span_id String,"
    " root_span_id String, span_name String, node String, stack_hash UInt64, value Int64,"
    " samples Int64)"
    " ENGINE = MergeTree PARTITION BY intDiv(time, 86400) ORDER BY (environment, span_id, "
    "time)" SMALL_GRANULES,
    LINK_LOOKUP("span_traces", "trace_id"),
    LINK_LOOKUP("span_roots", "root_span_id"),
    LINK_LOOKUP("span_names", "span_name"),
    NULL,
};

/* Every table of the migration, all partitioned by day. */
static const char *const link_tables[] = {"span_links", "span_traces", "span_roots", "span_names"};

static void put_link(struct ch_buf *b, const char *environment, const struct span_link *k,
		     struct ch_stack_id id)
{
	ch_buf__put_string(b, environment);
	ch_buf__put_u32(b, (uint32_t)k->time);
	ch_buf__put_string(b, k->service);
	ch_buf__put_string(b, k->profile_type);
	ch_buf__put_string(b, k->trace_id);
	ch_buf__put_string(b, k->span_id);
	ch_buf__put_string(b, k->parent_span_id);
	ch_buf__put_string(b, k->root_span_id);
	ch_buf__put_string(b, k->span_name ? k->span_name : "");
	ch_buf__put_string(b, k->node ? k->node : "");
	ch_buf__put_stack_id(b, id);
	ch_buf__put_u64(b, (uint64_t)k->value);
	ch_buf__put_u64(b, (uint64_t)k->samples);
}

/* The digests of one call's frame names, each name hashed once: by the name's address (a
 * batch's links share their names' strings), so equal names at two addresses are just hashed
 * twice. */
struct name_memo {
	struct hashtab at; /* address -> index in digests */
	struct ch_stack_id *digests;
	size_t n, cap;
};

static int memo_digest(struct ch_links *l, struct name_memo *m, const char *name,
		       struct ch_stack_id *ret)
{
	uint64_t i;
	int rc;

	if (hashtab__get(&m->at, (uint64_t)(uintptr_t)name, &i)) {
		*ret = m->digests[i];
		return 0;
	}
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		struct ch_stack_id *grown = realloc(m->digests, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		m->digests = grown;
		m->cap = cap;
	}
	rc = ch_name_digest(l->sha, name, strlen(name), &m->digests[m->n]);
	if (!rc)
		rc = hashtab__put(&m->at, (uint64_t)(uintptr_t)name, m->n);
	if (!rc)
		*ret = m->digests[m->n++];
	return rc;
}

/* The rollups' identity of a link's stack (ch_stack_id.h): a stack they stored costs the link
 * nothing more. */
static int link_stack_id(struct ch_links *l, struct name_memo *m, const struct span_link *k,
			 struct ch_stack_id *ret)
{
	struct ch_stack_id x = ch_stack_id_start(k->n_frames), d;

	for (size_t f = 0; f < k->n_frames; f++) {
		int rc = memo_digest(l, m, k->frames[f], &d);

		if (rc)
			return rc;
		ch_stack_id_step(&x, d);
	}
	*ret = ch_stack_id_finish(x);
	return 0;
}

static int encode(struct ch_links *l, const char *environment, const struct span_link *links,
		  size_t n, struct ch_buf *rows, struct ch_buf *stacks, struct hashtab *fresh)
{
	struct name_memo memo = {0};
	int64_t now = time(NULL);
	struct ch_stack_id id;
	int rc = 0;

	for (size_t i = 0; !rc && i < n; i++) {
		uint32_t day = ch_stack_day(now, (uint32_t)links[i].time);

		rc = link_stack_id(l, &memo, &links[i], &id);
		if (!rc && ch_stacks_wanted(&l->known_stacks, fresh, id, day))
			rc = ch_join_frames(&l->frames, links[i].frames, links[i].n_frames)
				 ?: ch_stacks_queue(fresh, stacks, id, l->frames.data, day);
		if (!rc)
			put_link(rows, environment, &links[i], id);
	}
	hashtab__free(&memo.at);
	free(memo.digests);
	return rc ? rc : rows->oom ? -ENOMEM : 0;
}

/* Stacks first, so that a link never names a stack the dictionary lacks; the stacks become
 * known only once ClickHouse stored them. */
static int links_add(struct link_store *s, const char *environment, const struct span_link *links,
		     size_t n)
{
	struct ch_links *l = to_ch_links(s);
	struct ch_buf rows = {0}, stacks = {0};
	struct hashtab fresh = {0};
	int rc;

	if (!n)
		return 0;
	pthread_mutex_lock(&l->lock);
	rc = encode(l, environment, links, n, &rows, &stacks, &fresh);
	if (!rc)
		rc = ch_client__insert(&l->client, "stacks", &stacks);
	if (!rc)
		rc = ch_stacks_remember(&l->known_stacks, &stacks, LINK_KNOWN_STACKS_MAX);
	pthread_mutex_unlock(&l->lock);
	if (!rc)
		rc = ch_client__insert(&l->client, "span_links", &rows);
	ch_buf__release(&rows);
	ch_buf__release(&stacks);
	hashtab__free(&fresh);
	return rc;
}

/* Whole UTC days: a link stays until every link of its day is past the cutoff (up to a day
 * longer than on SQLite). Then the stacks partitions that no kept link or rollup row needs
 * (the dictionary is shared with the rollups: ch_stacks_prune looks at both). */
static int links_retention(struct link_store *s, int64_t cutoff, int64_t *ret_deleted)
{
	struct ch_links *l = to_ch_links(s);
	int64_t dropped = 0;
	int rc = 0;

	for (size_t i = 0; !rc && i < sizeof(link_tables) / sizeof(link_tables[0]); i++)
		rc = ch_drop_days(&l->client, link_tables[i], cutoff, i ? NULL : &dropped);
	if (!rc)
		rc = ch_stacks_prune(&l->client, time(NULL), NULL);
	if (ret_deleted)
		*ret_deleted = dropped;
	return rc;
}

static void links_close(struct link_store *s)
{
	struct ch_links *l = to_ch_links(s);

	if (!l)
		return;
	hashtab__free(&l->known_stacks);
	sha256_ctx__free(l->sha);
	ch_buf__release(&l->frames);
	ch_client__release(&l->client);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

static const struct link_store_ops ch_link_ops = {
    .close = links_close,
    .add = links_add,
    .merge = ch_links__merge,
    .spans = ch_links__spans,
    .slowest = ch_links__slowest,
    .retention = links_retention,
};

int link_store_ch_open(const char *url, const char *password, struct link_store **ret, char *why,
		       size_t why_len)
{
	struct ch_links *l = calloc(1, sizeof(*l));
	int err;

	*ret = NULL;
	if (!l)
		return -ENOMEM;
	l->base.ops = &ch_link_ops;
	pthread_mutex_init(&l->lock, NULL);
	l->sha = sha256_ctx__new();
	err = l->sha ? ch_client__init(&l->client, url, password, why, why_len) : -ENOMEM;
	if (!err)
		err = ch_schema_check(&l->client);
	if (err) {
		links_close(&l->base);
		return err;
	}
	*ret = &l->base;
	return 0;
}
