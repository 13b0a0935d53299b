// SPDX-License-Identifier: Apache-2.0
/* `roottrace-agent record`: profile every process (or one pid) for a while through the
 * shared pipeline, write one gzipped pprof (CPU, and with --offcpu the blocked time beside it),
 * print a summary. */
#include <errno.h>
#include <fcntl.h>
#include <linux/types.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_args.h"
#include "commands.h"
#include "symbolize/debuginfod_fetch.h"
#include "duration.h"
#include "ship/encode.h"
#include "offcpu.h"
#include "profile.h"
#include "sampling/pipeline.h"

/* How often the maps are drained: between these, by how full the last window's keys made them
 * (a window's drain, names and /proc checks are paid per window, whatever its length). */
#define COLLECT_MIN_MS 5000			      /* the first window, a busy machine */
#define COLLECT_MAX_MS 20000			      /* a machine whose keys stay few */
#define COLLECT_TARGET_KEYS (PROFILE_MAX_ENTRIES / 8) /* a window's keys: far from full */
#define PROGRESS_INTERVAL_MS 5000
#define TOP_FUNCTIONS 5

struct record_args {
	int64_t duration_ms;
	int frequency_hz;
	pid_t pid;
	const char *output;
	enum pipeline_unwind unwind;
	bool offcpu;
	int64_t offcpu_min_us;
	long offcpu_sample_every;
	long offcpu_max_rate; /* kept blocks per CPU per second; 0 = no cap */
};

static volatile sig_atomic_t exiting;

static void on_signal(int sig)
{
	exiting = 1;
}

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: roottrace-agent record [--duration 10s] [--frequency 99] [--pid N] "
	    "[--output FILE] [--unwind auto|fp]\n"
	    "       [--offcpu [--offcpu-min 1ms] [--offcpu-sample N] [--offcpu-max-rate N]]\n\n"
	    "Samples the on-CPU stacks of every process (or one) with BPF and writes a gzipped\n"
	    "pprof CPU profile. Needs root (CAP_BPF and CAP_PERFMON).\n\n"
	    "  -d, --duration D    how long to record: 500ms, 10s, 2m, 1h (default 10s)\n"
	    "  -F, --frequency HZ  samples per second per CPU, clamped to %d-%d (default %d)\n"
	    "  -p, --pid N         only this process\n"
	    "  -o, --output FILE   where to write the profile (default profile.pb.gz)\n"
	    "  -U, --unwind MODE   user stacks: auto = .eh_frame unwind tables (Go: its\n"
	    "                      .gopclntab), frame pointers where a binary has none\n"
	    "                      (default); fp = frame pointers only\n"
	    "      --offcpu        also record where threads block (switched out, not runnable)\n"
	    "                      and for how long: sample types blocks/count and\n"
	    "                      offcpu/nanoseconds beside samples/count and cpu/nanoseconds\n"
	    "      --offcpu-min D  drop blocks shorter than D: 10us, 1ms (default 0: all)\n"
	    "      --offcpu-sample N  keep 1 in N blocks at random, each weighted by N\n"
	    "                      (1-%d, default 1: every block)\n"
	    "      --offcpu-max-rate N  keep at most about N blocks a second per CPU: past that\n"
	    "                      rate fewer are kept, each weighted by 1 / its chance\n"
	    "                      (0-%d, default 0: no cap; the daemon's default is %d)\n\n"
	    "Examples:\n"
	    "  roottrace-agent record --duration 30s --output cpu.pb.gz\n"
	    "  roottrace-agent record --pid $(pidof nginx) --frequency 199 -o nginx.pb.gz\n"
	    "  roottrace-agent record --pid $(pidof nginx) --offcpu -o nginx.pb.gz\n"
	    "  go tool pprof -top cpu.pb.gz\n"
	    "  go tool pprof -top -sample_index=offcpu nginx.pb.gz\n",
	    SAMPLE_RATE_MIN_HZ, SAMPLE_RATE_MAX_HZ, SAMPLE_RATE_DEFAULT_HZ, OFFCPU_MAX_SAMPLE_EVERY,
	    OFFCPU_MAX_KEPT_PER_CPU_S, OFFCPU_DEFAULT_MAX_KEPT_PER_CPU_S);
}

static int parse_int(const char *text, long min, long max, long *ret)
{
	char *end;

	errno = 0;
	*ret = strtol(text, &end, 10);
	if (errno || end == text || *end || *ret < min || *ret > max)
		return -EINVAL;
	return 0;
}

