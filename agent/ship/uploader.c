// SPDX-License-Identifier: Apache-2.0
/* Upload thread: pops the oldest job, POSTs it, and on failure puts it back and waits
 * (exponential backoff with jitter). The queue lock is never held across a request. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ship/spool.h"
#include "ship/upload_queue.h"
#include "ship/uploader.h"

struct uploader {
	char *base_url, *auth;
	struct http_client *http;
	struct upload_queue *queue;
	struct spool *spool;
	int backoff_min_ms, backoff_max_ms;
	uint64_t next_seq;
	unsigned int rand_state;

	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;
	pthread_cond_t wake;	/* work arrived, flush requested, or stop */
	pthread_cond_t drained; /* queue became empty / an attempt ended */
	bool stop, flushing, busy;
	int64_t flush_deadline_ms;
	struct uploader_stats stats;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void deadline_ts(int64_t delay_ms, struct timespec *ts)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += delay_ms / 1000;
	ts->tv_nsec += (delay_ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

/* Queue drop callback (lock held): the dropped job's spool file goes too. */
static void on_drop(const struct upload_job *job, void *ctx)
{
	struct uploader *u = ctx;

	u->stats.dropped++;
	u->stats.dropped_samples += job->samples;
	if (u->spool && job->spool_name)
		spool__remove(u->spool, job->spool_name);
}

/* 2xx: stored. 4xx other than 408/429: the collector will never take it. */
static bool retryable(long status)
{
	return status == 0 || status == 408 || status == 429 || status >= 500;
}

static int post(struct uploader *u, const struct upload_job *job, long timeout_ms, long *status,
		char *err, size_t err_len)
{
	struct http_response resp;
	size_t url_len = strlen(u->base_url) + strlen(job->query) + 64;
	char *url = malloc(url_len);
	int ret;

	*status = 0;
	if (!url)
		return -ENOMEM;
	snprintf(url, url_len, "%s/api/apm/profiles?%s", u->base_url, job->query);
	ret = http_client__post(u->http, url, u->auth, "application/octet-stream", job->body,
				job->len, timeout_ms, &resp, err, err_len);
	free(url);
	*status = ret ? 0 : resp.status;
	if (!ret && (resp.status < 200 || resp.status >= 300))
		snprintf(err, err_len, "HTTP %ld: %.200s", resp.status, resp.body ? resp.body : "");
	http_response__clear(&resp);
	return ret;
}

/* Full jitter over [delay/2, delay]; delay doubles per consecutive failure. */
static int64_t backoff_ms(struct uploader *u, unsigned int failures)
{
	int64_t delay = u->backoff_min_ms;

	while (failures-- > 1 && delay < u->backoff_max_ms)
		delay *= 2;
	if (delay > u->backoff_max_ms)
		delay = u->backoff_max_ms;
	return delay / 2 + rand_r(&u->rand_state) % (delay / 2 + 1);
}

static int64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A failed attempt that will be retried, counted by reason (lock held). */
static void count_failure(struct uploader_stats *st, long status)
{
	st->failed_attempts++;
	if (status == 0)
		st->failed_network++;
	else if (status == 429)
		st->failed_throttled++;
	else
		st->failed_server++;
	if (!st->failing)
		st->failing_since_ms = now_ms();
	st->failing = true;
}

/* One attempt on the oldest job; lock held on entry and exit. Returns true on success. */
static bool attempt(struct uploader *u, struct upload_job *job)
{
	char err[256] = "";
	long status = 0, timeout_ms = 0;
	bool ok, give_up;

	if (u->flushing)
		timeout_ms = u->flush_deadline_ms - now_ms();
	if (u->flushing && timeout_ms < 100)
		timeout_ms = 100;
	u->busy = true;
	pthread_mutex_unlock(&u->lock);
	post(u, job, timeout_ms, &status, err, sizeof(err));
	pthread_mutex_lock(&u->lock);
	u->busy = false;
	ok = status >= 200 && status < 300;
	give_up = !ok && !retryable(status);
	u->stats.last_status = status;
	if (ok || give_up) {
		if (u->spool && job->spool_name)
			spool__remove(u->spool, job->spool_name);
		if (ok) {
			u->stats.uploaded++;
			u->stats.uploaded_bytes += job->len;
			u->stats.last_upload_ns = realtime_ns();
		} else {
			u->stats.rejected++;
			snprintf(u->stats.last_error, sizeof(u->stats.last_error), "%s", err);
		}
		upload_job__free(job);
		u->stats.failing = false;
		u->stats.failing_since_ms = 0;
		return true;
	}
	count_failure(&u->stats, status);
	snprintf(u->stats.last_error, sizeof(u->stats.last_error), "%s", err);
	upload_queue__push_front(u->queue, job);
	return false;
}

static void *thread_main(void *arg)
{
	struct uploader *u = arg;
	unsigned int failures = 0;
	struct timespec ts;

	pthread_mutex_lock(&u->lock);
	while (!u->stop) {
		struct upload_job *job = upload_queue__pop(u->queue);

		if (!job) {
			pthread_cond_broadcast(&u->drained);
			pthread_cond_wait(&u->wake, &u->lock);
			continue;
		}
		if (attempt(u, job)) {
			failures = 0;
			continue;
		}
		failures++;
		pthread_cond_broadcast(&u->drained);
		if (u->flushing) /* shutting down: retry at once until the deadline */
			deadline_ts(200, &ts);
		else
			deadline_ts(backoff_ms(u, failures), &ts);
		while (!u->stop && pthread_cond_timedwait(&u->wake, &u->lock, &ts) != ETIMEDOUT &&
		       !u->flushing)
			;
	}
	pthread_cond_broadcast(&u->drained);
	pthread_mutex_unlock(&u->lock);
	return NULL;
}

static int replay_spool(struct uploader *u)
{
	struct upload_job **jobs;
	size_t n;
	int ret = spool__replay(u->spool, &jobs, &n);

	if (ret)
		return ret;
	for (size_t i = 0; i < n; i++) {
		upload_queue__push(u->queue, jobs[i]);
		u->stats.replayed++;
	}
	free(jobs);
	u->next_seq = spool__max_seq(u->spool) + 1;
	return 0;
}

static int init_sync(struct uploader *u)
{
	pthread_condattr_t attr;
	int ret;

	ret = pthread_mutex_init(&u->lock, NULL);
	if (ret)
		return -ret;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	ret = pthread_cond_init(&u->wake, &attr);
	if (!ret)
		ret = pthread_cond_init(&u->drained, &attr);
	pthread_condattr_destroy(&attr);
	return -ret;
}

struct uploader *uploader__new(const struct uploader_options *opts, char *err, size_t err_len)
{
	struct uploader *u = calloc(1, sizeof(*u));
	int ret = -ENOMEM;

	if (!u)
		return NULL;
	u->next_seq = 1;
	u->rand_state = (unsigned int)now_ms() ^ (unsigned int)(uintptr_t)u;
	u->backoff_min_ms = opts->backoff_min_ms > 0 ? opts->backoff_min_ms : 1000;
	u->backoff_max_ms = opts->backoff_max_ms > 0 ? opts->backoff_max_ms : 60000;
	u->base_url = strdup(opts->collector_url);
	u->auth = strdup(opts->auth_header);
	u->http = http_client__new(&opts->http);
	u->queue = upload_queue__new(opts->queue_max_jobs, opts->queue_max_bytes, on_drop, u);
	if (!u->base_url || !u->auth || !u->http || !u->queue) {
		snprintf(err, err_len, "uploader: out of memory");
		goto fail;
	}
	ret = init_sync(u);
	if (ret) {
		snprintf(err, err_len, "uploader: %s", strerror(-ret));
		goto fail;
	}
	if (opts->spool_dir) {
		u->spool = spool__open(opts->spool_dir, opts->spool_max_bytes, err, err_len);
		if (!u->spool) {
			ret = -errno;
			goto fail;
		}
		ret = replay_spool(u);
		if (ret) {
			snprintf(err, err_len, "spool %s: replay: %s", opts->spool_dir,
				 strerror(-ret));
			goto fail;
		}
	}
	ret = -pthread_create(&u->thread, NULL, thread_main, u);
	if (ret) {
		snprintf(err, err_len, "uploader: thread: %s", strerror(-ret));
		goto fail;
	}
	u->thread_started = true;
	return u;
fail:
	uploader__free(u);
	errno = -ret;
	return NULL;
}

void uploader__free(struct uploader *u)
{
	if (!u)
		return;
	if (u->thread_started) {
		pthread_mutex_lock(&u->lock);
		u->stop = true;
		pthread_cond_broadcast(&u->wake);
		pthread_mutex_unlock(&u->lock);
		pthread_join(u->thread, NULL);
		pthread_cond_destroy(&u->wake);
		pthread_cond_destroy(&u->drained);
		pthread_mutex_destroy(&u->lock);
	}
	/* Jobs left in memory keep their spool file, so the next start sends them. */
	upload_queue__free(u->queue);
	spool__close(u->spool);
	http_client__free(u->http);
	free(u->base_url);
	free(u->auth);
	free(u);
}

int uploader__submit(struct uploader *u, char *query, uint8_t *body, size_t len, uint64_t samples)
{
	struct upload_job *job = calloc(1, sizeof(*job));

	if (!job) {
		free(query);
		free(body);
		return -ENOMEM;
	}
	job->query = query;
	job->body = body;
	job->len = len;
	job->samples = samples;
	pthread_mutex_lock(&u->lock);
	job->seq = u->next_seq++;
	/* A spool write failure (disk full) leaves the job in memory only. */
	if (u->spool)
		spool__write(u->spool, job);
	upload_queue__push(u->queue, job);
	pthread_cond_broadcast(&u->wake);
	pthread_mutex_unlock(&u->lock);
	return 0;
}

size_t uploader__flush(struct uploader *u, int timeout_ms)
{
	struct timespec ts;
	size_t left;

	deadline_ts(timeout_ms, &ts);
	pthread_mutex_lock(&u->lock);
	u->flushing = true;
	u->flush_deadline_ms = now_ms() + timeout_ms;
	pthread_cond_broadcast(&u->wake);
	while ((upload_queue__len(u->queue) || u->busy) &&
	       pthread_cond_timedwait(&u->drained, &u->lock, &ts) != ETIMEDOUT)
		;
	left = upload_queue__len(u->queue) + (u->busy ? 1 : 0);
	u->flushing = false;
	pthread_mutex_unlock(&u->lock);
	return left;
}

void uploader__stats(struct uploader *u, struct uploader_stats *ret)
{
	pthread_mutex_lock(&u->lock);
	*ret = u->stats;
	ret->queued = upload_queue__len(u->queue) + (u->busy ? 1 : 0);
	ret->queued_bytes = upload_queue__bytes(u->queue);
	pthread_mutex_unlock(&u->lock);
}
