/* SPDX-License-Identifier: Apache-2.0 */
/* BPF sampler: loads bpf/profile.bpf.c, opens one cpu-clock perf event per online CPU, and
 * drains the in-kernel aggregation. The only user of libbpf and the skeleton. */
#ifndef ROOTTRACE_SAMPLER_H
#define ROOTTRACE_SAMPLER_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "offcpu.h"
#include "profile.h"
#include "php_frames.h"
#include "python_frames.h"
#include "ruby_frames.h"
#include "v8_frames.h"
#include "hotspot_frames.h"
#include "unwind.h"

/* Called from sampler__poll() for each first-sight / exec event. */
typedef void (*sampler_event_fn)(const struct profile_event *e, void *ctx);

struct sampler_options {
	pid_t pid;		  /* 0 = every process; filtered in the kernel */
	bool unwind_tables;	  /* user stacks from .eh_frame tables (else frame pointers) */
	uint32_t unwind_max_rows; /* capacity of the rows map; 0 = UNWIND_DEFAULT_ROWS */
	bool offcpu; /* load the scheduler hooks too (without them when the kernel refuses) */
	sampler_event_fn on_event;
	/* a code object sampled for the first time (interpreter frames), from sampler__poll() */
	void (*on_python_code)(const struct python_code_event *e, void *ctx);
	void *ctx;
};

/* One aggregated entry of a drained generation. Frames are instruction pointers, leaf first;
 * n_user/n_kernel are 0 when the stack was absent or its walk failed. */
struct sampler_entry {
	bool offcpu; /* an off-CPU entry: value->count blocks kept, period_ns weighted blocked ns */
	const struct profile_key *key;
	const struct profile_value *value;
	bool user_truncated; /* the walk stopped at the depth cap: more frames were below */
	const __u64 *user_ips;
	size_t n_user;
	const __u64 *kernel_ips;
	size_t n_kernel;
};

/* Return non-zero to abort the drain (the rest of the generation is still cleared). */
typedef int (*sampler_entry_fn)(const struct sampler_entry *e, void *ctx);

struct sampler;

/* Checks privileges, opens and loads the BPF object (nothing attached). NULL on failure with
 * one line in err naming what is missing; errno set. */
struct sampler *sampler__open(const struct sampler_options *opts, char *err, size_t err_len);
void sampler__free(struct sampler *s);

/* Opens a cpu-clock perf event per online CPU at frequency_hz (frequency mode) and attaches
 * the program to each, plus the exec tracepoint. 0 or -errno (reason in err). */
int sampler__attach(struct sampler *s, int frequency_hz, char *err, size_t err_len);
/* Detaches everything and waits until no program run is still in flight. */
void sampler__detach(struct sampler *s);
bool sampler__attached(const struct sampler *s);
/* -errno when attached without the exec hook (raw tracepoint sched_process_exec), else 0. */
int sampler__exec_hook_error(const struct sampler *s);

/* Services the ring buffer (first-sight events) for up to timeout_ms. 0 or -errno. */
int sampler__poll(struct sampler *s, int timeout_ms);

/* Flips the generation, waits for in-flight program runs, then hands every entry of the
 * previous generation to fn and clears it (counts and stacks). 0 or -errno. */
int sampler__drain(struct sampler *s, sampler_entry_fn fn, void *ctx);

/* Per-CPU counters summed over CPUs; cumulative since open. */
int sampler__stats(struct sampler *s, struct profile_stats *ret);

/* BPF run time and run count of our programs since open (0 when stats could not be
 * enabled: needs CAP_SYS_ADMIN). */
int sampler__bpf_runtime(struct sampler *s, uint64_t *ret_run_ns, uint64_t *ret_run_cnt);

/* Thread name last seen by BPF for tid. 0, or -ENOENT. */
int sampler__thread_name(struct sampler *s, pid_t tid, char *buf, size_t len);

/* Forgets that pid was announced, so a new process reusing the pid is announced again. */
void sampler__forget_pid(struct sampler *s, pid_t pid);

/* Replaces the set of excluded cgroup ids. 0 or -errno. */
int sampler__set_excluded_cgroups(struct sampler *s, const uint64_t *ids, size_t n);

/* --- unwind tables (--unwind=auto) ------------------------------------------------------ */

/* Rows the rows map holds (0 when the tables are off). */
size_t sampler__unwind_rows_capacity(const struct sampler *s);
/* Writes rows [first_row, first_row + n) (first_row even: two rows an element); publish the
 * table with sampler__unwind_set_table() afterwards. 0 or -errno. */
int sampler__unwind_write_rows(struct sampler *s, uint32_t first_row, const struct unwind_row *rows,
			       size_t n);
