// SPDX-License-Identifier: Apache-2.0
/* Unit tests for CRuby detection and naming: the offset tables (2.7-3.3, none for others), the
 * libruby installed here, String and path decoding, class names (Class#method) from ivars (by
 * table, and by object shape for 3.2) and classext fields, the VM loop found without its symbol,
 * and a version without a table (a libruby whose ruby_version says 9.9): native frames, once. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtimes/ruby/ruby_class.h"
#include "runtimes/ruby/ruby_runtime.h"
#include "runtimes/runtime_elf.h"
#include "runtimes/runtimes.h"
#include "fake_proc.h"
#include "process/process_registry.h"
#include "status/agent_metrics.h"
#include "test.h"

#define DEBIAN_LIBRUBY "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1"

TEST(tables_cover_2_7_to_3_3_only)
{
	static const unsigned minors[][2] = {{2, 7}, {3, 0}, {3, 1}, {3, 2}, {3, 3}};

	for (size_t i = 0; i < sizeof(minors) / sizeof(minors[0]); i++) {
		const struct ruby_version *v = ruby_version__find(minors[i][0], minors[i][1]);
		unsigned ver = minors[i][0] * 10 + minors[i][1];

		CHECK(v != NULL);
		if (!v)
			continue;
		CHECK_EQ_INT(v->walk.ec_cfp, 16);
		CHECK_EQ_INT(v->walk.cfp_iseq, 16);
		CHECK_EQ_INT(v->walk.cfp_ep, 32);
		/* jit_return joined in 3.1 (YJIT), __bp__ left in 3.3 */
		CHECK_EQ_INT(v->walk.cfp_size, ver == 31 || ver == 32 ? 64 : 56);
		/* 3.2 moved an embedded String's length out of its flags */
		CHECK_EQ_INT(v->str_len_in_flags, ver < 32);
		CHECK_EQ_INT(v->str_embed_data, ver < 32 ? 16 : 24);
	}
	CHECK(ruby_version__find(2, 6) == NULL);
	/* where Class#method's class name is: ivars up to 3.1 (a classext pointer at 24 whose
	 * iv_tbl is its second word), ivars by object shape in 3.2 (the classext embedded at 32,
	 * iv_ptr its first word; the VM's shape list at 376), classext fields in 3.3 */
	for (size_t i = 0; i < sizeof(minors) / sizeof(minors[0]); i++) {
		const struct ruby_version *v = ruby_version__find(minors[i][0], minors[i][1]);
		unsigned ver = minors[i][0] * 10 + minors[i][1];

		if (!v)
			continue;
		CHECK_EQ_INT(v->class_path, ver <= 31	? RUBY_CLASSPATH_IVAR
					    : ver == 32 ? RUBY_CLASSPATH_SHAPE
							: RUBY_CLASSPATH_FIELD);
		CHECK_EQ_INT(v->class_ext, ver <= 31 ? 24 : 32);
		CHECK_EQ_INT(v->ext_iv_tbl, ver <= 31 ? 8 : 0);
		CHECK_EQ_INT(v->ext_iv_ptr, 0);
		CHECK_EQ_INT(v->vm_shape_list, ver == 32 ? 376 : 0);
		CHECK_EQ_INT(ruby_class_ids__needed(v), ver <= 32);
		CHECK_EQ_INT(v->ext_classpath, ver == 33 ? 120 : 0);
		CHECK_EQ_INT(v->ext_attached, ver == 33 ? 96 : 0);
	}
	CHECK(ruby_version__find(3, 4) == NULL);
	CHECK(ruby_version__find(9, 9) == NULL);
}

