/* SPDX-License-Identifier: Apache-2.0 */
/* JIT symbol maps: /tmp/perf-PID.map as written by node --perf-basic-prof, the JVM's agents
 * and others: one "START SIZE name" line (hex numbers) per JIT-compiled function. */
#ifndef ROOTTRACE_PERFMAP_H
#define ROOTTRACE_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

struct perfmap;

/* Reads a perf map file. NULL + errno (ENOENT when there is none). */
struct perfmap *perfmap__load(const char *path);
void perfmap__free(struct perfmap *pm);

/* Name of the entry covering addr, or NULL. When entries overlap (code recompiled at a
 * reused address), the one written last wins. */
const char *perfmap__lookup(const struct perfmap *pm, uint64_t addr);

size_t perfmap__count(const struct perfmap *pm);
size_t perfmap__memory(const struct perfmap *pm);

#endif
