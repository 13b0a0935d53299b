// SPDX-License-Identifier: Apache-2.0
/* The ClickHouse profile store's write path: uploads queue in a group commit; the leader claims
 * the group's upload ids in PostgreSQL (transaction left open), inserts the stacks this
 * collector has not stored in today's stacks partition yet (ch_stacks.c) and the series it has
 * not stored there (ch_series.c, checked for an id collision first), then every value and
 * upload mark in ONE INSERT into rollups (on a cluster, one per shard into its own table,
 * ch_route.c; the upload counts follow by a materialized view; the
 * tiers are built later, ch_tiers.c), and commits the claim only after ClickHouse answered 200. A
 * failed insert aborts the claim, so the retry is not a duplicate. Line detail goes in before
 * the rollups, each upload's lines with a mark row; a retry leaves out the lines whose mark an
 * earlier try stored (profiles_ch_lines.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/clickhouse/ch_internal.h"
#include "store/group_commit.h"

/* Stacks this collector remembers having stored, with their partition (16 bytes a slot,
 * at most half full: about 128 MiB); past it the set starts over and stacks are sent again,
 * which costs only bytes. */
#define KNOWN_STACKS_MAX (4u << 20)
/* The same for series (a fleet has thousands, not millions). */
#define KNOWN_SERIES_MAX (1u << 20)

/* One ingest call, queued in the group commit. */
struct ch_ingest {
	const struct profile_batch *batches;
	size_t n;
};

int ch_profiles__ingest(struct profile_store *s, const struct profile_batch *batches, size_t n)
{
	struct ch_ingest in = {batches, n};
	size_t bytes = 0;

	for (size_t i = 0; i < n; i++)
		bytes += batches[i].n_stacks * 64;
	return group_commit__submit(to_ch(s)->gc, &in, bytes);
}

/* The group's batches that carry an upload id, claimed in one ledger transaction; their lines'
 * marks (ch_lines_mark), whether an earlier try noted writing those lines (tried) and whether
 * it stored them; picked_*: scratch, a subset of the pairs for the ledger. */
struct group_claims {
	const struct profile_batch **batches;
	const char **environments, **ids, **picked_environments, **picked_ids;
	bool *duplicate, *lines_stored, *tried, *picked_tried;
	uint64_t *marks, *looked_up;
	size_t n;
};

static void group_claims_free(struct group_claims *g)
{
	free(g->batches);
	free(g->environments);
	free(g->ids);
	free(g->duplicate);
	free(g->lines_stored);
	free(g->marks);
	free(g->picked_environments);
	free(g->picked_ids);
	free(g->tried);
	free(g->picked_tried);
	free(g->looked_up);
}

static int group_claims_collect(struct gc_item **items, size_t n, struct group_claims *g)
{
	size_t total = 0;

	for (size_t i = 0; i < n; i++)
		total += ((const struct ch_ingest *)items[i]->data)->n;
	g->batches = calloc(total + 1, sizeof(*g->batches));
	g->environments = calloc(total + 1, sizeof(*g->environments));
	g->ids = calloc(total + 1, sizeof(*g->ids));
	g->duplicate = calloc(total + 1, sizeof(*g->duplicate));
	g->lines_stored = calloc(total + 1, sizeof(*g->lines_stored));
	g->marks = calloc(total + 1, sizeof(*g->marks));
	g->picked_environments = calloc(total + 1, sizeof(*g->picked_environments));
	g->picked_ids = calloc(total + 1, sizeof(*g->picked_ids));
	g->tried = calloc(total + 1, sizeof(*g->tried));
	g->picked_tried = calloc(total + 1, sizeof(*g->picked_tried));
	g->looked_up = calloc(total + 1, sizeof(*g->looked_up));
	if (!g->batches || !g->environments || !g->ids || !g->duplicate || !g->lines_stored ||
	    !g->marks || !g->picked_environments || !g->picked_ids || !g->tried ||
	    !g->picked_tried || !g->looked_up)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct ch_ingest *in = items[i]->data;

		for (size_t b = 0; b < in->n; b++) {
			if (in->batches[b].ret_duplicate)
				*in->batches[b].ret_duplicate = false;
			if (!in->batches[b].upload_id)
				continue;
			g->batches[g->n] = &in->batches[b];
			g->environments[g->n] = in->batches[b].environment;
			g->ids[g->n++] = in->batches[b].upload_id;
		}
	}
	return 0;
}

