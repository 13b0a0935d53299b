/* SPDX-License-Identifier: Apache-2.0 */
/* The retention job: a thread that deletes rollups older than --retention-days and
 * span links older than --link-retention-hours, at start and
 * then periodically. Settings, audit and deployments are never deleted. */
#ifndef ROOTTRACE_RETENTION_H
#define ROOTTRACE_RETENTION_H

#include "store/store.h"

struct retention_job;

struct collector;

/* Deletes rollups older than c->opts.retention_days and span links older than
 * c->opts.link_retention_hours. 0 or -errno. */
int retention_job__start(struct collector *c, int interval_s, struct retention_job **ret);
/* Wakes the thread, joins it. NULL ok. */
void retention_job__stop(struct retention_job *j);

#endif
