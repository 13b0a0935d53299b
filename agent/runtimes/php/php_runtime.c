// SPDX-License-Identifier: Apache-2.0
/* PHP behind the runtime interface (runtime.h): finds executor_globals and execute_ex in the
 * interpreter binary or libphp, picks the version's offsets, names zend_functions. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/php/php_runtime.h"
#include "runtimes/procmem.h"
#include "runtimes/runtime_base.h"
#include "runtimes/runtime_records.h"
#include "runtimes/runtime_elf.h"

#define VERSION_MARK "X-Powered-By: PHP/"

struct php_process {
	const struct php_version *version;
};

static int read_name(void *ctx, pid_t pid, void *proc, uint64_t func, uint64_t cookie,
		     struct sym_frame *ret);

static void *php_new(void)
{
	return runtime_base__new(sizeof(struct runtime_base), PHP_NAME_CACHE, read_name);
}

/* php8.2, php-fpm8.2, php-cgi8.2, or the embed/Apache library libphp.so / libphp8.so. */
static bool php_wants(const char *path)
{
	return runtime_file_starts(path, (const char *const[]){"php", "libphp", NULL});
}

int php_version_from_image(const void *image, size_t size, unsigned *ret_major, unsigned *ret_minor)
{
	const char *at = memmem(image, size, VERSION_MARK, strlen(VERSION_MARK));
	char text[16];
	size_t left;

	if (!at)
		return -ENOENT;
	at += strlen(VERSION_MARK);
	left = (const char *)image + size - at;
	snprintf(text, sizeof(text), "%.*s",
		 (int)(left < sizeof(text) - 1 ? left : sizeof(text) - 1), at);
	if (sscanf(text, "%u.%u", ret_major, ret_minor) != 2)
		return -ENOENT;
	return 0;
}

static int32_t rel32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

int64_t php_decode_is_executing(const uint8_t *code, size_t len, uint64_t fn, uint64_t eg)
{
	uint64_t target;

	/* cmpq $0x0, disp32(%rip): 48 83 3d rel32 00 */
	if (len >= 8 && code[0] == 0x48 && code[1] == 0x83 && code[2] == 0x3d && code[7] == 0) {
		target = fn + 8 + rel32(code + 3);
		return target >= eg && target - eg < 4096 ? (int64_t)(target - eg) : -1;
	}
	/* lea rel32(%rip), %reg (48 8d, modrm 00 reg 101), then cmpq $0x0, disp32(%reg)
	 * (48 83, modrm 10 111 reg, disp32, 00; the rsp base would need a SIB byte) */
	if (len >= 15 && code[0] == 0x48 && code[1] == 0x8d && (code[2] & 0xc7) == 0x05 &&
	    fn + 7 + rel32(code + 3) == eg && code[7] == 0x48 && code[8] == 0x83 &&
	    code[9] == (0x80 | 0x38 | ((code[2] >> 3) & 7)) && ((code[2] >> 3) & 7) != 4 &&
	    code[14] == 0) {
		int32_t disp = rel32(code + 10);

		return disp >= 0 && disp < 4096 ? disp : -1;
	}
	return -1;
}

static int64_t read_eg_offset(const struct runtime_elf *elf, uint64_t eg)
{
	uint64_t fn, size;
	const uint8_t *code;

	if (runtime_elf__symbol(elf, "zend_is_executing", &fn, &size) || size < 15)
		return -1;
	code = runtime_elf__at(elf, fn, 15);
	return code ? php_decode_is_executing(code, 15, fn, eg) : -1;
}

int php_binary__read_elf(const struct runtime_elf *elf, struct php_binary *ret)
{
	uint64_t size;
	const void *image;
	size_t image_size;
	int err;

	memset(ret, 0, sizeof(*ret));
	err = runtime_elf__symbol(elf, "executor_globals", &ret->executor_globals, &size);
	if (!err)
		err = runtime_elf__symbol(elf, "execute_ex", &ret->exec_start, &size);
	if (!err && !size)
		err = -ENOENT;
	if (!err)
		err = runtime_elf__load_base(elf, &ret->load_base);
	ret->eg_current_execute_data = err ? -1 : read_eg_offset(elf, ret->executor_globals);
	if (err)
		return err;
	ret->exec_end = ret->exec_start + size;
	image = runtime_elf__image(elf, &image_size);
	if (php_version_from_image(image, image_size, &ret->major, &ret->minor))
		ret->major = ret->minor = 0;
	return 0;
}

