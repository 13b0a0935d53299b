/* SPDX-License-Identifier: Apache-2.0 */
/* CRuby class names read from a process's memory: a method entry's owner class by its
 * classpath ("Foo::Bar"), singleton classes by the class they belong to, and the frame name. */
#ifndef ROOTTRACE_RUBY_CLASS_H
#define ROOTTRACE_RUBY_CLASS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtimes/ruby/ruby_offsets.h"

#define RUBY_IVARS_MAX 64 /* ivars of a class looked through for its classpath */

/* 2.7-3.2 keep a class's name in ivars whose IDs are interned at start: learnt per process. */
struct ruby_class_ids {
	uint64_t classpath; /* ID of __classpath__ */
	uint64_t attached;  /* ID of __attached__ */
	uint64_t shapes;    /* 3.2: the VM's shape list, where a class's ivars get their index */
};

/* Where a process keeps what learning the IDs starts from (addresses of libruby's variables). */
struct ruby_class_roots {
	uint64_t cobject; /* rb_cObject */
	uint64_t vm;	  /* ruby_current_vm_ptr (3.2: for the shape list), or 0 */
};

/* Learns the IDs from Object (its __classpath__ is "Object") and its metaclass (attached to
 * Object). 0, -ENOENT or the reader's error. */
int ruby_class_ids__learn(const struct ruby_version *v, ruby_read_fn read, void *ctx,
			  const struct ruby_class_roots *roots, struct ruby_class_ids *ret);

/* Whether the version's class names need ruby_class_ids (ivars, by table or by shape). */
bool ruby_class_ids__needed(const struct ruby_version *v);

/* The classpath of klass into ret; a singleton class is named after the class it belongs to
 * and *ret_singleton set. ids: for versions that keep names in ivars (2.7-3.2). 0, -ENOTSUP
 * (the version's names are not read, or the IDs not learnt), -ENOENT (anonymous) or the
 * reader's error. */
int ruby_class_name(const struct ruby_version *v, const struct ruby_class_ids *ids,
		    ruby_read_fn read, void *ctx, uint64_t klass, char *ret, size_t len,
		    bool *ret_singleton);

/* A frame's name from its iseq label and its method's class, as Ruby 3.4 prints them: "hot"
 * -> "Foo#hot" (or "Foo.hot" for a singleton method), "block in hot" -> "block in Foo#hot";
 * labels of no method ("<main>", "block in <class:Foo>") stay as they are. */
void ruby_qualify(const char *label, const char *class_name, bool singleton, char *ret, size_t len);

#endif