static int invalid(const char *option, const char *arg, const char *hint)
{
	fprintf(stderr, "record: invalid --%s '%s'%s\n", option, arg, hint);
	return -EINVAL;
}

static int record_option(int opt, const char *arg, void *ctx)
{
	struct record_args *a = ctx;
	long value;

	switch (opt) {
	case 'd':
		if (duration_parse_ms(arg, &a->duration_ms) || a->duration_ms <= 0)
			return invalid("duration", arg, " (e.g. 10s, 2m)");
		return 0;
	case 'F':
		if (parse_int(arg, 1, 1000000, &value))
			return invalid("frequency", arg, " (Hz, e.g. 99)");
		a->frequency_hz = value;
		return 0;
	case 'p':
		if (parse_int(arg, 1, 0x3fffffff, &value))
			return invalid("pid", arg, "");
		a->pid = value;
		return 0;
	case 'o':
		a->output = arg;
		return 0;
	case 'U':
		if (pipeline_unwind_parse(arg, &a->unwind))
			return invalid("unwind", arg, " (auto or fp)");
		return 0;
	case 'O':
		a->offcpu = true;
		return 0;
	case 'M':
		if (duration_parse_us(arg, &a->offcpu_min_us) || a->offcpu_min_us < 0)
			return invalid("offcpu-min", arg, " (e.g. 100us, 1ms)");
		return 0;
	case 'S':
		if (parse_int(arg, 1, OFFCPU_MAX_SAMPLE_EVERY, &value))
			return invalid("offcpu-sample", arg, " (1-1024)");
		a->offcpu_sample_every = value;
		return 0;
	case 'R':
		if (parse_int(arg, 0, OFFCPU_MAX_KEPT_PER_CPU_S, &value))
			return invalid("offcpu-max-rate", arg, " (0-100000 a second per CPU)");
		a->offcpu_max_rate = value;
		return 0;
	}
	return -ENOENT;
}