/* Frame names of one stack looked up without an allocation up to this depth. */
#define STACK_NAMES_LOCAL 64

/* The batch's function names hashed, each once, into p->digests (by name index). */
static int name_digests(struct ch_profiles *p, const struct profile_batch *batch)
{
	if (batch->n_names > p->digests_cap) {
		struct ch_stack_id *grown =
		    realloc(p->digests, batch->n_names * sizeof(*p->digests));

		if (!grown)
			return -ENOMEM;
		p->digests = grown;
		p->digests_cap = batch->n_names;
	}
	for (size_t i = 0; i < batch->n_names; i++) {
		int rc = ch_name_digest(p->sha, batch->names[i], strlen(batch->names[i]),
					&p->digests[i]);

		if (rc)
			return rc;
	}
	return 0;
}

/* A stack's identity: its frames' name digests folded, root first (no byte of a name read). */
static struct ch_stack_id stack_id(const struct ch_profiles *p, const struct stack_value *sv)
{
	struct ch_stack_id x = ch_stack_id_start(sv->n_frames);
	const uint8_t *pos = sv->frames;

	for (size_t f = 0; f < sv->n_frames; f++)
		ch_stack_id_step(&x, p->digests[stack_frame_next(&pos)]);
	return ch_stack_id_finish(x);
}

/* The stack's frames joined into p->frames, for a stack the dictionary needs. */
static int stack_frames(struct ch_profiles *p, const struct profile_batch *batch,
			const struct stack_value *sv)
{
	const char *local[STACK_NAMES_LOCAL] = {0}, **names = local;
	const uint8_t *pos = sv->frames;
	int rc;

	if (sv->n_frames > STACK_NAMES_LOCAL && !(names = malloc(sv->n_frames * sizeof(*names))))
		return -ENOMEM;
	for (size_t f = 0; f < sv->n_frames; f++) /* the batch's names the frames index */
		names[f] = batch->names[stack_frame_next(&pos)];
	rc = ch_join_frames(&p->frames, names, sv->n_frames);
	if (names != local)
		free(names);
	return rc;
}

/* The series column (its id, schema v7), which repeats on every row of a batch. */
static void put_series(struct ch_buf *b, const struct ch_rollup *r)
{
	ch_buf__put_u64(b, r->series);
}

/* The columns after the series, in one copy: bucket UInt32, stack_hash FixedString(16),
 * value Int64, period Int64, received_at UInt32 (RowBinary is little-endian, as the hosts we
 * build for). */
static void put_values(struct ch_buf *b, const struct ch_rollup *r)
{
	uint8_t row[4 + CH_STACK_ID_BYTES + 8 + 8 + 4];
	uint32_t bucket = (uint32_t)r->bucket;

	_Static_assert(8 + sizeof(row) == CH_ROLLUP_ROW_BYTES, "ch_route.c splits rows by size");

	memcpy(row, &bucket, 4);
	memcpy(row + 4, &r->stack.lo, 8);
	memcpy(row + 12, &r->stack.hi, 8);
	memcpy(row + 20, &r->value, 8);
	memcpy(row + 28, &r->period, 8);
	memcpy(row + 36, &r->received_at, 4);
	ch_buf__put_bytes(b, row, sizeof(row));
}

void ch_buf__put_rollup(struct ch_buf *b, const struct ch_rollup *r)
{
	put_series(b, r);
	put_values(b, r);
}

/* One rollups row of a batch whose series columns are already encoded in `series`: a stack's
 * value, or (the mark, value 1) the upload itself. */
static void put_rollup(struct ch_buf *b, const struct ch_buf *series, const struct ch_rollup *r)
{
	ch_buf__put_bytes(b, series->data, series->len);
	put_values(b, r);
}

/* What one group writes besides its rollups: the dictionaries' new rows. */
struct group_rows {
	struct ch_buf stacks, series;
	struct hashtab new_hashes, new_series; /* id -> partition, of the rows above */
};

/* The rows of one batch; stacks and series this collector has not stored in the batch's
 * partition of their dictionary yet are added to `g`. */
