// SPDX-License-Identifier: Apache-2.0
/* Self-report: getrusage deltas and window stats, formatted as query parameters. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "http_client.h"
#include "ship/selfreport.h"

double selfreport_cpu_now(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

void selfreport_from_window(struct selfreport *r, const struct window *w, double cpu_s,
			    int sample_rate_hz)
{
	const struct window_stats *st = &w->stats;

	r->window_start_ns = w->start_ns;
	r->window_s = (w->end_ns - w->start_ns) / 1e9;
	r->agent_cpu_s = cpu_s;
	r->bpf_run_ns = st->bpf_run_ns;
	/* With statistics off the kernel counts no runs at all; a sampling window always has
	 * runs when they are on. Unmeasured is left out (the collector shows null), not 0. */
	r->bpf_measured = st->bpf_run_cnt > 0;
	r->lost_samples = st->lost_stack_user + st->lost_stack_kernel + st->lost_map_full;
	r->unknown_frames = st->unknown_frames;
	r->processes = st->processes;
	r->sample_rate_hz = sample_rate_hz;
	r->unwind = st->unwind;
}

/* "&unwind_...=" figures (docs/api.md); all zero with --unwind=fp. */
static int append_unwind(const struct window_unwind *u, char *buf, size_t len)
{
	size_t used = strlen(buf);
	uint64_t early = 0;
	int n;

	for (int i = 0; i < WINDOW_UNWIND_END__COUNT; i++)
		early += u->end_early[i];
	n = snprintf(
	    buf + used, len - used,
	    "&unwind_tables=%" PRIu64 "&unwind_fp=%" PRIu64 "&unwind_mixed=%" PRIu64
	    "&unwind_not_loaded=%" PRIu64 "&unwind_clean=%" PRIu64 "&unwind_fp_end=%" PRIu64
	    "&unwind_early=%" PRIu64 "&unwind_early_no_mapping=%" PRIu64
	    "&unwind_early_cannot=%" PRIu64 "&unwind_early_bad_cfa=%" PRIu64
	    "&unwind_early_read=%" PRIu64 "&unwind_truncated=%" PRIu64 "&unwind_rows=%" PRIu64
	    "&unwind_row_bytes=%" PRIu64 "&unwind_tables_built=%" PRIu64 "&unwind_build_ms=%.3f",
	    u->by_tables, u->by_fp, u->mixed, u->not_loaded, u->end_clean, u->end_fp_chain, early,
	    u->end_early[WINDOW_UNWIND_END_NO_MAPPING], u->end_early[WINDOW_UNWIND_END_CANNOT],
	    u->end_early[WINDOW_UNWIND_END_BAD_CFA], u->end_early[WINDOW_UNWIND_END_READ],
	    u->truncated, u->rows_loaded, u->rows_bytes, u->tables_built, u->build_ns / 1e6);
	return n < 0 || (size_t)n >= len - used ? -ENOSPC : 0;
}

static int append_escaped(char *buf, size_t len, const char *key, const char *value)
{
	char *esc = http_escape(value);
	size_t used = strlen(buf);
	int n;

	if (!esc)
		return -ENOMEM;
	n = snprintf(buf + used, len - used, "&%s=%s", key, esc);
	free(esc);
	return n < 0 || (size_t)n >= len - used ? -ENOSPC : 0;
}

/* "&offcpu=on&offcpu_blocked_s=..&offcpu_runqueue_s=..&offcpu_bpf_s=..", or the reason it is
 * unavailable: extra context the collector may ignore (docs/api.md). */
static int append_offcpu(const struct selfreport *r, char *buf, size_t len)
{
	const struct window_offcpu *o = &r->offcpu;
	size_t used;
	int n;

	if (!r->offcpu_state)
		return 0;
	if (!strcmp(r->offcpu_state, "unavailable"))
		return append_escaped(buf, len, "offcpu", "unavailable")
			   ?: append_escaped(buf, len, "offcpu_error", r->offcpu_error);
	used = strlen(buf);
	n = snprintf(buf + used, len - used, "&offcpu=%s", r->offcpu_state);
	if (n > 0 && (size_t)n < len - used && !strcmp(r->offcpu_state, "on")) {
		used += (size_t)n;
		n = snprintf(buf + used, len - used,
			     "&offcpu_blocked_s=%.6f&offcpu_runqueue_s=%.6f&offcpu_bpf_s=%.9f"
			     "&offcpu_switches=%" PRIu64,
			     o->blocked_ns / 1e9, o->runqueue_ns / 1e9, o->bpf_run_ns / 1e9,
			     o->switches);
	}
	return n < 0 || (size_t)n >= len - used ? -ENOSPC : 0;
}

int selfreport_append_query(const struct selfreport *r, char *buf, size_t len)
{
	size_t used;
	int ret, n;

	ret = append_escaped(buf, len, "agent_id", r->agent_id);
	if (!ret)
		ret = append_escaped(buf, len, "node", r->node);
	if (!ret)
		ret = append_escaped(buf, len, "agent_version", r->version);
	if (ret)
		return ret;
	used = strlen(buf);
	/* Names as collector/ingest/handlers_pprof.c reads them (docs/api.md); window_start,
	 * sample_rate_hz and dropped_profiles are extra context the collector may ignore (the
	 * samples of dropped profiles are counted in lost_samples, which it stores). */
	n = snprintf(buf + used, len - used,
		     "&window_start=%" PRId64 "&window_s=%.3f&cpu_s=%.6f"
		     "&lost_samples=%" PRIu64 "&unknown_frames=%" PRIu64 "&processes=%" PRIu64
		     "&sample_rate_hz=%d&dropped_profiles=%" PRIu64,
		     r->window_start_ns, r->window_s, r->agent_cpu_s, r->lost_samples,
		     r->unknown_frames, r->processes, r->sample_rate_hz, r->dropped_profiles);
	if (n < 0 || (size_t)n >= len - used)
		return -ENOSPC;
	used += (size_t)n;
	if (r->bpf_measured) {
		n = snprintf(buf + used, len - used, "&bpf_s=%.9f", r->bpf_run_ns / 1e9);
		if (n < 0 || (size_t)n >= len - used)
			return -ENOSPC;
	}
	ret = append_offcpu(r, buf, len);
	if (ret)
		return ret;
	return append_unwind(&r->unwind, buf, len);
}
