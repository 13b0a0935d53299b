// SPDX-License-Identifier: Apache-2.0
/* What a runtime keeps on the process registry's records: a binary's facts (symbols' addresses,
 * version), read once through its open file for every process; a process's attached state. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "process/binary.h"
#include "runtimes/runtime_records.h"

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

void *runtime_process__attach(const struct runtime_process *proc, const struct runtime_sink *sink,
			      enum runtime_kind kind, const void *walk, size_t walk_size,
			      size_t state_size, struct runtime_stats *stats, int *ret_err)
{
	void *state;
	int err = sink->attach(sink->ctx, kind, proc->pid, walk, walk_size);

	if (err) {
		stats->attach_failed++;
		*ret_err = err;
		return NULL;
	}
	state = proc->state ? *proc->state : NULL;
	if (state) /* captured again (same image): not counted twice */
		return state;
	state = proc->state ? calloc(1, state_size) : NULL;
	if (!state) {
		sink->detach(sink->ctx, kind, proc->pid);
		*ret_err = -ENOMEM;
		return NULL;
	}
	*proc->state = state;
	stats->processes_attached++;
	return state;
}
