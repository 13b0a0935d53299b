// SPDX-License-Identifier: Apache-2.0
/* Binary cache: key -> binary (LRU, one reference each), "major:minor:inode" -> key aliases
 * so a mapping of a cached file is served without opening it; the fd pinned at first sight. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process/binary.h"
#include "lru.h"
#include "process/state_slot.h"

#define ALIAS_KEY_MAX 64

/* dev+inode (as maps shows them) -> binary key; the path guards against a reused inode. */
struct inode_alias {
	char key[BINARY_KEY_MAX];
	char path[];
};

struct binary_cache {
	struct lru *by_key;  /* key -> struct binary (holds one reference) */
	struct lru *inodes;  /* "major:minor:inode" -> struct inode_alias */
	struct binary *live; /* every binary alive */
	struct state_slot slots[BINARY_SLOTS];
	struct binary_cache_stats stats;
};

struct binary *binary__ref(struct binary *b)
{
	b->refs++;
	return b;
}

void binary__unref(struct binary *b)
{
	if (!b || --b->refs > 0)
		return;
	for (int i = 0; i < BINARY_SLOTS; i++)
		state_slot__release(&b->cache->slots[i], &b->slots[i]);
	if (b->live_prev)
		b->live_prev->live_next = b->live_next;
	else
		b->cache->live = b->live_next;
	if (b->live_next)
		b->live_next->live_prev = b->live_prev;
	close(b->fd);
	free(b);
}

static void binary_evicted(void *value, void *ctx)
{
	struct binary_cache *bc = ctx;

	bc->stats.evicted++;
	binary__unref(value);
}

static void alias_evicted(void *value, void *ctx)
{
	free(value);
}

/* Opens the file behind a mapping: map_files (exact, works for deleted files), else the
 * path seen from the process's root, else the path; a path must still be that inode. */
static int open_mapping_file(const char *proc_root, pid_t pid, const struct procmap_entry *e)
{
	char path[PROCMAPS_PATH_MAX + 300];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/%d/map_files/%" PRIx64 "-%" PRIx64, proc_root, (int)pid,
		 e->start, e->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	if (e->deleted)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%d/root%s", proc_root, (int)pid, e->path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fd = open(e->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Replaced since it was mapped (an upgrade): not the code that ran. */
	if (fstat(fd, &st) || st.st_ino != e->inode) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* A new binary for the file open at fd (taken over), not cached yet. NULL + errno. */
static struct binary *binary_new(struct binary_cache *bc, int fd)
{
	struct binary *b = calloc(1, sizeof(*b));
	struct stat st;
	int err;

	if (!b)
		return NULL;
	b->fd = fd;
	b->cache = bc;
	err = fstat(fd, &st) ? -errno : build_id__read_fd(fd, b->build_id, sizeof(b->build_id));
	if (err) {
		free(b);
		errno = -err;
		return NULL;
	}
	b->dev = st.st_dev;
	b->ino = st.st_ino;
	b->size = st.st_size;
	b->mtime = st.st_mtim;
	if (b->build_id[0])
		snprintf(b->key, sizeof(b->key), "b:%s", b->build_id);
	else
		snprintf(b->key, sizeof(b->key),
			 "i:%" PRIu64 ":%" PRIu64 ":%" PRIu64 ":%" PRId64 ".%09ld",
			 (uint64_t)st.st_dev, (uint64_t)st.st_ino, (uint64_t)st.st_size,
			 (int64_t)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	return b;
}

/* Puts b (one reference: the cache's) in the cache and in the list of live binaries. */
static int binary_insert(struct binary_cache *bc, struct binary *b)
{
	int err = lru__put(bc->by_key, b->key, strlen(b->key), b);

	if (err)
		return err;
	b->refs = 1;
	b->live_next = bc->live;
	if (bc->live)
		bc->live->live_prev = b;
	bc->live = b;
	return 0;
}

static void remember_inode(struct binary_cache *bc, const char *ikey, const char *key,
			   const char *path)
{
	size_t len = strlen(path) + 1;
	struct inode_alias *a = malloc(sizeof(*a) + len);

	if (!a)
		return; /* only an optimisation: the next mapping opens the file again */
	snprintf(a->key, sizeof(a->key), "%s", key);
	memcpy(a->path, path, len);
	free(lru__remove(bc->inodes, ikey, strlen(ikey)));
	if (lru__put(bc->inodes, ikey, strlen(ikey), a))
		free(a);
}

/* The cached binary a mapping's dev+inode was last seen as, if the path still matches. */
static struct binary *cached_by_inode(struct binary_cache *bc, const char *ikey,
				      const struct procmap_entry *e)
{
	struct inode_alias *alias = lru__get(bc->inodes, ikey, strlen(ikey));

	if (!alias || strcmp(alias->path, e->path) != 0)
		return NULL;
	return lru__get(bc->by_key, alias->key, strlen(alias->key));
}

struct binary *binary_cache__get_mapping(struct binary_cache *bc, const char *proc_root, pid_t pid,
					 const struct procmap_entry *e)
{
	char ikey[ALIAS_KEY_MAX];
	struct binary *b, *cached;
	int fd;

	snprintf(ikey, sizeof(ikey), "%x:%x:%" PRIu64, e->dev_major, e->dev_minor, e->inode);
	b = cached_by_inode(bc, ikey, e);
	if (b) {
		bc->stats.cache_hits++;
		return binary__ref(b);
	}
	fd = open_mapping_file(proc_root, pid, e);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	bc->stats.opened++;
	b = binary_new(bc, fd);
	if (!b) {
		close(fd);
		return NULL;
	}
	cached = lru__get(bc->by_key, b->key, strlen(b->key));
	if (cached) { /* the same build-id under another path or inode */
		bc->stats.cache_hits++;
		close(b->fd);
		free(b);
		b = cached;
	} else if (binary_insert(bc, b)) {
		close(b->fd);
		free(b);
		errno = ENOMEM;
		return NULL;
	}
	remember_inode(bc, ikey, b->key, e->path);
	return binary__ref(b);
}

int binary_cache__add_slot(struct binary_cache *bc, void (*free_state)(void *state, void *ctx),
			   void *ctx)
{
	return state_slot__add(bc->slots, BINARY_SLOTS, free_state, ctx);
}

void binary_cache__remove_slot(struct binary_cache *bc, int slot)
{
	for (struct binary *b = bc->live; b; b = b->live_next)
		state_slot__release(&bc->slots[slot], &b->slots[slot]);
	bc->slots[slot] = (struct state_slot){0};
}

struct binary_cache *binary_cache__new(size_t max_binaries)
{
	struct binary_cache *bc = calloc(1, sizeof(*bc));

	if (!bc)
		return NULL;
	bc->by_key = lru__new(max_binaries, binary_evicted, bc);
	bc->inodes = lru__new(max_binaries * 4, alias_evicted, bc);
	if (!bc->by_key || !bc->inodes) {
		binary_cache__free(bc);
		errno = ENOMEM;
		return NULL;
	}
	return bc;
}

void binary_cache__free(struct binary_cache *bc)
{
	if (!bc)
		return;
	lru__free(bc->by_key); /* the binaries still mapped by someone stay theirs */
	lru__free(bc->inodes);
	free(bc);
}

void binary_cache__stats(const struct binary_cache *bc, struct binary_cache_stats *ret)
{
	*ret = bc->stats;
}