TEST(installed_libruby_is_read)
{
	struct ruby_library lib;

	if (access(DEBIAN_LIBRUBY, R_OK)) {
		printf("  (skipped: " DEBIAN_LIBRUBY " not installed)\n");
		return;
	}
	CHECK_EQ_INT(ruby_library__read(DEBIAN_LIBRUBY, "libruby-3.1.so.3.1", &lib), 0);
	CHECK_EQ_INT(lib.major * 10 + lib.minor, 31);
	CHECK(lib.tls_module_slot != 0);
	CHECK(lib.exec_end > lib.exec_start);
	/* Debian strips vm_exec_core: found as rb_vm_exec's nearest callee below it */
	CHECK(lib.core_start < lib.core_end && lib.core_end <= lib.exec_start);
	CHECK(lib.exec_start - lib.core_start < (1u << 20));
}

/* build/tests/helpers/ruby_static beside this test's binary (build/tests/). */
static int helper_path(char *ret, size_t len)
{
	char self[512];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n <= 0)
		return -errno;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	snprintf(ret, len, "%s/helpers/ruby_static", self);
	return access(ret, X_OK) ? -errno : 0;
}

static struct ruby_proc attached_proc;

static int keep_attach(void *ctx, enum runtime_kind kind, pid_t pid, const void *state, size_t size)
{
	if (kind == RUNTIME_RUBY && size == sizeof(attached_proc))
		memcpy(&attached_proc, state, size);
	return 0;
}

static void keep_detach(void *ctx, enum runtime_kind kind, pid_t pid)
{
}

/* A ruby built without libruby.so: the executable defines ruby_current_ec in its own TLS,
 * reached with no module-id relocation; it is module 1 of every thread's DTV. */
TEST(a_ruby_executable_without_libruby_is_detected)
{
	struct runtime_sink sink = {.attach = keep_attach, .detach = keep_detach};
	struct ruby_library lib;
	struct runtime_elf *elf;
	uint64_t tls = 0, exec = 0, size;
	char path[600], note[256] = "";
	struct process_registry_options opts = {0};
	struct process_registry *reg;
	struct runtimes *r;
	pid_t pid;
	int err;

	if (helper_path(path, sizeof(path))) {
		printf("  (skipped: helpers/ruby_static not built)\n");
		return;
	}
	CHECK_EQ_INT(ruby_library__read(path, "ruby_static", &lib), 0);
	CHECK_EQ_INT(lib.major * 10 + lib.minor, 31);
	CHECK_EQ_INT(lib.tls_module_slot, 0);
	elf = runtime_elf__open(path);
	CHECK(elf != NULL);
	if (!elf)
		return;
	CHECK_EQ_INT(runtime_elf__symbol(elf, "ruby_current_ec", &tls, &size), 0);
	CHECK_EQ_INT(runtime_elf__symbol(elf, "rb_vm_exec", &exec, &size), 0);
	runtime_elf__close(elf);
	CHECK_EQ_INT(lib.tls_offset, tls);
	CHECK_EQ_INT(lib.exec_start, exec);
	CHECK(lib.core_start < lib.core_end && lib.cobject != 0);
	/* a libruby without the relocation is not one the walk can use */
	CHECK_EQ_INT(ruby_library__read(path, "libruby.so.3.1", &lib), -ENOENT);

	/* the running process: attached with module 1 and its own addresses */
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(null, 2);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0);
	if (pid <= 0)
		return;
	usleep(200 * 1000);
	memset(&attached_proc, 0, sizeof(attached_proc));
	opts.proc_root = "/proc";
	reg = process_registry__new(&opts);
	r = reg ? runtimes__new(&sink, reg) : NULL;
	err = r ? runtimes__capture_process(r, pid, note, sizeof(note)) : -ENOMEM;
	runtimes__free(r);
	process_registry__free(reg);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	CHECK_EQ_INT(err, 0); /* attached: not a note */
	CHECK_EQ_INT(attached_proc.tls_module, 1);
	CHECK_EQ_INT(attached_proc.tls_offset, tls);
	CHECK(attached_proc.exec_start > exec && attached_proc.exec_start - exec < (1ULL << 47));
	CHECK_EQ_INT(attached_proc.off.cfp_size, 64); /* 3.1's table */
}

