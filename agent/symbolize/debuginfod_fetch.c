// SPDX-License-Identifier: Apache-2.0
/* debuginfod client: a table of asked build-ids (waiting, ready, failed with a retry time),
 * a bounded queue served by max_in_flight worker threads, each with its libdebuginfod client. */
#include <dirent.h>
#include <elfutils/debuginfod.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "symbolize/debuginfod_fetch.h"

#define BUILD_ID_MAX 129
#define MAX_ENTRIES 4096 /* build-ids remembered; the oldest settled one goes first */
#define MAX_WORKERS 16

struct entry {
	char build_id[BUILD_ID_MAX];
	enum debuginfod_state state;
	enum debuginfod_failure failure;
	bool queued;
	char *path;
	uint64_t retry_at, used;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool configured, enabled, stopping;
	char urls[4096], cache_dir[1024];
	unsigned timeout_s, cache_max_age_s, max_in_flight, retry_after_s;
	uint64_t cache_max_bytes;
	struct entry entries[MAX_ENTRIES];
	size_t n_entries;
	uint64_t clock; /* use counter: orders entries for eviction */
	pthread_t workers[MAX_WORKERS];
	unsigned n_workers;
	struct debuginfod_fetch_stats stats;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static uint64_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec;
}

static unsigned or_default(unsigned v, unsigned def)
{
	return v ? v : def;
}

/* libdebuginfod reads its cache place and its own cleaning age from the environment and
 * from files in the cache: both are set here, once. */
static void prepare_cache(void)
{
	char path[1200];
	FILE *f;

	if (strcmp(g.cache_dir, DEBUGINFOD_DEFAULT_CACHE_DIR) == 0)
		mkdir("/var/cache/roottrace", 0755);
	mkdir(g.cache_dir, 0700);
	setenv("DEBUGINFOD_CACHE_PATH", g.cache_dir, 1);
	snprintf(path, sizeof(path), "%u", g.timeout_s);
	setenv("DEBUGINFOD_TIMEOUT", path, 1);
	snprintf(path, sizeof(path), "%s/max_unused_age_s", g.cache_dir);
	f = fopen(path, "we");
	if (f) {
		fprintf(f, "%u\n", g.cache_max_age_s);
		fclose(f);
	}
}

static int configure_locked(const struct debuginfod_fetch_options *o)
{
	const char *urls = o->urls ? o->urls : getenv("DEBUGINFOD_URLS");

	g.configured = true;
	g.enabled = urls && urls[strspn(urls, " \t")];
	snprintf(g.urls, sizeof(g.urls), "%s", g.enabled ? urls : "");
	const char *env_cache = getenv("DEBUGINFOD_CACHE_PATH");

	snprintf(g.cache_dir, sizeof(g.cache_dir), "%s",
		 o->cache_dir		   ? o->cache_dir
		 : env_cache && *env_cache ? env_cache
					   : DEBUGINFOD_DEFAULT_CACHE_DIR);
	g.timeout_s = or_default(o->timeout_s, DEBUGINFOD_DEFAULT_TIMEOUT_S);
	g.cache_max_age_s = or_default(o->cache_max_age_s, DEBUGINFOD_DEFAULT_CACHE_MAX_AGE_S);
	g.max_in_flight = or_default(o->max_in_flight, DEBUGINFOD_DEFAULT_MAX_IN_FLIGHT);
	if (g.max_in_flight > MAX_WORKERS)
		g.max_in_flight = MAX_WORKERS;
	g.retry_after_s = or_default(o->retry_after_s, DEBUGINFOD_DEFAULT_RETRY_AFTER_S);
	g.cache_max_bytes =
	    o->cache_max_bytes ? o->cache_max_bytes : DEBUGINFOD_DEFAULT_CACHE_MAX_BYTES;
	g.stats.enabled = g.enabled;
	if (!g.enabled)
		return 0;
	setenv("DEBUGINFOD_URLS", g.urls, 1);
	prepare_cache();
	return 0;
}

