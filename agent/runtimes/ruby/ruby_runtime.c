// SPDX-License-Identifier: Apache-2.0
/* CRuby behind the runtime interface (runtime.h): finds ruby_current_ec and the VM loop in
 * libruby, picks the version's offsets, names iseqs Class#method with their file. */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/procmem.h"
#include "runtimes/ruby/ruby_class.h"
#include "runtimes/ruby/ruby_runtime.h"
#include "runtimes/runtime_base.h"
#include "runtimes/runtime_records.h"
#include "runtimes/runtime_elf.h"

#define CORE_MAX_DISTANCE (1u << 20) /* vm_exec_core lies within 1 MiB below rb_vm_exec */
#define RUBY_EXE_TLS_MODULE 1	     /* glibc: the executable's TLS is module 1 of every DTV */

#define IDS_TRIES 8 /* times a process's class-name IDs are looked for (it may be starting) */

struct ruby_process {
	const struct ruby_version *version;
	struct ruby_class_roots
	    roots;		   /* rb_cObject (or 0) and ruby_current_vm_ptr in the process */
	struct ruby_class_ids ids; /* 2.7-3.2: learnt at the first frame with a method */
	unsigned ids_tries;
};

static int read_name(void *ctx, pid_t pid, void *proc, uint64_t iseq, uint64_t cookie,
		     struct sym_frame *ret);

static void *ruby_new(void)
{
	return runtime_base__new(sizeof(struct runtime_base), RUBY_NAME_CACHE, read_name);
}

/* libruby.so.3.1, libruby-3.1.so.3.1, or a ruby executable (ruby, ruby3.1): one built without
 * libruby.so (--disable-shared) defines ruby_current_ec itself. */
static bool ruby_wants(const char *path)
{
	return runtime_file_starts(path, (const char *const[]){"libruby", "ruby", NULL});
}

int ruby_find_core(const uint8_t *code, uint64_t start, uint64_t size, uint64_t *ret)
{
	uint64_t best = 0;

	for (uint64_t i = 0; i + 5 <= size; i++) {
		int32_t rel;
		uint64_t target;

		if (code[i] != 0xe8)
			continue;
		memcpy(&rel, code + i + 1, sizeof(rel));
		target = start + i + 5 + (int64_t)rel;
		if (target < start && start - target <= CORE_MAX_DISTANCE && target > best)
			best = target;
	}
	if (!best)
		return -ENOENT;
	*ret = best;
	return 0;
}

static void read_version(const struct runtime_elf *elf, const char *name, struct ruby_library *ret)
{
	uint64_t addr, size;
	const char *s = NULL;

	if (!runtime_elf__symbol(elf, "ruby_version", &addr, &size))
		s = runtime_elf__at(elf, addr, 8);
	if (s && sscanf(s, "%u.%u", &ret->major, &ret->minor) == 2)
		return;
	s = strstr(name, "ruby");
	if (!s || (sscanf(s, "ruby-%u.%u", &ret->major, &ret->minor) != 2 &&
		   sscanf(s, "ruby.so.%u.%u", &ret->major, &ret->minor) != 2))
		ret->major = ret->minor = 0;
}

static int read_core(const struct runtime_elf *elf, struct ruby_library *ret)
{
	uint64_t size;
	const uint8_t *code;

	if (!runtime_elf__symbol(elf, "vm_exec_core", &ret->core_start, &size) && size) {
		ret->core_end = ret->core_start + size;
		return 0;
	}
	code = runtime_elf__at(elf, ret->exec_start, ret->exec_end - ret->exec_start);
	if (!code || ruby_find_core(code, ret->exec_start, ret->exec_end - ret->exec_start,
				    &ret->core_start))
		return -ENOENT;
	ret->core_end = ret->exec_start; /* no size without the symbol: up to rb_vm_exec */
	return 0;
}

int ruby_library__read_elf(const struct runtime_elf *elf, const char *name,
			   struct ruby_library *ret)
{
	uint64_t size;
	int err;

	memset(ret, 0, sizeof(*ret));
	err = runtime_elf__symbol(elf, "ruby_current_ec", &ret->tls_offset, &size);
	if (!err &&
	    runtime_elf__reloc(elf, "ruby_current_ec", R_X86_64_DTPMOD64, &ret->tls_module_slot))
		/* no module id to ask the loader for: the executable's own TLS (local-exec),
		 * module 1; a libruby always has the relocation */
		err = strncmp(name, "libruby", 7) ? 0 : -ENOENT;
	if (!err)
		err = runtime_elf__symbol(elf, "rb_vm_exec", &ret->exec_start, &size);
	if (!err && !size)
		err = -ENOENT;
	ret->exec_end = ret->exec_start + size;
	if (!err)
		err = runtime_elf__load_base(elf, &ret->load_base);
	if (!err)
		err = read_core(elf, ret);
	read_version(elf, name, ret);
	if (runtime_elf__symbol(elf, "rb_cObject", &ret->cobject, &size))
		ret->cobject = 0; /* frames named without their class */
	if (runtime_elf__symbol(elf, "ruby_current_vm_ptr", &ret->vm_ptr, &size))
		ret->vm_ptr = 0; /* 3.2: likewise */
	return err;
}