TEST(the_vm_loop_is_the_nearest_call_target_below_rb_vm_exec)
{
	uint8_t code[32] = {0x55, 0xe8};
	uint64_t start = 0x253060, core = 0;
	int32_t rel;

	rel = (int32_t)(0x24ebd0 - (start + 1 + 5));
	memcpy(code + 2, &rel, 4);
	code[10] = 0xe8; /* a call further below */
	rel = (int32_t)(0x241250 - (start + 10 + 5));
	memcpy(code + 11, &rel, 4);
	code[20] = 0xe8; /* a call above: not the loop */
	rel = 0x1000;
	memcpy(code + 21, &rel, 4);
	CHECK_EQ_INT(ruby_find_core(code, start, sizeof(code), &core), 0);
	CHECK_EQ_INT(core, 0x24ebd0);
	memset(code, 0x90, sizeof(code));
	CHECK_EQ_INT(ruby_find_core(code, start, sizeof(code), &core), -ENOENT);
}

/* --- String decoding over a fake process image ----------------------------------------- */

#define IMAGE_BASE 0x10000
static uint8_t image[512];

static int read_image(void *ctx, uint64_t addr, void *buf, size_t len)
{
	if (addr < IMAGE_BASE || addr + len > IMAGE_BASE + sizeof(image))
		return -EFAULT;
	memcpy(buf, image + (addr - IMAGE_BASE), len);
	return 0;
}

static void put64(uint64_t addr, uint64_t value)
{
	memcpy(image + (addr - IMAGE_BASE), &value, sizeof(value));
}

static void put_str(uint64_t addr, const char *s)
{
	memcpy(image + (addr - IMAGE_BASE), s, strlen(s));
}

TEST(strings_decode_embedded_and_on_the_heap)
{
	const struct ruby_version *v31 = ruby_version__find(3, 1), *v32 = ruby_version__find(3, 2);
	char out[64];

	memset(image, 0, sizeof(image));
	/* 3.1 embedded: length in the flags, bytes at +16 */
	put64(IMAGE_BASE, RUBY_T_STRING | 3ULL << RUBY_STR_EMBED_LEN_SHIFT);
	put_str(IMAGE_BASE + 16, "hot");
	CHECK_EQ_INT(ruby_str_decode(v31, read_image, NULL, IMAGE_BASE, out, sizeof(out)), 0);
	CHECK_EQ_STR(out, "hot");
	/* heap: length at +16, bytes at the pointer at +24 */
	put64(IMAGE_BASE + 64, RUBY_T_STRING | RUBY_FL_USER1);
	put64(IMAGE_BASE + 80, 13);
	put64(IMAGE_BASE + 88, IMAGE_BASE + 256);
	put_str(IMAGE_BASE + 256, "caller_of_hot");
	CHECK_EQ_INT(ruby_str_decode(v31, read_image, NULL, IMAGE_BASE + 64, out, sizeof(out)), 0);
	CHECK_EQ_STR(out, "caller_of_hot");
	/* cut to fit */
	CHECK_EQ_INT(ruby_str_decode(v31, read_image, NULL, IMAGE_BASE + 64, out, 7), 0);
	CHECK_EQ_STR(out, "caller");
	/* 3.2 embedded: length at +16, bytes at +24 */
	put64(IMAGE_BASE + 128, RUBY_T_STRING);
	put64(IMAGE_BASE + 144, 5);
	put_str(IMAGE_BASE + 152, "block");
	CHECK_EQ_INT(ruby_str_decode(v32, read_image, NULL, IMAGE_BASE + 128, out, sizeof(out)), 0);
	CHECK_EQ_STR(out, "block");
	/* not a String */
	put64(IMAGE_BASE + 192, RUBY_T_ARRAY);
	CHECK_EQ_INT(ruby_str_decode(v31, read_image, NULL, IMAGE_BASE + 192, out, sizeof(out)),
		     -EINVAL);
	CHECK_EQ_INT(ruby_str_decode(v31, read_image, NULL, 0x10, out, sizeof(out)), -EFAULT);
}

