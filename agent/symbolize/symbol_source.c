// SPDX-License-Identifier: Apache-2.0
/* The symbol source chain: the binary's own tables (Go's pclntab in bounded memory, .symtab),
 * then for a stripped binary MiniDebugInfo, debug files, debuginfod; .dynsym stays the floor. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "symbolize/debug_file.h"
#include "symbolize/debuginfod_fetch.h"
#include "symbolize/elf_image.h"
#include "symbolize/elf_symbols.h"
#include "symbolize/gopclntab.h"
#include "symbolize/minidebuginfo.h"
#include "symbolize/symbol_source.h"

#define BUILD_ID_MAX 129
#define REFRESH_INTERVAL_NS 1000000000ULL

struct symtab {
	struct elf_symbols *own;   /* the binary's: segments, .symtab or .dynsym */
	struct elf_symbols *extra; /* from MiniDebugInfo or a debug file, tried before own */
	struct gopclntab *go;	   /* reads the file (its own fd), not map */
	void *map;		   /* during load only */
	size_t map_len;
	enum symtab_origin origin;
	enum debuginfod_state fetch;
	uint64_t refreshed_ns;
	char build_id[BUILD_ID_MAX];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static bool has_symtab(const struct elf_symbols *es)
{
	return es && elf_symbols__count(es) && !elf_symbols__from_dynsym(es);
}

/* Names from a separate ELF (debug file, MiniDebugInfo): its .symtab only, with the binary's
 * segments (a debug file's PT_LOADs have no file contents). */
static struct elf_symbols *adopt(struct symtab *t, struct elf_symbols *es)
{
	if (!has_symtab(es)) {
		elf_symbols__free(es);
		return NULL;
	}
	elf_symbols__copy_segments(es, t->own);
	return es;
}

static int try_minidebuginfo(struct symtab *t)
{
	const void *xz;
	size_t len, out_len;
	void *image;

	if (elf_image__section(t->map, t->map_len, ".gnu_debugdata", &xz, &len))
		return -ENOENT;
	if (minidebuginfo__decompress(xz, len, &image, &out_len))
		return -EINVAL;
	t->extra = adopt(t, elf_symbols__load_memory(image, out_len));
	free(image); /* the table holds copies */
	if (!t->extra)
		return -ENOENT;
	t->origin = SYMTAB_ORIGIN_MINIDEBUGINFO;
	return 0;
}

static int load_extra_fd(struct symtab *t, int fd, enum symtab_origin origin)
{
	t->extra = adopt(t, elf_symbols__load_fd(fd));
	close(fd);
	if (!t->extra)
		return -ENOENT;
	t->origin = origin;
	return 0;
}

/* The binary's path as this process sees it, for .gnu_debuglink's directories. */
static void binary_path(int fd, char *ret, size_t len)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, ret, len - 1);
	ret[n > 0 ? n : 0] = '\0';
	if (n > 10 && strcmp(ret + n - 10, " (deleted)") == 0)
		ret[n - 10] = '\0';
}

static int try_debug_file(struct symtab *t, int bin_fd, const char *debug_root)
{
	struct debug_file_query q = {.build_id = t->build_id};
	char path[4096];
	int fd;

	if (!elf_image__debuglink(t->map, t->map_len, &q.debuglink, &q.debuglink_crc)) {
		binary_path(bin_fd, path, sizeof(path));
		q.binary_path = path;
	}
	fd = debug_file__open(&q, debug_root);
	return fd < 0 ? fd : load_extra_fd(t, fd, SYMTAB_ORIGIN_DEBUG_FILE);
}

static int try_debuginfod(struct symtab *t)
{
	char path[4096];
	int fd;

	t->refreshed_ns = now_ns();
	t->fetch = debuginfod_fetch__lookup(t->build_id, path, sizeof(path));
	if (t->fetch != DEBUGINFOD_READY)
		return -ENOENT;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || load_extra_fd(t, fd, SYMTAB_ORIGIN_DEBUGINFOD)) {
		t->fetch = DEBUGINFOD_FAILED; /* served, but not a usable debug file */
		return -ENOENT;
	}
	return 0;
}

static int map_file(struct symtab *t, int fd)
{
	struct stat st;

	if (fstat(fd, &st) || st.st_size <= 0)
		return -EINVAL;
	t->map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (t->map == MAP_FAILED) {
		t->map = NULL;
		return -errno;
	}
	t->map_len = (size_t)st.st_size;
	return 0;
}

static void unmap(struct symtab *t)
{
	if (t->map)
		munmap(t->map, t->map_len);
	t->map = NULL;
	t->map_len = 0;
}

