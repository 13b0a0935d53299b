// SPDX-License-Identifier: Apache-2.0
/* Unit tests of the collector's group commit queue (every submitter woken after the commit
 * that carried it, groups form under concurrency, a full queue refuses at once, a pipelined
 * queue commits up to its bound of groups at once and counts group sizes, a lingering leader
 * waits for as many items as were pending at once, steady submitters share large groups, a lone
 * submitter waits the linger at most once) and of the
 * verified stack id cache (a hit needs the exact frames). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/group_commit.h"
#include "store/stack_cache.h"
#include "hashtab.h"
#include "test.h"

#define SUBMITTERS 8
#define PER_SUBMITTER 50

struct fake_store {
	atomic_int committed[SUBMITTERS * PER_SUBMITTER]; /* 1 once its commit finished */
	atomic_int in_commit;
	atomic_int most_in_commit;
	int overlapped;
	size_t largest_group;
	struct group_commit *gc;
};

static void fake_commit(void *ctx, struct gc_item **items, size_t n)
{
	struct fake_store *s = ctx;
	struct timespec ms = {0, 1000 * 1000};

	int now = atomic_fetch_add(&s->in_commit, 1) + 1;

	if (now > 1)
		s->overlapped = 1;
	if (now > atomic_load(&s->most_in_commit))
		atomic_store(&s->most_in_commit, now);
	nanosleep(&ms, NULL); /* an fsync */
	for (size_t i = 0; i < n; i++) {
		int id = *(const int *)items[i]->data;

		s->committed[id] = 1;
		items[i]->rc = id % 7 == 0 ? -EIO : 0;
	}
	if (n > s->largest_group)
		s->largest_group = n;
	atomic_fetch_sub(&s->in_commit, 1);
}

struct submitter {
	struct fake_store *s;
	int first;
	int failed;
};

static void *submit_loop(void *arg)
{
	struct submitter *sub = arg;

	for (int i = 0; i < PER_SUBMITTER; i++) {
		int id = sub->first + i;
		int rc = group_commit__submit(sub->s->gc, &id, 100);

		/* woken only after the commit that carried it, with that commit's rc for it */
		if (!sub->s->committed[id] || rc != (id % 7 == 0 ? -EIO : 0))
			sub->failed = 1;
	}
	return NULL;
}

/* Whether every submitter saw its own commit's rc. */
static bool run_submitters(struct fake_store *s)
{
	bool ok = true;
	pthread_t threads[SUBMITTERS];
	struct submitter subs[SUBMITTERS];

	for (int t = 0; t < SUBMITTERS; t++) {
		subs[t] = (struct submitter){.s = s, .first = t * PER_SUBMITTER};
		pthread_create(&threads[t], NULL, submit_loop, &subs[t]);
	}
	for (int t = 0; t < SUBMITTERS; t++) {
		pthread_join(threads[t], NULL);
		ok = ok && !subs[t].failed;
	}
	return ok;
}

/* The items whose fake commit failed (id % 7 == 0), and the groups counted by size. */
static bool counts_add_up(const struct gc_stats *st)
{
	uint64_t groups = 0;

	for (int b = 0; b < GC_SIZE_BUCKETS; b++)
		groups += st->sizes[b];
	return st->failed == (SUBMITTERS * PER_SUBMITTER + 6) / 7 && groups == st->commits;
}

TEST(every_submitter_returns_after_its_commit_with_its_rc)
{
	static struct fake_store s;
	struct gc_stats st;

	s.gc = group_commit__new(SUBMITTERS, 1 << 20, fake_commit, &s);
	CHECK(s.gc != NULL);
	CHECK(run_submitters(&s));
	group_commit__stats(s.gc, &st);
	CHECK(counts_add_up(&st));
	CHECK(!s.overlapped);
	CHECK(st.items == SUBMITTERS * PER_SUBMITTER);
	CHECK(st.commits < st.items); /* groups formed: fewer transactions than uploads */
	CHECK(s.largest_group > 1);
	CHECK(st.pending == 0 && st.pending_bytes == 0);
	group_commit__free(s.gc);
}

