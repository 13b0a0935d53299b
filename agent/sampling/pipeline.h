/* SPDX-License-Identifier: Apache-2.0 */
/* The record pipeline shared by `record` and `run`: sample (BPF) -> aggregate -> symbolise.
 * Opening loads the BPF object; sampling starts only when pipeline__start() attaches it. */
#ifndef ROOTTRACE_PIPELINE_H
#define ROOTTRACE_PIPELINE_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "contract.h"
#include "python_frames.h"
#include "ruby_frames.h"
#include "v8_frames.h"
#include "hotspot_frames.h"
#include "runtimes/runtime.h"
#include "symbolize/symbolizer.h"
#include "sampling/window.h"

#define SAMPLE_RATE_DEFAULT_HZ 99

/* How user stacks are walked. */
enum pipeline_unwind {
	PIPELINE_UNWIND_FP = 0,	  /* frame pointers (the kernel's walk) */
	PIPELINE_UNWIND_AUTO = 1, /* .eh_frame tables, frame pointers where a mapping has none */
};

struct pipeline_options {
	pid_t pid; /* 0 = every process */
	enum pipeline_unwind unwind;
	uint64_t unwind_memory_bytes; /* cap of the unwind rows map; 0 = default (24 MiB) */
	size_t max_binaries;	      /* symboliser caches; 0 = defaults */
	size_t max_processes;
	bool capture_cgroups; /* fill window_sample.cgroup (captured at first sight) */
	bool offcpu;	      /* load the off-CPU hooks (attached by pipeline__offcpu_start) */
	bool java_perfmap;    /* ask JVMs whose structures cannot be read for a perf map */
};

struct pipeline;

/* Loads the BPF object (not attached). NULL on failure with a one-line reason in err naming
 * what is missing (CAP_BPF, CAP_PERFMON, the kernel feature...). */
struct pipeline *pipeline__open(const struct pipeline_options *opts, char *err, size_t err_len);
void pipeline__close(struct pipeline *p);

/* Clamps frequency_hz to [SAMPLE_RATE_MIN_HZ, SAMPLE_RATE_MAX_HZ]; opens one cpu-clock perf
 * event per online CPU and attaches. Restarting with another rate re-opens the events.
 * 0 or -errno (reason in err). */
int pipeline__start(struct pipeline *p, int frequency_hz, char *err, size_t err_len);
/* Closes the perf events and detaches: no BPF program of ours runs afterwards. */
int pipeline__stop(struct pipeline *p);
bool pipeline__running(const struct pipeline *p);
/* -errno when sampling runs without the exec hook: a process first sampled before an exec
 * keeps its earlier name and symbols, and its cgroup until re-read. Else 0. */
int pipeline__exec_hook_error(const struct pipeline *p);
int pipeline__frequency(const struct pipeline *p);

/* Services first-sight events (captures short-lived processes early). Call in the main loop;
 * returns within timeout_ms. 0 or -errno (-EINTR is not an error for the caller). */
int pipeline__poll(struct pipeline *p, int timeout_ms);
/* True while pipeline__poll has work that waits on no event (first-sight tables to capture,
 * big tables being built, a starting runtime to capture again, off-CPU pids to decide): the
 * loop should call it again within a few hundred ms. False in a steady state, where only
 * the sampler's events (which end the poll) bring work. */
bool pipeline__has_pending_work(struct pipeline *p);

/* Drains the kernel aggregation (no sample lost during the drain) and symbolises it into a
 * window covering the time since the previous collect. Caller frees with window__free(). */
int pipeline__collect(struct pipeline *p, struct window **ret);

/* The symboliser's cache counters (captured, dropped after exit, evicted, held). */
void pipeline__symbolizer_stats(const struct pipeline *p, struct symbolizer_stats *ret);

/* Interpreter frames (Python): the BPF walk's counters and the naming side's, cumulative. */
struct pipeline_python_stats {
	uint64_t walk[PYTHON_STAT__COUNT]; /* enum python_stat */
	struct runtime_stats names;
};

