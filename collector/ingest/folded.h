/* SPDX-License-Identifier: Apache-2.0 */
/* The folded ("collapsed") stack format: one line per stack, `root;caller;leaf <value>`,
 * as Pyroscope's SDKs and flamegraph.pl write it. Pure parsing: lines in, stacks out. */
#ifndef ROOTTRACE_FOLDED_H
#define ROOTTRACE_FOLDED_H

#include <stddef.h>
#include <stdint.h>

#define FOLDED_MAX_FRAMES 4096 /* as PPROF_MAX_FRAMES: a deeper stack is refused, not cut */

/* Called once per stack: frames leaf first (pprof order), valid during the call only. A
 * non-zero return stops the parse and is returned by folded_parse(). */
typedef int (*folded_stack_fn)(void *ctx, const char *const *frames_leaf_first, size_t n_frames,
			       int64_t value);

/* Parses text (not NUL-terminated). Blank lines are skipped; "\r\n" ends a line too. Each
 * line's value is the non-negative integer after its last space; frames are separated by
 * ';' and an empty frame is "[unknown]". 0, the callback's error, -ENOMEM, or -EINVAL with
 * a reason in err ("line 3 has no value after its stack"). */
int folded_parse(const char *text, size_t len, folded_stack_fn fn, void *ctx, char *err,
		 size_t err_len);

#endif
