// SPDX-License-Identifier: Apache-2.0
/* CRuby 2.7-3.3 structure offsets from each version's vm_core.h, iseq.h and rstring.h (x86-64,
 * release builds), and the String decoding that naming needs. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "runtimes/ruby/ruby_offsets.h"

/* rb_execution_context_t starts vm_stack, vm_stack_size, cfp in every version; rb_iseq_t
 * is flags, wrapper, body; a control frame is pc, sp, iseq, self, ep, block_code, then
 * __bp__ (2.7-3.2) and jit_return (3.1+, YJIT; verified on 3.1). location sits after type,
 * iseq_size, iseq_encoded and the 48-byte param struct. */
#define WALK(frame_size)                                                                           \
	{                                                                                          \
		.ec_vm_stack = 0, .ec_vm_stack_size = 8, .ec_cfp = 16, .cfp_size = (frame_size),   \
		.cfp_iseq = 16, .cfp_ep = 32, .iseq_body = 16, .body_encoded = 8,                  \
	}

/* Class names: up to 3.1 RClass holds a pointer to its classext (after flags, klass, super)
 * whose second field is iv_tbl, where __classpath__ and __attached__ are ivars (verified on
 * 3.1); 3.2 embeds the classext at 32 (variable-width allocation: RClass is flags, klass,
 * super, m_tbl) and keeps the same ivars in its first field, iv_ptr, at the indexes the class's
 * shape gives (internal/class.h, shape.h); rb_vm_t.shape_list sits at 376 in every 3.2.x
 * (vm_core.h: after the ractor, waitpid and special_exceptions fields); 3.3 embeds the classext
 * at 32 with classpath and attached_object fields. */
#define IVAR_NAMES .class_path = RUBY_CLASSPATH_IVAR, .class_ext = 24, .ext_iv_tbl = 8
#define SHAPE_NAMES                                                                                \
	.class_path = RUBY_CLASSPATH_SHAPE, .class_ext = 32, .ext_iv_ptr = 0, .vm_shape_list = 376
#define FIELD_NAMES                                                                                \
	.class_path = RUBY_CLASSPATH_FIELD, .class_ext = 32, .ext_classpath = 120,                 \
	.ext_attached = 96

static const struct ruby_version versions[] = {
    {2, 7, WALK(56), 64, 80, true, 16, IVAR_NAMES},
    {3, 0, WALK(56), 64, 80, true, 16, IVAR_NAMES},
    {3, 1, WALK(64), 64, 80, true, 16, IVAR_NAMES},
    {3, 2, WALK(64), 64, 80, false, 24, SHAPE_NAMES},
    {3, 3, WALK(56), 64, 80, false, 24, FIELD_NAMES},
};

const struct ruby_version *ruby_version__find(unsigned major, unsigned minor)
{
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		if (versions[i].major == major && versions[i].minor == minor)
			return &versions[i];
	return NULL;
}

const struct ruby_version *ruby_version__all(size_t *ret_n)
{
	*ret_n = sizeof(versions) / sizeof(versions[0]);
	return versions;
}

int ruby_str_decode(const struct ruby_version *v, ruby_read_fn read, void *ctx, uint64_t addr,
		    char *ret, size_t len)
{
	uint64_t head[4], n, data;
	int err;

	if (!len)
		return -EINVAL;
	err = read(ctx, addr, head, sizeof(head));
	if (err)
		return err;
	if ((head[0] & RUBY_T_MASK) != RUBY_T_STRING)
		return -EINVAL;
	if (head[0] & RUBY_FL_USER1) { /* on the heap */
		n = head[RUBY_STR_LEN / 8];
		data = head[RUBY_STR_PTR / 8];
	} else {
		n = v->str_len_in_flags
			? head[0] >> RUBY_STR_EMBED_LEN_SHIFT & RUBY_STR_EMBED_LEN_MASK
			: head[RUBY_STR_LEN / 8];
		data = addr + v->str_embed_data;
	}
	if (n >= len)
		n = len - 1;
	err = n ? read(ctx, data, ret, n) : 0;
	if (err)
		return err;
	ret[n] = '\0';
	return strlen(ret) == n ? 0 : -EINVAL; /* a NUL inside: not a name */
}

int ruby_path_decode(const struct ruby_version *v, ruby_read_fn read, void *ctx, uint64_t addr,
		     char *ret, size_t len)
{
	uint64_t head[5];
	int err;

	err = read(ctx, addr, head, sizeof(head));
	if (err)
		return err;
	if ((head[0] & RUBY_T_MASK) == RUBY_T_ARRAY) {
		if (head[0] & RUBY_FL_USER1)
			addr = head[RUBY_ARRAY_EMBED_DATA / 8];
		else if ((err = read(ctx, head[RUBY_ARRAY_PTR / 8], &addr, sizeof(addr))))
			return err;
	}
	return ruby_str_decode(v, read, ctx, addr, ret, len);
}
