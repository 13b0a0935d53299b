// SPDX-License-Identifier: Apache-2.0
/* Runtime detection time per process: for each group of processes running one interpreter
 * binary, the first process's detection (the binary read) and the next ones' (what was read
 * of the binary reused). A fresh registry each round, as at the agent's first sight of them.
 * bench-runtime-detect ROUNDS LABEL:PID,PID,... [LABEL:PID,...]  (bench/bench-runtime-detect.sh)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "process/process_registry.h"
#include "runtimes/runtimes.h"

#define MAX_PIDS 64

struct group {
	char label[32];
	pid_t pids[MAX_PIDS];
	size_t n;
	double *first_us, *next_us; /* one per round: the first process, the others' mean */
};

static int attached;

static int count_attach(void *ctx, enum runtime_kind kind, pid_t pid, const void *s, size_t n)
{
	attached++;
	return 0;
}

static void no_detach(void *ctx, enum runtime_kind kind, pid_t pid)
{
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int compare(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), compare);
	return v[n / 2];
}

/* "python:12,13,14" */
static int parse_group(const char *arg, int rounds, struct group *ret)
{
	const char *colon = strchr(arg, ':');
	char *end;

	if (!colon || colon == arg || (size_t)(colon - arg) >= sizeof(ret->label))
		return -1;
	snprintf(ret->label, sizeof(ret->label), "%.*s", (int)(colon - arg), arg);
	for (const char *p = colon + 1; *p && ret->n < MAX_PIDS; p = *end ? end + 1 : end) {
		long pid = strtol(p, &end, 10);

		if (end == p || pid <= 0 || (*end && *end != ','))
			return -1;
		ret->pids[ret->n++] = (pid_t)pid;
	}
	ret->first_us = calloc(rounds, sizeof(double));
	ret->next_us = calloc(rounds, sizeof(double));
	return ret->n && ret->first_us && ret->next_us ? 0 : -1;
}

/* Captures pid in the registry (the pipeline does so on its first event), then times the
 * runtime detection alone. */
static double detect_us(struct process_registry *reg, struct runtimes *rt, pid_t pid)
{
	char note[512];
	double t0;

	process_registry__capture(reg, pid);
	t0 = now_us();
	runtimes__capture_process(rt, pid, note, sizeof(note));
	return now_us() - t0;
}

static int run_round(struct group *groups, int n_groups, int round)
{
	struct runtime_sink sink = {.attach = count_attach, .detach = no_detach};
	struct process_registry *reg = process_registry__new(NULL);
	struct runtimes *rt = reg ? runtimes__new(&sink, reg) : NULL;

	if (!rt) {
		process_registry__free(reg);
		return -1;
	}
	for (int g = 0; g < n_groups; g++) {
		struct group *gr = &groups[g];
		double rest = 0;

		gr->first_us[round] = detect_us(reg, rt, gr->pids[0]);
		for (size_t i = 1; i < gr->n; i++)
			rest += detect_us(reg, rt, gr->pids[i]);
		gr->next_us[round] = gr->n > 1 ? rest / (gr->n - 1) : 0;
	}
	runtimes__free(rt);
	process_registry__free(reg);
	return 0;
}

int main(int argc, char **argv)
{
	struct group groups[8] = {0};
	int rounds = argc > 1 ? atoi(argv[1]) : 0, n_groups = argc - 2, expected = 0;

	if (rounds < 1 || n_groups < 1 || n_groups > 8) {
		fprintf(stderr, "usage: %s ROUNDS LABEL:PID,PID,... (up to 8 groups)\n", argv[0]);
		return 2;
	}
	for (int g = 0; g < n_groups; g++) {
		if (parse_group(argv[2 + g], rounds, &groups[g])) {
			fprintf(stderr, "bad group '%s' (LABEL:PID,PID,...)\n", argv[2 + g]);
			return 2;
		}
		expected += groups[g].n;
	}
	for (int r = 0; r < rounds; r++) {
		attached = 0;
		if (run_round(groups, n_groups, r)) {
			perror("registry");
			return 1;
		}
		if (attached != expected)
			fprintf(stderr, "round %d: %d of %d processes attached\n", r, attached,
				expected);
	}
	printf("runtime detection per process, median of %d rounds:\n", rounds);
	for (int g = 0; g < n_groups; g++)
		printf("  %-8s first %9.0f us   next %zu: %9.1f us each\n", groups[g].label,
		       median(groups[g].first_us, rounds), groups[g].n - 1,
		       median(groups[g].next_us, rounds));
	return 0;
}
