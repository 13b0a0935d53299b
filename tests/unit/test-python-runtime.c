// SPDX-License-Identifier: Apache-2.0
/* Unit tests for CPython detection and naming: the offset tables (3.8-3.13, none for others),
 * the interpreter binaries installed here, str decoding, module names, and a version without a
 * table (a binary whose Py_Version is corrupted to 3.99): native frames, reported once. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtimes/python/python_names.h"
#include "runtimes/python/python_runtime.h"
#include "runtimes/runtime_elf.h"
#include "fake_proc.h"
#include "process/process_registry.h"
#include "runtimes/runtimes.h"
#include "test.h"

#define DEBIAN_PYTHON "/usr/bin/python3.11"
#define PYENV "/root/.pyenv/versions"

TEST(tables_cover_3_8_to_3_13_only)
{
	for (unsigned minor = 8; minor <= 13; minor++) {
		const struct python_version *v = python_version__find(3, minor);

		CHECK(v != NULL);
		if (!v)
			continue;
		CHECK_EQ_INT(v->minor, minor);
		CHECK(v->walk.layout == (minor <= 10   ? PYTHON_LAYOUT_FRAME_OBJECT
					 : minor == 11 ? PYTHON_LAYOUT_IS_ENTRY
						       : PYTHON_LAYOUT_CSTACK_OWNER));
		/* 3.11 added co_qualname; 3.12 dropped wstr from str objects */
		CHECK_EQ_INT(v->co_qualname != PYTHON_NO_OFFSET, minor >= 11);
		CHECK_EQ_INT(v->str_ascii_data, minor >= 12 ? 40 : 48);
		CHECK_EQ_INT(v->walk.cframe_current != PYTHON_NO_OFFSET,
			     minor == 11 || minor == 12);
	}
	CHECK(python_version__find(3, 7) == NULL);
	CHECK(python_version__find(3, 14) == NULL);
	CHECK(python_version__find(3, 99) == NULL);
	CHECK(python_version__find(2, 7) == NULL);
}

TEST(version_from_file_names)
{
	unsigned major = 0, minor = 0;

	CHECK_EQ_INT(python_version_from_name("libpython3.8.so.1.0", &major, &minor), 0);
	CHECK_EQ_INT(major * 100 + minor, 308);
	CHECK_EQ_INT(python_version_from_name("python3.12", &major, &minor), 0);
	CHECK_EQ_INT(major * 100 + minor, 312);
	CHECK_EQ_INT(python_version_from_name("python", &major, &minor), -ENOENT);
}

static void check_binary(int *ret_failed, const char *path, unsigned minor)
{
	const char *name = strrchr(path, '/') + 1;
	struct python_binary b;

	if (access(path, R_OK)) {
		printf("  (skipped: %s not installed)\n", path);
		return;
	}
	CHECK_EQ_INT(python_binary__read(path, name, &b), 0);
	CHECK_EQ_INT(b.major * 100 + b.minor, 300 + minor);
	CHECK(b.runtime != 0);
	CHECK(b.eval_end[0] > b.eval_start[0] && b.eval_start[0] != 0);
}

TEST(installed_interpreters_are_read)
{
	static const char *const pyenv[] = {"3.8.18", "3.9.18", "3.10.13",
					    "3.11.7", "3.12.1", "3.13.0"};
	char path[256];

	check_binary(ret_failed, DEBIAN_PYTHON, 11);
	for (unsigned i = 0; i < sizeof(pyenv) / sizeof(pyenv[0]); i++) {
		snprintf(path, sizeof(path), PYENV "/%s/lib/libpython3.%u.so.1.0", pyenv[i], 8 + i);
		check_binary(ret_failed, path, 8 + i);
	}
}

