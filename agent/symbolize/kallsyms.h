/* SPDX-License-Identifier: Apache-2.0 */
/* Kernel symbols from /proc/kallsyms: a sorted array and a binary search. Non-text symbols
 * are kept as boundaries (unnamed) so an address past a function's text is not named. */
#ifndef ROOTTRACE_KALLSYMS_H
#define ROOTTRACE_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

struct kallsyms;

/* Reads a kallsyms-format file. NULL + errno; EPERM when every address reads as zero
 * (kptr_restrict hides them from this user). */
struct kallsyms *kallsyms__load(const char *path);
void kallsyms__free(struct kallsyms *ks);

/* Name of the kernel function holding addr, or NULL. Without sizes, a function extends
 * to the next symbol; past the last symbol nothing is named. ret_module (optional) gets
 * the module name ("" for the core kernel). */
const char *kallsyms__lookup(const struct kallsyms *ks, uint64_t addr, const char **ret_module);

size_t kallsyms__count(const struct kallsyms *ks);
size_t kallsyms__memory(const struct kallsyms *ks);

#endif
