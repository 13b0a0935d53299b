// SPDX-License-Identifier: Apache-2.0
/* Unit tests for PHP detection and naming: the offset tables (7.4-8.3; 8.2 measured), names
 * decoded with each table, the version read from a binary's bytes, the interpreters installed
 * here (php8.2-cli, php8.2-fpm), and a version without a table (a binary whose version string
 * is corrupted to 9.9): native frames, reported once. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtimes/php/php_runtime.h"
#include "runtimes/runtime_elf.h"
#include "runtimes/runtimes.h"
#include "status/agent_metrics.h"
#include "fake_proc.h"
#include "process/process_registry.h"
#include "test.h"

#define DEBIAN_PHP "/usr/bin/php8.2"
#define DEBIAN_FPM "/usr/sbin/php-fpm8.2"

TEST(tables_cover_7_4_to_8_3)
{
	static const unsigned want[][3] = {
	    {7, 4, 136}, {8, 0, 144}, {8, 1, 144}, {8, 2, 152}, {8, 3, 144}};
	size_t n = 0;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct php_version *v = php_version__find(want[i][0], want[i][1]);

		CHECK(v != NULL);
		if (!v)
			continue;
		CHECK_EQ_INT(v->walk.eg_current_execute_data, 488);
		CHECK_EQ_INT(v->walk.ed_func, 24);
		CHECK_EQ_INT(v->walk.ed_prev, 48);
		CHECK_EQ_INT(v->walk.ed_call_info, 40);
		CHECK_EQ_INT(v->walk.fn_type, 0);
		CHECK_EQ_INT(v->walk.fn_name, 8);
		CHECK_EQ_INT(v->walk.fn_scope, 16);
		CHECK_EQ_INT(v->class_name, 8);
		CHECK_EQ_INT(v->op_array_filename, want[i][2]);
		/* what BPF reads must lie inside the bytes it reads */
		CHECK(v->walk.ed_func + 8 <= PHP_EXEC_READ && v->walk.ed_prev + 8 <= PHP_EXEC_READ);
		CHECK(v->walk.fn_name + 8 <= PHP_FUNC_READ &&
		      v->walk.fn_scope + 8 <= PHP_FUNC_READ);
	}
	php_version__all(&n);
	CHECK_EQ_INT(n, 5);
	CHECK(php_version__find(7, 3) == NULL);
	CHECK(php_version__find(8, 4) == NULL);
	CHECK(php_version__find(9, 9) == NULL);
}

/* --- naming over a fake process image, for every table ---------------------------------- */

#define IMAGE_BASE 0x10000
static uint8_t image[2048];

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

/* A zend_string at addr. */
static void put_zstr(uint64_t addr, const char *s)
{
	put64(addr + PHP_STR_LEN, strlen(s));
	memcpy(image + (addr - IMAGE_BASE) + PHP_STR_VAL, s, strlen(s));
}

/* A user zend_function at func laid out as v says: name, scope, filename. */
static uint64_t put_function(const struct php_version *v, uint64_t func, uint64_t name,
			     uint64_t scope, uint64_t file)
{
	image[func - IMAGE_BASE + v->walk.fn_type] = PHP_USER_FUNCTION;
	put64(func + v->walk.fn_name, name);
	put64(func + v->walk.fn_scope, scope);
	put64(func + v->op_array_filename, file);
	return php_cookie(name, scope);
}

TEST(functions_decode_with_every_table)
{
	const uint64_t func = IMAGE_BASE, name = IMAGE_BASE + 0x400, cls = IMAGE_BASE + 0x500;
	const uint64_t cls_name = IMAGE_BASE + 0x600, file = IMAGE_BASE + 0x700;
	const struct php_version *all;
	char fn[128], path[128];
	size_t n = 0;

	all = php_version__all(&n);
	for (size_t i = 0; i < n; i++) {
		const struct php_version *v = &all[i];
		uint64_t cookie;

		memset(image, 0, sizeof(image));
		put_zstr(name, "hot_fn");
		put_zstr(cls_name, "Cart");
		put64(cls + v->class_name, cls_name);
		put_zstr(file, "/srv/app/cart.php");
		/* a method: Class::method, its file from this version's filename offset */
		cookie = put_function(v, func, name, cls, file);
		CHECK_EQ_INT(php_function_decode(v, read_image, NULL, func, cookie, fn, sizeof(fn),
						 path, sizeof(path)),
			     0);
		CHECK_EQ_STR(fn, "Cart::hot_fn");
		CHECK_EQ_STR(path, "/srv/app/cart.php");
		/* a function, then the script's top-level code */
		cookie = put_function(v, func, name, 0, file);
		CHECK_EQ_INT(php_function_decode(v, read_image, NULL, func, cookie, fn, sizeof(fn),
						 path, sizeof(path)),
			     0);
		CHECK_EQ_STR(fn, "hot_fn");
		cookie = put_function(v, func, 0, 0, file);
		CHECK_EQ_INT(php_function_decode(v, read_image, NULL, func, cookie, fn, sizeof(fn),
						 path, sizeof(path)),
			     0);
		CHECK_EQ_STR(fn, "<main>");
		/* another function at that address now; an internal function */
		CHECK_EQ_INT(php_function_decode(v, read_image, NULL, func, cookie ^ 1, fn,
						 sizeof(fn), path, sizeof(path)),
			     -ESTALE);
		image[func - IMAGE_BASE + v->walk.fn_type] = 1;
		CHECK_EQ_INT(php_function_decode(v, read_image, NULL, func, cookie, fn, sizeof(fn),
						 path, sizeof(path)),
			     -EINVAL);
	}
}