static int encode_batch(struct ch_profiles *p, const struct profile_batch *batch,
			struct ch_buf *rollups, struct group_rows *g)
{
	struct ch_rollup r = {.environment = batch->environment,
			      .service = batch->service,
			      .profile_type = batch->profile_type,
			      .deployment = batch->deployment,
			      .node = batch->node,
			      .bucket = batch->bucket_start,
			      .stack = ch_stack_id_mark(),
			      .value = 1,
			      .period = batch->period,
			      .received_at = (uint32_t)time(NULL)};
	uint32_t day = ch_stack_day(r.received_at, (uint32_t)batch->bucket_start);
	struct ch_buf series = {0};
	int rc = 0;

	rc = ch_series_id(p->sha, &r, &r.series);
	if (!rc && ch_series_wanted(&p->known_series, &g->new_series, r.series, day))
		rc = ch_series_queue(&g->new_series, &g->series, &r, day);
	if (rc)
		return rc;
	put_series(&series, &r);
	put_rollup(rollups, &series, &r);
	r.period = r.received_at = 0;
	rc = name_digests(p, batch);
	for (size_t i = 0; !rc && i < batch->n_stacks; i++) {
		r.stack = stack_id(p, &batch->stacks[i]);
		if (ch_stacks_wanted(&p->known_stacks, &g->new_hashes, r.stack, day))
			rc = stack_frames(p, batch, &batch->stacks[i])
				 ?: ch_stacks_queue(&g->new_hashes, &g->stacks, r.stack,
						    p->frames.data, day);
		if (rc)
			break;
		r.value = batch->stacks[i].value;
		put_rollup(rollups, &series, &r);
	}
	if (!rc && (rollups->oom || series.oom))
		rc = -ENOMEM;
	ch_buf__release(&series);
	return rc;
}

/* b's index in the claims, or g->n when it carries no upload id. */
static size_t claim_of(const struct group_claims *g, const struct profile_batch *b)
{
	size_t i = 0;

	while (i < g->n && g->batches[i] != b)
		i++;
	return i;
}

/* Picks the pairs whose lines carry a mark and, with lines_left, have not been stored or noted:
 * into g->picked_*; their count. */
static size_t pick(struct group_claims *g, bool lines_left)
{
	size_t k = 0;

	for (size_t i = 0; i < g->n; i++) {
		if (!g->marks[i] || (lines_left && (g->lines_stored[i] || g->tried[i])))
			continue;
		g->picked_environments[k] = g->environments[i];
		g->picked_ids[k++] = g->ids[i];
	}
	return k;
}

/* The lines of the claimed uploads that are not duplicates, marked; of those, the ones an
 * earlier try noted writing (the ledger's line tries) are looked up, so that lines it stored
 * are not inserted again. Run after the claim: it holds the upload ids, so no other collector
 * writes them meanwhile. A first try is not looked up: nothing can have stored its lines. */
static int find_stored_lines(struct ch_profiles *p, struct upload_claim *claim,
			     struct group_claims *g)
{
	size_t n_marked, k = 0;
	int rc = 0;

	for (size_t i = 0; !rc && i < g->n; i++)
		if (!g->duplicate[i])
			rc = ch_lines_mark(g->batches[i], &g->marks[i]);
	n_marked = rc ? 0 : pick(g, false);
	if (!n_marked)
		return rc;
	rc = p->ledger->ops->line_tries(claim, g->picked_environments, g->picked_ids, n_marked,
					g->picked_tried);
	for (size_t i = 0; !rc && i < g->n; i++) {
		if (!g->marks[i])
			continue;
		g->tried[i] = g->picked_tried[k++];
		g->looked_up[i] = g->tried[i] ? g->marks[i] : 0;
	}
	return rc
		   ?: ch_lines_find_marks(&p->client, p->line_servers, g->batches, g->looked_up,
					  g->n, g->lines_stored);
}

/* Before the lines INSERT: the uploads whose lines it carries for the first time, noted in the
 * ledger (committed), so that whatever happens next (the rollups INSERT fails, this collector
 * dies) a retry knows to look their marks up. */
static int note_line_tries(struct ch_profiles *p, struct group_claims *g)
{
	size_t k = pick(g, true);

	return k ? p->ledger->ops->note_line_tries(p->ledger, g->picked_environments, g->picked_ids,
						   k)
		 : 0;
}

