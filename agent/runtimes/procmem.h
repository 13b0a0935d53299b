/* SPDX-License-Identifier: Apache-2.0 */
/* Reads another process's memory by pid (process_vm_readv): an interpreter's frames and names,
 * in any mount namespace, without stopping the process. */
#ifndef ROOTTRACE_PROCMEM_H
#define ROOTTRACE_PROCMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads len bytes at addr. 0, -EFAULT (not all mapped), -ESRCH (gone) or -errno. */
int procmem__read(pid_t pid, uint64_t addr, void *buf, size_t len);

#endif
