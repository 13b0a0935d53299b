/* SPDX-License-Identifier: Apache-2.0 */
/* CRuby 2.7-3.3 structure offsets (x86-64, release builds), one table per minor version: what
 * the BPF walk reads (struct ruby_offsets) and what naming reads (iseq body, String, Array). */
#ifndef ROOTTRACE_RUBY_OFFSETS_H
#define ROOTTRACE_RUBY_OFFSETS_H

#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>

#include "ruby_frames.h"

struct ruby_version {
	uint8_t major, minor;
	struct ruby_offsets walk; /* handed to BPF */
	/* rb_iseq_constant_body.location */
	uint16_t body_path;  /* location.pathobj: a String, or an Array [path, realpath] */
	uint16_t body_label; /* location.label: "hot", "block in hot", "<main>" */
	/* RString: before 3.2 the length of an embedded string is in its flags */
	bool str_len_in_flags;
	uint16_t str_embed_data; /* where an embedded string's bytes start */
};

#define RUBY_VALUE_FLAGS 0 /* RBasic.flags: type in bits 0-4 */
#define RUBY_T_STRING 0x05
#define RUBY_T_ARRAY 0x07
#define RUBY_T_MASK 0x1f
#define RUBY_FL_USER1 (1ULL << 13)  /* RSTRING_NOEMBED, RARRAY_EMBED_FLAG */
#define RUBY_STR_EMBED_LEN_SHIFT 14 /* before 3.2: RSTRING_EMBED_LEN_MASK's shift */
#define RUBY_STR_EMBED_LEN_MASK 0x1f
#define RUBY_STR_LEN 16		 /* heap (and 3.2+ every) string: its length */
#define RUBY_STR_PTR 24		 /* heap string: its bytes */
#define RUBY_ARRAY_EMBED_DATA 16 /* embedded array: its elements */
#define RUBY_ARRAY_PTR 32	 /* heap array: its elements */

/* The table for major.minor, or NULL: a version without one keeps native frames. */
const struct ruby_version *ruby_version__find(unsigned major, unsigned minor);

/* The versions with a table, lowest first (for the docs and tests). */
const struct ruby_version *ruby_version__all(size_t *ret_n);

/* Reads len bytes at addr of the named process (procmem__read, or a test's buffer). */
typedef int (*ruby_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* Decodes the String at addr (embedded or not) into ret, NUL-terminated, cut to fit len. 0,
 * -EINVAL (not a String) or the reader's error. */
int ruby_str_decode(const struct ruby_version *v, ruby_read_fn read, void *ctx, uint64_t addr,
		    char *ret, size_t len);

/* The file of an iseq's location.pathobj (a String, or the first String of an Array). */
int ruby_path_decode(const struct ruby_version *v, ruby_read_fn read, void *ctx, uint64_t addr,
		     char *ret, size_t len);

#endif
