/* SPDX-License-Identifier: Apache-2.0 */
/* Processes captured in their first moments, whose maps are read again soon: one sampled
 * while its dynamic loader was still mapping its libraries was captured without them. */
#ifndef ROOTTRACE_EARLY_MAPS_H
#define ROOTTRACE_EARLY_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * BPF announces a process at its first sample (and its first after an exec). One that started
 * under a second before (or has just exec'd) may be in its dynamic loader then: its maps as
 * read at that capture hold its executable and the loader, not libc and the other libraries
 * mapped a few milliseconds later, and its stacks end where they call into them
 * ("no_mapping"). Such a capture is read again 100 ms, 500 ms and 2 s after it; any other
 * process's maps are read as before (a symboliser miss at a drain, or every 10 s while
 * sampled). Bounded: a burst of new processes past the cap keeps the drain's re-read.
 */

#define EARLY_MAPS_YOUNG_NS 1000000000ULL /* started under this long before its capture */
#define EARLY_MAPS_MAX_PIDS 1024

struct early_maps_stats {
	uint64_t noted;	  /* young captures queued for re-reads */
	uint64_t rereads; /* re-reads handed out */
	uint64_t dropped; /* young captures over EARLY_MAPS_MAX_PIDS: not queued */
};

struct early_maps;

/* NULL + errno. */
struct early_maps *early_maps__new(void);
void early_maps__free(struct early_maps *em);

/* pid was captured at now_ns, announced at its first sample (after an exec when exec); its
 * process started at start_ns (CLOCK_MONOTONIC, as now_ns). true: it is young, and its maps
 * are due again on the schedule above (restarted when it was queued already). */
bool early_maps__note(struct early_maps *em, pid_t pid, uint64_t start_ns, bool exec,
		      uint64_t now_ns);
/* The pids whose maps are due to be read again at now_ns, up to cap into ret, each moved to
 * its next re-read (or dropped after its last). How many. */
size_t early_maps__due(struct early_maps *em, uint64_t now_ns, pid_t *ret, size_t cap);
/* True while a re-read is still to come: the caller's loop should come back within ~100 ms. */
bool early_maps__pending(const struct early_maps *em);

void early_maps__stats(const struct early_maps *em, struct early_maps_stats *ret);

#endif
