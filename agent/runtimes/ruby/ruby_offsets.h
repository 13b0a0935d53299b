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
	/* A class's name (Class#method): where its classpath String is kept */
	uint8_t class_path;	/* enum ruby_class_path */
	uint16_t class_ext;	/* RClass: a pointer to its classext (IVAR), or it (SHAPE, FIELD) */
	uint16_t ext_iv_tbl;	/* IVAR: classext.iv_tbl (st_table of ID -> VALUE) */
	uint16_t ext_iv_ptr;	/* SHAPE: classext.iv_ptr (VALUE[], indexed by the shape) */
	uint16_t vm_shape_list; /* SHAPE: rb_vm_t.shape_list (rb_shape_t[], by shape id) */
	uint16_t ext_classpath; /* FIELD: classext.classpath */
	uint16_t ext_attached;	/* FIELD: classext.as.singleton_class.attached_object */
};

enum ruby_class_path {
	RUBY_CLASSPATH_NONE = 0,  /* not read */
	RUBY_CLASSPATH_IVAR = 1,  /* 2.7-3.1: ivars __classpath__ and __attached__ in an st_table */
	RUBY_CLASSPATH_FIELD = 2, /* 3.3: classext fields */
	RUBY_CLASSPATH_SHAPE = 3, /* 3.2: the same ivars, indexed by the class's object shape */
};

#define RUBY_VALUE_FLAGS 0 /* RBasic.flags: type in bits 0-4 */
#define RUBY_T_STRING 0x05
#define RUBY_T_ARRAY 0x07
#define RUBY_T_MASK 0x1f
#define RUBY_FL_USER1 (1ULL << 13)  /* RSTRING_NOEMBED, RARRAY_EMBED_FLAG */
#define RUBY_STR_EMBED_LEN_SHIFT 14 /* before 3.2: RSTRING_EMBED_LEN_MASK's shift */
#define RUBY_STR_EMBED_LEN_MASK 0x1f
#define RUBY_STR_LEN 16		       /* heap (and 3.2+ every) string: its length */
#define RUBY_STR_PTR 24		       /* heap string: its bytes */
#define RUBY_ARRAY_EMBED_DATA 16       /* embedded array: its elements */
#define RUBY_ARRAY_PTR 32	       /* heap array: its elements */
#define RUBY_BASIC_KLASS 8	       /* RBasic.klass: a class's metaclass */
#define RUBY_FL_SINGLETON (1ULL << 12) /* FL_USER0 on a singleton class, 2.7-3.3 */
/* rb_method_entry_t (2.7-3.3): flags, defined_class, def, called_id, owner */
#define RUBY_ME_DEF 16
#define RUBY_ME_OWNER 32
#define RUBY_DEF_ISEQ 8 /* rb_method_definition_t.body.iseq.iseqptr */
/* rb_iseq_constant_body.type (its first field, 2.7-3.3): ISEQ_TYPE_EVAL of enum iseq_type */
#define RUBY_BODY_TYPE 0
#define RUBY_ISEQ_TYPE_EVAL 6
/* st_table (2.7-3.1): entries_start, entries_bound, entries {hash, key, record} */
#define RUBY_ST_START 32
#define RUBY_ST_BOUND 40
#define RUBY_ST_ENTRIES 48
#define RUBY_ST_ENTRY_SIZE 24
/* Object shapes (3.2, 64-bit): a shape id in the top 32 bits of RBasic.flags indexes the VM's
 * shape list; each shape is {edges, edge_name, next_iv_index, capacity, type, size_pool_index,
 * parent_id}, and an ivar's index is its SHAPE_IVAR shape's next_iv_index - 1. */
#define RUBY_SHAPE_ID_SHIFT 32
#define RUBY_SHAPE_INVALID 0xffffffffu /* the root shape's parent */
#define RUBY_SHAPE_SIZE 32
#define RUBY_SHAPE_EDGE_NAME 8
#define RUBY_SHAPE_NEXT_IV 16
#define RUBY_SHAPE_TYPE 24
#define RUBY_SHAPE_PARENT 28
#define RUBY_SHAPE_IVAR 1 /* enum shape_type: SHAPE_ROOT, SHAPE_IVAR, SHAPE_FROZEN, ... */

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