int debuginfod_fetch__configure(const struct debuginfod_fetch_options *opts)
{
	struct debuginfod_fetch_options none = {0};
	int ret;

	pthread_mutex_lock(&g.lock);
	ret = g.n_workers ? -EBUSY : configure_locked(opts ? opts : &none);
	pthread_mutex_unlock(&g.lock);
	return ret;
}

/* --- the table ----------------------------------------------------------------------- */

static struct entry *find_entry(const char *build_id)
{
	for (size_t i = 0; i < g.n_entries; i++)
		if (strcmp(g.entries[i].build_id, build_id) == 0)
			return &g.entries[i];
	return NULL;
}

/* A slot for a new build-id: a free one, else the least recently used settled one. */
static struct entry *new_entry(const char *build_id)
{
	struct entry *e = NULL;

	if (g.n_entries < MAX_ENTRIES) {
		e = &g.entries[g.n_entries++];
	} else {
		for (size_t i = 0; i < g.n_entries; i++) {
			struct entry *c = &g.entries[i];

			if (c->state != DEBUGINFOD_WAITING && (!e || c->used < e->used))
				e = c;
		}
		if (!e)
			return NULL;
		free(e->path);
	}
	*e = (struct entry){.state = DEBUGINFOD_WAITING, .queued = true};
	snprintf(e->build_id, sizeof(e->build_id), "%s", build_id);
	return e;
}

static size_t count_queued(void)
{
	size_t n = 0;

	for (size_t i = 0; i < g.n_entries; i++)
		n += g.entries[i].queued;
	return n;
}

/* --- workers ------------------------------------------------------------------------- */

struct fetch_ctx {
	uint64_t deadline;
};

/* Called by libdebuginfod while it waits and transfers: aborts past the deadline (and on stop). */
static int on_progress(debuginfod_client *client, long a, long b)
{
	struct fetch_ctx *ctx = debuginfod_get_user_data(client);

	return g.stopping || (ctx && now_s() >= ctx->deadline);
}

static enum debuginfod_failure failure_of(int err, bool timed_out)
{
	if (timed_out)
		return DEBUGINFOD_FAIL_TIMEOUT;
	switch (err) {
	case -ENOENT:
		return DEBUGINFOD_FAIL_NOT_FOUND;
	case -ETIME:
	case -ETIMEDOUT:
		return DEBUGINFOD_FAIL_TIMEOUT;
	case -ECONNREFUSED:
	case -ECONNRESET:
	case -EHOSTUNREACH:
	case -ENETUNREACH:
	case -EADDRNOTAVAIL:
	case -EIO:
		return DEBUGINFOD_FAIL_NETWORK;
	default:
		return DEBUGINFOD_FAIL_OTHER;
	}
}

static struct entry *next_queued(void)
{
	for (size_t i = 0; i < g.n_entries; i++)
		if (g.entries[i].queued)
			return &g.entries[i];
	return NULL;
}

static void settle(const char *build_id, int fd, char *path, bool timed_out)
{
	struct entry *e = find_entry(build_id);

	g.stats.in_flight--;
	if (!e) {
		free(path);
		return;
	}
	if (fd >= 0) {
		e->state = DEBUGINFOD_READY;
		e->path = path;
		g.stats.fetched++;
		return;
	}
	free(path);
	e->state = DEBUGINFOD_FAILED;
	e->failure = failure_of(fd, timed_out);
	e->retry_at = now_s() + g.retry_after_s;
	g.stats.failed[e->failure]++;
}

