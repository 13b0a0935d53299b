// SPDX-License-Identifier: Apache-2.0
/* Reads another process's memory by pid (process_vm_readv): an interpreter's frames and names,
 * in any mount namespace, without stopping the process. */
#include <errno.h>
#include <sys/uio.h>

#include "runtimes/procmem.h"

int procmem__read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	ssize_t got;

	if (!len)
		return 0;
	got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (got < 0)
		return -errno;
	return (size_t)got == len ? 0 : -EFAULT; /* a partial read: the range crosses a hole */
}
