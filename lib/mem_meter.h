/* SPDX-License-Identifier: Apache-2.0 */
/* A caller's say over what a decoder holds: asked before the decoder's memory grows, with
 * `bytes` the decoder's whole holding after the growth (of that buffer or arena); 0 lets it
 * grow, a negative errno stops the decode with that error. Used by gzip.c (the inflated
 * buffer) and pprof_stream.c (the scratch arena messages are unpacked into). */
#ifndef ROOTTRACE_MEM_METER_H
#define ROOTTRACE_MEM_METER_H

#include <stddef.h>

struct mem_meter {
	int (*reserve)(void *ctx, size_t bytes);
	void *ctx;
};

#endif