/* 0, 1 when --help was printed, or -EINVAL after printing what is wrong. */
static int parse_args(int argc, char **argv, struct record_args *a)
{
	static const struct option options[] = {
	    {"duration", required_argument, NULL, 'd'},
	    {"frequency", required_argument, NULL, 'F'},
	    {"pid", required_argument, NULL, 'p'},
	    {"output", required_argument, NULL, 'o'},
	    {"unwind", required_argument, NULL, 'U'},
	    {"offcpu", no_argument, NULL, 'O'},
	    {"offcpu-min", required_argument, NULL, 'M'},
	    {"offcpu-sample", required_argument, NULL, 'S'},
	    {"offcpu-max-rate", required_argument, NULL, 'R'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	static const struct cli_command cmd = {"record", "d:F:p:o:U:h", options, usage,
					       record_option};

	*a = (struct record_args){
	    10000, SAMPLE_RATE_DEFAULT_HZ, 0, "profile.pb.gz", PIPELINE_UNWIND_AUTO, false, 0, 1};
	return cli_parse(&cmd, argc, argv, a);
}

static int check_args(struct record_args *a)
{
	if (a->pid && kill(a->pid, 0) && errno == ESRCH) {
		fprintf(stderr, "record: no process with pid %d\n", a->pid);
		return -ESRCH;
	}
	if (a->frequency_hz < SAMPLE_RATE_MIN_HZ || a->frequency_hz > SAMPLE_RATE_MAX_HZ) {
		int clamped =
		    a->frequency_hz < SAMPLE_RATE_MIN_HZ ? SAMPLE_RATE_MIN_HZ : SAMPLE_RATE_MAX_HZ;

		fprintf(stderr, "record: frequency %d Hz clamped to %d Hz\n", a->frequency_hz,
			clamped);
		a->frequency_hz = clamped;
	}
	return 0;
}

static int64_t monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The next window's length from the last one's: as long as its keys, grown in proportion, stay
 * under COLLECT_TARGET_KEYS; the minimum again as soon as BPF dropped samples or blocks (a full
 * map). */
static int64_t next_collect_ms(const struct window *w, int64_t last_ms)
{
	int64_t next;

	if (w->stats.lost_map_full || w->stats.offcpu.lost)
		return COLLECT_MIN_MS;
	next =
	    w->n_samples ? last_ms * COLLECT_TARGET_KEYS / (int64_t)w->n_samples : COLLECT_MAX_MS;
	return next < COLLECT_MIN_MS   ? COLLECT_MIN_MS
	       : next > COLLECT_MAX_MS ? COLLECT_MAX_MS
				       : next;
}

/* Drains one window into total; *interval_ms becomes the next window's length. */
static int collect_into(struct pipeline *p, struct window *total, int64_t *interval_ms)
{
	struct window *w;
	int ret;

	ret = pipeline__collect(p, &w);
	if (ret)
		return ret;
	*interval_ms = next_collect_ms(w, *interval_ms);
	ret = window__append(total, w);
	window__free(w);
	return ret;
}

static void progress(const struct window *total, int64_t elapsed_ms, int64_t duration_ms)
{
	fprintf(stderr, "record: %llds / %llds, %llu samples so far\n",
		(long long)(elapsed_ms / 1000), (long long)(duration_ms / 1000),
		(unsigned long long)total->stats.samples);
}

/* Samples until the duration is over or a signal arrives; total accumulates the windows. */
static int record_loop(struct pipeline *p, const struct record_args *a, struct window *total)
{
	int64_t start = monotonic_ms(), now = start, last_collect = start, last_progress = start;
	int64_t collect_ms = COLLECT_MIN_MS;
	int ret;

	while (!exiting && now - start < a->duration_ms) {
		int64_t left = a->duration_ms - (now - start);

		ret = pipeline__poll(p, left < 100 ? (int)left : 100);
		if (ret && ret != -EINTR) {
			fprintf(stderr, "record: polling BPF events failed: %s\n", strerror(-ret));
			return ret;
		}
		now = monotonic_ms();
		if (now - last_collect >= collect_ms) {
			ret = collect_into(p, total, &collect_ms);
			if (ret) {
				fprintf(stderr, "record: collecting samples failed: %s\n",
					strerror(-ret));
				return ret;
			}
			last_collect = now;
		}
		if (now - last_progress >= PROGRESS_INTERVAL_MS) {
			progress(total, now - start, a->duration_ms);
			last_progress = now;
		}
	}
	return 0;
}

/* Writes the whole buffer and makes sure it reached the disk (a full disk fails here). */
static int write_output(int fd, const uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= n;
	}
	if (fsync(fd) && errno != EINVAL && errno != EROFS) /* EINVAL: not a regular file */
		return -errno;
	return 0;
}

static int save_profile(const struct window *total, bool offcpu, int fd, const char *path)
{
	struct window_encode_options opts = {.kind = offcpu ? ENCODE_BOTH : ENCODE_CPU};
	uint8_t *gz = NULL;
	size_t len = 0;
	int ret;

	ret = window_encode_pprof_with(total, &opts, &gz, &len);
	if (ret) {
		fprintf(stderr, "record: encoding the profile failed: %s\n", strerror(-ret));
		return ret;
	}
	ret = write_output(fd, gz, len);
	free(gz);
	if (ret) {
		fprintf(stderr, "record: writing %s failed: %s\n", path, strerror(-ret));
		return ret;
	}
	fprintf(stderr, "record: wrote %s (%zu bytes)\n", path, len);
	return 0;
}

struct self_time {
	const char *function; /* interned: equal names are equal pointers */
	uint64_t cpu_ns;
};

static int by_function(const void *a, const void *b)
{
	const char *x = ((const struct self_time *)a)->function;
	const char *y = ((const struct self_time *)b)->function;

	return x < y ? -1 : x > y;
}

static int by_cpu_desc(const void *a, const void *b)
{
	uint64_t x = ((const struct self_time *)a)->cpu_ns,
		 y = ((const struct self_time *)b)->cpu_ns;

	return x > y ? -1 : x < y;
}

/* Self time = CPU (or blocked time) of the samples where the function is the leaf frame. */
static void print_top_functions(const struct window *w, uint64_t cpu_ns, bool offcpu)
{
	struct self_time *t = calloc(w->n_samples ? w->n_samples : 1, sizeof(*t));
	size_t n = 0;

	if (!t)
		return;
	for (size_t i = 0; i < w->n_samples; i++)
		if (w->samples[i].n_frames && w->samples[i].offcpu == offcpu)
			t[n++] = (struct self_time){w->samples[i].frames[0].function,
						    offcpu ? w->samples[i].offcpu_ns
							   : w->samples[i].cpu_ns};
	qsort(t, n, sizeof(*t), by_function);
	size_t m = 0;

	for (size_t i = 0; i < n; i++) {
		if (m && t[m - 1].function == t[i].function)
			t[m - 1].cpu_ns += t[i].cpu_ns;
		else
			t[m++] = t[i];
	}
	qsort(t, m, sizeof(*t), by_cpu_desc);
	fprintf(stderr, "top functions by %s:\n",
		offcpu ? "self time blocked off-CPU" : "self time");
	for (size_t i = 0; i < m && i < TOP_FUNCTIONS; i++)
		fprintf(stderr, "  %5.1f%%  %8.3fs  %s\n", 100.0 * t[i].cpu_ns / cpu_ns,
			t[i].cpu_ns / 1e9, t[i].function);
	free(t);
}

static void print_symbolizer(const struct symbolizer_stats *ss)
{
	fprintf(
	    stderr,
	    "symbolizer: %llu processes captured, %llu dropped after exit, %llu evicted, "
	    "%llu held; %llu binaries loaded, %llu evicted; %.1f MiB of symbols, %llu tables "
	    "dropped over the cap, %llu read again, %llu windows over the cap; %llu execs "
	    "seen\n",
	    (unsigned long long)ss->processes_captured, (unsigned long long)ss->processes_forgotten,
	    (unsigned long long)ss->processes_evicted, (unsigned long long)ss->processes_cached,
	    (unsigned long long)ss->binaries_loaded, (unsigned long long)ss->binaries_evicted,
	    ss->symbol_bytes / 1048576.0, (unsigned long long)ss->symbol_tables_dropped,
	    (unsigned long long)ss->symbol_tables_reread,
	    (unsigned long long)ss->symbol_cap_exceeded, (unsigned long long)ss->images_replaced);
}

/* What the drains cost the agent's own CPU (the collecting thread), and the names they did not
 * work out again. */
static void print_drains(const struct window_stats *st, const struct symbolizer_stats *ss)
{
	fprintf(stderr,
		"drains: %llu, %.1f ms of the agent's CPU (%.2f ms a drain); C++ names: %llu "
		"demangled, %llu from the cache (%.1f KiB)\n",
		(unsigned long long)st->drains, st->drain_cpu_ns / 1e6,
		st->drains ? st->drain_cpu_ns / 1e6 / st->drains : 0.0,
		(unsigned long long)ss->demangled.demangled, (unsigned long long)ss->demangled.hits,
		ss->demangled.bytes / 1024.0);
}

/* The tables line: work, kernel memory, and binaries left to frame pointers by reason. */
static void print_unwind_tables(const struct window_unwind *u)
{
	uint64_t failed = u->tables_corrupt + u->tables_too_big + u->tables_unreadable;

	fprintf(
	    stderr,
	    "unwind tables: %llu built in %.1f ms, %llu big ones building; %llu loaded, %llu rows "
	    "(%.1f MiB) of %llu (%.1f MiB of kernel memory); ",
	    (unsigned long long)u->tables_built, u->build_ns / 1e6,
	    (unsigned long long)u->tables_building, (unsigned long long)u->tables_loaded,
	    (unsigned long long)u->rows_loaded, u->rows_bytes / 1048576.0,
	    (unsigned long long)u->rows_capacity, u->map_bytes / 1048576.0);
	fprintf(stderr, "%llu failed to build (corrupt %llu, too_big %llu, unreadable %llu)\n",
		(unsigned long long)failed, (unsigned long long)u->tables_corrupt,
		(unsigned long long)u->tables_too_big, (unsigned long long)u->tables_unreadable);
	fprintf(stderr,
		"early maps: %llu processes captured in their first second, their maps read "
		"%llu times again (the loader may have been mapping libraries)\n",
		(unsigned long long)u->early_captures, (unsigned long long)u->early_rereads);
}

static void print_unwind(const struct window_unwind *u)
{
	static const char *const reasons[WINDOW_UNWIND_END__COUNT] = {
	    "no_mapping", "cannot", "bad_cfa", "read", "no_row", "map_full",
	};
	uint64_t early = 0;

	for (int i = 0; i < WINDOW_UNWIND_END__COUNT; i++)
		early += u->end_early[i];
	fprintf(stderr,
		"unwinding: %llu samples by tables, %llu by frame pointers, %llu mixed, "
		"%llu before their tables were loaded (kernel frame-pointer walk)\n",
		(unsigned long long)u->by_tables, (unsigned long long)u->by_fp,
		(unsigned long long)u->mixed, (unsigned long long)u->not_loaded);
	fprintf(stderr,
		"unwound stacks: %llu ended at a stop frame, %llu at the end of a "
		"frame-pointer chain, %llu truncated at the depth cap, %llu ended early (",
		(unsigned long long)u->end_clean, (unsigned long long)u->end_fp_chain,
		(unsigned long long)u->truncated, (unsigned long long)early);
	for (int i = 0; i < WINDOW_UNWIND_END__COUNT; i++)
		fprintf(stderr, "%s%s %llu", i ? ", " : "", reasons[i],
			(unsigned long long)u->end_early[i]);
	fprintf(stderr, ")\n");
	fprintf(stderr,
		"stack tails: %llu walks ended with the thread's cached tail (%llu frames copied, "
		"%llu of them VM frames), %llu walked to the end, %llu tails changed (walked "
		"instead), %llu stored\n",
		(unsigned long long)u->tail_hits, (unsigned long long)u->tail_frames,
		(unsigned long long)u->tail_vm_frames, (unsigned long long)u->tail_misses,
		(unsigned long long)u->tail_fallbacks, (unsigned long long)u->tail_stored);
	print_unwind_tables(u);
}

/* Interpreter frames: what the BPF walk recorded and what naming read, cached and dropped. */
static void print_python(const struct pipeline_python_stats *py)
{
	const struct runtime_stats *n = &py->names;

	fprintf(stderr,
		"python: %llu processes attached, %llu of a version without a table; %llu samples "
		"walked, %llu interpreter frames, %llu threads without a thread state, %llu "
		"truncated, %llu read failures, %llu thread-list scans; names: %llu read, %llu "
		"cached, %llu evicted, %llu stale, %llu unreadable\n",
		(unsigned long long)n->processes_attached, (unsigned long long)n->unsupported,
		(unsigned long long)py->walk[PYTHON_STAT_SAMPLES],
		(unsigned long long)py->walk[PYTHON_STAT_FRAMES],
		(unsigned long long)py->walk[PYTHON_STAT_NO_THREAD],
		(unsigned long long)py->walk[PYTHON_STAT_TRUNCATED],
		(unsigned long long)py->walk[PYTHON_STAT_READ],
		(unsigned long long)py->walk[PYTHON_STAT_THREAD_WALKS],
		(unsigned long long)n->names_read, (unsigned long long)n->names_cached,
		(unsigned long long)n->names_evicted, (unsigned long long)n->names_stale,
		(unsigned long long)n->names_unreadable);
}

static void print_offcpu(const struct window *w)
{
	const struct window_offcpu *o = &w->stats.offcpu;
	uint64_t blocked_ns = 0;

	for (size_t i = 0; i < w->n_samples; i++)
		blocked_ns += w->samples[i].offcpu_ns;
	fprintf(stderr,
		"off-CPU: %.3f s blocked (weighted) from %llu blocks kept of %llu; %llu shorter "
		"than the minimum dropped (%.3f s); %.3f s runnable after wake-up (in no "
		"profile); %llu lost, %llu charged without their stacks\n",
		blocked_ns / 1e9, (unsigned long long)o->kept, (unsigned long long)o->blocks,
		(unsigned long long)o->below_min, o->below_min_ns / 1e9, o->runqueue_ns / 1e9,
		(unsigned long long)o->lost, (unsigned long long)o->stack_lost);
	if (o->bpf_run_cnt && o->switches)
		fprintf(
		    stderr,
		    "off-CPU BPF run time: %.3f ms over %llu context switches (%.3f us/switch)\n",
		    o->bpf_run_ns / 1e6, (unsigned long long)o->switches,
		    o->bpf_run_ns / 1e3 / o->switches);
	if (blocked_ns)
		print_top_functions(w, blocked_ns, true);
}

/* Unnamed lookups by reason, and debuginfod's fetches when a server is configured. */
static void print_symbol_sources(const struct symbolizer_stats *ss)
{
	struct debuginfod_fetch_stats d;

	fprintf(stderr, "unknown frame lookups:");
	for (int i = 0; i < SYM_UNKNOWN__COUNT; i++)
		fprintf(stderr, "%s %s %llu", i ? "," : "", symbolizer__reason_name(i),
			(unsigned long long)ss->unknown[i]);
	fprintf(stderr, "\n");
	debuginfod_fetch__stats(&d);
	if (!d.enabled)
		return;
	fprintf(stderr,
		"debuginfod: %llu requests, %llu fetched, %llu answered by the negative cache, "
		"failed:",
		(unsigned long long)d.requests, (unsigned long long)d.fetched,
		(unsigned long long)d.negative_hits);
	for (int i = 0; i < DEBUGINFOD_FAIL__COUNT; i++)
		fprintf(stderr, "%s %s %llu", i ? "," : "", debuginfod_fetch__failure_name(i),
			(unsigned long long)d.failed[i]);
	fprintf(stderr, "\n");
}

static void print_v8(const struct pipeline_v8_stats *v8)
{
	const struct runtime_stats *n = &v8->names;
	const uint64_t *w = v8->walk;

	fprintf(stderr,
		"v8: %llu processes attached, %llu without the constants JS frames need; %llu "
		"samples walked, %llu JS frames, %llu V8 frames kept native, %llu truncated, %llu "
		"announcements lost; names: %llu read, %llu cached, %llu evicted, %llu stale, %llu "
		"unreadable\n",
		(unsigned long long)n->processes_attached, (unsigned long long)n->unsupported,
		(unsigned long long)w[V8_STAT_SAMPLES], (unsigned long long)w[V8_STAT_FRAMES],
		(unsigned long long)w[V8_STAT_NATIVE], (unsigned long long)w[V8_STAT_TRUNCATED],
		(unsigned long long)w[V8_STAT_EVENTS_LOST], (unsigned long long)n->names_read,
		(unsigned long long)n->names_cached, (unsigned long long)n->names_evicted,
		(unsigned long long)n->names_stale, (unsigned long long)n->names_unreadable);
	fprintf(stderr,
		"v8 inlining: %llu optimised frames with their pc offset; code objects: %llu read, "
		"%llu unreadable or stale, %llu evicted; %llu inlined frames told\n",
		(unsigned long long)w[V8_STAT_OPTIMISED], (unsigned long long)n->code_read,
		(unsigned long long)n->code_unreadable, (unsigned long long)n->code_evicted,
		(unsigned long long)n->inlined_frames);
}

static void print_php(const struct runtime_stats *n)
{
	fprintf(stderr,
		"php: %llu processes attached, %llu of a version without a table; names: %llu "
		"read, %llu cached, %llu evicted, %llu stale, %llu unreadable\n",
		(unsigned long long)n->processes_attached, (unsigned long long)n->unsupported,
		(unsigned long long)n->names_read, (unsigned long long)n->names_cached,
		(unsigned long long)n->names_evicted, (unsigned long long)n->names_stale,
		(unsigned long long)n->names_unreadable);
}

static void print_ruby(const struct pipeline_ruby_stats *rb)
{
	const struct runtime_stats *n = &rb->names;
	const uint64_t *w = rb->walk;

	fprintf(
	    stderr,
	    "ruby: %llu processes attached, %llu of a version without a table; %llu samples "
	    "walked, %llu Ruby frames, %llu without an execution context, %llu truncated, %llu "
	    "read failures, %llu announcements lost; names: %llu read, %llu cached, %llu evicted, "
	    "%llu stale, %llu unreadable\n",
	    (unsigned long long)n->processes_attached, (unsigned long long)n->unsupported,
	    (unsigned long long)w[RUBY_STAT_SAMPLES], (unsigned long long)w[RUBY_STAT_FRAMES],
	    (unsigned long long)w[RUBY_STAT_NO_EC], (unsigned long long)w[RUBY_STAT_TRUNCATED],
	    (unsigned long long)w[RUBY_STAT_READ], (unsigned long long)w[RUBY_STAT_EVENTS_LOST],
	    (unsigned long long)n->names_read, (unsigned long long)n->names_cached,
	    (unsigned long long)n->names_evicted, (unsigned long long)n->names_stale,
	    (unsigned long long)n->names_unreadable);
}

static void print_hotspot(const struct pipeline_hotspot_stats *hs)
{
	const struct runtime_stats *n = &hs->names;
	const uint64_t *w = hs->walk;

	fprintf(
	    stderr,
	    "hotspot: %llu processes attached, %llu whose VMStructs lack what Java frames need; "
	    "%llu samples walked, %llu interpreted frames, %llu compiled frames, %llu stub "
	    "frames, %llu code-cache pcs without a blob, %llu read failures, %llu truncated, "
	    "%llu announcements lost; names: %llu read, %llu cached, %llu evicted, %llu stale, "
	    "%llu unreadable\n",
	    (unsigned long long)n->processes_attached, (unsigned long long)n->unsupported,
	    (unsigned long long)w[HOTSPOT_STAT_SAMPLES],
	    (unsigned long long)w[HOTSPOT_STAT_INTERPRETED],
	    (unsigned long long)w[HOTSPOT_STAT_COMPILED], (unsigned long long)w[HOTSPOT_STAT_STUB],
	    (unsigned long long)w[HOTSPOT_STAT_NO_BLOB], (unsigned long long)w[HOTSPOT_STAT_READ],
	    (unsigned long long)w[HOTSPOT_STAT_TRUNCATED],
	    (unsigned long long)w[HOTSPOT_STAT_EVENTS_LOST], (unsigned long long)n->names_read,
	    (unsigned long long)n->names_cached, (unsigned long long)n->names_evicted,
	    (unsigned long long)n->names_stale, (unsigned long long)n->names_unreadable);
	fprintf(stderr,
		"hotspot inlining: nmethod PcDesc tables: %llu read, %llu stale (another nmethod "
		"at the address at a window's end), %llu evicted\n",
		(unsigned long long)n->code_read, (unsigned long long)n->code_stale,
		(unsigned long long)n->code_evicted);
	fprintf(stderr,
		"hotspot blob cache: %llu code-cache pcs found from the per-CPU cache, %llu "
		"cached blobs whose header changed (code freed and reused: searched again)\n",
		(unsigned long long)w[HOTSPOT_STAT_BLOB_CACHED],
		(unsigned long long)w[HOTSPOT_STAT_BLOB_STALE]);
}

static void print_summary(const struct window *w, const struct symbolizer_stats *ss,
			  const struct pipeline_python_stats *py,
			  const struct pipeline_v8_stats *v8, const struct runtime_stats *php,
			  enum pipeline_unwind unwind, bool offcpu)
{
	const struct window_stats *st = &w->stats;
	uint64_t cpu_ns = 0;

	for (size_t i = 0; i < w->n_samples; i++)
		cpu_ns += w->samples[i].cpu_ns;
	fprintf(stderr, "samples: %llu (%.3f CPU seconds over %.1fs, %llu processes)\n",
		(unsigned long long)st->samples, cpu_ns / 1e9, (w->end_ns - w->start_ns) / 1e9,
		(unsigned long long)st->processes);
	fprintf(stderr, "idle: %llu samples (%.3fs)\n", (unsigned long long)st->idle_samples,
		st->idle_ns / 1e9);
	fprintf(stderr,
		"lost samples: %llu (aggregation map full); failed stack walks: "
		"user %llu, kernel %llu\n",
		(unsigned long long)st->lost_map_full, (unsigned long long)st->lost_stack_user,
		(unsigned long long)st->lost_stack_kernel);
	fprintf(stderr, "unknown frames: %llu\n", (unsigned long long)st->unknown_frames);
	fprintf(stderr, "samples counted by BPF: %llu\n", (unsigned long long)st->bpf_samples);
	print_symbol_sources(ss);
	if (st->bpf_run_cnt)
		fprintf(stderr, "BPF run time: %.3f ms over %llu runs (%.2f us/run)\n",
			st->bpf_run_ns / 1e6, (unsigned long long)st->bpf_run_cnt,
			st->bpf_run_ns / 1e3 / st->bpf_run_cnt);
	fprintf(stderr, "BPF load (verifier): %llu ms\n", (unsigned long long)st->unwind.load_ms);
	print_drains(st, ss);
	if (unwind == PIPELINE_UNWIND_AUTO)
		print_unwind(&st->unwind);
	print_symbolizer(ss);
	if (unwind == PIPELINE_UNWIND_AUTO) {
		print_python(py);
		print_v8(v8);
		print_php(php);
	}
	if (cpu_ns)
		print_top_functions(w, cpu_ns, false);
	if (offcpu)
		print_offcpu(w);
}

static const char *unwind_name(enum pipeline_unwind unwind)
{
	return unwind == PIPELINE_UNWIND_AUTO ? "auto" : "fp";
}

static int start_offcpu(struct pipeline *p, const struct record_args *a, char *err, size_t err_len)
{
	struct pipeline_offcpu set = {
	    .min_block_ns = (uint64_t)a->offcpu_min_us * 1000,
	    .sample_every = a->offcpu_sample_every,
	    .max_kept_per_cpu_s = a->offcpu_max_rate,
	};

	if (pipeline__offcpu_error(p)[0]) {
		snprintf(err, err_len, "%s", pipeline__offcpu_error(p));
		return -ENOTSUP;
	}
	return pipeline__offcpu_start(p, &set, err, err_len);
}

/* Records into total: open -> start -> loop -> stop -> final drain. */
static int record(const struct record_args *a, struct window *total,
		  struct symbolizer_stats *ret_sym, struct pipeline_python_stats *ret_py,
		  struct pipeline_v8_stats *ret_v8, struct runtime_stats *ret_php)
{
	struct pipeline_options opts = {.pid = a->pid, .unwind = a->unwind, .offcpu = a->offcpu};
	struct pipeline_ruby_stats rb;
	struct pipeline_hotspot_stats hs;
	struct pipeline *p;
	char err[256] = "";
	int ret;

	p = pipeline__open(&opts, err, sizeof(err));
	if (!p) {
		fprintf(stderr, "record: %s\n", err);
		return -EPERM;
	}
	ret = pipeline__start(p, a->frequency_hz, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "record: %s\n", err);
		goto out;
	}
	if (a->offcpu) {
		ret = start_offcpu(p, a, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "record: --offcpu: %s\n", err);
			goto out;
		}
	}
	ret = pipeline__exec_hook_error(p);
	if (ret)
		fprintf(stderr,
			"record: warning: the exec hook did not attach (%s): a process "
			"sampled before it execs keeps its earlier name and symbols\n",
			strerror(-ret));
	if (a->pid)
		fprintf(stderr, "record: sampling pid %d at %d Hz for %.1fs (unwind: %s%s)\n",
			a->pid, a->frequency_hz, a->duration_ms / 1e3, unwind_name(a->unwind),
			a->offcpu ? ", off-CPU too" : "");
	else
		fprintf(stderr, "record: sampling all CPUs at %d Hz for %.1fs (unwind: %s%s)\n",
			a->frequency_hz, a->duration_ms / 1e3, unwind_name(a->unwind),
			a->offcpu ? ", off-CPU too" : "");
	ret = record_loop(p, a, total);
	pipeline__stop(p);
	if (!ret)
		ret = collect_into(p, total, &(int64_t){COLLECT_MIN_MS});
	if (ret)
		fprintf(stderr, "record: collecting samples failed: %s\n", strerror(-ret));
	pipeline__symbolizer_stats(p, ret_sym);
	pipeline__python_stats(p, ret_py);
	pipeline__v8_stats(p, ret_v8);
	pipeline__php_stats(p, ret_php);
	if (a->unwind == PIPELINE_UNWIND_AUTO && !pipeline__ruby_stats(p, &rb))
		print_ruby(&rb); /* before the summary: the window is named, the process gone */
	if (a->unwind == PIPELINE_UNWIND_AUTO && !pipeline__hotspot_stats(p, &hs))
		print_hotspot(&hs);
