// SPDX-License-Identifier: Apache-2.0
/* A cluster's rollups written to each shard's own table: a group's rows split by shard as the
 * Distributed table splits them (its key modulo the shards' total weight, the slots given to
 * the shards in shard_num order, weight slots each), so that the Distributed hop (one server
 * parsing the whole block, splitting it and forwarding the other shards' parts) is not paid:
 * 21-30 % of the servers' CPU of an INSERT (docs/performance.md). A shard's rows go to the
 * first of its replicas that takes them (the one that took the last ones first); when none
 * does, or a server was not reached when the route was made, through the Distributed table,
 * which has its own failover between replicas. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/clickhouse/ch_internal.h"

/* More slots than this (a shard weight is an operator's small integer): no route. */
#define SLOTS_MAX 4096

struct route_shard {
	struct ch_client *replicas;
	size_t n;
	size_t preferred; /* the replica that took the last rows (a hint: groups in flight at once
			   * may race on it, and any replica is right) */
};

struct ch_route {
	struct route_shard *shards;
	size_t n_shards;
	uint32_t *slot_shard; /* key % n_slots -> shard index */
	size_t n_slots;
};

/* One TSV answer of sql, NUL-terminated in out. */
static int ask(struct ch_client *c, const char *sql, struct ch_buf *out)
{
	int rc = ch_client__exec(c, sql, NULL, out, NULL, 0);

	ch_buf__put_bytes(out, "", 1);
	return rc ?: out->oom ? -ENOMEM : 0;
}

/* The shards' weights in shard_num order (shard_num 1..n), as slots. */
static int read_weights(struct ch_client *c, struct ch_route *r)
{
	struct ch_buf sql = {0}, out = {0};
	unsigned long num, weight;
	uint32_t *grown;
	int rc, used;

	ch_buf__printf(
	    &sql,
	    "SELECT shard_num, any(shard_weight) FROM system.clusters WHERE cluster = '%s'"
	    " GROUP BY shard_num ORDER BY shard_num FORMAT TSV",
	    c->cluster);
	rc = sql.oom ? -ENOMEM : ask(c, sql.data, &out);
	for (const char *line = out.data; !rc && line && *line; line += used) {
		if (sscanf(line, "%lu\t%lu\n%n", &num, &weight, &used) != 2 ||
		    num != r->n_shards + 1 || r->n_slots + weight > SLOTS_MAX) {
			rc = -EPROTO;
			break;
		}
		grown = realloc(r->slot_shard, (r->n_slots + weight + 1) * sizeof(*grown));
		if (!grown) {
			rc = -ENOMEM;
			break;
		}
		r->slot_shard = grown;
		for (unsigned long w = 0; w < weight; w++)
			r->slot_shard[r->n_slots++] = (uint32_t)r->n_shards;
		r->n_shards++;
	}
	ch_buf__release(&sql);
	ch_buf__release(&out);
	return rc ?: r->n_slots && r->n_shards ? 0 : -EPROTO;
}

/* The shard_num (1-based) of the server c talks to, 0 when it is none of the cluster's. */
static int local_shard(struct ch_client *c, unsigned long *ret)
{
	struct ch_buf sql = {0}, out = {0};
	int rc;

	ch_buf__printf(&sql,
		       "SELECT shard_num FROM system.clusters WHERE cluster = '%s' AND is_local"
		       " LIMIT 1 FORMAT TSV",
		       c->cluster);
	rc = sql.oom ? -ENOMEM : ask(c, sql.data, &out);
	*ret = rc ? 0 : strtoul(out.data, NULL, 10);
	ch_buf__release(&sql);
	ch_buf__release(&out);
	return rc;
}

