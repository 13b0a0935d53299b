/* SPDX-License-Identifier: Apache-2.0 */
/* The retention job: a thread that deletes rollups older than --retention-days, at start and
 * then periodically. Settings, audit and deployments are never deleted. */
#ifndef ROOTTRACE_RETENTION_H
#define ROOTTRACE_RETENTION_H

#include "store.h"

struct retention_job;

/* 0 or -errno. */
int retention_job__start(struct profile_store *ps, int days, int interval_s,
			 struct retention_job **ret);
/* Wakes the thread, joins it. NULL ok. */
void retention_job__stop(struct retention_job *j);

#endif
