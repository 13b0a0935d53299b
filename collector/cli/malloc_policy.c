// SPDX-License-Identifier: Apache-2.0
/* glibc's malloc raises its mmap threshold each time a large mmapped block is freed (up to
 * 32 MiB), so after the first large upload the next ones' buffers (the inflated body, the
 * decoder's tables, the aggregate) come from the HTTP thread's own arena, and that arena keeps
 * them after they are freed. With 8 threads, 24 uploads of 20,000 stacks one after another
 * left the collector's peak RSS 137 MiB above its start; with the threshold pinned at 256 KiB
 * those buffers are mapped and unmapped each time and it stays 46 MiB above it (docs/reference.md
 * "Limits: collector"). Pinning the threshold also turns off its growth. */
#include <malloc.h>

#include "cli/malloc_policy.h"

#define MMAP_THRESHOLD_BYTES (256 << 10)

void malloc_policy__apply(void)
{
	mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES);
}