TEST(a_pipelined_queue_commits_two_groups_at_once_never_three)
{
	static struct fake_store s;
	struct gc_stats st;

	s.gc = group_commit__new_pipelined(SUBMITTERS, 1 << 20, 2, fake_commit, &s);
	CHECK(s.gc != NULL);
	CHECK(run_submitters(&s));
	group_commit__stats(s.gc, &st);
	CHECK(counts_add_up(&st));
	CHECK(atomic_load(&s.most_in_commit) == 2);
	CHECK(st.items == SUBMITTERS * PER_SUBMITTER);
	CHECK(st.pending == 0 && st.pending_bytes == 0);
	group_commit__free(s.gc);
}

struct blocking {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int entered, release;
};

static void blocking_commit(void *ctx, struct gc_item **items, size_t n)
{
	struct blocking *b = ctx;

	pthread_mutex_lock(&b->lock);
	b->entered++;
	pthread_cond_broadcast(&b->cond);
	while (!b->release)
		pthread_cond_wait(&b->cond, &b->lock);
	pthread_mutex_unlock(&b->lock);
	for (size_t i = 0; i < n; i++)
		items[i]->rc = 0;
}

static struct group_commit *blocking_gc;

static void *submit_one(void *arg)
{
	(void)arg;
	return (void *)(long)group_commit__submit(blocking_gc, "x", 600);
}

TEST(a_full_queue_refuses_at_once_by_entries_and_bytes)
{
	static struct blocking b = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
	struct gc_stats st;
	pthread_t t1, t2;
	void *rc1, *rc2;

	/* two entries or 1000 bytes, whichever is reached first */
	blocking_gc = group_commit__new(2, 1000, blocking_commit, &b);
	CHECK(blocking_gc != NULL);
	pthread_create(&t1, NULL, submit_one, NULL);
	pthread_mutex_lock(&b.lock);
	while (!b.entered)
		pthread_cond_wait(&b.cond, &b.lock);
	pthread_mutex_unlock(&b.lock);
	/* one 600-byte item is being committed: another 600 bytes would pass 1000 */
	CHECK_EQ_INT(group_commit__submit(blocking_gc, "y", 600), -EAGAIN);
	pthread_create(&t2, NULL, submit_one, NULL); /* 600 + 600 > 1000: refused too */
	pthread_join(t2, &rc2);
	CHECK_EQ_INT((int)(long)rc2, -EAGAIN);
	pthread_mutex_lock(&b.lock);
	b.release = 1;
	pthread_cond_broadcast(&b.cond);
	pthread_mutex_unlock(&b.lock);
	pthread_join(t1, &rc1);
	CHECK_EQ_INT((int)(long)rc1, 0);
	/* empty again: an item larger than the byte bound is still taken alone */
	CHECK_EQ_INT(group_commit__submit(blocking_gc, "z", 5000), 0);
	group_commit__stats(blocking_gc, &st);
	CHECK(st.rejected == 2);
	group_commit__free(blocking_gc);
}

static void *submit_small(void *arg)
{
	return (void *)(long)group_commit__submit(arg, "w", 10);
}

static void wait_committed(struct group_commit *g, uint64_t commits)
{
	struct timespec ms = {0, 1000 * 1000};
	struct gc_stats st;

	for (group_commit__stats(g, &st); st.commits < commits; group_commit__stats(g, &st))
		nanosleep(&ms, NULL);
}

static void wait_pending(struct group_commit *g, size_t n)
{
	struct timespec ms = {0, 1000 * 1000};
	struct gc_stats st;

	for (group_commit__stats(g, &st); st.pending < n; group_commit__stats(g, &st))
		nanosleep(&ms, NULL);
}

/* Four items queue behind a blocked commit of one: five were pending at once. Once it ends, the
 * leader of the four lingers (far longer than the test needs) until a fifth has come: the
 * concurrent submitters, where the last group's size (one) let it go with four at once. */