int php_binary__read(const char *path, struct php_binary *ret)
{
	struct runtime_elf *elf = runtime_elf__open(path);
	int err;

	if (!elf)
		return -errno;
	err = php_binary__read_elf(elf, ret);
	runtime_elf__close(elf);
	return err;
}

static int read_binary(const struct runtime_elf *elf, const char *name, void *ret)
{
	return php_binary__read_elf(elf, ret);
}

/* Hands BPF the walk state; keeps the version for naming the process's frames. */
static int attach(struct runtime_base *rt, const struct runtime_process *proc,
		  const struct php_version *v, const struct php_proc *walk,
		  const struct runtime_sink *sink)
{
	struct php_process *p;
	int err;

	p = runtime_process__attach(proc, sink, RUNTIME_PHP, walk, sizeof(*walk), sizeof(*p),
				    &rt->stats, &err);
	if (!p)
		return err;
	p->version = v;
	return 1;
}

static int php_capture(void *state, const struct runtime_process *proc,
		       const struct runtime_sink *sink, char *note, size_t note_len)
{
	struct runtime_base *rt = state;
	const struct php_version *v;
	const struct php_binary *b;
	struct php_binary scratch;
	struct php_proc walk;
	const void *facts;
	uint64_t bias;

	for (size_t i = 0; i < proc->n_maps; i++) {
		const struct runtime_mapping *m = &proc->maps[i];

		if (!php_wants(m->path))
			continue;
		if (runtime_binary__facts(m, sizeof(scratch), read_binary, &scratch, &facts))
			continue; /* a php-named file that is not the interpreter */
		b = facts;
		v = php_version__find(b->major, b->minor);
		if (!v)
			return runtime_base__unsupported(
			    rt, b->major, b->minor, "", note, note_len,
			    "php %u.%u (%s): no offset table, its frames stay native", b->major,
			    b->minor, m->path);
		if (b->eg_current_execute_data >= 0 &&
		    b->eg_current_execute_data != v->walk.eg_current_execute_data)
			return runtime_base__unsupported(
			    rt, b->major, b->minor, "?", note, note_len,
			    "php %u.%u (%s): its code reads current_execute_data at %lld, the "
			    "table "
			    "says %u (another build's layout), its frames stay native",
			    b->major, b->minor, m->path, (long long)b->eg_current_execute_data,
			    v->walk.eg_current_execute_data);
		bias = m->start - b->load_base;
		memset(&walk, 0, sizeof(walk));
		walk.current_execute_data =
		    b->executor_globals + bias + v->walk.eg_current_execute_data;
		walk.exec_start = b->exec_start + bias;
		walk.exec_end = b->exec_end + bias;
		walk.off = v->walk;
		return attach(rt, proc, v, &walk, sink);
	}
	return 0;
}

static int read_pid(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return procmem__read(*(pid_t *)ctx, addr, buf, len);
}

/* Reads a zend_function's names now (frame_names_read_fn); -ESTALE when its cookie is no
 * longer the sampled one. */
static int read_name(void *ctx, pid_t pid, void *proc, uint64_t func, uint64_t cookie,
		     struct sym_frame *ret)
{
	const struct php_process *p = proc;

	if (!p)
		return -ENOENT;
	return php_function_decode(p->version, read_pid, &pid, func, cookie, ret->function,
				   sizeof(ret->function), ret->file, sizeof(ret->file));
}

static void php_name_frame(void *state, pid_t pid, void *proc, uint64_t word, uint64_t cookie,
			   struct sym_frame *ret)
{
	struct runtime_base *rt = state;

	frame_names__name(rt->names, pid, proc, word & PHP_FRAME_ADDR_MASK, cookie, "[php]", ret);
}

const struct runtime_ops php_runtime_ops = {
    .name = "php",
    .kind = RUNTIME_PHP,
    .frame_tag = PHP_FRAME_TAG,
    .new = php_new,
    .free = runtime_base__free,
    .wants = php_wants,
    .capture = php_capture,
    .name_frame = php_name_frame,
    .stats = runtime_base__stats,
};
