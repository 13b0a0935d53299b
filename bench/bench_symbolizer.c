// SPDX-License-Identifier: Apache-2.0
/* Symboliser benchmark: captures every process on this machine, then names an address in
 * every executable file mapping of each, cold (symbol tables parsed) and warm (cached). */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "process/procmaps.h"
#include "symbolize/symbolizer.h"
#include "process/process_registry.h"

#define MAX_PIDS 65536
#define MAX_ADDRS 400000

struct target {
	pid_t pid;
	uint64_t addr;
};

static struct target targets[MAX_ADDRS];
static size_t ntargets;
static pid_t pids[MAX_PIDS];
static size_t npids;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One address a little inside each executable file mapping. */
static int add_target(const struct procmap_entry *e, void *ctx)
{
	pid_t pid = *(pid_t *)ctx;

	if (!e->executable || !procmaps__is_file(e) || ntargets >= MAX_ADDRS)
		return 0;
	targets[ntargets++] = (struct target){pid, e->start + (e->end - e->start) / 3};
	return 0;
}

static void list_pids(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	while (d && (de = readdir(d)) && npids < MAX_PIDS) {
		pid_t pid = (pid_t)atoi(de->d_name);

		if (pid > 0)
			pids[npids++] = pid;
	}
	if (d)
		closedir(d);
}

static double resolve_all(struct symbolizer *s, uint64_t *ret_known)
{
	struct sym_frame f;
	double t0 = now_s();

	*ret_known = 0;
	for (size_t i = 0; i < ntargets; i++) {
		symbolizer__resolve_user(s, targets[i].pid, targets[i].addr, &f);
		*ret_known += f.known;
	}
	return now_s() - t0;
}

int main(void)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct symbolizer_stats st;
	struct rusage ru;
	struct sym_frame f;
	uint64_t known;
	size_t captured = 0;
	double t0, capture_s, cold_s, warm_s, kernel_s;

	if (!s)
		return 1;
	list_pids();
	t0 = now_s();
	for (size_t i = 0; i < npids; i++)
		captured += process_registry__capture(symbolizer__registry(s), pids[i]) == 0;
	capture_s = now_s() - t0;
	for (size_t i = 0; i < npids; i++)
		procmaps__foreach("/proc", pids[i], add_target, &pids[i]);
	cold_s = resolve_all(s, &known);
	warm_s = resolve_all(s, &known);
	t0 = now_s();
	symbolizer__resolve_kernel(s, (uint64_t)-1, &f); /* loads kallsyms */
	kernel_s = now_s() - t0;
	symbolizer__stats(s, &st);
	getrusage(RUSAGE_SELF, &ru);
	printf("processes captured   %zu of %zu in %.1f ms (%.1f us each)\n", captured, npids,
	       capture_s * 1e3, capture_s * 1e6 / (captured ? captured : 1));
	printf("binaries opened      %" PRIu64 ", cache hits %" PRIu64
	       ", symbol tables loaded %" PRIu64 "\n",
	       st.binaries_opened, st.binary_cache_hits, st.binaries_loaded);
	printf("frames resolved      %zu (%" PRIu64 " named)\n", ntargets, known);
	for (int r = 0; r < SYM_UNKNOWN__COUNT; r++)
		printf("  unknown %-12s %" PRIu64 "\n", symbolizer__reason_name(r), st.unknown[r]);
	printf("cold resolve         %.1f ms (%.2f us/frame, parses symbol tables)\n", cold_s * 1e3,
	       cold_s * 1e6 / (ntargets ? ntargets : 1));
	printf("warm resolve         %.1f ms (%.3f us/frame)\n", warm_s * 1e3,
	       warm_s * 1e6 / (ntargets ? ntargets : 1));
	printf("kallsyms load        %.1f ms\n", kernel_s * 1e3);
	printf("symbol tables held   %.1f MiB\n", st.symbol_bytes / 1048576.0);
	printf("peak RSS             %.1f MiB\n", ru.ru_maxrss / 1024.0);
	symbolizer__free(s);
	return 0;
}
