// SPDX-License-Identifier: Apache-2.0
/* /proc/PID/cgroup parsing for cgroup v1 and v2 and a per-pid store of the chosen path
 * (a bounded LRU keyed by pid), captured at first sight and re-read when the process moves,
 * kept per image across execs. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "service/cgroup.h"
#include "lru.h"
#include "process/proc_identity.h"

/* v1 controllers in preference order after name=systemd; consistent on every host. */
static const char *const v1_preference[] = {"name=systemd", "cpu", "cpuacct", "memory", "pids"};
#define N_PREF (sizeof(v1_preference) / sizeof(v1_preference[0]))
#define CGROUP_SETTLE_MS 500 /* a new process's path is read again once it is this old */
#define OLD_IMAGES 4

static bool list_has(const char *list, size_t len, const char *name)
{
	size_t n = strlen(name);
	const char *p = list, *end = list + len;

	while (p < end) {
		const char *comma = memchr(p, ',', end - p);
		size_t item = comma ? (size_t)(comma - p) : (size_t)(end - p);

		if (item == n && memcmp(p, name, n) == 0)
			return true;
		if (!comma)
			break;
		p = comma + 1;
	}
	return false;
}

/* Rank of one line: 0 for v2, 1.. for preferred v1 controllers, N_PREF+1 for others. */
static int line_rank(const char *ctl, size_t ctl_len, bool v2)
{
	if (v2)
		return 0;
	for (size_t i = 0; i < N_PREF; i++)
		if (list_has(ctl, ctl_len, v1_preference[i]))
			return (int)i + 1;
	return N_PREF + 1;
}

int cgroup_pick_path(const char *content, char *ret_path, size_t path_len)
{
	const char *line = content, *best = NULL;
	size_t best_len = 0;
	int best_rank = 1 << 20;
	bool any = false;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		const char *end = nl ? nl : line + strlen(line);
		const char *c1 = memchr(line, ':', end - line);
		const char *c2 = c1 ? memchr(c1 + 1, ':', end - c1 - 1) : NULL;

		if (c2) {
			const char *ctl = c1 + 1, *path = c2 + 1;
			size_t ctl_len = c2 - ctl, plen = end - path;
			bool v2 = ctl_len == 0 && c1 - line == 1 && line[0] == '0';
			int rank = line_rank(ctl, ctl_len, v2);

			any = any || plen > 0;
			if (plen > 0 && !(plen == 1 && path[0] == '/') && rank < best_rank) {
				best = path;
				best_len = plen;
				best_rank = rank;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	if (!any)
		return -EINVAL;
	if (!best) {
		best = "/";
		best_len = 1;
	}
	if (best_len + 1 > path_len)
		return -ENAMETOOLONG;
	memcpy(ret_path, best, best_len);
	ret_path[best_len] = '\0';
	return 0;
}

int cgroup_read_pid(const char *proc_root, pid_t pid, char *ret_path, size_t path_len)
{
	char buf[8192];
	int ret = proc_read_pid_file(proc_root, pid, "cgroup", buf, sizeof(buf));

	return ret ? ret : cgroup_pick_path(buf, ret_path, path_len);
}

struct pid_cgroup {
	char *path;
	uint64_t cgroup_id; /* BPF's cgroup id when the path was read */
	uint64_t read_ms;
	bool settled;	/* read again at least CGROUP_SETTLE_MS after it was first seen */
	uint32_t image; /* the pid's image number the path is of (see profile_seen.image) */
	/* Paths of the images before the last execs, newest last: a fork-exec chain (python ->
	 * sh -> the program) can go through three images within one window. */
	struct old_image {
		uint32_t image;
		char *path;
	} olds[OLD_IMAGES];
	size_t n_olds;
};

struct cgroup_pids {
	char *proc_root;
	struct lru *pids; /* pid -> struct pid_cgroup */
};

static uint64_t monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void pid_cgroup_free(void *value, void *ctx)
{
	struct pid_cgroup *e = value;

	free(e->path);
	for (size_t i = 0; i < e->n_olds; i++)
		free(e->olds[i].path);
	free(e);
}

struct cgroup_pids *cgroup_pids__new(const char *proc_root, size_t max_pids)
{
	struct cgroup_pids *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->proc_root = strdup(proc_root ? proc_root : "/proc");
	c->pids = lru__new(max_pids ? max_pids : 16384, pid_cgroup_free, NULL);
	if (!c->proc_root || !c->pids) {
		cgroup_pids__free(c);
		errno = ENOMEM;
		return NULL;
	}
	return c;
}

void cgroup_pids__free(struct cgroup_pids *c)
{
	if (!c)
		return;
	lru__free(c->pids);
	free(c->proc_root);
	free(c);
}

/* Re-reads pid's path into e (a new entry when e is NULL); returns the entry or NULL. */
static struct pid_cgroup *read_into(struct cgroup_pids *c, pid_t pid, struct pid_cgroup *e,
				    uint64_t cgroup_id, int *ret_err)
{
	char path[CGROUP_PATH_MAX], *copy;
	int err;

	err = cgroup_read_pid(c->proc_root, pid, path, sizeof(path));
	if (err) {
		*ret_err = err;
		if (e) /* gone: keep the last known path, don't retry at once */
			e->read_ms = monotonic_ms();
		return e;
	}
	if (e && !strcmp(e->path, path)) {
		copy = e->path;
	} else {
		copy = strdup(path);
		if (!copy) {
			*ret_err = -ENOMEM;
			return e;
		}
	}
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e || lru__put(c->pids, &pid, sizeof(pid), e)) {
			free(e);
			free(copy);
			*ret_err = -ENOMEM;
			return NULL;
		}
	} else if (copy != e->path) {
		free(e->path);
	}
	e->path = copy;
	e->cgroup_id = cgroup_id;
	e->read_ms = monotonic_ms();
	*ret_err = 0;
	return e;
}