TEST(paths_decode_from_a_string_or_an_array)
{
	const struct ruby_version *v = ruby_version__find(3, 1);
	char out[64];

	memset(image, 0, sizeof(image));
	put64(IMAGE_BASE, RUBY_T_STRING | 7ULL << RUBY_STR_EMBED_LEN_SHIFT);
	put_str(IMAGE_BASE + 16, "/a/b.rb");
	CHECK_EQ_INT(ruby_path_decode(v, read_image, NULL, IMAGE_BASE, out, sizeof(out)), 0);
	CHECK_EQ_STR(out, "/a/b.rb");
	/* embedded Array [path, realpath] */
	put64(IMAGE_BASE + 64, RUBY_T_ARRAY | RUBY_FL_USER1);
	put64(IMAGE_BASE + 80, IMAGE_BASE);
	CHECK_EQ_INT(ruby_path_decode(v, read_image, NULL, IMAGE_BASE + 64, out, sizeof(out)), 0);
	CHECK_EQ_STR(out, "/a/b.rb");
	/* Array on the heap: its elements at the pointer at +32 */
	put64(IMAGE_BASE + 128, RUBY_T_ARRAY);
	put64(IMAGE_BASE + 160, IMAGE_BASE + 256);
	put64(IMAGE_BASE + 256, IMAGE_BASE);
	CHECK_EQ_INT(ruby_path_decode(v, read_image, NULL, IMAGE_BASE + 128, out, sizeof(out)), 0);
	CHECK_EQ_STR(out, "/a/b.rb");
}

/* --- class names over a fake process image ------------------------------------------- */

#define CLS_BASE 0x40000
static uint8_t heap[4096];

static int read_heap(void *ctx, uint64_t addr, void *buf, size_t len)
{
	if (addr < CLS_BASE || addr + len > CLS_BASE + sizeof(heap))
		return -EFAULT;
	memcpy(buf, heap + (addr - CLS_BASE), len);
	return 0;
}

static void hput(uint64_t addr, uint64_t value)
{
	memcpy(heap + (addr - CLS_BASE), &value, sizeof(value));
}

/* An embedded 3.1 String at addr. */
static void hstr(uint64_t addr, const char *s)
{
	hput(addr, RUBY_T_STRING | (uint64_t)strlen(s) << RUBY_STR_EMBED_LEN_SHIFT);
	memcpy(heap + (addr - CLS_BASE + 16), s, strlen(s));
}

/* A 3.1 class at addr (flags, metaclass) whose classext at ext has an iv_tbl at tbl holding
 * n (key, value) entries, the first one deleted. */
static void hclass(uint64_t addr, uint64_t flags, uint64_t meta, uint64_t ext, uint64_t tbl,
		   const uint64_t (*iv)[2], size_t n)
{
	hput(addr, 0x2 | flags); /* T_CLASS */
	hput(addr + RUBY_BASIC_KLASS, meta);
	hput(addr + 24, ext);
	hput(ext + 8, tbl);
	hput(tbl + RUBY_ST_START, 0);
	hput(tbl + RUBY_ST_BOUND, n + 1);
	hput(tbl + RUBY_ST_ENTRIES, tbl + 64);
	hput(tbl + 64, ~0ULL); /* deleted: its key must not match */
	hput(tbl + 72, iv[0][0]);
	hput(tbl + 80, CLS_BASE);
	for (size_t i = 0; i < n; i++) {
		hput(tbl + 64 + (i + 1) * 24, 0x1234);
		hput(tbl + 64 + (i + 1) * 24 + 8, iv[i][0]);
		hput(tbl + 64 + (i + 1) * 24 + 16, iv[i][1]);
	}
}

/* klass is named name, and so is its metaclass meta, as a singleton. */
static void check_class_and_metaclass(int *ret_failed, const struct ruby_version *v,
				      const struct ruby_class_ids *ids, uint64_t klass,
				      uint64_t meta, const char *name)
{
	char out[64];
	bool singleton = true;

	CHECK_EQ_INT(ruby_class_name(v, ids, read_heap, NULL, klass, out, sizeof(out), &singleton),
		     0);
	CHECK_EQ_STR(out, name);
	CHECK(!singleton);
	CHECK_EQ_INT(ruby_class_name(v, ids, read_heap, NULL, meta, out, sizeof(out), &singleton),
		     0);
	CHECK_EQ_STR(out, name);
	CHECK(singleton);
}