TEST(a_lingering_leader_waits_for_as_many_as_were_pending_at_once)
{
	static struct blocking b = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
	struct group_commit *g = group_commit__new(8, 1 << 20, blocking_commit, &b);
	pthread_t t[5];
	struct gc_stats st;

	CHECK(g != NULL);
	group_commit__set_linger(g, 60L * 1000 * 1000);
	pthread_create(&t[0], NULL, submit_small, g); /* nothing pending before it: no linger */
	pthread_mutex_lock(&b.lock);
	while (!b.entered)
		pthread_cond_wait(&b.cond, &b.lock);
	pthread_mutex_unlock(&b.lock);
	for (int i = 1; i < 5; i++)
		pthread_create(&t[i], NULL, submit_small, g);
	wait_pending(g, 5);
	pthread_mutex_lock(&b.lock);
	b.release = 1;
	pthread_cond_broadcast(&b.cond);
	pthread_mutex_unlock(&b.lock);
	pthread_join(t[0], NULL);
	wait_committed(g, 1);
	group_commit__stats(g, &st);
	CHECK(st.commits == 1 && st.pending == 4); /* the four wait for a fifth */
	CHECK(group_commit__submit(g, "v", 10) == 0);
	for (int i = 1; i < 5; i++)
		pthread_join(t[i], NULL);
	group_commit__stats(g, &st);
	CHECK(st.commits == 2 && st.items == 6);
	CHECK(st.sizes[0] == 1 && st.sizes[3] == 1); /* 1, then 5 */
	CHECK(st.lingers_expired == 0);
	group_commit__free(g);
}

/* Steady load: STEADY submitters each submit again as soon as their commit returned, into a
 * queue that commits one group at a time. Record the groups' sizes. */
#define STEADY 8
#define STEADY_GROUPS 60

struct steady {
	struct group_commit *gc;
	atomic_int stop;
	atomic_int groups;
	int sizes[STEADY_GROUPS];
};

static void steady_commit(void *ctx, struct gc_item **items, size_t n)
{
	struct steady *s = ctx;
	struct timespec ms = {0, 1000 * 1000};
	int i = atomic_fetch_add(&s->groups, 1);

	nanosleep(&ms, NULL); /* a round trip to the server */
	if (i < STEADY_GROUPS)
		s->sizes[i] = (int)n;
	for (size_t k = 0; k < n; k++)
		items[k]->rc = 0;
}

static void *steady_loop(void *arg)
{
	struct steady *s = arg;

	while (!atomic_load(&s->stop))
		group_commit__submit(s->gc, "s", 10);
	return NULL;
}

/* The target is the number of concurrent submitters, not the last group's size: after the
 * first groups every group carries at least half of them, and most carry all. */
TEST(steady_submitters_share_large_groups)
{
	static struct steady s;
	struct timespec ms = {0, 1000 * 1000};
	pthread_t t[STEADY];
	int full = 0;

	s.gc = group_commit__new(64, 1 << 20, steady_commit, &s);
	CHECK(s.gc != NULL);
	/* long enough that a submitter always makes it back within it, even on a busy machine */
	group_commit__set_linger(s.gc, 500L * 1000);
	for (int i = 0; i < STEADY; i++)
		pthread_create(&t[i], NULL, steady_loop, &s);
	while (atomic_load(&s.groups) < STEADY_GROUPS)
		nanosleep(&ms, NULL);
	atomic_store(&s.stop, 1);
	for (int i = 0; i < STEADY; i++)
		pthread_join(t[i], NULL);
	for (int i = 5; i < STEADY_GROUPS; i++) {
		CHECK(s.sizes[i] >= STEADY / 2);
		full += s.sizes[i] == STEADY;
	}
	CHECK(full >= (STEADY_GROUPS - 5) / 2);
	group_commit__free(s.gc);
}

/* After a burst of eight, a lone submitter waits the linger once (the eight might have come
 * back), then never again: what it leaves as the target is itself. */
TEST(a_lone_submitter_waits_the_linger_at_most_once)
{
	static struct blocking b = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
	struct group_commit *g = group_commit__new(16, 1 << 20, blocking_commit, &b);
	uint64_t after_burst;
	pthread_t t[8];
	struct gc_stats st;

	CHECK(g != NULL);
	group_commit__set_linger(g, 50L * 1000);
	pthread_create(&t[0], NULL, submit_small, g);
	pthread_mutex_lock(&b.lock);
	while (!b.entered)
		pthread_cond_wait(&b.cond, &b.lock);
	pthread_mutex_unlock(&b.lock);
	for (int i = 1; i < 8; i++)
		pthread_create(&t[i], NULL, submit_small, g);
	wait_pending(g, 8);
	pthread_mutex_lock(&b.lock);
	b.release = 1;
	pthread_cond_broadcast(&b.cond);
	pthread_mutex_unlock(&b.lock);
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	group_commit__stats(g, &st);
	CHECK(st.items == 8);
	after_burst = st.lingers_expired; /* the seven's leader waited for the eighth in vain */
	for (int i = 0; i < 5; i++)
		CHECK(group_commit__submit(g, "l", 10) == 0);
	group_commit__stats(g, &st);
	CHECK(st.items == 13 && st.sizes[0] == 6); /* the first of the burst, then five alone */
	CHECK(st.lingers_expired - after_burst == 1);
	group_commit__free(g);
}

