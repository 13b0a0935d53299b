// SPDX-License-Identifier: Apache-2.0
/* The fault each backend is in, and failures counted by cause (store_fault.h): one lock for
 * the few bytes of state, taken only when a request fails or a backend leaves a fault. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "store/store_fault.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct store_fault faults[STORE_BACKEND__COUNT];
/* Read without the lock on every successful request: most find no fault and stop there. */
static atomic_bool in_fault[STORE_BACKEND__COUNT];
static atomic_uint_fast64_t counts[STORE_BACKEND__COUNT][STORE_FAULT__COUNT];

static const char *const cause_names[STORE_FAULT__COUNT] = {
    [STORE_FAULT_DISK_FULL] = "disk_full", [STORE_FAULT_READ_ONLY] = "read_only",
    [STORE_FAULT_REFUSED] = "refused",	   [STORE_FAULT_UNREACHABLE] = "unreachable",
    [STORE_FAULT_IO_ERROR] = "io_error",
};

/* How the 503 detail says it. */
static const char *const cause_texts[STORE_FAULT__COUNT] = {
    [STORE_FAULT_DISK_FULL] = "disk full",
    [STORE_FAULT_READ_ONLY] = "read-only file system or database",
    [STORE_FAULT_REFUSED] = "the database server refused the request",
    [STORE_FAULT_UNREACHABLE] = "the database server is unreachable",
    [STORE_FAULT_IO_ERROR] = "disk I/O error",
};

static const int cause_errnos[STORE_FAULT__COUNT] = {
    [STORE_FAULT_DISK_FULL] = ENOSPC,  [STORE_FAULT_READ_ONLY] = EROFS,
    [STORE_FAULT_REFUSED] = EREMOTEIO, [STORE_FAULT_UNREACHABLE] = EHOSTUNREACH,
    [STORE_FAULT_IO_ERROR] = EIO,
};

static const char *const backend_names[STORE_BACKEND__COUNT] = {
    [STORE_BACKEND_SQLITE] = "sqlite",
    [STORE_BACKEND_POSTGRESQL] = "postgresql",
    [STORE_BACKEND_CLICKHOUSE] = "clickhouse",
};

const char *store_fault_cause_name(enum store_fault_cause c)
{
	return c < STORE_FAULT__COUNT ? cause_names[c] : "?";
}

const char *store_backend_name(enum store_backend b)
{
	return b < STORE_BACKEND__COUNT ? backend_names[b] : "?";
}

int store_fault_errno(enum store_fault_cause c)
{
	return c < STORE_FAULT__COUNT ? -cause_errnos[c] : -EIO;
}

/* The backend's message on one line, without the trailing newline servers put there. */
static void copy_detail(char *dst, const char *detail)
{
	size_t n = 0;

	for (; detail && detail[n] && n + 1 < STORE_FAULT_DETAIL_MAX; n++)
		dst[n] = detail[n] == '\n' || detail[n] == '\r' ? ' ' : detail[n];
	while (n && dst[n - 1] == ' ')
		n--;
	dst[n] = '\0';
}

int store_fault__record(enum store_backend b, enum store_fault_cause c, const char *detail)
{
	struct store_fault *f;

	if (b >= STORE_BACKEND__COUNT || c >= STORE_FAULT__COUNT)
		return -EIO;
	atomic_fetch_add_explicit(&counts[b][c], 1, memory_order_relaxed);
	pthread_mutex_lock(&lock);
	f = &faults[b];
	if (!atomic_load_explicit(&in_fault[b], memory_order_relaxed) || f->cause != c)
		f->since = time(NULL);
	f->cause = c;
	copy_detail(f->detail, detail);
	atomic_store_explicit(&in_fault[b], true, memory_order_release);
	pthread_mutex_unlock(&lock);
	return store_fault_errno(c);
}

void store_fault__ok(enum store_backend b, bool write)
{
	if (b >= STORE_BACKEND__COUNT || !atomic_load_explicit(&in_fault[b], memory_order_acquire))
		return;
	pthread_mutex_lock(&lock);
	if (write || faults[b].cause == STORE_FAULT_UNREACHABLE)
		atomic_store_explicit(&in_fault[b], false, memory_order_release);
	pthread_mutex_unlock(&lock);
}

bool store_fault__get(enum store_backend b, struct store_fault *ret)
{
	bool active;

	if (b >= STORE_BACKEND__COUNT)
		return false;
	pthread_mutex_lock(&lock);
	active = atomic_load_explicit(&in_fault[b], memory_order_relaxed);
	if (active)
		*ret = faults[b];
	pthread_mutex_unlock(&lock);
	return active;
}

uint64_t store_fault__count(enum store_backend b, enum store_fault_cause c)
{
	if (b >= STORE_BACKEND__COUNT || c >= STORE_FAULT__COUNT)
		return 0;
	return atomic_load_explicit(&counts[b][c], memory_order_relaxed);
}

static atomic_uint_fast64_t collisions;
static char collision_detail[STORE_FAULT_DETAIL_MAX]; /* the last one's, under lock */

int store_fault__collision(const char *detail)
{
	atomic_fetch_add_explicit(&collisions, 1, memory_order_relaxed);
	pthread_mutex_lock(&lock);
	copy_detail(collision_detail, detail);
	pthread_mutex_unlock(&lock);
	return STORE_ERR_SERIES_COLLISION;
}

uint64_t store_fault__collisions(void)
{
	return atomic_load_explicit(&collisions, memory_order_relaxed);
}

/* The cause an error names; false for errors that name none (-ENOMEM, -EINVAL...). */
static bool cause_of(int err, enum store_fault_cause *ret)
{
	for (int c = 0; c < STORE_FAULT__COUNT; c++)
		if (err == -cause_errnos[c]) {
			*ret = (enum store_fault_cause)c;
			return true;
		}
	return false;
}

bool store_fault_is_outage(int err)
{
	enum store_fault_cause c;

	return cause_of(err, &c);
}

void store_fault_describe(int err, char *buf, size_t len)
{
	enum store_fault_cause c;
	struct store_fault f;

	if (!len)
		return;
	buf[0] = '\0';
	if (err == STORE_ERR_SERIES_COLLISION) {
		pthread_mutex_lock(&lock);
		snprintf(buf, len, "a series id collision (clickhouse: %s)", collision_detail);
		pthread_mutex_unlock(&lock);
		return;
	}
	if (!cause_of(err, &c))
		return;
	/* The backend now in that fault gives its words; a plain -EIO names a cause only when
	 * a backend recorded a disk I/O error. */
	for (int b = 0; b < STORE_BACKEND__COUNT; b++)
		if (store_fault__get((enum store_backend)b, &f) && f.cause == c) {
			snprintf(buf, len, "%s (%s: %s)", cause_texts[c], backend_names[b],
				 f.detail);
			return;
		}
	if (c != STORE_FAULT_IO_ERROR)
		snprintf(buf, len, "%s", cause_texts[c]);
}

const char *store_strerror(int err)
{
	static __thread char buf[STORE_FAULT_DETAIL_MAX + 64];

	store_fault_describe(err, buf, sizeof(buf));
	if (!*buf)
		snprintf(buf, sizeof(buf), "%s", strerror(-err));
	return buf;
}
