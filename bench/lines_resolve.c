// SPDX-License-Identifier: Apache-2.0
/* lines-resolve: the collector's line resolver from the command line, for the end-to-end tests
 * and the benchmark: BUILD_ID and file offsets (hex, one a line on stdin) to FILE:LINE. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lines/line_resolver.h"

static double now_s(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One pass over the offsets; prints the answers when print. */
static void pass(struct line_resolver *r, const char *id, const uint64_t *offs, size_t n, int print)
{
	struct resolved_line out;

	for (size_t i = 0; i < n; i++) {
		int err = line_resolver__resolve(r, id, offs[i], &out);

		if (!print)
			continue;
		if (err)
			printf("0x%" PRIx64 " error %s\n", offs[i], out.reason);
		else
			printf("0x%" PRIx64 " %s:%u\n", offs[i], out.file, out.line);
	}
}

int main(int argc, char **argv)
{
	struct line_resolver_config config = {0};
	struct line_resolver *r;
	size_t n = 0, cap = 1024;
	uint64_t *offs = malloc(cap * sizeof(*offs));
	char text[64];
	int timed = 0, argi = 1;
	double t0, t1, t2, c0, c1, c2;

	for (; argi + 1 < argc && argv[argi][0] == '-'; argi += 2) {
		if (!strcmp(argv[argi], "--debug-dir"))
			config.debug_dir = argv[argi + 1];
		else if (!strcmp(argv[argi], "--debuginfod-urls"))
			config.debuginfod_urls = argv[argi + 1];
		else if (!strcmp(argv[argi], "--time"))
			timed = atoi(argv[argi + 1]);
	}
	if (argi + 1 != argc || !offs) {
		fprintf(stderr, "usage: lines-resolve [--debug-dir DIR] [--debuginfod-urls URLS] "
				"[--time 1] BUILD_ID < offsets\n");
		return 2;
	}
	while (fgets(text, sizeof(text), stdin)) {
		if (n == cap && !(offs = realloc(offs, (cap *= 2) * sizeof(*offs))))
			return 1;
		offs[n++] = strtoull(text, NULL, 16);
	}
	if (line_resolver__new(&config, &r)) {
		fprintf(stderr, "lines-resolve: cannot make a resolver\n");
		return 1;
	}
	/* wall and CPU time: the first pass opens the files, the second is the cache's */
	t0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
	pass(r, argv[argi], offs, n, !timed);
	t1 = now_s(CLOCK_MONOTONIC), c1 = now_s(CLOCK_PROCESS_CPUTIME_ID);
	if (timed)
		pass(r, argv[argi], offs, n, 0);
	t2 = now_s(CLOCK_MONOTONIC), c2 = now_s(CLOCK_PROCESS_CPUTIME_ID);
	if (timed)
		fprintf(stderr,
			"first %.3f ms cpu %.3f ms cached %.3f ms cpu %.3f ms offsets %zu\n",
			(t1 - t0) * 1e3, (c1 - c0) * 1e3, (t2 - t1) * 1e3, (c2 - c1) * 1e3, n);
	line_resolver__free(r);
	free(offs);
	return 0;
}
