/* SPDX-License-Identifier: Apache-2.0 */
/* Optional on-disk spool of profiles not yet uploaded: one file per job, written atomically
 * (tmp + fsync + rename), capped in bytes (oldest files removed first, counted), replayed on
 * start and deleted after a successful upload so nothing is sent twice. */
#ifndef ROOTTRACE_SPOOL_H
#define ROOTTRACE_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "ship/upload_queue.h"

struct spool;

/* Creates dir (0700) if needed, removes stale temporary files, indexes the spooled jobs.
 * NULL + errno, with a reason in err. */
struct spool *spool__open(const char *dir, size_t max_bytes, char *err, size_t err_len);
void spool__close(struct spool *s);

/* Writes job (query + body) as <seq>.rtp and sets job->spool_name. Removes the oldest files
 * while over the cap. -EFBIG when the job alone exceeds the cap; -errno on I/O errors. */
int spool__write(struct spool *s, struct upload_job *job);
/* Deletes a spooled job (after a successful upload or a drop). Missing files are fine. */
int spool__remove(struct spool *s, const char *name);

/* Loads every spooled job, oldest first, into malloc'd jobs (*ret_jobs array, caller frees
 * each with upload_job__free and the array with free). Unreadable or corrupt files are
 * deleted and counted in spool__corrupt(). */
int spool__replay(struct spool *s, struct upload_job ***ret_jobs, size_t *ret_n);

/* Highest seq on disk (new jobs continue after it). */
uint64_t spool__max_seq(const struct spool *s);
size_t spool__bytes(const struct spool *s);
size_t spool__files(const struct spool *s);
uint64_t spool__dropped(const struct spool *s);
uint64_t spool__corrupt(const struct spool *s);

#endif