TEST(class_names_from_ivars_2_7_to_3_1)
{
	const struct ruby_version *v = ruby_version__find(3, 1);
	const uint64_t cobject = CLS_BASE + 8, object = CLS_BASE + 0x100, meta = CLS_BASE + 0x200;
	const uint64_t cart = CLS_BASE + 0x300, cart_meta = CLS_BASE + 0x400;
	const uint64_t id_path = 0xf01, id_attached = 0xc11, id_other = 0x1e01;
	const struct ruby_class_roots roots = {.cobject = cobject};
	struct ruby_class_ids ids;
	char out[64];
	bool singleton = true;

	memset(heap, 0, sizeof(heap));
	hput(cobject, object);
	hstr(CLS_BASE + 0x800, "Object");
	hstr(CLS_BASE + 0x840, "Shop::Cart");
	hstr(CLS_BASE + 0x880, "not a path");
	/* Object: a String ivar of its own before __classpath__ */
	hclass(object, 0, meta, CLS_BASE + 0x500, CLS_BASE + 0x600,
	       (const uint64_t[][2]){{id_other, CLS_BASE + 0x880}, {id_path, CLS_BASE + 0x800}}, 2);
	hclass(meta, RUBY_FL_SINGLETON, 0, CLS_BASE + 0x520, CLS_BASE + 0x700,
	       (const uint64_t[][2]){{id_attached, object}}, 1);
	CHECK_EQ_INT(ruby_class_ids__learn(v, read_heap, NULL, &roots, &ids), 0);
	CHECK_EQ_INT(ids.classpath, id_path);
	CHECK_EQ_INT(ids.attached, id_attached);
	/* an instance method's owner, then a singleton method's (named after its class) */
	hclass(cart, 0, cart_meta, CLS_BASE + 0x540, CLS_BASE + 0x900,
	       (const uint64_t[][2]){{id_path, CLS_BASE + 0x840}}, 1);
	hclass(cart_meta, RUBY_FL_SINGLETON, 0, CLS_BASE + 0x560, CLS_BASE + 0xa00,
	       (const uint64_t[][2]){{id_attached, cart}}, 1);
	check_class_and_metaclass(ret_failed, v, &ids, cart, cart_meta, "Shop::Cart");
	/* an anonymous class (no __classpath__), IDs not learnt (for 3.2 too) */
	hput(CLS_BASE + 0x900 + 64 + 24 + 8, id_other);
	CHECK_EQ_INT(ruby_class_name(v, &ids, read_heap, NULL, cart, out, sizeof(out), &singleton),
		     -ENOENT);
	memset(&ids, 0, sizeof(ids));
	CHECK_EQ_INT(ruby_class_name(v, &ids, read_heap, NULL, cart, out, sizeof(out), &singleton),
		     -ENOTSUP);
	CHECK_EQ_INT(ruby_class_name(ruby_version__find(3, 2), &ids, read_heap, NULL, cart, out,
				     sizeof(out), &singleton),
		     -ENOTSUP);
}

/* A 3.2 class at addr: its shape id in the top half of its flags, its classext embedded at 32
 * with iv_ptr (its ivars' values, at the indexes its shapes give) first. */
static void hclass32(uint64_t addr, uint64_t flags, uint32_t shape, uint64_t meta, uint64_t iv_ptr)
{
	hput(addr, 0x2 | flags | (uint64_t)shape << RUBY_SHAPE_ID_SHIFT); /* T_CLASS */
	hput(addr + RUBY_BASIC_KLASS, meta);
	hput(addr + 32, iv_ptr);
}