TEST(the_3_13_table_agrees_with_the_interpreters_own_debug_offsets)
{
	const char *path = PYENV "/3.13.0/lib/libpython3.13.so.1.0";
	const struct python_version *v = python_version__find(3, 13);
	struct python_binary b;

	if (access(path, R_OK)) {
		printf("  (skipped: %s not installed)\n", path);
		return;
	}
	CHECK_EQ_INT(python_binary__read(path, "libpython3.13.so.1.0", &b), 0);
	CHECK(b.has_debug_offsets);
	CHECK_EQ_INT(b.debug.version >> 16, 0x030d);
	CHECK_EQ_INT(python_version__check(v, &b.debug), 0);
	b.debug.free_threaded = 1; /* a free-threaded build's layout is not the table's */
	CHECK_EQ_INT(python_version__check(v, &b.debug), -EPROTO);
	b.debug.free_threaded = 0;
	b.debug.tstate_current_frame += 8;
	CHECK_EQ_INT(python_version__check(v, &b.debug), -EPROTO);
	/* before 3.13 there are none */
	path = PYENV "/3.12.1/lib/libpython3.12.so.1.0";
	if (!access(path, R_OK)) {
		CHECK_EQ_INT(python_binary__read(path, "libpython3.12.so.1.0", &b), 0);
		CHECK(!b.has_debug_offsets);
	}
}

TEST(a_binary_without_py_runtime_is_not_the_interpreter)
{
	struct python_binary b;

	CHECK_EQ_INT(python_binary__read("/bin/sh", "python3.11", &b), -ENOENT);
	CHECK_EQ_INT(python_binary__read("/nonexistent/python3.11", "python3.11", &b), -ENOENT);
}

/* A fake process memory: str objects at known addresses. */
struct fake_memory {
	uint64_t base;
	unsigned char bytes[512];
};

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct fake_memory *m = ctx;

	if (addr < m->base || addr - m->base + len > sizeof(m->bytes))
		return -EFAULT;
	memcpy(buf, m->bytes + (addr - m->base), len);
	return 0;
}

/* A compact str of kind/ascii with n characters at data (already encoded). */
static void put_str(struct fake_memory *m, const struct python_version *v, unsigned kind, int ascii,
		    const void *data, int64_t n)
{
	memset(m->bytes, 0, sizeof(m->bytes));
	memcpy(m->bytes + PYTHON_STR_LENGTH, &n, sizeof(n));
	m->bytes[PYTHON_STR_STATE] = kind << 2 | 1 << 5 | (ascii ? 1 << 6 : 0);
	memcpy(m->bytes + (ascii ? v->str_ascii_data : v->str_compact_data), data, n * kind);
}

TEST(str_objects_decode_to_utf8)
{
	const struct python_version *v11 = python_version__find(3, 11);
	const struct python_version *v12 = python_version__find(3, 12);
	struct fake_memory m = {.base = 0x10000};
	const uint16_t ucs2[] = {0x3b1, 0x3b2};	    /* αβ */
	const uint32_t ucs4[] = {0x1f600, 'x'};	    /* 😀x */
	const unsigned char latin1[] = {0xe9, 't'}; /* ét */
	char out[64];

	put_str(&m, v11, 1, 1, "Worker.run", 10);
	CHECK_EQ_INT(python_str_decode(v11, fake_read, &m, m.base, out, sizeof(out)), 0);
	CHECK_EQ_STR(out, "Worker.run");
	put_str(&m, v12, 1, 1, "hot", 3); /* 3.12: characters 8 bytes earlier */
	CHECK_EQ_INT(python_str_decode(v12, fake_read, &m, m.base, out, sizeof(out)), 0);
	CHECK_EQ_STR(out, "hot");
	put_str(&m, v11, 1, 0, latin1, 2);
	CHECK_EQ_INT(python_str_decode(v11, fake_read, &m, m.base, out, sizeof(out)), 0);
	CHECK_EQ_STR(out, "\xc3\xa9t");
	put_str(&m, v11, 2, 0, ucs2, 2);
	CHECK_EQ_INT(python_str_decode(v11, fake_read, &m, m.base, out, sizeof(out)), 0);
	CHECK_EQ_STR(out, "\xce\xb1\xce\xb2");
	put_str(&m, v12, 4, 0, ucs4, 2);
	CHECK_EQ_INT(python_str_decode(v12, fake_read, &m, m.base, out, sizeof(out)), 0);
	CHECK_EQ_STR(out, "\xf0\x9f\x98\x80x");
	put_str(&m, v11, 1, 1, "abcdefgh", 8); /* cut to the buffer, never past it */
	CHECK_EQ_INT(python_str_decode(v11, fake_read, &m, m.base, out, 5), 0);
	CHECK_EQ_STR(out, "abcd");
	m.bytes[PYTHON_STR_STATE] = 1 << 2; /* not compact: not decoded */
	CHECK_EQ_INT(python_str_decode(v11, fake_read, &m, m.base, out, sizeof(out)), -EINVAL);
	CHECK_EQ_INT(python_str_decode(v11, fake_read, &m, 0x99999, out, sizeof(out)), -EFAULT);
}