/* Table slot id % UNWIND_MAX_TABLES; n_rows 0 unpublishes it. 0 or -errno. */
int sampler__unwind_set_table(struct sampler *s, const struct unwind_table_info *info);
int sampler__unwind_set_process(struct sampler *s, pid_t pid, const struct unwind_process *proc);
void sampler__unwind_forget_process(struct sampler *s, pid_t pid);
/* Per-CPU unwinder counters summed (UNWIND_STAT__COUNT of them); cumulative since open. */
int sampler__unwind_stats(struct sampler *s, uint64_t *ret);
/* Waits until no program run that started before now is still in flight (rows of an
 * unpublished table may be reused afterwards). */
void sampler__sync(struct sampler *s);
/* How long loading (verifying) the BPF object took, and the kernel memory of the unwind maps
 * (rows, table slots, process mapping tables as allocated now is not known: capacity). */
uint64_t sampler__load_ns(const struct sampler *s);
uint64_t sampler__unwind_rows_bytes(const struct sampler *s);

/* --- interpreter state (agent/runtimes/; walked with the tables only) --------------------- */

/* A CPython process's walk state (replaces the pid's). 0 or -errno. */
int sampler__python_set_process(struct sampler *s, pid_t pid, const struct python_proc *proc);
void sampler__python_forget_process(struct sampler *s, pid_t pid);
/* Per-CPU interpreter-walk counters summed (PYTHON_STAT__COUNT); cumulative since open. */
int sampler__python_stats(struct sampler *s, uint64_t *ret);

/* --- off-CPU time (opts.offcpu) --------------------------------------------------------- */

struct sampler_offcpu_settings {
	bool allow_list;       /* only tgids allowed with sampler__offcpu_set_tgid(); else all */
	uint64_t min_block_ns; /* shorter blocks are dropped (counted) */
	uint32_t sample_every; /* keep 1 in N blocks, weighted by N; 0 or 1 = all */
};

/* The programs are loaded (sampler__offcpu_error() says why not when asked for). */
bool sampler__offcpu_loaded(const struct sampler *s);
const char *sampler__offcpu_error(const struct sampler *s);
/* Attaches the sched_switch program. 0 or -errno (reason in err). */
int sampler__offcpu_attach(struct sampler *s, char *err, size_t err_len);
void sampler__offcpu_detach(struct sampler *s);
bool sampler__offcpu_attached(const struct sampler *s);
/* Applies at once; the agent itself is never recorded. */
void sampler__offcpu_configure(struct sampler *s, const struct sampler_offcpu_settings *set);
/* The per-process filter (allow_list): allow or deny pid's blocks; forget: unknown again. */
int sampler__offcpu_set_tgid(struct sampler *s, pid_t pid, bool allow);
void sampler__offcpu_forget_tgid(struct sampler *s, pid_t pid);
int sampler__offcpu_clear_tgids(struct sampler *s);
/* Per-CPU counters summed; cumulative since open (all 0 when not loaded). */
int sampler__offcpu_stats(struct sampler *s, struct offcpu_stats *ret);
/* Run time and count of the two off-CPU programs alone (also in sampler__bpf_runtime). */
int sampler__offcpu_runtime(struct sampler *s, uint64_t *ret_run_ns, uint64_t *ret_run_cnt);
uint64_t sampler__offcpu_map_bytes(const struct sampler *s);

/* Ruby processes' walk state (ruby_procs). */
int sampler__ruby_set_process(struct sampler *s, pid_t pid, const struct ruby_proc *proc);
void sampler__ruby_forget_process(struct sampler *s, pid_t pid);
/* The Ruby walk's counters (RUBY_STAT__COUNT of them, enum ruby_stat), cumulative. */
int sampler__ruby_stats(struct sampler *s, uint64_t *ret);

/* V8 processes' walk state (v8_procs) and the walk's counters (V8_STAT__COUNT of them). */
int sampler__v8_set_process(struct sampler *s, pid_t pid, const struct v8_proc *proc);
void sampler__v8_forget_process(struct sampler *s, pid_t pid);
int sampler__v8_stats(struct sampler *s, uint64_t *ret);

/* HotSpot JVMs' walk state (hotspot_procs) and the walk's counters (HOTSPOT_STAT__COUNT). */
int sampler__hotspot_set_process(struct sampler *s, pid_t pid, const struct hotspot_proc *proc);
void sampler__hotspot_forget_process(struct sampler *s, pid_t pid);
int sampler__hotspot_stats(struct sampler *s, uint64_t *ret);

/* PHP processes' walk state (php_procs). */
int sampler__php_set_process(struct sampler *s, pid_t pid, const struct php_proc *proc);
void sampler__php_forget_process(struct sampler *s, pid_t pid);

#endif
