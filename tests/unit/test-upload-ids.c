// SPDX-License-Identifier: Apache-2.0
/* Unit tests of idempotent ingest in the SQLite profile store: an (environment, upload_id)
 * is merged once, within one transaction, across calls and across concurrent group commits;
 * other environments keep their own ids; retention forgets ids. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "store/sqlite/store_sqlite.h"
#include "test.h"

#define THREADS 8

static const char *const names[] = {"main", "work"};
static const uint8_t main_work[] = {0, 1}; /* names' indexes, root first (store.h) */
static const struct stack_value one_stack = {main_work, 2, 2, 100};

struct tmp_store {
	char dir[64];
	char path[96];
	struct profile_store *ps;
};

static int tmp_store_open(struct tmp_store *t)
{
	struct store_sqlite_options opts = {.durability = STORE_SQLITE_DURABILITY_NORMAL};

	snprintf(t->dir, sizeof(t->dir), "/tmp/rt-upload-ids-XXXXXX");
	if (!mkdtemp(t->dir))
		return -1;
	snprintf(t->path, sizeof(t->path), "%s/roottrace.db", t->dir);
	return profile_store_sqlite_open(t->path, &opts, &t->ps);
}

static void tmp_store_close(struct tmp_store *t)
{
	char side[128];

	if (t->ps)
		t->ps->ops->close(t->ps);
	unlink(t->path);
	snprintf(side, sizeof(side), "%s-wal", t->path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", t->path);
	unlink(side);
	rmdir(t->dir);
}

static struct profile_batch batch(const char *environment, const char *upload_id,
				  bool *ret_duplicate)
{
	time_t now = time(NULL);

	return (struct profile_batch){
	    .environment = environment,
	    .service = "svc",
	    .deployment = "",
	    .profile_type = "cpu",
	    .bucket_start = now - now % BUCKET_SECONDS,
	    .stacks = &one_stack,
	    .n_stacks = 1,
	    .names = names,
	    .n_names = 2,
	    .upload_id = upload_id,
	    .ret_duplicate = ret_duplicate,
	};
}

/* The service's cpu total over the last hour in environment, -1 on error. */
static int64_t stored_total(struct profile_store *ps, const char *environment)
{
	int64_t now = time(NULL), total = 0;
	struct window_query q = {environment, "svc", "cpu", NULL, now - 3600, now + BUCKET_SECONDS};
	struct merged_window w;

	if (ps->ops->merge_window(ps, &q, &w))
		return -1;
	for (size_t i = 0; i < w.n_stacks; i++)
		total += w.stacks[i].value;
	merged_window__release(&w);
	return total;
}

TEST(same_id_twice_in_one_transaction_counts_once)
{
	struct tmp_store t = {0};
	bool dup[2] = {true, false};
	struct profile_batch b[2] = {batch("prod", "agent-1/1", &dup[0]),
				     batch("prod", "agent-1/1", &dup[1])};
	int rc = tmp_store_open(&t);

	if (!rc)
		rc = t.ps->ops->ingest(t.ps, b, 2);
	if (rc)
		tmp_store_close(&t);
	CHECK_EQ_INT(rc, 0);
	CHECK(!dup[0]);
	CHECK(dup[1]);
	rc = (int)stored_total(t.ps, "prod");
	tmp_store_close(&t);
	CHECK_EQ_INT(rc, 100);
}

TEST(repeat_is_duplicate_other_environment_and_no_id_are_not)
{
	struct tmp_store t = {0};
	bool dup = true;
	struct profile_batch b;
	int64_t prod = -1, staging = -1;
	int rc = tmp_store_open(&t), dups = 0;

	for (int i = 0; !rc && i < 3; i++) {
		b = batch("prod", "agent-1/7", &dup);
		rc = t.ps->ops->ingest(t.ps, &b, 1);
		dups += dup;
	}
	if (!rc) { /* the same id in another environment is another upload */
		b = batch("staging", "agent-1/7", &dup);
		rc = t.ps->ops->ingest(t.ps, &b, 1);
		dups += dup;
	}
	for (int i = 0; !rc && i < 2; i++) { /* without an id: merged every time */
		b = batch("prod", NULL, &dup);
		rc = t.ps->ops->ingest(t.ps, &b, 1);
		dups += dup * 10;
	}
	if (!rc) {
		prod = stored_total(t.ps, "prod");
		staging = stored_total(t.ps, "staging");
	}
	tmp_store_close(&t);
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(dups, 2);
	CHECK_EQ_INT(prod, 300);
	CHECK_EQ_INT(staging, 100);
}

TEST(retention_forgets_ids_only_past_its_cutoff)
{
	struct tmp_store t = {0};
	bool dup = false;
	struct profile_batch b = batch("prod", "agent-1/9", &dup);
	int64_t now = time(NULL), deleted = 0, total = -1, before = -1;
	int rc = tmp_store_open(&t);
	bool kept_dup = false;

	if (!rc)
		rc = t.ps->ops->ingest(t.ps, &b, 1);
	if (!rc) /* 30-day retention: an id accepted now is still remembered */
		rc = t.ps->ops->retention(t.ps, now - 30 * 86400, &deleted);
	if (!rc)
		rc = t.ps->ops->ingest(t.ps, &b, 1);
	kept_dup = dup;
	if (!rc) /* a cutoff past its acceptance (read now: the ingests above may have taken
		  * seconds under a sanitizer on a loaded machine): forgotten, merges again */
		rc = t.ps->ops->retention(t.ps, time(NULL) + 1, &deleted);
	if (!rc)
		before = stored_total(t.ps, "prod");
	if (!rc)
		rc = t.ps->ops->ingest(t.ps, &b, 1);
	if (!rc)
		total = stored_total(t.ps, "prod");
	tmp_store_close(&t);
	CHECK_EQ_INT(rc, 0);
	CHECK(kept_dup);
	CHECK(!dup);
	CHECK(before >= 0);
	CHECK_EQ_INT(total - before, 100);
}

struct racer {
	struct profile_store *ps;
	pthread_barrier_t *start;
	bool duplicate;
	int rc;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	struct profile_batch b = batch("prod", "agent-2/1", &r->duplicate);

	pthread_barrier_wait(r->start);
	r->rc = r->ps->ops->ingest(r->ps, &b, 1);
	return NULL;
}

TEST(concurrent_retries_of_one_id_merge_once)
{
	struct tmp_store t = {0};
	struct racer racers[THREADS];
	pthread_t threads[THREADS];
	pthread_barrier_t start;
	int rc = tmp_store_open(&t), fresh = 0, errors = 0;
	int64_t total = -1;

	pthread_barrier_init(&start, NULL, THREADS);
	for (int i = 0; !rc && i < THREADS; i++) {
		racers[i] = (struct racer){.ps = t.ps, .start = &start};
		pthread_create(&threads[i], NULL, race, &racers[i]);
	}
	for (int i = 0; !rc && i < THREADS; i++) {
		pthread_join(threads[i], NULL);
		errors += racers[i].rc != 0;
		fresh += !racers[i].duplicate;
	}
	if (!rc)
		total = stored_total(t.ps, "prod");
	pthread_barrier_destroy(&start);
	tmp_store_close(&t);
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(errors, 0);
	CHECK_EQ_INT(fresh, 1);
	CHECK_EQ_INT(total, 100);
}

TEST_MAIN("upload_ids", T(same_id_twice_in_one_transaction_counts_once),
	  T(repeat_is_duplicate_other_environment_and_no_id_are_not),
	  T(retention_forgets_ids_only_past_its_cutoff), T(concurrent_retries_of_one_id_merge_once))