TEST(version_from_the_binarys_bytes)
{
	static const char image[] = "\0junk\0X-Powered-By: PHP/8.2.36\0more";
	static const char none[] = "X-Powered-By: PHP/\0";
	unsigned major = 0, minor = 0;

	CHECK_EQ_INT(php_version_from_image(image, sizeof(image), &major, &minor), 0);
	CHECK_EQ_INT(major * 100 + minor, 802);
	CHECK_EQ_INT(php_version_from_image(none, sizeof(none), &major, &minor), -ENOENT);
	CHECK_EQ_INT(php_version_from_image("PHP 8.2", 7, &major, &minor), -ENOENT);
}

static void check_binary(int *ret_failed, const char *path)
{
	struct php_binary b;

	if (access(path, R_OK)) {
		printf("  (skipped: %s not installed)\n", path);
		return;
	}
	CHECK_EQ_INT(php_binary__read(path, &b), 0);
	CHECK_EQ_INT(b.major * 100 + b.minor, 802);
	CHECK(b.executor_globals != 0);
	CHECK(b.exec_end > b.exec_start && b.exec_start != 0);
	/* the table's offset is the one the binary's own code reads */
	CHECK_EQ_INT(b.eg_current_execute_data, 488);
}

TEST(is_executing_decodes_both_forms)
{
	/* lea 0x298329(%rip),%rax at 0x2f2b70; cmpq $0x0,0x1e8(%rax); setne; ret (php8.2) */
	static const uint8_t lea[] = {0x48, 0x8d, 0x05, 0xe9, 0x82, 0x29, 0x00, 0x48,
				      0x83, 0xb8, 0xe8, 0x01, 0x00, 0x00, 0x00};
	/* cmpq $0x0, 0x12e0(%rip) at 0x100: 0x100 + 8 + 0x12e0 = executor_globals (0x1200) + 0x1e8
	 */
	static const uint8_t rip[] = {0x48, 0x83, 0x3d, 0xe0, 0x12, 0x00, 0x00, 0x00};
	static const uint8_t other[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x08,
					0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90};

	CHECK_EQ_INT(php_decode_is_executing(lea, sizeof(lea), 0x2f2b70, 0x58ae60), 488);
	CHECK_EQ_INT(php_decode_is_executing(lea, sizeof(lea), 0x2f2b70, 0x58ae68), -1);
	CHECK_EQ_INT(php_decode_is_executing(rip, sizeof(rip), 0x100, 0x1200), 0x1e8);
	CHECK_EQ_INT(php_decode_is_executing(other, sizeof(other), 0x100, 0x1200), -1);
}

TEST(installed_interpreters_are_read)
{
	check_binary(ret_failed, DEBIAN_PHP);
	check_binary(ret_failed, DEBIAN_FPM);
}

TEST(a_binary_without_executor_globals_is_not_the_interpreter)
{
	struct php_binary b;

	CHECK_EQ_INT(php_binary__read("/bin/sh", &b), -ENOENT);
}

/* --- a version without a table --------------------------------------------------------- */

static int n_attached;

static int count_attach(void *ctx, enum runtime_kind kind, pid_t pid, const void *state,
			size_t size)
{
	n_attached += kind == RUNTIME_PHP;
	return 0;
}

static void no_detach(void *ctx, enum runtime_kind kind, pid_t pid)
{
}

/* Writes 9.9 over the binary's "PHP/8.2" version string, as a corrupted read would see it. */
static int corrupt_version(const char *path)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd),
		 "sed -i 's|X-Powered-By: PHP/8\\.2|X-Powered-By: PHP/9.9|g' '%s'", path);
	return system(cmd) ? -EIO : 0;
}

/* Makes zend_is_executing() read 8 bytes further into executor_globals (0x1e8 -> 0x1f0), as a
 * build with another layout would. */
