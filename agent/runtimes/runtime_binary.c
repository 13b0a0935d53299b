// SPDX-License-Identifier: Apache-2.0
/* What a runtime reads of an interpreter binary (its symbols' addresses, its version), read
 * once per binary through the registry's open file and kept on the binary for every process. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "process/binary.h"
#include "runtimes/runtime_binary.h"

/* One kept block: read's result, then the facts. */
struct kept {
	int err;
	_Alignas(16) unsigned char facts[];
};

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

int runtime_binary__facts(const struct runtime_mapping *m, size_t size, runtime_binary_read_fn read,
			  void *scratch, const void **ret_facts)
{
	struct kept *k = m->facts ? *m->facts : NULL;
	struct runtime_elf *elf;
	int err;

	if (k) {
		*ret_facts = k->facts;
		return k->err;
	}
	*ret_facts = NULL;
	elf = runtime_elf__open_fd(m->bin->fd);
	if (!elf)
		return -errno;
	memset(scratch, 0, size);
	err = read(elf, base_name(m->path), scratch);
	runtime_elf__close(elf);
	*ret_facts = scratch;
	/* kept for the next process (out of memory: it reads the file again) */
	k = m->facts ? malloc(sizeof(*k) + size) : NULL;
	if (k) {
		k->err = err;
		memcpy(k->facts, scratch, size);
		*m->facts = k;
		*ret_facts = k->facts;
	}
	return err;
}
