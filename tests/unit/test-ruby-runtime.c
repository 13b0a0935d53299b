// SPDX-License-Identifier: Apache-2.0
/* Unit tests for CRuby detection and naming: the offset tables (2.7-3.3, none for others), the
 * libruby installed here, String and path decoding, the VM loop found without its symbol, and
 * a version without a table (a libruby whose ruby_version says 9.9): native frames, once. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtimes/ruby/ruby_runtime.h"
#include "runtimes/runtime_elf.h"
#include "runtimes/runtimes.h"
#include "fake_proc.h"
#include "process/process_registry.h"
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
	struct runtime_elf *elf = runtime_elf__open(path);
	uint64_t vaddr, size, base;
	const unsigned char *at;
	long off;
	int fd, ret = -ENOENT;

	if (!elf)
		return -errno;
	if (!runtime_elf__symbol(elf, "ruby_version", &vaddr, &size) &&
	    !runtime_elf__load_base(elf, &base) && (at = runtime_elf__at(elf, vaddr, 6))) {
		off = (long)(at - (const unsigned char *)runtime_elf__at(elf, base, 1));
		fd = open(path, O_WRONLY);
		ret = fd >= 0 && pwrite(fd, "9.9.0", 6, off) == 6 ? 0 : -EIO;
		if (fd >= 0)
			close(fd);
	}
	runtime_elf__close(elf);
	return ret;
}

/* <root>/<pid>/maps names /libruby.so.9.9, found at <root>/<pid>/root/libruby.so.9.9. */
static int fake_process(const char *root, int pid)
{
	return fake_proc__make(root, pid, DEBIAN_LIBRUBY, "libruby.so.9.9", corrupt_version);
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
	runtimes__free(r);
	process_registry__free(reg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	CHECK_EQ_INT(system(cmd), 0);
}

TEST_MAIN("ruby-runtime", T(tables_cover_2_7_to_3_3_only), T(installed_libruby_is_read),
	  T(the_vm_loop_is_the_nearest_call_target_below_rb_vm_exec),
	  T(strings_decode_embedded_and_on_the_heap), T(paths_decode_from_a_string_or_an_array),
	  T(a_version_without_a_table_keeps_native_frames_and_is_reported_once))