int ruby_library__read(const char *path, const char *name, struct ruby_library *ret)
{
	struct runtime_elf *elf = runtime_elf__open(path);
	int err;

	if (!elf)
		return -errno;
	err = ruby_library__read_elf(elf, name, ret);
	runtime_elf__close(elf);
	return err;
}

static int read_binary(const struct runtime_elf *elf, const char *name, void *ret)
{
	return ruby_library__read_elf(elf, name, ret);
}

/* Hands BPF the walk state; keeps the version (and where class names start) for naming the
 * process's frames. */
static int attach(struct runtime_base *rt, const struct runtime_process *proc,
		  const struct ruby_version *v, const struct ruby_proc *walk,
		  const struct ruby_class_roots *roots, const struct runtime_sink *sink)
{
	struct ruby_process *p;
	int err;

	p = runtime_process__attach(proc, sink, RUNTIME_RUBY, walk, sizeof(*walk), sizeof(*p),
				    &rt->stats, &err);
	if (!p)
		return err;
	if (p->version != v || memcmp(&p->roots, roots, sizeof(*roots))) {
		memset(p, 0, sizeof(*p));
		p->version = v;
		p->roots = *roots;
	}
	return 1;
}

/* The walk state of a process mapping libruby from start; its TLS module id is read from the
 * process (the loader wrote it in the GOT). -EAGAIN while the slot is still 0: the loader
 * mapped libruby but has not relocated it yet (a process announced by a sample taken in
 * ld.so, the first one of a process started after the agent), to be captured again. */
static int fill_proc(pid_t pid, const struct ruby_library *lib, uint64_t start,
		     const struct ruby_version *v, struct ruby_proc *ret)
{
	uint64_t bias = start - lib->load_base;
	int err;

	memset(ret, 0, sizeof(*ret));
	ret->tls_module = RUBY_EXE_TLS_MODULE;
	err = lib->tls_module_slot ? procmem__read(pid, lib->tls_module_slot + bias,
						   &ret->tls_module, sizeof(ret->tls_module))
				   : 0;
	if (err)
		return err;
	if (!ret->tls_module)
		return -EAGAIN;
	if (ret->tls_module > 4096)
		return -ENOENT; /* not a module id */
	ret->tls_offset = lib->tls_offset;
	ret->core_start = lib->core_start + bias;
	ret->core_end = lib->core_end + bias;
	ret->exec_start = lib->exec_start + bias;
	ret->exec_end = lib->exec_end + bias;
	ret->off = v->walk;
	return 0;
}

static int ruby_capture(void *state, const struct runtime_process *proc,
			const struct runtime_sink *sink, char *note, size_t note_len)
{
	struct runtime_base *rt = state;
	const struct ruby_version *v;
	const struct ruby_library *lib;
	struct ruby_library scratch;
	struct ruby_class_roots roots;
	struct ruby_proc walk;
	const void *facts;
	uint64_t bias;
	bool launcher = false, libruby = false, starting = false;
	int err;

	for (size_t i = 0; i < proc->n_maps; i++) {
		const struct runtime_mapping *m = &proc->maps[i];
		const char *slash = strrchr(m->path, '/'), *name = slash ? slash + 1 : m->path;

		if (!ruby_wants(m->path))
			continue;
		libruby |= !strncmp(name, "libruby", 7);
		if (runtime_binary__facts(m, sizeof(scratch), read_binary, &scratch, &facts)) {
			/* a ruby executable without the interpreter: it runs libruby's */
			launcher |= strncmp(name, "libruby", 7) != 0;
			continue;
		}
		lib = facts;
		v = ruby_version__find(lib->major, lib->minor);
		if (!v)
			return runtime_base__unsupported(
			    rt, lib->major, lib->minor, "", note, note_len,
			    "ruby %u.%u (%s): no offset table, its frames stay native", lib->major,
			    lib->minor, m->path);
		err = fill_proc(proc->pid, lib, m->start, v, &walk);
		starting |= err == -EAGAIN;
		if (err)
			continue;
		bias = m->start - lib->load_base;
		roots.cobject = lib->cobject ? lib->cobject + bias : 0;
		roots.vm = lib->vm_ptr ? lib->vm_ptr + bias : 0;
		return attach(rt, proc, v, &walk, &roots, sink);
	}
	/* Caught while its loader runs (libruby not mapped or not relocated yet): the first
	 * sample of a new process is often taken in ld.so, and nothing announces it again. */
	return starting || (launcher && !libruby) ? -EAGAIN : 0;
}