out:
	pipeline__close(p);
	return ret;
}

int cmd_record(int argc, char **argv)
{
	struct symbolizer_stats sym = {0};
	struct pipeline_python_stats py = {0};
	struct pipeline_v8_stats v8 = {0};
	struct runtime_stats php = {0};
	struct record_args a;
	struct window *total;
	int fd, ret;

	ret = parse_args(argc, argv, &a);
	if (ret)
		return ret > 0 ? 0 : 2;
	if (check_args(&a))
		return 1;
	/* Open the output first: an unwritable path fails before, not after, the recording. */
	fd = open(a.output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "record: cannot write %s: %s\n", a.output, strerror(errno));
		return 1;
	}
	total = window__new();
	if (!total) {
		fprintf(stderr, "record: out of memory\n");
		close(fd);
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	ret = record(&a, total, &sym, &py, &v8, &php);
	if (!ret)
		ret = save_profile(total, a.offcpu, fd, a.output);
	if (close(fd) && !ret) {
		ret = -errno;
		fprintf(stderr, "record: writing %s failed: %s\n", a.output, strerror(-ret));
	}
	if (!ret)
		print_summary(total, &sym, &py, &v8, &php, a.unwind, a.offcpu);
	window__free(total);
	return ret ? 1 : 0;
}
