/* SPDX-License-Identifier: Apache-2.0 */
/* window -> gzipped pprof (cpu, offcpu, or both in one file). A predicate picks the samples
 * (one service); a service shared by many processes gets each stack rooted at its process
 * name. */
#ifndef ROOTTRACE_ENCODE_H
#define ROOTTRACE_ENCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pprof.h"
#include "sampling/window.h"

typedef bool (*window_sample_filter)(const struct window_sample *s, void *ctx);

#define ENCODE_KERNEL_THREADS_ROOT "[kernel threads]"

/* Which measurement a pprof holds: CPU and off-CPU time are never merged into one value. */
enum window_encode_kind {
	ENCODE_CPU = 0,	   /* samples/count, cpu/nanoseconds: the on-CPU samples */
	ENCODE_OFFCPU = 1, /* blocks/count, offcpu/nanoseconds: the off-CPU samples */
	ENCODE_BOTH = 2,   /* all four types, each sample filling its own two (record) */
};

struct window_encode_options {
	enum window_encode_kind kind;
	window_sample_filter keep; /* NULL = every sample */
	void *ctx;
	const struct pprof_label *labels; /* added to every sample (service, pod, node...) */
	size_t n_labels;
	/* each stack gets its process name as root frame, kernel threads one more root above
	 * theirs (ENCODE_KERNEL_THREADS_ROOT): one service, the flame graph split by process */
	bool process_roots;
};

/* *ret_gz is malloc'd gzipped pprof. 0 or -errno. */
int window_encode_pprof_with(const struct window *w, const struct window_encode_options *opts,
			     uint8_t **ret_gz, size_t *ret_len);

/* keep NULL = every sample. extra_labels are added to every sample (service, pod, node...).
 * *ret_gz is malloc'd gzipped pprof. 0 or -errno. */
int window_encode_pprof(const struct window *w, window_sample_filter keep, void *ctx,
			const struct pprof_label *extra_labels, size_t n_extra, uint8_t **ret_gz,
			size_t *ret_len);

#endif
