// SPDX-License-Identifier: Apache-2.0
/* Fuzz target: a compiled frame's inlined calls read from an nmethod that is anything (a JVM's
 * code freed and reused under the agent): the input is the JVM's memory from BASE, the frame
 * recorded in its first 16 bytes; hotspot_inline__read() must stay inside it and end. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "runtimes/hotspot/hotspot_inline.h"

#define BASE 0x10000ULL /* where the input sits in the fake JVM's memory */

struct memory {
	const uint8_t *data;
	size_t size;
};

static int read_input(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct memory *m = ctx;

	if (addr < BASE || addr - BASE > m->size || len > m->size - (addr - BASE))
		return -EFAULT;
	memcpy(buf, m->data + (addr - BASE), len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct memory m = {data, size};
	struct hotspot_reader r = {.read = read_input, .ctx = &m};
	struct hotspot_layout l;
	struct hotspot_inlined in;
	uint64_t method, where;
	int err;

	if (size < 17)
		return 0;
	memcpy(&method, data, 8);
	memcpy(&where, data + 8, 8);
	/* JDK 17's offsets (as the unit test's nmethod), the stream's encoding from the input */
	memset(&l, 0, sizeof(l));
	l.walk.low = BASE;
	l.walk.nmethod_method = 0x70;
	l.walk.blob_code_begin = 0x20;
	l.walk.blob_code_end = 0x28;
	l.walk.method_const = 8;
	l.inlining = (struct hotspot_inline_layout){
	    .ok = true,
	    .blob_size = 0x8,
	    .scopes_data = 0x78,
	    .metadata = 0x100,
	    .scopes_pcs = 0x104,
	    .dependencies = 0x108,
	    .pcdesc_size = 16,
	    .pcdesc_pc = 0,
	    .pcdesc_scope = 4,
	    .unsigned5_excluded = data[16] & 1,
	};
	err = hotspot_inline__read(&r, &l, method, where, &in);
	if ((err && in.n) || in.n > HOTSPOT_INLINE_MAX - 1)
		__builtin_trap(); /* an error leaves no chain; a chain fits its arrays */
	return 0;
}