static int64_t cache_get(const struct stack_cache *c, const char *s)
{
	return stack_cache__get(c, hash_bytes(s, strlen(s)), s, strlen(s));
}

static int cache_put(struct stack_cache *c, const char *s, int64_t id)
{
	return stack_cache__put(c, hash_bytes(s, strlen(s)), s, strlen(s), id);
}

TEST(stack_cache_hits_only_the_exact_bytes)
{
	struct stack_cache *sc = stack_cache__new(1 << 12, 1 << 20);
	uint64_t h = hash_bytes("\x01\x02\x03", 3);

	CHECK(sc != NULL);
	CHECK(cache_get(sc, "\x01\x02\x03") == 0);
	CHECK(cache_put(sc, "\x01\x02\x03", 42) == 0);
	CHECK(cache_get(sc, "\x01\x02\x03") == 42);
	/* the same hash with other bytes (a forced collision) is a miss, not a wrong id */
	CHECK(stack_cache__get(sc, h, "\x01\x02\x04", 3) == 0);
	CHECK(stack_cache__get(sc, h, "\x01\x02", 2) == 0);
	stack_cache__clear(sc);
	CHECK(cache_get(sc, "\x01\x02\x03") == 0);
	stack_cache__free(sc);
}

TEST(stack_cache_stays_within_its_byte_bound)
{
	struct stack_cache *sc = stack_cache__new(1 << 16, 4096);
	char name[64];
	int64_t found = 0;

	CHECK(sc != NULL);
	for (int i = 1; i <= 1000; i++) {
		snprintf(name, sizeof(name), "function_number_%d", i);
		CHECK(cache_put(sc, name, i) == 0);
	}
	for (int i = 1; i <= 1000; i++) {
		snprintf(name, sizeof(name), "function_number_%d", i);
		int64_t id = cache_get(sc, name);

		CHECK(id == 0 || id == i);
		found += id != 0;
	}
	CHECK(found > 0 && found < 1000); /* the oldest were forgotten, the latest kept */
	stack_cache__free(sc);
}

/* 1024 slots at most half full: the 513th stack empties the cache, then is cached alone. */
TEST(stack_cache_forgets_everything_when_its_slots_are_half_full)
{
	struct stack_cache *sc = stack_cache__new(1000, 1 << 20);
	char names[513][16];

	CHECK(sc != NULL);
	for (int i = 0; i < 513; i++)
		snprintf(names[i], sizeof(names[i]), "f%d", i);
	for (int i = 0; i < 512; i++)
		CHECK(cache_put(sc, names[i], i + 1) == 0);
	for (int i = 0; i < 512; i++)
		CHECK(cache_get(sc, names[i]) == i + 1);
	CHECK(cache_put(sc, names[512], 513) == 0);
	CHECK(cache_get(sc, names[512]) == 513);
	for (int i = 0; i < 512; i++)
		CHECK(cache_get(sc, names[i]) == 0);
	stack_cache__free(sc);
}

TEST_MAIN("group-commit", T(every_submitter_returns_after_its_commit_with_its_rc),
	  T(a_pipelined_queue_commits_two_groups_at_once_never_three),
	  T(a_full_queue_refuses_at_once_by_entries_and_bytes),
	  T(a_lingering_leader_waits_for_as_many_as_were_pending_at_once),
	  T(steady_submitters_share_large_groups),
	  T(a_lone_submitter_waits_the_linger_at_most_once),
	  T(stack_cache_hits_only_the_exact_bytes), T(stack_cache_stays_within_its_byte_bound),
	  T(stack_cache_forgets_everything_when_its_slots_are_half_full))
