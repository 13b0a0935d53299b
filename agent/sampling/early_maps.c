// SPDX-License-Identifier: Apache-2.0
/* The re-read schedule of processes captured in their first moments (early_maps.h): a small
 * array of (pid, capture time, re-reads done), scanned at each poll. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sampling/early_maps.h"

#define MSEC 1000000ULL

/* After the capture: the loader is usually done within the first; a slow one (many library
 * folders, a loaded machine) within the last. */
static const uint64_t reread_after_ns[] = {100 * MSEC, 500 * MSEC, 2000 * MSEC};
#define N_REREADS (sizeof(reread_after_ns) / sizeof(reread_after_ns[0]))

struct early_pid {
	pid_t pid;
	uint32_t done; /* re-reads handed out */
	uint64_t captured_ns;
};

struct early_maps {
	struct early_pid pids[EARLY_MAPS_MAX_PIDS];
	size_t n;
	struct early_maps_stats stats;
};

struct early_maps *early_maps__new(void)
{
	struct early_maps *em = calloc(1, sizeof(*em));

	if (!em)
		errno = ENOMEM;
	return em;
}

void early_maps__free(struct early_maps *em)
{
	free(em);
}

static bool young(uint64_t start_ns, bool exec, uint64_t now_ns)
{
	return exec || (start_ns <= now_ns && now_ns - start_ns < EARLY_MAPS_YOUNG_NS);
}

static struct early_pid *find(struct early_maps *em, pid_t pid)
{
	for (size_t i = 0; i < em->n; i++)
		if (em->pids[i].pid == pid)
			return &em->pids[i];
	return NULL;
}

bool early_maps__note(struct early_maps *em, pid_t pid, uint64_t start_ns, bool exec,
		      uint64_t now_ns)
{
	struct early_pid *e;

	if (!young(start_ns, exec, now_ns))
		return false;
	e = find(em, pid);
	if (!e && em->n == EARLY_MAPS_MAX_PIDS) {
		em->stats.dropped++;
		return false;
	}
	if (!e)
		e = &em->pids[em->n++];
	*e = (struct early_pid){.pid = pid, .captured_ns = now_ns};
	em->stats.noted++;
	return true;
}

size_t early_maps__due(struct early_maps *em, uint64_t now_ns, pid_t *ret, size_t cap)
{
	size_t n = 0, kept = 0;

	for (size_t i = 0; i < em->n; i++) {
		struct early_pid e = em->pids[i];

		if (n < cap && now_ns - e.captured_ns >= reread_after_ns[e.done]) {
			ret[n++] = e.pid;
			em->stats.rereads++;
			/* one read for every step past (a poll that waited long) */
			while (e.done < N_REREADS &&
			       now_ns - e.captured_ns >= reread_after_ns[e.done])
				e.done++;
		}
		if (e.done < N_REREADS)
			em->pids[kept++] = e;
	}
	em->n = kept;
	return n;
}

bool early_maps__pending(const struct early_maps *em)
{
	return em->n > 0;
}

void early_maps__stats(const struct early_maps *em, struct early_maps_stats *ret)
{
	*ret = em->stats;
}