static int read_pid(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return procmem__read(*(pid_t *)ctx, addr, buf, len);
}

/* The class part of a frame's name from its method entry me: "" when the version does not
 * keep it where it is read, the method is not an iseq method, or (-ESTALE) the entry no longer
 * runs an iseq that can be this frame's: its own, a block's in it (" in " in the label), or
 * code it evals (body's type: rubygems' gemspecs at every start), named as the method, as
 * Ruby's backtraces do. */
static int read_class(pid_t pid, struct ruby_process *p, uint64_t iseq, uint64_t body, uint64_t me,
		      const char *label, char *ret, size_t len, bool *ret_singleton)
{
	const struct ruby_version *v = p->version;
	uint64_t head, def, def_type, method_iseq, owner;
	uint32_t type = 0;
	int err;

	ret[0] = '\0';
	if ((err = procmem__read(pid, me, &head, sizeof(head))))
		return err;
	if (RUBY_IMEMO_TYPE(head) != RUBY_IMEMO_MENT)
		return -ESTALE;
	if ((err = procmem__read(pid, me + RUBY_ME_DEF, &def, sizeof(def))) ||
	    (err = procmem__read(pid, me + RUBY_ME_OWNER, &owner, sizeof(owner))) ||
	    (err = procmem__read(pid, def, &def_type, sizeof(def_type))))
		return err;
	if ((def_type & 0xf) != 0) /* VM_METHOD_TYPE_ISEQ: define_method blocks keep labels */
		return 0;
	if ((err = procmem__read(pid, def + RUBY_DEF_ISEQ, &method_iseq, sizeof(method_iseq))))
		return err;
	if (method_iseq != iseq && !strstr(label, " in ") &&
	    (procmem__read(pid, body + RUBY_BODY_TYPE, &type, sizeof(type)) ||
	     type != RUBY_ISEQ_TYPE_EVAL))
		return -ESTALE; /* a method frame runs its own entry's iseq */
	if (ruby_class_ids__needed(v) && !p->ids.classpath && p->roots.cobject &&
	    p->ids_tries < IDS_TRIES) {
		p->ids_tries++;
		ruby_class_ids__learn(v, read_pid, &pid, &p->roots, &p->ids);
	}
	if (ruby_class_name(v, &p->ids, read_pid, &pid, owner, ret, len, ret_singleton))
		ret[0] = '\0'; /* anonymous, or not read for this version: the label alone */
	return 0;
}

/* Reads an iseq's name and file now (frame_names_read_fn); -ESTALE when its body (or method
 * entry, for a cookie that is one) is no longer the sampled one. */
static int read_name(void *ctx, pid_t pid, void *proc, uint64_t iseq, uint64_t cookie,
		     struct sym_frame *ret)
{
	char label[SYM_NAME_MAX], klass[SYM_NAME_MAX / 2];
	uint64_t body, path_obj, label_obj;
	struct ruby_process *p = proc;
	const struct ruby_version *v;
	bool singleton = false;
	int err;

	if (!p)
		return -ENOENT;
	v = p->version;
	err = procmem__read(pid, iseq + v->walk.iseq_body, &body, sizeof(body));
	if (err)
		return err;
	if (!(cookie & RUBY_COOKIE_METHOD_ENTRY) && body != cookie)
		return -ESTALE;
	err = procmem__read(pid, body + v->body_path, &path_obj, sizeof(path_obj));
	if (!err)
		err = procmem__read(pid, body + v->body_label, &label_obj, sizeof(label_obj));
	if (!err)
		err = ruby_str_decode(v, read_pid, &pid, label_obj, label, sizeof(label));
	if (!err && ruby_path_decode(v, read_pid, &pid, path_obj, ret->file, sizeof(ret->file)))
		ret->file[0] = '\0'; /* named without its file */
	klass[0] = '\0';
	if (!err && (cookie & RUBY_COOKIE_METHOD_ENTRY))
		err = read_class(pid, p, iseq, body, cookie & ~RUBY_COOKIE_METHOD_ENTRY, label,
				 klass, sizeof(klass), &singleton);
	if (!err)
		ruby_qualify(label, klass, singleton, ret->function, sizeof(ret->function));
	return err;
}

static void ruby_name_frame(void *state, pid_t pid, void *proc, uint64_t word, uint64_t cookie,
			    struct sym_frame *ret)
{
	struct runtime_base *rt = state;

	frame_names__name(rt->names, pid, proc, word & RUBY_FRAME_ADDR_MASK, cookie, "[ruby]", ret);
}

const struct runtime_ops ruby_runtime_ops = {
    .name = "ruby",
    .kind = RUNTIME_RUBY,
    .frame_tag = RUBY_FRAME_TAG,
    .new = ruby_new,
    .free = runtime_base__free,
    .wants = ruby_wants,
    .capture = ruby_capture,
    .name_frame = ruby_name_frame,
    .stats = runtime_base__stats,
};