static int shift_is_executing(const char *path)
{
	struct runtime_elf *elf = runtime_elf__open(path);
	uint64_t vaddr, size, base;
	const unsigned char *at;
	uint8_t disp = 0xf0;
	long off;
	int fd, ret = -ENOENT;

	if (!elf)
		return -errno;
	if (!runtime_elf__symbol(elf, "zend_is_executing", &vaddr, &size) &&
	    !runtime_elf__load_base(elf, &base) && (at = runtime_elf__at(elf, vaddr, 15)) &&
	    at[10] == 0xe8) {
		off = (long)(at + 10 - (const unsigned char *)runtime_elf__at(elf, base, 1));
		fd = open(path, O_WRONLY);
		ret = fd >= 0 && pwrite(fd, &disp, 1, off) == 1 ? 0 : -EIO;
		if (fd >= 0)
			close(fd);
	}
	runtime_elf__close(elf);
	return ret;
}

/* <root>/<pid>/maps names /php8.2, found at <root>/<pid>/root/php8.2. */
static int fake_process(const char *root, int pid, bool corrupt)
{
	return fake_proc__make(root, pid, DEBIAN_PHP, "php8.2", corrupt ? corrupt_version : NULL);
}

/* /metrics names the version without a table and counts its processes. */
static void check_metrics(int *ret_failed, const struct runtime_stats *st)
{
	struct agent_metrics *m = agent_metrics__new();
	struct agent_status s;
	char *text = NULL;
	size_t len;

	CHECK(m != NULL);
	if (!m)
		return;
	agent_metrics__php(m, st);
	agent_metrics__php_closed(m); /* a pipeline closed: its counts stay */
	agent_metrics__snapshot(m, &s);
	agent_metrics__free(m);
	CHECK_EQ_INT(agent_metrics__render(&s, s.started_ms, &text, &len), 0);
	CHECK(text && strstr(text, "roottrace_agent_php_version_without_table{version=\"9.9\"} 1"));
	CHECK(text &&
	      strstr(text, "roottrace_agent_php_processes_total{outcome=\"unsupported\"} 3"));
	free(text);
}

TEST(a_version_without_a_table_keeps_native_frames_and_is_reported_once)
{
	struct runtime_sink sink = {.attach = count_attach, .detach = no_detach};
	char root[] = "/tmp/rt-phpver-XXXXXX", note[512] = "", cmd[700];
	struct process_registry_options opts = {0};
	struct runtime_stats st;
	struct process_registry *reg;
	struct runtimes *r;
	const char *name;

	if (access(DEBIAN_PHP, R_OK)) {
		printf("  (skipped: " DEBIAN_PHP " not installed)\n");
		return;
	}
	CHECK(mkdtemp(root) != NULL);
	for (int pid = 1; pid <= 3; pid++)
		CHECK_EQ_INT(fake_process(root, pid, pid != 3), 0);
	opts.proc_root = root;
	reg = process_registry__new(&opts);
	CHECK(reg != NULL);
	r = runtimes__new(&sink, reg);
	CHECK(r != NULL);
	n_attached = 0;
	CHECK_EQ_INT(runtimes__capture_process(r, 1, note, sizeof(note)), 1);
	CHECK(strstr(note, "php 9.9") && strstr(note, "no offset table"));
	note[0] = '\0';
	CHECK_EQ_INT(runtimes__capture_process(r, 2, note, sizeof(note)), 0); /* said once */
	CHECK_EQ_INT(runtimes__capture_process(r, 1, note, sizeof(note)), 0);
	CHECK_EQ_INT(n_attached, 0); /* no walk state: its frames stay native */
	CHECK_EQ_INT(runtimes__stats(r, RUNTIME_PHP, &name, &st), 0);
	CHECK_EQ_STR(name, "php");
	CHECK_EQ_INT(st.unsupported, 3);
	CHECK_EQ_STR(st.unsupported_version, "9.9");
	CHECK_EQ_INT(st.processes_attached, 0);
	check_metrics(ret_failed, &st);

	/* the same binary uncorrupted is attached */
	CHECK_EQ_INT(runtimes__capture_process(r, 3, note, sizeof(note)), 0);
	CHECK_EQ_INT(n_attached, 1);

	/* a binary whose own code reads current_execute_data elsewhere than the table says */
	CHECK_EQ_INT(fake_proc__make(root, 4, DEBIAN_PHP, "php8.2", shift_is_executing), 0);
	note[0] = '\0';
	CHECK_EQ_INT(runtimes__capture_process(r, 4, note, sizeof(note)), 1);
	CHECK(strstr(note, "at 496, the table says 488") != NULL);
	CHECK_EQ_INT(n_attached, 1);
	runtimes__free(r);
	process_registry__free(reg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	CHECK_EQ_INT(system(cmd), 0);
}

TEST_MAIN("php-runtime", T(tables_cover_7_4_to_8_3), T(functions_decode_with_every_table),
	  T(version_from_the_binarys_bytes), T(is_executing_decodes_both_forms),
	  T(installed_interpreters_are_read),
	  T(a_binary_without_executor_globals_is_not_the_interpreter),
	  T(a_version_without_a_table_keeps_native_frames_and_is_reported_once))