struct symtab *symtab__load(int fd, const char *build_id, const char *debug_root)
{
	struct symtab *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return NULL;
	snprintf(t->build_id, sizeof(t->build_id), "%s", build_id ? build_id : "");
	t->own = elf_symbols__load_fd(fd);
	if (!t->own) {
		err = errno ? -errno : -EIO;
		goto fail;
	}
	err = map_file(t, fd);
	if (err)
		goto fail;
	/* Go first: its table names every Go function as the runtime does, stripped or not. */
	t->go = gopclntab__open_file(fd, t->map, t->map_len);
	if (t->go)
		t->origin = SYMTAB_ORIGIN_GOPCLNTAB;
	else if (has_symtab(t->own))
		t->origin = SYMTAB_ORIGIN_SYMTAB;
	else if (try_minidebuginfo(t) && try_debug_file(t, fd, debug_root))
		try_debuginfod(t); /* waiting, usually: symtab__refresh() picks the file up */
	if (t->origin == SYMTAB_ORIGIN_NONE && elf_symbols__count(t->own))
		t->origin = SYMTAB_ORIGIN_DYNSYM;
	unmap(t);
	return t;
fail:
	symtab__free(t);
	errno = -err;
	return NULL;
}

void symtab__free(struct symtab *t)
{
	if (!t)
		return;
	gopclntab__free(t->go);
	unmap(t);
	elf_symbols__free(t->own);
	elf_symbols__free(t->extra);
	free(t);
}

int symtab__refresh(struct symtab *t)
{
	uint64_t now;

	if (t->go || t->extra || (t->fetch != DEBUGINFOD_WAITING && t->fetch != DEBUGINFOD_FAILED))
		return 0;
	now = now_ns();
	if (now - t->refreshed_ns < REFRESH_INTERVAL_NS)
		return 0;
	return try_debuginfod(t) ? 0 : 1;
}

size_t symtab__lookup(const struct symtab *t, uint64_t file_offset, const char **ret_names,
		      size_t max)
{
	return symtab__lookup_funcs(t, file_offset, ret_names, NULL, max);
}

size_t symtab__lookup_funcs(const struct symtab *t, uint64_t file_offset, const char **ret_names,
			    uint8_t *ret_wrapper, size_t max)
{
	const char *name = NULL;
	uint64_t vaddr;
	size_t n;

	if (!max || elf_symbols__offset_to_vaddr(t->own, file_offset, &vaddr))
		return 0;
	if (t->go && (n = gopclntab__lookup_funcs(t->go, vaddr, ret_names, ret_wrapper, max)))
		return n;
	if (t->extra)
		name = elf_symbols__lookup(t->extra, vaddr);
	if (!name)
		name = elf_symbols__lookup(t->own, vaddr);
	if (!name)
		return 0;
	ret_names[0] = name;
	if (ret_wrapper)
		ret_wrapper[0] = 0;
	return 1;
}

enum symtab_unnamed symtab__unnamed(const struct symtab *t)
{
	if (t->extra || t->go)
		return SYMTAB_UNNAMED_NO_SYMBOLS;
	if (t->fetch == DEBUGINFOD_WAITING)
		return SYMTAB_UNNAMED_DEBUGINFOD_WAITING;
	if (t->fetch == DEBUGINFOD_FAILED)
		return SYMTAB_UNNAMED_DEBUGINFOD_FAILED;
	return SYMTAB_UNNAMED_NO_SYMBOLS;
}

enum symtab_origin symtab__origin(const struct symtab *t)
{
	return t->origin;
}

const char *symtab__origin_name(enum symtab_origin o)
{
	static const char *const names[] = {
	    [SYMTAB_ORIGIN_NONE] = "none",
	    [SYMTAB_ORIGIN_SYMTAB] = "symtab",
	    [SYMTAB_ORIGIN_DYNSYM] = "dynsym",
	    [SYMTAB_ORIGIN_GOPCLNTAB] = "gopclntab",
	    [SYMTAB_ORIGIN_MINIDEBUGINFO] = "minidebuginfo",
	    [SYMTAB_ORIGIN_DEBUG_FILE] = "debug_file",
	    [SYMTAB_ORIGIN_DEBUGINFOD] = "debuginfod",
	};

	return (unsigned)o < sizeof(names) / sizeof(names[0]) ? names[o] : "invalid";
}

size_t symtab__memory(const struct symtab *t)
{
	return sizeof(*t) + elf_symbols__memory(t->own) +
	       (t->extra ? elf_symbols__memory(t->extra) : 0) +
	       (t->go ? gopclntab__memory(t->go) : 0);
}