static void check_module(int *ret_failed, const char *file, const char *want)
{
	char out[256];

	python_module_name(file, out, sizeof(out));
	CHECK_EQ_STR(out, want);
}

TEST(module_names_from_file_names)
{
	check_module(ret_failed, "/usr/lib/python3.11/json/decoder.py", "json.decoder");
	check_module(ret_failed, "/usr/lib/python3.11/threading.py", "threading");
	check_module(ret_failed, "/srv/venv/lib/python3.11/site-packages/flask/app.py",
		     "flask.app");
	check_module(ret_failed, "/usr/lib/python3/dist-packages/requests/__init__.py", "requests");
	check_module(ret_failed, "/srv/app/hot.py", "hot");
	check_module(ret_failed, "hot.py", "hot");
	check_module(ret_failed, "<frozen importlib._bootstrap>", "importlib._bootstrap");
	check_module(ret_failed, "<string>", "<string>");
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

/* Writes 3.99 over the binary's Py_Version, as a corrupted read would see it. */
static int corrupt_version(const char *path)
{
	const uint32_t bad = 0x036300f0;

	return fake_proc__overwrite_symbol(path, "Py_Version", &bad, sizeof(bad));
}

/* <root>/<pid>/maps names /python3.99, found at <root>/<pid>/root/python3.99. */
static int fake_process(const char *root, int pid, const char *binary)
{
	return fake_proc__make(root, pid, binary, "python3.99", NULL);
}

static struct runtimes *runtimes_at(const struct runtime_sink *sink, const char *root,
				    struct process_registry **ret_reg)
{
	struct process_registry_options opts = {.proc_root = root};

	*ret_reg = process_registry__new(&opts);
	return *ret_reg ? runtimes__new(sink, *ret_reg) : NULL;
}

TEST(a_version_without_a_table_keeps_native_frames_and_is_reported_once)
{
	struct runtime_sink sink = {.attach = count_attach, .detach = no_detach};
	char root[] = "/tmp/rt-pyver-XXXXXX", dir[600], note[512] = "", cmd[700];
	struct runtime_stats st;
	struct process_registry *reg;
	struct runtimes *r;
	const char *name;

	if (access(DEBIAN_PYTHON, R_OK)) {
		printf("  (skipped: " DEBIAN_PYTHON " not installed)\n");
		return;
	}
	CHECK(mkdtemp(root) != NULL);
	for (int pid = 1; pid <= 2; pid++)
		CHECK_EQ_INT(fake_process(root, pid, DEBIAN_PYTHON), 0);
	snprintf(dir, sizeof(dir), "%s/1/root/python3.99", root);
	CHECK_EQ_INT(corrupt_version(dir), 0);
	snprintf(dir, sizeof(dir), "%s/2/root/python3.99", root);
	CHECK_EQ_INT(corrupt_version(dir), 0);

	r = runtimes_at(&sink, root, &reg);
	CHECK(r != NULL);
	n_attached = 0;
	CHECK_EQ_INT(runtimes__capture_process(r, 1, note, sizeof(note)), 1);
	CHECK(strstr(note, "3.99") && strstr(note, "no offset table"));
	note[0] = '\0';
	CHECK_EQ_INT(runtimes__capture_process(r, 2, note, sizeof(note)), 0); /* said once */
	CHECK_EQ_INT(runtimes__capture_process(r, 1, note, sizeof(note)), 0);
	CHECK_EQ_INT(n_attached, 0); /* no walk state: its frames stay native */
	CHECK_EQ_INT(runtimes__stats(r, 0, &name, &st), 0);
	CHECK_EQ_STR(name, "python");
	CHECK_EQ_INT(st.unsupported, 3);
	CHECK_EQ_INT(st.processes_attached, 0);

	/* the same binary uncorrupted is attached */
	CHECK_EQ_INT(fake_process(root, 3, DEBIAN_PYTHON), 0);
	CHECK_EQ_INT(runtimes__capture_process(r, 3, note, sizeof(note)), 0);
	CHECK_EQ_INT(n_attached, 1);
	runtimes__free(r);
	process_registry__free(reg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	CHECK_EQ_INT(system(cmd), 0);
}

static int n_detached;

static void count_detach(void *ctx, enum runtime_kind kind, pid_t pid)
{
	n_detached += kind == RUNTIME_PYTHON;
}

/* Maps <root>/1/root/python3.99 as pid's code too (the same file: one binary). */
static int same_binary(const char *root, int pid)
{
	char path[600], maps[600], cmd[4096];

	snprintf(path, sizeof(path), "%s/%d/root", root, pid);
	snprintf(maps, sizeof(maps), "%s/1/maps", root);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s' && ln -f '%s/1/root/python3.99' '%s/' && cp '%s' '%s/%d/'", path,
		 root, path, maps, root, pid);
	return system(cmd) ? -EIO : 0;
}

TEST(a_binary_is_read_once_for_its_processes_and_state_goes_with_the_process)
{
	struct runtime_sink sink = {.attach = count_attach, .detach = count_detach};
	char root[] = "/tmp/rt-pyonce-XXXXXX", path[600], note[512] = "", cmd[700];
	struct process_registry_options opts = {0};
	struct process_registry *reg;
	struct runtime_stats st;
	struct sym_frame f;
	struct runtimes *r;
	const char *name;

	if (access(DEBIAN_PYTHON, R_OK)) {
		printf("  (skipped: " DEBIAN_PYTHON " not installed)\n");
		return;
	}
	CHECK(mkdtemp(root) != NULL);
	CHECK_EQ_INT(fake_process(root, 1, DEBIAN_PYTHON), 0);
	CHECK_EQ_INT(same_binary(root, 2), 0);
	opts.proc_root = root;
	reg = process_registry__new(&opts);
	CHECK(reg != NULL);
	r = runtimes__new(&sink, reg);
	CHECK(r != NULL);
	n_attached = n_detached = 0;
	CHECK_EQ_INT(runtimes__capture_process(r, 1, note, sizeof(note)), 0);
	CHECK_EQ_INT(n_attached, 1);
	/* The file changes under the same inode: pid 2's capture uses what was read for pid 1
	 * (read again, it would say 3.99: no table, not attached). */
	snprintf(path, sizeof(path), "%s/1/root/python3.99", root);
	CHECK_EQ_INT(corrupt_version(path), 0);
	CHECK_EQ_INT(runtimes__capture_process(r, 2, note, sizeof(note)), 0);
	CHECK_EQ_INT(n_attached, 2);
	CHECK_EQ_INT(runtimes__capture_process(r, 2, note, sizeof(note)), 0);
	CHECK_EQ_INT(runtimes__stats(r, RUNTIME_PYTHON, &name, &st), 0);
	CHECK_EQ_INT(st.processes_attached, 2); /* captured again: not counted twice */
	CHECK_EQ_INT(st.unsupported, 0);

	/* pid 1 exits: BPF's copy is dropped, and its state went with the registry's record */
	process_registry__forget(reg, 1);
	runtimes__forget_process(r, 1);
	CHECK_EQ_INT(n_detached, 1);
	runtimes__name_frame(r, 1, PYTHON_FRAME_TAG | 0x1000, 1, &f);
	CHECK_EQ_STR(f.function, "[unknown]");
	CHECK_EQ_STR(f.module, "[python]");
	CHECK_EQ_INT(runtimes__stats(r, RUNTIME_PYTHON, &name, &st), 0);
	CHECK_EQ_INT(st.names_unreadable, 1); /* no state held: not read at all */
	runtimes__free(r);
	process_registry__free(reg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	CHECK_EQ_INT(system(cmd), 0);
}

TEST_MAIN("python-runtime", T(tables_cover_3_8_to_3_13_only), T(version_from_file_names),
	  T(installed_interpreters_are_read),
	  T(the_3_13_table_agrees_with_the_interpreters_own_debug_offsets),
	  T(a_binary_without_py_runtime_is_not_the_interpreter), T(str_objects_decode_to_utf8),
	  T(module_names_from_file_names),
	  T(a_version_without_a_table_keeps_native_frames_and_is_reported_once),
	  T(a_binary_is_read_once_for_its_processes_and_state_goes_with_the_process))