static int encode_group(struct ch_profiles *p, struct gc_item **items, size_t n,
			const struct group_claims *g, struct ch_buf *rollups,
			struct group_rows *rows, struct ch_buf *lines)
{
	int rc = 0;

	for (size_t i = 0; !rc && i < n; i++) {
		const struct ch_ingest *in = items[i]->data;

		for (size_t b = 0; !rc && b < in->n; b++) {
			size_t c = claim_of(g, &in->batches[b]);

			if (c < g->n && g->duplicate[c])
				continue;
			rc = encode_batch(p, &in->batches[b], rollups, rows);
			if (c == g->n || !g->lines_stored[c])
				ch_lines_encode_batch(lines, &in->batches[b],
						      c < g->n ? g->marks[c] : 0);
		}
	}
	return rc || !lines->oom ? rc : -ENOMEM;
}

static int insert(struct ch_profiles *p, const char *table, const struct ch_buf *rows)
{
	return ch_client__insert(&p->client, table, rows);
}

/* Stacks and series first: a rollup row never names one its dictionary lacks. Another group
 * may be inserting at the same time: stacks_lock covers the writer's state, not the round
 * trips, and a row both groups lack is sent by both (the dictionaries replace duplicates). */
static int write_group(struct ch_profiles *p, struct gc_item **items, size_t n,
		       struct upload_claim *claim, struct group_claims *g)
{
	struct ch_buf rollups = {0}, lines = {0};
	struct group_rows rows = {0};
	int rc = find_stored_lines(p, claim, g);

	if (rc)
		return rc;
	pthread_mutex_lock(&p->stacks_lock);
	rc = encode_group(p, items, n, g, &rollups, &rows, &lines);
	pthread_mutex_unlock(&p->stacks_lock);
	if (!rc)
		rc = ch_series_check(&p->client, &rows.series)
			 ?: insert(p, "series", &rows.series) ?: insert(p, "stacks", &rows.stacks);
	if (!rc) { /* only now, after ClickHouse stored them, are the new rows known */
		pthread_mutex_lock(&p->stacks_lock);
		rc = ch_stacks_remember(&p->known_stacks, &rows.stacks, KNOWN_STACKS_MAX)
			 ?: ch_series_remember(&p->known_series, &rows.series, KNOWN_SERIES_MAX);
		pthread_mutex_unlock(&p->stacks_lock);
	}
	/* Lines before the rollups: a failure between the two is retried whole, and the retry
	 * finds the uploads' marks stored with their lines (find_stored_lines) and sends only
	 * the rollups; lines without an upload id are sent again, as their rollups are. */
	if (!rc && lines.len)
		rc = note_line_tries(p, g) ?: insert(p, "profile_lines", &lines);
	if (!rc) /* on a cluster, to each shard's own table (ch_route.c) */
		rc = p->route ? ch_route__insert(p->route, &p->client, "rollups", &rollups,
						 CH_ROLLUP_ROW_BYTES)
			      : insert(p, "rollups", &rollups);
	ch_buf__release(&lines);
	ch_buf__release(&rollups);
	ch_buf__release(&rows.stacks);
	ch_buf__release(&rows.series);
	hashtab__free(&rows.new_hashes);
	hashtab__free(&rows.new_series);
	return rc;
}

static void mark_duplicates(const struct group_claims *g)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->duplicate[i] && g->batches[i]->ret_duplicate)
			*g->batches[i]->ret_duplicate = true;
}

void ch_profiles__commit_group(void *ctx, struct gc_item **items, size_t n)
{
	struct ch_profiles *p = ctx;
	struct group_claims g = {0};
	struct upload_claim *claim = NULL;
	int rc;

	rc = group_claims_collect(items, n, &g);
	if (!rc && g.n)
		rc = p->ledger->ops->claim(p->ledger, g.environments, g.ids, g.n, g.duplicate,
					   &claim);
	if (!rc)
		rc = write_group(p, items, n, claim, &g);
	if (claim && !rc)
		rc = p->ledger->ops->commit(claim);
	else if (claim)
		p->ledger->ops->abort(claim);
	if (!rc)
		mark_duplicates(&g);
	for (size_t i = 0; i < n; i++)
		items[i]->rc = rc;
	group_claims_free(&g);
}