/* Shape id of the list at list: {edges, edge_name, next_iv_index, capacity, type, pool, parent}. */
static void hshape(uint64_t list, uint32_t id, uint8_t type, uint64_t edge, uint32_t next_iv,
		   uint32_t parent)
{
	uint64_t at = list + (uint64_t)id * RUBY_SHAPE_SIZE;

	hput(at + RUBY_SHAPE_EDGE_NAME, edge);
	hput(at + RUBY_SHAPE_NEXT_IV, next_iv);
	heap[at - CLS_BASE + RUBY_SHAPE_TYPE] = type;
	memcpy(heap + (at - CLS_BASE) + RUBY_SHAPE_PARENT, &parent, sizeof(parent));
}

/* An embedded 3.2 String at addr: length at +16, bytes at +24. */
static void hstr32(uint64_t addr, const char *s)
{
	hput(addr, RUBY_T_STRING);
	hput(addr + 16, strlen(s));
	memcpy(heap + (addr - CLS_BASE + 24), s, strlen(s));
}

TEST(class_names_from_shape_indexed_ivars_3_2)
{
	const struct ruby_version *v = ruby_version__find(3, 2);
	const uint64_t cobject = CLS_BASE + 8, vm_ptr = CLS_BASE + 16, vm = CLS_BASE + 0x20;
	const uint64_t shapes = CLS_BASE + 0xc00, object = CLS_BASE + 0x200;
	const uint64_t meta = CLS_BASE + 0x280, cart = CLS_BASE + 0x300,
		       cart_meta = CLS_BASE + 0x380;
	const uint64_t anon = CLS_BASE + 0x400, iv = CLS_BASE + 0x500;
	const uint64_t id_path = 0xf01, id_attached = 0xc11, id_other = 0x1e01, id_frozen = 0x2a01;
	const struct ruby_class_roots roots = {.cobject = cobject, .vm = vm_ptr};
	struct ruby_class_ids ids;
	char out[64];
	bool singleton = true;

	memset(heap, 0, sizeof(heap));
	hput(cobject, object);
	hput(vm_ptr, vm);
	hput(vm + 376, shapes);
	hstr32(CLS_BASE + 0x800, "Object");
	hstr32(CLS_BASE + 0x840, "Shop::Cart");
	hstr32(CLS_BASE + 0x880, "not a path");
	/* the shape tree: the root, then one branch per class; Object's __classpath__ is its second
	 * ivar (index 1), Cart's its first under a frozen shape (which holds no ivar) */
	hshape(shapes, 0, 0, 0, 0, RUBY_SHAPE_INVALID);
	hshape(shapes, 1, RUBY_SHAPE_IVAR, id_other, 1, 0);
	hshape(shapes, 2, RUBY_SHAPE_IVAR, id_path, 2, 1);
	hshape(shapes, 3, RUBY_SHAPE_IVAR, id_attached, 1, 0);
	hshape(shapes, 4, RUBY_SHAPE_IVAR, id_path, 1, 0);
	hshape(shapes, 5, 2 /* SHAPE_FROZEN */, id_frozen, 1, 4);
	hput(iv, CLS_BASE + 0x880); /* Object: [other, classpath] */
	hput(iv + 8, CLS_BASE + 0x800);
	hput(iv + 16, object);		 /* Object's metaclass: [attached] */
	hput(iv + 24, CLS_BASE + 0x840); /* Cart: [classpath] */
	hput(iv + 32, cart);		 /* Cart's metaclass: [attached] */
	hput(iv + 40, CLS_BASE + 0x880); /* an anonymous class: [other] */
	hclass32(object, 0, 2, meta, iv);
	hclass32(meta, RUBY_FL_SINGLETON, 3, 0, iv + 16);
	hclass32(cart, 0, 5, cart_meta, iv + 24);
	hclass32(cart_meta, RUBY_FL_SINGLETON, 3, 0, iv + 32);
	hclass32(anon, 0, 1, 0, iv + 40);

	CHECK_EQ_INT(ruby_class_ids__learn(v, read_heap, NULL, &roots, &ids), 0);
	CHECK_EQ_INT(ids.classpath, id_path);
	CHECK_EQ_INT(ids.attached, id_attached);
	CHECK_EQ_INT(ids.shapes, shapes);
	check_class_and_metaclass(ret_failed, v, &ids, cart, cart_meta, "Shop::Cart");
	CHECK_EQ_INT(ruby_class_name(v, &ids, read_heap, NULL, anon, out, sizeof(out), &singleton),
		     -ENOENT);
	/* a shape chain that does not end (a corrupt or moving tree) is given up, not followed */
	hshape(shapes, 6, RUBY_SHAPE_IVAR, id_other, 1, 6);
	hclass32(anon, 0, 6, 0, iv + 40);
	CHECK_EQ_INT(ruby_class_name(v, &ids, read_heap, NULL, anon, out, sizeof(out), &singleton),
		     -ENOENT);
	/* without ruby_current_vm_ptr the IDs cannot be learnt, and names are not read */
	CHECK_EQ_INT(ruby_class_ids__learn(v, read_heap, NULL,
					   &(struct ruby_class_roots){.cobject = cobject}, &ids),
		     -ENOENT);
	CHECK_EQ_INT(ruby_class_name(v, &ids, read_heap, NULL, cart, out, sizeof(out), &singleton),
		     -ENOTSUP);
}

