/* SPDX-License-Identifier: Apache-2.0 */
/* How the collector asks glibc's malloc to give memory back (malloc_policy.c). */
#ifndef ROOTTRACE_MALLOC_POLICY_H
#define ROOTTRACE_MALLOC_POLICY_H

/* Called once by `serve` before any thread starts. */
void malloc_policy__apply(void);

#endif
