// SPDX-License-Identifier: Apache-2.0
/* /proc/PID/cgroup parsing for cgroup v1 and v2 and a per-pid cache of the chosen path.
 * Plain C: the cache is an open hash table keyed by pid, re-validated once per generation. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"

/* v1 controllers in preference order after name=systemd; consistent on every host. */
static const char *const v1_preference[] = {"name=systemd", "cpu", "cpuacct", "memory", "pids"};
#define N_PREF (sizeof(v1_preference) / sizeof(v1_preference[0]))

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
	char file[256], buf[8192];
	ssize_t n;
	int fd, ret;

	snprintf(file, sizeof(file), "%s/%d/cgroup", proc_root, (int)pid);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	ret = n < 0 ? -errno : 0;
	close(fd);
	if (ret)
		return ret;
	buf[n] = '\0';
	return cgroup_pick_path(buf, ret_path, path_len);
}

struct cgroup_entry {
	pid_t pid; /* 0 = empty slot */
	char *path;
	unsigned int checked_gen; /* /proc re-read in this generation */
	unsigned int seen_gen;
};

struct cgroup_cache {
	char *proc_root;
	struct cgroup_entry *slots;
	size_t cap; /* power of two, >= 2 * max_pids */
	size_t used, max_pids;
	unsigned int gen;
};

struct cgroup_cache *cgroup_cache__new(const char *proc_root, size_t max_pids)
{
	struct cgroup_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->max_pids = max_pids ? max_pids : 65536;
	c->cap = 64;
	while (c->cap < 2 * c->max_pids)
		c->cap <<= 1;
	c->proc_root = strdup(proc_root ? proc_root : "/proc");
	c->slots = calloc(c->cap, sizeof(*c->slots));
	c->gen = 1;
	if (!c->proc_root || !c->slots) {
		cgroup_cache__free(c);
		errno = ENOMEM;
		return NULL;
	}
	return c;
}

void cgroup_cache__free(struct cgroup_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; c->slots && i < c->cap; i++)
		free(c->slots[i].path);
	free(c->slots);
	free(c->proc_root);
	free(c);
}

static size_t slot_of(const struct cgroup_cache *c, pid_t pid)
{
	size_t i = ((size_t)pid * 2654435761u) & (c->cap - 1);

	while (c->slots[i].pid && c->slots[i].pid != pid)
		i = (i + 1) & (c->cap - 1);
	return i;
}

/* Rebuilds the table without the entries unseen for max_age generations. */
void cgroup_cache__next_generation(struct cgroup_cache *c, unsigned int max_age)
{
	struct cgroup_entry *old = c->slots, *fresh = calloc(c->cap, sizeof(*fresh));

	c->gen++;
	if (!fresh)
		return; /* keep the old table; eviction retried next generation */
	c->slots = fresh;
	c->used = 0;
	for (size_t i = 0; i < c->cap; i++) {
		if (!old[i].pid)
			continue;
		if (c->gen - old[i].seen_gen > max_age) {
			free(old[i].path);
			continue;
		}
		c->slots[slot_of(c, old[i].pid)] = old[i];
		c->used++;
	}
	free(old);
}

const char *cgroup_cache__lookup(struct cgroup_cache *c, pid_t pid)
{
	char path[CGROUP_PATH_MAX];
	struct cgroup_entry *e = &c->slots[slot_of(c, pid)];
	char *copy;

	if (e->pid && e->checked_gen == c->gen) {
		e->seen_gen = c->gen;
		return e->path;
	}
	if (cgroup_read_pid(c->proc_root, pid, path, sizeof(path)) < 0) {
		if (!e->pid)
			return NULL;
		e->checked_gen = c->gen; /* gone: keep the last known path */
		e->seen_gen = c->gen;
		return e->path;
	}
	if (e->pid && strcmp(e->path, path) == 0) {
		e->checked_gen = e->seen_gen = c->gen;
		return e->path;
	}
	if (!e->pid && c->used >= c->max_pids)
		return NULL; /* full until the next generation evicts */
	copy = strdup(path);
	if (!copy)
		return e->pid ? e->path : NULL;
	if (!e->pid)
		c->used++;
	free(e->path);
	e->pid = pid;
	e->path = copy;
	e->checked_gen = e->seen_gen = c->gen;
	return e->path;
}

size_t cgroup_cache__size(const struct cgroup_cache *c)
{
	return c->used;
}