TEST(class_names_from_classext_fields_3_3)
{
	const struct ruby_version *v = ruby_version__find(3, 3);
	const uint64_t cart = CLS_BASE + 0x100, meta = CLS_BASE + 0x300, path = CLS_BASE + 0x800;

	memset(heap, 0, sizeof(heap));
	hput(path, RUBY_T_STRING); /* 3.2+ embedded: length at +16, bytes at +24 */
	hput(path + 16, 4);
	memcpy(heap + (path - CLS_BASE) + 24, "Cart", 4);
	hput(cart, 0x2);
	hput(cart + 32 + 120, path);
	hput(meta, 0x2 | RUBY_FL_SINGLETON);
	hput(meta + 32 + 96, cart);
	check_class_and_metaclass(ret_failed, v, NULL, cart, meta, "Cart");
}

TEST(frame_names_as_ruby_prints_them)
{
	char out[128];

	ruby_qualify("hot", "Shop::Cart", false, out, sizeof(out));
	CHECK_EQ_STR(out, "Shop::Cart#hot");
	ruby_qualify("caller_of_hot", "Shop::Cart", true, out, sizeof(out));
	CHECK_EQ_STR(out, "Shop::Cart.caller_of_hot");
	ruby_qualify("block in hot", "Object", false, out, sizeof(out));
	CHECK_EQ_STR(out, "block in Object#hot");
	ruby_qualify("block (2 levels) in spin", "Object", false, out, sizeof(out));
	CHECK_EQ_STR(out, "block (2 levels) in Object#spin");
	ruby_qualify("<main>", "", false, out, sizeof(out));
	CHECK_EQ_STR(out, "<main>");
	ruby_qualify("block in <class:Cart>", "Cart", false, out, sizeof(out));
	CHECK_EQ_STR(out, "block in <class:Cart>");
	ruby_qualify("hot", "", false, out, sizeof(out)); /* class unknown: the label */
	CHECK_EQ_STR(out, "hot");
}

/* --- a version without a table --------------------------------------------------------- */

static int n_attached;

static int count_attach(void *ctx, enum runtime_kind kind, pid_t pid, const void *state,
			size_t size)
{
	n_attached++;
	return 0;
}

static void no_detach(void *ctx, enum runtime_kind kind, pid_t pid)
{
}

/* Writes "9.9.0" over the library's ruby_version, as a corrupted read would see it. */
static int corrupt_version(const char *path)
{
	return fake_proc__overwrite_symbol(path, "ruby_version", "9.9.0", 6);
}

/* <root>/<pid>/maps names /libruby.so.9.9, found at <root>/<pid>/root/libruby.so.9.9. */
static int fake_process(const char *root, int pid)
{
	return fake_proc__make(root, pid, DEBIAN_LIBRUBY, "libruby.so.9.9", corrupt_version);
}