/* -ENOTSUP with --unwind=fp (no interpreter walk). */
int pipeline__python_stats(struct pipeline *p, struct pipeline_python_stats *ret);

/* JS frames (V8): the same two sides. -ENOTSUP with --unwind=fp. */
struct pipeline_v8_stats {
	uint64_t walk[V8_STAT__COUNT]; /* enum v8_stat */
	struct runtime_stats names;
};

int pipeline__v8_stats(struct pipeline *p, struct pipeline_v8_stats *ret);

/* Ruby frames: the same two sides. -ENOTSUP with --unwind=fp. */
struct pipeline_ruby_stats {
	uint64_t walk[RUBY_STAT__COUNT]; /* enum ruby_stat */
	struct runtime_stats names;
};

int pipeline__ruby_stats(struct pipeline *p, struct pipeline_ruby_stats *ret);

/* Java frames (HotSpot): the same two sides. -ENOTSUP with --unwind=fp. */
struct pipeline_hotspot_stats {
	uint64_t walk[HOTSPOT_STAT__COUNT]; /* enum hotspot_stat */
	struct runtime_stats names;
};

int pipeline__hotspot_stats(struct pipeline *p, struct pipeline_hotspot_stats *ret);

/* PHP's detection and naming counters (its walk has no BPF counters of its own). */
int pipeline__php_stats(struct pipeline *p, struct runtime_stats *ret);

/* Parses "auto" / "fp". 0 or -EINVAL. */
int pipeline_unwind_parse(const char *text, enum pipeline_unwind *ret);

/* Per-service switch in the kernel: samples whose cgroup v2 id is listed are not recorded.
 * Ineffective on cgroup v1 (ids are 0 there); callers filter again in user space. */
int pipeline__set_excluded_cgroups(struct pipeline *p, const uint64_t *ids, size_t n);

/* --- off-CPU time (opts.offcpu) --------------------------------------------------------- */

struct pipeline_offcpu {
	bool allow_list;       /* only processes pipeline__offcpu_decide() allowed; else all */
	uint64_t min_block_ns; /* shorter blocks are dropped (counted) */
	uint32_t sample_every; /* keep 1 in N blocks, weighted by N; 0 or 1 = every block */
	uint32_t max_kept_per_cpu_s; /* fewer (weighted by 1 / P) past this many kept a second on
				      * one CPU; 0 = no cap */
};

/* Attaches the scheduler hooks with these settings, or applies new ones when attached: the
 * windows get off-CPU samples from now. 0 or -errno (reason in err). */
int pipeline__offcpu_start(struct pipeline *p, const struct pipeline_offcpu *set, char *err,
			   size_t err_len);
void pipeline__offcpu_stop(struct pipeline *p);
bool pipeline__offcpu_running(const struct pipeline *p);
/* Why the off-CPU hooks could not be loaded ("" when they were, or were not asked for). */
const char *pipeline__offcpu_error(const struct pipeline *p);
/* The hooks are in the kernel (opts.offcpu and the kernel took them). */
bool pipeline__offcpu_loaded(const struct pipeline *p);

/* allow_list: the processes that blocked since the last call and are not decided yet, as a
 * window of one empty off-CPU sample each (pid, comm, cgroup, exe: what tagging reads). NULL
 * in *ret when there is none. 0 or -errno. */
int pipeline__offcpu_unknown(struct pipeline *p, struct window **ret);
/* Records pid's blocks from now (allow) or never. 0 or -errno. */
int pipeline__offcpu_decide(struct pipeline *p, pid_t pid, bool allow);
/* Undecided again: announced anew at its next block. */
void pipeline__offcpu_forget(struct pipeline *p, pid_t pid);
/* Every process undecided again (the set of services changed): each is announced anew at
 * its next block. */
void pipeline__offcpu_reset(struct pipeline *p);

#endif