static void *worker_main(void *arg)
{
	debuginfod_client *client = debuginfod_begin();
	struct fetch_ctx ctx;

	if (client) {
		debuginfod_set_user_data(client, &ctx);
		debuginfod_set_progressfn(client, on_progress);
	}
	pthread_mutex_lock(&g.lock);
	while (!g.stopping) {
		char build_id[BUILD_ID_MAX], *path = NULL;
		struct entry *e = next_queued();
		uint64_t started;
		int fd;

		if (!e) {
			pthread_cond_wait(&g.wake, &g.lock);
			continue;
		}
		e->queued = false;
		snprintf(build_id, sizeof(build_id), "%s", e->build_id);
		g.stats.in_flight++;
		pthread_mutex_unlock(&g.lock);
		started = now_s();
		ctx.deadline = started + g.timeout_s;
		fd = client ? debuginfod_find_debuginfo(client, (const unsigned char *)build_id, 0,
							&path)
			    : -ENOMEM;
		if (fd >= 0)
			close(fd);
		pthread_mutex_lock(&g.lock);
		settle(build_id, fd, path, fd < 0 && now_s() >= ctx.deadline);
		pthread_mutex_unlock(&g.lock);
		if (fd >= 0) { /* outside the lock: walking the cache takes a while */
			uint64_t bytes = 0;
			int removed = debuginfod_fetch__trim_cache(g.cache_dir, g.cache_max_bytes,
								   g.cache_max_age_s, &bytes);

			pthread_mutex_lock(&g.lock);
			g.stats.cache_bytes = bytes;
			g.stats.cache_files_removed += removed > 0 ? (uint64_t)removed : 0;
			pthread_mutex_unlock(&g.lock);
		}
		pthread_mutex_lock(&g.lock);
	}
	pthread_mutex_unlock(&g.lock);
	if (client)
		debuginfod_end(client);
	return NULL;
}

static void start_workers_locked(void)
{
	while (g.n_workers < g.max_in_flight) {
		pthread_attr_t attr;
		int err;

		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, 256 << 10);
		err = pthread_create(&g.workers[g.n_workers], &attr, worker_main, NULL);
		pthread_attr_destroy(&attr);
		if (err)
			break;
		g.n_workers++;
	}
}

/* --- lookups ------------------------------------------------------------------------- */

static enum debuginfod_state answer(struct entry *e, char *ret_path, size_t len)
{
	e->used = ++g.clock;
	if (e->state == DEBUGINFOD_READY) {
		struct stat st;

		/* Trimmed from the cache since: fetch again. */
		if (stat(e->path, &st) == 0) {
			snprintf(ret_path, len, "%s", e->path);
			return DEBUGINFOD_READY;
		}
		free(e->path);
		e->path = NULL;
		e->state = DEBUGINFOD_FAILED;
		e->retry_at = 0;
	}
	if (e->state == DEBUGINFOD_FAILED && now_s() < e->retry_at) {
		g.stats.negative_hits++;
		return DEBUGINFOD_FAILED;
	}
	if (e->state == DEBUGINFOD_FAILED) {
		e->state = DEBUGINFOD_WAITING;
		e->queued = true;
		g.stats.requests++;
		pthread_cond_signal(&g.wake);
	}
	return e->state;
}

enum debuginfod_state debuginfod_fetch__lookup(const char *build_id, char *ret_path, size_t len)
{
	enum debuginfod_state state;
	struct entry *e;

	if (!build_id || !build_id[0] || strlen(build_id) >= BUILD_ID_MAX)
		return DEBUGINFOD_OFF;
	pthread_mutex_lock(&g.lock);
	if (!g.configured)
		configure_locked(&(struct debuginfod_fetch_options){0});
	if (!g.enabled || g.stopping) {
		pthread_mutex_unlock(&g.lock);
		return DEBUGINFOD_OFF;
	}
	e = find_entry(build_id);
	if (e) {
		state = answer(e, ret_path, len);
	} else if (count_queued() >= DEBUGINFOD_MAX_QUEUED || !(e = new_entry(build_id))) {
		g.stats.failed[DEBUGINFOD_FAIL_QUEUE_FULL]++;
		state = DEBUGINFOD_FAILED; /* asked again at the next lookup */
	} else {
		g.stats.requests++;
		start_workers_locked();
		pthread_cond_signal(&g.wake);
		state = DEBUGINFOD_WAITING;
	}
	pthread_mutex_unlock(&g.lock);
	return state;
}

enum debuginfod_failure debuginfod_fetch__failure(const char *build_id)
{
	enum debuginfod_failure f = DEBUGINFOD_FAIL__COUNT;
	struct entry *e;

	pthread_mutex_lock(&g.lock);
	e = find_entry(build_id);
	if (e && e->state == DEBUGINFOD_FAILED)
		f = e->failure;
	pthread_mutex_unlock(&g.lock);
	return f;
}