/* /metrics names the version without a table and counts its processes, across pipelines. */
static void check_metrics(int *ret_failed, const struct runtime_stats *st)
{
	struct agent_metrics *m = agent_metrics__new();
	struct pipeline_ruby_stats rb = {.names = *st};
	struct agent_status s;
	char *text = NULL;
	size_t len;

	CHECK(m != NULL);
	if (!m)
		return;
	rb.walk[RUBY_STAT_FRAMES] = 40;
	agent_metrics__ruby(m, &rb);
	agent_metrics__ruby_closed(m); /* a pipeline closed: its counts stay */
	rb.walk[RUBY_STAT_FRAMES] = 2;
	agent_metrics__ruby(m, &rb);
	agent_metrics__snapshot(m, &s);
	agent_metrics__free(m);
	CHECK_EQ_INT(agent_metrics__render(&s, s.started_ms, &text, &len), 0);
	CHECK(text &&
	      strstr(text, "roottrace_agent_ruby_version_without_table{version=\"9.9\"} 1"));
	CHECK(text && strstr(text, "roottrace_agent_ruby_processes_total{outcome=\"no_table\"} 6"));
	CHECK(text && strstr(text, "roottrace_agent_ruby_frames_total 42"));
	free(text);
}

TEST(a_version_without_a_table_keeps_native_frames_and_is_reported_once)
{
	struct runtime_sink sink = {.attach = count_attach, .detach = no_detach};
	char root[] = "/tmp/rt-rbver-XXXXXX", note[512] = "", cmd[700];
	struct process_registry_options opts = {0};
	struct runtime_stats st;
	struct process_registry *reg;
	struct runtimes *r;
	const char *name;

	if (access(DEBIAN_LIBRUBY, R_OK)) {
		printf("  (skipped: " DEBIAN_LIBRUBY " not installed)\n");
		return;
	}
	CHECK(mkdtemp(root) != NULL);
	for (int pid = 1; pid <= 2; pid++)
		CHECK_EQ_INT(fake_process(root, pid), 0);
	opts.proc_root = root;
	reg = process_registry__new(&opts);
	CHECK(reg != NULL);
	r = runtimes__new(&sink, reg);
	CHECK(r != NULL);
	n_attached = 0;
	CHECK_EQ_INT(runtimes__capture_process(r, 1, note, sizeof(note)), 1);
	CHECK(strstr(note, "ruby 9.9") && strstr(note, "no offset table"));
	note[0] = '\0';
	CHECK_EQ_INT(runtimes__capture_process(r, 2, note, sizeof(note)), 0); /* said once */
	CHECK_EQ_INT(runtimes__capture_process(r, 1, note, sizeof(note)), 0);
	CHECK_EQ_INT(n_attached, 0); /* no walk state: its frames stay native */
	CHECK_EQ_INT(runtimes__stats(r, RUNTIME_RUBY, &name, &st), 0);
	CHECK_EQ_STR(name, "ruby");
	CHECK_EQ_INT(st.unsupported, 3);
	CHECK_EQ_STR(st.unsupported_version, "9.9");
	CHECK_EQ_INT(st.processes_attached, 0);
	check_metrics(ret_failed, &st);
	runtimes__free(r);
	process_registry__free(reg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	CHECK_EQ_INT(system(cmd), 0);
}

TEST_MAIN("ruby-runtime", T(tables_cover_2_7_to_3_3_only), T(installed_libruby_is_read),
	  T(a_ruby_executable_without_libruby_is_detected),
	  T(the_vm_loop_is_the_nearest_call_target_below_rb_vm_exec),
	  T(strings_decode_embedded_and_on_the_heap), T(paths_decode_from_a_string_or_an_array),
	  T(class_names_from_ivars_2_7_to_3_1), T(class_names_from_shape_indexed_ivars_3_2),
	  T(class_names_from_classext_fields_3_3), T(frame_names_as_ruby_prints_them),
	  T(a_version_without_a_table_keeps_native_frames_and_is_reported_once))
