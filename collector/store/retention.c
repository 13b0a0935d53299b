// SPDX-License-Identifier: Apache-2.0
/* Periodic retention of profile data: one thread sleeping on a condition variable, so that
 * shutdown wakes it at once; each pass deletes the rollups whose bucket ended before the cutoff. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector.h"
#include "store/retention.h"

struct retention_job {
	struct profile_store *ps;
	struct link_store *ls;
	int days, link_hours, interval_s;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stopping;
};

/* The daemon's only periodic work: one line when it did something or failed. */
static void report(const char *what, int err, int64_t deleted, int age, const char *unit)
{
	if (err)
		fprintf(stderr, "roottrace-collector: retention: %s: %s\n", what, strerror(-err));
	else if (deleted)
		fprintf(stderr,
			"roottrace-collector: retention: deleted %lld %s older than %d %s\n",
			(long long)deleted, what, age, unit);
}

static void run_once(struct retention_job *j)
{
	int64_t now = (int64_t)time(NULL), deleted = 0;
	int err = j->ps->ops->retention(j->ps, now - (int64_t)j->days * 86400, &deleted);

	report("rollup rows", err, deleted, j->days, "days");
	deleted = 0;
	err =
	    j->ls ? j->ls->ops->retention(j->ls, now - (int64_t)j->link_hours * 3600, &deleted) : 0;
	report("span links", err, deleted, j->link_hours, "hours");
}

static void *retention_main(void *arg)
{
	struct retention_job *j = arg;
	struct timespec until;

	pthread_mutex_lock(&j->lock);
	while (!j->stopping) {
		pthread_mutex_unlock(&j->lock);
		run_once(j);
		pthread_mutex_lock(&j->lock);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += j->interval_s;
		while (!j->stopping &&
		       pthread_cond_timedwait(&j->wake, &j->lock, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

int retention_job__start(struct collector *c, int interval_s, struct retention_job **ret)
{
	struct retention_job *j = calloc(1, sizeof(*j));
	int err;

	if (!j)
		return -ENOMEM;
	j->ps = c->profiles;
	j->ls = c->links;
	j->days = c->opts.retention_days;
	j->link_hours = c->opts.link_retention_hours;
	j->interval_s = interval_s;
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->wake, NULL);
	err = pthread_create(&j->thread, NULL, retention_main, j);
	if (err) {
		pthread_cond_destroy(&j->wake);
		pthread_mutex_destroy(&j->lock);
		free(j);
		return -err;
	}
	*ret = j;
	return 0;
}

void retention_job__stop(struct retention_job *j)
{
	if (!j)
		return;
	pthread_mutex_lock(&j->lock);
	j->stopping = true;
	pthread_cond_signal(&j->wake);
	pthread_mutex_unlock(&j->lock);
	pthread_join(j->thread, NULL);
	pthread_cond_destroy(&j->wake);
	pthread_mutex_destroy(&j->lock);
	free(j);
}