static int add_replica(struct route_shard *s, struct ch_client *client)
{
	struct ch_client *grown = realloc(s->replicas, (s->n + 1) * sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	s->replicas = grown;
	s->replicas[s->n++] = *client;
	return 0;
}

/* Keeps server as a replica of its shard when it answers; one that does not is left out (its
 * shard's rows go through the Distributed table when no other replica takes them). */
static int keep_replica(struct ch_client *server, void *ctx)
{
	struct ch_route *r = ctx;
	unsigned long shard = 0;

	if (local_shard(server, &shard) || shard == 0 || shard > r->n_shards ||
	    add_replica(&r->shards[shard - 1], server))
		return CH_SERVER_LEFT;
	return CH_SERVER_KEPT;
}

int ch_route__open(struct ch_client *c, const char *servers, struct ch_route **ret)
{
	struct ch_route *r;
	int rc;

	*ret = NULL;
	if (!c->cluster[0])
		return 0;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	rc = read_weights(c, r);
	if (!rc)
		rc = (r->shards = calloc(r->n_shards, sizeof(*r->shards))) ? 0 : -ENOMEM;
	if (!rc)
		rc = ch_shards__each_server(c, servers, keep_replica, r);
	if (rc) {
		ch_route__free(r);
		return rc;
	}
	*ret = r;
	return 0;
}

void ch_route__free(struct ch_route *r)
{
	if (!r)
		return;
	for (size_t i = 0; r->shards && i < r->n_shards; i++) {
		for (size_t k = 0; k < r->shards[i].n; k++)
			ch_client__release(&r->shards[i].replicas[k]);
		free(r->shards[i].replicas);
	}
	free(r->shards);
	free(r->slot_shard);
	free(r);
}

/* The shard of a row: the Distributed table's selector for an unsigned key. */
static size_t shard_of(const struct ch_route *r, const char *row)
{
	uint64_t key;

	memcpy(&key, row, sizeof(key));
	return r->slot_shard[key % r->n_slots];
}

/* rows, all of one shard, to one of its replicas; else through the Distributed table. */
static int insert_shard(struct route_shard *s, struct ch_client *c, const char *table,
			const struct ch_buf *rows)
{
	char local[CH_NAME_MAX + 8];
	size_t first = s->preferred;

	snprintf(local, sizeof(local), "%s_local", table);
	for (size_t k = 0; k < s->n; k++) {
		size_t i = (first + k) % s->n;

		if (ch_client__insert(&s->replicas[i], local, rows) == 0) {
			s->preferred = i;
			return 0;
		}
	}
	return ch_client__insert(c, table, rows);
}

/* One shard's share of an INSERT, run on a thread of its own. */
struct shard_insert {
	struct route_shard *shard;
	struct ch_client *c;
	const char *table;
	struct ch_buf rows;
	pthread_t thread;
	bool started;
	int rc;
};

static void *shard_insert_main(void *arg)
{
	struct shard_insert *si = arg;

	si->rc = insert_shard(si->shard, si->c, si->table, &si->rows);
	return NULL;
}

/* The shards' shares at once, as a synchronous Distributed INSERT sends them: one after the
 * other, an INSERT waited for the sum of the shards' round trips, and the group commit (one
 * group in flight) took fewer uploads a second. The first share runs on this thread. */
static int insert_all(struct shard_insert *si, size_t n)
{
	int rc = 0;

	for (size_t i = 1; i < n; i++)
		si[i].started = si[i].rows.len &&
				pthread_create(&si[i].thread, NULL, shard_insert_main, &si[i]) == 0;
	for (size_t i = 0; i < n; i++)
		if (!si[i].started) /* the first, an empty share, or no thread to be had */
			shard_insert_main(&si[i]);
	for (size_t i = 0; i < n; i++) {
		if (si[i].started)
			pthread_join(si[i].thread, NULL);
		rc = rc ?: si[i].rc;
	}
	return rc;
}

int ch_route__insert(struct ch_route *r, struct ch_client *c, const char *table,
		     const struct ch_buf *rows, size_t row_len)
{
	struct shard_insert *si;
	int rc = 0;

	if (rows->len == 0)
		return 0;
	if (rows->len % row_len)
		return -EINVAL;
	si = calloc(r->n_shards, sizeof(*si));
	if (!si)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_shards; i++)
		si[i] = (struct shard_insert){.shard = &r->shards[i], .c = c, .table = table};
	for (size_t at = 0; at < rows->len; at += row_len)
		ch_buf__put_bytes(&si[shard_of(r, rows->data + at)].rows, rows->data + at, row_len);
	for (size_t i = 0; i < r->n_shards; i++)
		if (si[i].rows.oom)
			rc = -ENOMEM;
	/* A shard that fails fails the group, as a synchronous Distributed INSERT does; the
	 * other shards keep their rows (the same as through Distributed). */
	if (!rc)
		rc = insert_all(si, r->n_shards);
	for (size_t i = 0; i < r->n_shards; i++)
		ch_buf__release(&si[i].rows);
	free(si);
	return rc;
}
