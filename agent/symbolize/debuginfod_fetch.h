/* SPDX-License-Identifier: Apache-2.0 */
/* Debug files from debuginfod servers (DEBUGINFOD_URLS) on worker threads, so sampling never
 * waits: a lookup answers at once (waiting, ready, failed); the only user of libdebuginfod. */
#ifndef ROOTTRACE_DEBUGINFOD_FETCH_H
#define ROOTTRACE_DEBUGINFOD_FETCH_H

#include <stddef.h>
#include <stdint.h>

#define DEBUGINFOD_DEFAULT_CACHE_DIR "/var/cache/roottrace/debuginfod"
#define DEBUGINFOD_DEFAULT_TIMEOUT_S 30
#define DEBUGINFOD_DEFAULT_CACHE_MAX_BYTES (1ULL << 30)	   /* 1 GiB */
#define DEBUGINFOD_DEFAULT_CACHE_MAX_AGE_S (7 * 24 * 3600) /* a week unused */
#define DEBUGINFOD_DEFAULT_MAX_IN_FLIGHT 2
#define DEBUGINFOD_DEFAULT_RETRY_AFTER_S 3600 /* a build-id that failed is asked again after */
#define DEBUGINFOD_MAX_QUEUED 256	      /* more waiting requests are refused (counted) */

struct debuginfod_fetch_options {
	const char *urls;	  /* NULL: $DEBUGINFOD_URLS; "" or unset: off */
	const char *cache_dir;	  /* NULL: $DEBUGINFOD_CACHE_PATH, else the default */
	unsigned timeout_s;	  /* per fetch, whole transfer; 0: default */
	uint64_t cache_max_bytes; /* 0: default */
	unsigned cache_max_age_s; /* files not used for this long are removed; 0: default */
	unsigned max_in_flight;	  /* worker threads, fetches at once; 0: default */
	unsigned retry_after_s;	  /* negative cache; 0: default */
};

enum debuginfod_state {
	DEBUGINFOD_OFF,	    /* no server configured */
	DEBUGINFOD_WAITING, /* queued or being fetched */
	DEBUGINFOD_READY,   /* the file is in the cache: ret_path */
	DEBUGINFOD_FAILED,  /* failed; asked again after retry_after_s */
};

enum debuginfod_failure {
	DEBUGINFOD_FAIL_NOT_FOUND, /* 404: the server does not have it */
	DEBUGINFOD_FAIL_TIMEOUT,   /* over timeout_s */
	DEBUGINFOD_FAIL_NETWORK,   /* no connection, reset, DNS */
	DEBUGINFOD_FAIL_QUEUE_FULL,
	DEBUGINFOD_FAIL_OTHER,
	DEBUGINFOD_FAIL__COUNT,
};

struct debuginfod_fetch_stats {
	uint64_t requests, fetched, negative_hits; /* negative_hits: answered from the cache */
	uint64_t in_flight, queued;		   /* now */
	uint64_t failed[DEBUGINFOD_FAIL__COUNT];
	uint64_t cache_bytes, cache_files_removed;
	int enabled;
};

/* Sets the options (call before the first lookup, from the main thread: it sets the
 * environment libdebuginfod reads). Without it the first lookup reads the environment.
 * 0 or -errno. */
int debuginfod_fetch__configure(const struct debuginfod_fetch_options *opts);

/* Never blocks: a build-id not asked yet is queued for the workers. READY fills ret_path. */
enum debuginfod_state debuginfod_fetch__lookup(const char *build_id, char *ret_path, size_t len);

/* Why the last fetch of build_id failed (DEBUGINFOD_FAIL__COUNT when it did not). */
enum debuginfod_failure debuginfod_fetch__failure(const char *build_id);

void debuginfod_fetch__stats(struct debuginfod_fetch_stats *ret);
const char *debuginfod_fetch__failure_name(enum debuginfod_failure f);

/* Removes cache files over the age and size bounds, oldest use first. Returns how many were
 * removed, or -errno. Run by the workers after each fetch. */
int debuginfod_fetch__trim_cache(const char *dir, uint64_t max_bytes, unsigned max_age_s,
				 uint64_t *ret_bytes);

/* Stops the workers (a fetch in progress is abandoned at its next progress callback). */
void debuginfod_fetch__stop(void);

#endif
