// SPDX-License-Identifier: Apache-2.0
/* Go name table cost (bench/bench-gosyms.sh): load a stripped Go binary's table through the
 * symbol sources as the agent does, its memory, then lookups per frame over given addresses.
 * bench-gosyms BINARY ADDRS_FILE [LOOKUPS]: ADDRS_FILE holds hex virtual addresses. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "symbolize/gopclntab.h"
#include "symbolize/symbol_source.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Resident KiB of this process: anonymous and file-backed, from smaps_rollup. */
static void rss_kib(long *ret_anon, long *ret_file)
{
	char line[256];
	FILE *f = fopen("/proc/self/smaps_rollup", "re");

	*ret_anon = *ret_file = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "Anonymous: %ld kB", ret_anon);
		sscanf(line, "Rss: %ld kB", ret_file);
	}
	fclose(f);
	*ret_file -= *ret_anon;
}

static uint64_t *read_addrs(const char *path, size_t *ret_n)
{
	FILE *f = fopen(path, "re");
	uint64_t *v = NULL, a;
	size_t n = 0, cap = 0;

	if (!f)
		return NULL;
	while (fscanf(f, "%" SCNx64, &a) == 1) {
		if (n == cap) {
			cap = cap ? 2 * cap : 4096;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				break;
		}
		v[n++] = a;
	}
	fclose(f);
	*ret_n = n;
	return v;
}

/* File offset of a virtual address through the PT_LOAD headers (non-PIE and PIE alike). */
static uint64_t vaddr_to_offset(int fd, uint64_t vaddr)
{
	static Elf64_Phdr ph[32];
	static int n = -1;
	Elf64_Ehdr eh;

	if (n < 0) {
		n = 0;
		if (pread(fd, &eh, sizeof(eh), 0) == sizeof(eh) && eh.e_phnum <= 32 &&
		    pread(fd, ph, eh.e_phnum * sizeof(*ph), (off_t)eh.e_phoff) > 0)
			n = eh.e_phnum;
	}
	for (int i = 0; i < n; i++)
		if (ph[i].p_type == PT_LOAD && vaddr >= ph[i].p_vaddr &&
		    vaddr < ph[i].p_vaddr + ph[i].p_filesz)
			return vaddr - ph[i].p_vaddr + ph[i].p_offset;
	return UINT64_MAX;
}

/* The table's function count, from its own decoder over a mapping of the file. */
static size_t functions(int fd, const struct stat *st)
{
	void *map = mmap(NULL, (size_t)st->st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	struct gopclntab *go = map == MAP_FAILED ? NULL : gopclntab__open_elf(map, st->st_size);
	size_t n = go ? gopclntab__count(go) : 0;

	gopclntab__free(go);
	if (map != MAP_FAILED)
		munmap(map, (size_t)st->st_size);
	return n;
}

int main(int argc, char **argv)
{
	long anon0, file0, anon1, file1, anon2, file2, anon3, file3;
	const char *names[SYMTAB_MAX_FRAMES];
	size_t n_addrs = 0, lookups, named = 0, frames = 0;
	struct symtab *t;
	uint64_t *addrs;
	struct stat st;
	double t0, t1, t_first;
	size_t first;
	long peak_file = 0;
	int fd;

	if (argc < 3) {
		fprintf(stderr, "usage: bench-gosyms BINARY ADDRS_FILE [LOOKUPS]\n");
		return 2;
	}
	lookups = argc > 3 ? strtoul(argv[3], NULL, 10) : 1000000;
	addrs = read_addrs(argv[2], &n_addrs);
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0 || !addrs || !n_addrs || fstat(fd, &st)) {
		fprintf(stderr, "bench-gosyms: cannot read %s or %s\n", argv[1], argv[2]);
		return 1;
	}
	rss_kib(&anon0, &file0);
	t0 = now_s();
	t = symtab__load(fd, "", NULL); /* what the agent does at a binary's first frame */
	t1 = now_s();
	/* The first frame's name: the load and one lookup, on pages not touched yet. */
	first = t ? symtab__lookup(t, vaddr_to_offset(fd, addrs[0]), names, SYMTAB_MAX_FRAMES) : 0;
	t_first = now_s();
	rss_kib(&anon1, &file1);
	if (!t || symtab__origin(t) != SYMTAB_ORIGIN_GOPCLNTAB) {
		fprintf(stderr, "bench-gosyms: %s has no Go table\n", argv[1]);
		return 1;
	}
	/* Lookups through the symtab, as the symboliser makes them: by file offset. */
	double l0 = now_s();

	for (size_t i = 0; i < lookups; i++) {
		uint64_t off = vaddr_to_offset(fd, addrs[(i * 7919) % n_addrs] + (i & 7));
		size_t n;

		symtab__refresh(t); /* as the symboliser calls it at each use */
		n = symtab__lookup(t, off, names, SYMTAB_MAX_FRAMES);
		named += n > 0;
		frames += n;
		if (i % 10000 == 0) { /* the resident peak while lookups run */
			long anon, file;

			rss_kib(&anon, &file);
			if (file - file0 > peak_file)
				peak_file = file - file0;
		}
	}
	double l1 = now_s();

	rss_kib(&anon2, &file2);
	/* No file page stays mapped (the table reads through a bounded cache): the same after. */
	sleep(6);
	symtab__refresh(t);
	rss_kib(&anon3, &file3);
	printf("functions %zu\n", functions(fd, &st));
	printf("table_build_ms %.3f\n", (t1 - t0) * 1e3);
	printf("first_named_frame_ms %.3f (%s)\n", (t_first - t0) * 1e3,
	       first ? "named" : "unnamed");
	printf("table_heap_bytes %zu\n", symtab__memory(t));
	printf("rss_anon_delta_kib_after_load %ld\n", anon1 - anon0);
	printf("rss_file_delta_kib_after_load %ld\n", file1 - file0);
	printf("rss_anon_delta_kib_after_lookups %ld\n", anon2 - anon0);
	printf("rss_file_delta_kib_after_lookups %ld\n", file2 - file0);
	printf("lookups %zu named %zu frames %zu\n", lookups, named, frames);
	printf("rss_file_delta_kib_after_release %ld\n", file3 - file0);
	printf("rss_file_peak_kib_during_lookups %ld\n", peak_file);
	printf("lookup_ns %.1f\n", (l1 - l0) * 1e9 / (double)lookups);
	symtab__free(t);
	close(fd);
	free(addrs);
	return 0;
}