/* An exec or a reused pid: a new image, which may still be moving, so it settles again. */
int cgroup_pids__capture(struct cgroup_pids *c, pid_t pid, uint64_t cgroup_id)
{
	struct pid_cgroup *e = lru__get(c->pids, &pid, sizeof(pid));
	int err = 0;

	e = read_into(c, pid, e, cgroup_id, &err);
	if (e)
		e->settled = false;
	return err;
}

/* A process first read right after it started may still be on its way into its cgroup: a
 * runtime (or the process itself) forks, then moves it, not always followed by an exec that
 * would have it read again. Once it is CGROUP_SETTLE_MS old the path is read once more; after
 * that only max_age_ms applies (on cgroup v1 nothing else tells us of a move). */
static bool needs_read(const struct pid_cgroup *e, uint64_t cgroup_id, uint64_t max_age_ms)
{
	uint64_t age;

	if (!e || (cgroup_id && e->cgroup_id && cgroup_id != e->cgroup_id))
		return true;
	age = monotonic_ms() - e->read_ms;
	return age > max_age_ms || (!e->settled && age >= CGROUP_SETTLE_MS);
}

const char *cgroup_pids__get(struct cgroup_pids *c, pid_t pid, uint64_t cgroup_id,
			     uint64_t max_age_ms)
{
	struct pid_cgroup *e = lru__get(c->pids, &pid, sizeof(pid));
	bool settles = e && !e->settled && monotonic_ms() - e->read_ms >= CGROUP_SETTLE_MS;
	int err;

	if (needs_read(e, cgroup_id, max_age_ms)) {
		e = read_into(c, pid, e, cgroup_id ? cgroup_id : (e ? e->cgroup_id : 0), &err);
		if (e && settles)
			e->settled = true;
	}
	return e ? e->path : NULL;
}

/* The path of image `image` stays for the samples it took before an exec (they share a
 * window with the new image's) until the next exec of the pid. */
static void keep_old_image(struct pid_cgroup *e, uint32_t image)
{
	char *copy;

	if (!e || e->image == image || !(copy = strdup(e->path)))
		return;
	if (e->n_olds == OLD_IMAGES) { /* the oldest goes */
		free(e->olds[0].path);
		memmove(e->olds, e->olds + 1, (OLD_IMAGES - 1) * sizeof(e->olds[0]));
		e->n_olds--;
	}
	e->olds[e->n_olds].image = e->image;
	e->olds[e->n_olds++].path = copy;
}

int cgroup_pids__capture_image(struct cgroup_pids *c, pid_t pid, uint64_t cgroup_id, uint32_t image)
{
	struct pid_cgroup *e = lru__get(c->pids, &pid, sizeof(pid));
	int err;

	keep_old_image(e, image);
	err = cgroup_pids__capture(c, pid, cgroup_id);
	e = lru__get(c->pids, &pid, sizeof(pid));
	if (e)
		e->image = image;
	return err;
}

const char *cgroup_pids__get_image(struct cgroup_pids *c, pid_t pid, uint64_t cgroup_id,
				   uint32_t image, uint64_t max_age_ms)
{
	struct pid_cgroup *e = lru__get(c->pids, &pid, sizeof(pid));

	for (size_t i = 0; e && image != e->image && i < e->n_olds; i++)
		if (e->olds[i].image == image)
			return e->olds[i].path;
	return cgroup_pids__get(c, pid, cgroup_id, max_age_ms);
}

void cgroup_pids__forget(struct cgroup_pids *c, pid_t pid)
{
	struct pid_cgroup *e = lru__remove(c->pids, &pid, sizeof(pid));

	if (e)
		pid_cgroup_free(e, NULL);
}

size_t cgroup_pids__size(const struct cgroup_pids *c)
{
	return lru__size(c->pids);
}
