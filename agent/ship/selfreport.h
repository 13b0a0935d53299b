/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's self-report sent with every upload: its own CPU over the window (getrusage),
 * the BPF program's in-kernel run time, what it could not see, and who it is.
 * Wire format (query parameters): docs/api.md, POST /api/apm/profiles. */
#ifndef ROOTTRACE_SELFREPORT_H
#define ROOTTRACE_SELFREPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sampling/window.h"

struct selfreport {
	char agent_id[160];
	char node[128];
	char version[32];
	int64_t window_start_ns; /* CLOCK_REALTIME */
	double window_s;
	double agent_cpu_s; /* user + system, every thread of the agent */
	uint64_t bpf_run_ns;
	bool bpf_measured; /* false: BPF run-time statistics were off; bpf_s is not sent */
	uint64_t lost_samples;
	uint64_t unknown_frames;
	uint64_t processes;
	int sample_rate_hz;
	uint64_t dropped_profiles;   /* profiles the upload queue dropped since the agent started */
	struct window_unwind unwind; /* the .eh_frame unwinder over the window */
	/* off-CPU time: "on", "off", or "unavailable" (the kernel refused the scheduler hooks,
	 * offcpu_error says why) */
	const char *offcpu_state;
	char offcpu_error[256];
	struct window_offcpu offcpu;
};

/* The process's user + system CPU seconds so far (getrusage RUSAGE_SELF). */
double selfreport_cpu_now(void);

/* Fills the per-window figures from w; cpu_s is the agent's CPU over the same window. */
void selfreport_from_window(struct selfreport *r, const struct window *w, double cpu_s,
			    int sample_rate_hz);

/* Appends "&agent_id=...&node=..." (URL-escaped) to buf. 0 or -ENOSPC / -ENOMEM. */
int selfreport_append_query(const struct selfreport *r, char *buf, size_t len);

#endif
