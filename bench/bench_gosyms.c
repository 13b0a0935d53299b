// SPDX-License-Identifier: Apache-2.0
/* Go name table cost (bench/bench-gosyms.sh): load a stripped Go binary's table through the
 * symbol sources as the agent does, its memory, then lookups per frame over given addresses.
 * bench-gosyms BINARY ADDRS_FILE [LOOKUPS]: ADDRS_FILE holds hex virtual addresses. */
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

#include "gopclntab.h"
#include "symbol_source.h"

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

int main(int argc, char **argv)
{
	long anon0, file0, anon1, file1, anon2, file2;
	const char *names[SYMTAB_MAX_FRAMES];
	size_t n_addrs = 0, lookups, named = 0, frames = 0;
	struct gopclntab *go;
	struct symtab *t;
	uint64_t *addrs;
	struct stat st;
	double t0, t1;
	void *map;
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
	rss_kib(&anon1, &file1);
	if (!t || symtab__origin(t) != SYMTAB_ORIGIN_GOPCLNTAB) {
		fprintf(stderr, "bench-gosyms: %s has no Go table\n", argv[1]);
		return 1;
	}
	/* Lookups by virtual address through the decoder itself (the symtab adds the mapping's
	 * offset translation, a loop over a few segments). */
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	go = map == MAP_FAILED ? NULL : gopclntab__open_elf(map, (size_t)st.st_size);
	if (!go)
		return 1;
	double l0 = now_s();

	for (size_t i = 0; i < lookups; i++) {
		size_t n = gopclntab__lookup(go, addrs[(i * 7919) % n_addrs] + (i & 7), names,
					     SYMTAB_MAX_FRAMES);

		named += n > 0;
		frames += n;
	}
	double l1 = now_s();

	rss_kib(&anon2, &file2);
	printf("functions %zu\n", gopclntab__count(go));
	printf("table_build_ms %.3f\n", (t1 - t0) * 1e3);
	printf("table_heap_bytes %zu\n", symtab__memory(t));
	printf("rss_anon_delta_kib_after_load %ld\n", anon1 - anon0);
	printf("rss_file_delta_kib_after_load %ld\n", file1 - file0);
	printf("rss_anon_delta_kib_after_lookups %ld\n", anon2 - anon0);
	printf("rss_file_delta_kib_after_lookups %ld\n", file2 - file0);
	printf("lookups %zu named %zu frames %zu\n", lookups, named, frames);
	printf("lookup_ns %.1f\n", (l1 - l0) * 1e9 / (double)lookups);
	gopclntab__free(go);
	munmap(map, (size_t)st.st_size);
	symtab__free(t);
	close(fd);
	free(addrs);
	return 0;
}