void debuginfod_fetch__stats(struct debuginfod_fetch_stats *ret)
{
	pthread_mutex_lock(&g.lock);
	*ret = g.stats;
	ret->queued = count_queued();
	pthread_mutex_unlock(&g.lock);
}

const char *debuginfod_fetch__failure_name(enum debuginfod_failure f)
{
	static const char *const names[DEBUGINFOD_FAIL__COUNT] = {
	    [DEBUGINFOD_FAIL_NOT_FOUND] = "not_found", [DEBUGINFOD_FAIL_TIMEOUT] = "timeout",
	    [DEBUGINFOD_FAIL_NETWORK] = "network",     [DEBUGINFOD_FAIL_QUEUE_FULL] = "queue_full",
	    [DEBUGINFOD_FAIL_OTHER] = "other",
	};

	return (unsigned)f < DEBUGINFOD_FAIL__COUNT ? names[f] : "invalid";
}

void debuginfod_fetch__stop(void)
{
	unsigned n;

	pthread_mutex_lock(&g.lock);
	g.stopping = true;
	pthread_cond_broadcast(&g.wake);
	n = g.n_workers;
	pthread_mutex_unlock(&g.lock);
	for (unsigned i = 0; i < n; i++)
		pthread_join(g.workers[i], NULL);
	pthread_mutex_lock(&g.lock);
	g.n_workers = 0;
	for (size_t i = 0; i < g.n_entries; i++)
		free(g.entries[i].path);
	g.n_entries = 0;
	pthread_mutex_unlock(&g.lock);
}

/* --- cache bounds -------------------------------------------------------------------- */

struct cached_file {
	char *path;
	uint64_t bytes;
	time_t used; /* the later of access and modification */
};

static struct {
	struct cached_file *v;
	size_t n, cap;
} walk; /* nftw has no context argument; trim runs under trim_lock */
static pthread_mutex_t trim_lock = PTHREAD_MUTEX_INITIALIZER;

static int collect_file(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	if (type != FTW_F || !S_ISREG(st->st_mode))
		return 0;
	/* libdebuginfod's own settings files stay. */
	if (ftw->level == 1)
		return 0;
	if (walk.n == walk.cap) {
		size_t cap = walk.cap ? walk.cap * 2 : 64;
		struct cached_file *v = realloc(walk.v, cap * sizeof(*v));

		if (!v)
			return -1;
		walk.v = v;
		walk.cap = cap;
	}
	walk.v[walk.n].path = strdup(path);
	if (!walk.v[walk.n].path)
		return -1;
	walk.v[walk.n].bytes = (uint64_t)st->st_size;
	walk.v[walk.n++].used = st->st_atime > st->st_mtime ? st->st_atime : st->st_mtime;
	return 0;
}

static int by_use(const void *a, const void *b)
{
	const struct cached_file *x = a, *y = b;

	return (x->used > y->used) - (x->used < y->used);
}

int debuginfod_fetch__trim_cache(const char *dir, uint64_t max_bytes, unsigned max_age_s,
				 uint64_t *ret_bytes)
{
	time_t now = time(NULL);
	uint64_t total = 0;
	int removed = 0, err = 0;

	pthread_mutex_lock(&trim_lock);
	walk.n = 0;
	if (nftw(dir, collect_file, 16, FTW_PHYS))
		err = errno ? -errno : -ENOMEM;
	if (!err) {
		if (walk.n)
			qsort(walk.v, walk.n, sizeof(*walk.v), by_use);
		for (size_t i = 0; i < walk.n; i++)
			total += walk.v[i].bytes;
		/* Oldest use first: past the age, or while the cache is over its size. */
		for (size_t i = 0; i < walk.n; i++) {
			bool old = max_age_s && now - walk.v[i].used > (time_t)max_age_s;

			if (!old && total <= max_bytes)
				break;
			if (unlink(walk.v[i].path) == 0) {
				total -= walk.v[i].bytes;
				removed++;
			}
		}
	}
	for (size_t i = 0; i < walk.n; i++)
		free(walk.v[i].path);
	walk.n = 0;
	pthread_mutex_unlock(&trim_lock);
	if (ret_bytes)
		*ret_bytes = total;
	return err ? err : removed;
}
