// SPDX-License-Identifier: Apache-2.0
/* Go unwind table cost (bench/bench-gosyms.sh): each binary's rows compiled from .gopclntab as
 * the agent compiles them (agent/unwind/go_rows.c through cfi_compile_fd_to, rows streamed to a
 * sink that only counts them), the median of five compiles, the rows and their bytes.
 * bench-go-rows BINARY... prints one line per binary. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "unwind/cfi_compile.h"

#define COMPILES 5

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int count_begin(void *ctx, const struct cfi_table *t)
{
	(void)ctx;
	(void)t;
	return 0;
}

static int count_write(void *ctx, size_t first, const struct unwind_row *rows, size_t n)
{
	(void)first;
	(void)rows;
	*(size_t *)ctx += n;
	return 0;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int one(const char *path)
{
	double ms[COMPILES];
	struct cfi_table t;
	size_t rows = 0;
	int ret = 0;

	for (int i = 0; i < COMPILES && !ret; i++) {
		struct cfi_row_sink sink = {
		    .ctx = &rows, .begin = count_begin, .write = count_write};
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		double t0 = now_ms();

		rows = 0;
		ret = fd >= 0 ? cfi_compile_fd_to(fd, &t, &sink) : -1;
		ms[i] = now_ms() - t0;
		if (fd >= 0)
			close(fd);
	}
	if (ret || t.source != CFI_SOURCE_GOPCLNTAB) {
		fprintf(stderr, "bench-go-rows: %s: no Go table (%d)\n", path, ret);
		return 1;
	}
	qsort(ms, COMPILES, sizeof(ms[0]), by_value);
	printf("%s functions %zu rows %zu row_bytes %zu build_ms %.2f build_ms_min %.2f\n", path,
	       t.n_fdes, rows, rows * sizeof(struct unwind_row), ms[COMPILES / 2], ms[0]);
	return 0;
}

int main(int argc, char **argv)
{
	int ret = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: bench-go-rows BINARY...\n");
		return 2;
	}
	for (int i = 1; i < argc; i++)
		ret |= one(argv[i]);
	return ret;
}
