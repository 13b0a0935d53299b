// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the symboliser on fixture ELF files (no root needed): live fixture processes
 * print their functions' addresses; fake /proc trees cover unreadable, JIT and kernel cases. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process/build_id.h"
#include "process/process_registry.h"
#include "symbolize/elf_symbols.h"
#include "symbolize/symbolizer.h"
#include "fixture_files.h"
#include "test.h"

#define MAX_ADDRS 8

/* A running fixture: its pid, the pipe that keeps it alive, and the addresses it printed. */
struct fixture_proc {
	pid_t pid;
	int stdin_fd;
	size_t n;
	char names[MAX_ADDRS][128];
	uint64_t addrs[MAX_ADDRS];
};

static int read_addrs(FILE *out, struct fixture_proc *fp)
{
	char line[256], name[128];
	void *addr;

	while (fgets(line, sizeof(line), out)) {
		if (strncmp(line, "ready", 5) == 0)
			return 0;
		/* Names may contain spaces (C++): the address is the last word. */
		char *sp = strrchr(line, ' ');

		if (!sp || fp->n >= MAX_ADDRS || sscanf(sp + 1, "%p", &addr) != 1)
			return -EINVAL;
		snprintf(name, sizeof(name), "%.*s", (int)(sp - line), line);
		snprintf(fp->names[fp->n], sizeof(fp->names[0]), "%s", name);
		fp->addrs[fp->n++] = (uint64_t)(uintptr_t)addr;
	}
	return -EPIPE;
}

/* Starts `path addrs` and reads what it prints; 0 or -errno. */
static int fixture_start(const char *path, struct fixture_proc *fp)
{
	int in[2], out[2];
	FILE *f;

	memset(fp, 0, sizeof(*fp));
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		return -errno;
	fp->pid = fork();
	if (fp->pid < 0)
		return -errno;
	if (fp->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(path, path, "addrs", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	fp->stdin_fd = in[1];
	f = fdopen(out[0], "r");
	if (!f)
		return -errno;
	int err = read_addrs(f, fp);

	fclose(f);
	return err;
}

/* Closes its stdin and reaps it: the process no longer exists afterwards. */
static void fixture_stop(struct fixture_proc *fp)
{
	if (fp->stdin_fd < 0)
		return;
	close(fp->stdin_fd);
	waitpid(fp->pid, NULL, 0);
	fp->stdin_fd = -1;
}

static uint64_t fixture_addr(const struct fixture_proc *fp, const char *name)
{
	for (size_t i = 0; i < fp->n; i++)
		if (strcmp(fp->names[i], name) == 0)
			return fp->addrs[i];
	return 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* The final counters of s, which is freed. */
static struct symbolizer_stats stats_and_free(struct symbolizer *s)
{
	struct symbolizer_stats st;

	symbolizer__stats(s, &st);
	symbolizer__free(s);
	return st;
}

static void resolve_name(struct symbolizer *s, pid_t pid, uint64_t addr, char *buf, size_t len)
{
	struct sym_frame f;

	symbolizer__resolve_user(s, pid, addr, &f);
	snprintf(buf, len, "%s", f.function);
}

/* The process name the registry captured for pid ("" when it holds none). */
static const char *comm_of(struct symbolizer *s, pid_t pid)
{
	const struct process *p = process_registry__peek(symbolizer__registry(s), pid);

	return p ? p->comm : "";
}

static const char *comm_image(struct symbolizer *s, pid_t pid, uint32_t image)
{
	const struct process *p = process_registry__image(symbolizer__registry(s), pid, image);

	return p ? p->comm : "";
}

/* --- live fixtures ---------------------------------------------------------------------- */

static void check_main_fixture(const char *name, int *ret_failed)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct fixture_proc fp;
	struct sym_frame f;
	const char *names[] = {"fixture_alpha", "fixture_beta", "fixture_hidden", "main"};
	uint64_t alpha_offset;

	CHECK(s);
	CHECK_EQ_INT(fixture_start(fixture_path(name), &fp), 0);
	CHECK_EQ_INT(process_registry__capture(symbolizer__registry(s), fp.pid), 0);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		symbolizer__resolve_user(s, fp.pid, fixture_addr(&fp, names[i]), &f);
		CHECK_EQ_STR(f.function, names[i]);
		CHECK_EQ_INT(f.known, 1);
		CHECK(ends_with(f.module, name));
		CHECK_EQ_INT(strlen(f.build_id), 40);
	}
	/* An address inside a function (a return address) names that function; both carry
	 * their offset in the binary's file (for the collector's lines), 5 bytes apart. */
	symbolizer__resolve_user(s, fp.pid, fixture_addr(&fp, "fixture_alpha"), &f);
	CHECK_EQ_INT(f.has_offset, 1);
	alpha_offset = f.file_offset;
	CHECK(alpha_offset > 0 && alpha_offset < fixture_addr(&fp, "fixture_alpha"));
	symbolizer__resolve_user(s, fp.pid, fixture_addr(&fp, "fixture_alpha") + 5, &f);
	CHECK_EQ_STR(f.function, "fixture_alpha");
	CHECK_EQ_INT(f.has_offset, 1);
	CHECK_EQ_INT(f.file_offset, alpha_offset + 5);
	CHECK_EQ_STR(comm_of(s, fp.pid), name);
	fixture_stop(&fp);
	symbolizer__free(s);
}

TEST(pie_binary_names_exported_and_static_functions)
{
	check_main_fixture("fixture-pie", ret_failed);
}

TEST(non_pie_binary_names_exported_and_static_functions)
{
	check_main_fixture("fixture-nopie", ret_failed);
}

TEST(address_past_symbol_end_is_unknown_not_previous_symbol)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct symbolizer_stats st;
	struct fixture_proc fp;
	struct sym_frame f;

	CHECK(s);
	CHECK_EQ_INT(fixture_start(fixture_path("fixture-pie"), &fp), 0);
	symbolizer__resolve_user(s, fp.pid, fixture_addr(&fp, "fixture_gap"), &f);
	CHECK_EQ_STR(f.function, "fixture_gap");
	/* fixture_gap has size 1; 9 bytes on, no symbol covers the address. */
	symbolizer__resolve_user(s, fp.pid, fixture_addr(&fp, "fixture_gap_tail"), &f);
	fixture_stop(&fp);
	st = stats_and_free(s);
	CHECK_EQ_STR(f.function, "[unknown]");
	CHECK_EQ_INT(f.known, 0);
	CHECK(ends_with(f.module, "fixture-pie"));
	CHECK_EQ_INT(st.unknown[SYM_UNKNOWN_NO_SYMBOL], 1);
}

TEST(stripped_binary_names_dynsym_functions_only)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct symbolizer_stats st;
	struct fixture_proc fp;
	char name[SYM_NAME_MAX];

	CHECK(s);
	CHECK_EQ_INT(fixture_start(fixture_path("fixture-stripped"), &fp), 0);
	resolve_name(s, fp.pid, fixture_addr(&fp, "fixture_alpha"), name, sizeof(name));
	CHECK_EQ_STR(name, "fixture_alpha");
	resolve_name(s, fp.pid, fixture_addr(&fp, "fixture_beta") + 2, name, sizeof(name));
	CHECK_EQ_STR(name, "fixture_beta");
	/* Static: only in the removed .symtab. Never named after its exported neighbour. */
	resolve_name(s, fp.pid, fixture_addr(&fp, "fixture_hidden"), name, sizeof(name));
	CHECK_EQ_STR(name, "[unknown]");
	fixture_stop(&fp);
	st = stats_and_free(s);
	CHECK_EQ_INT(st.unknown[SYM_UNKNOWN_NO_SYMBOL], 1);
}

TEST(shared_library_function_named_with_library_module)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct fixture_proc fp;
	struct sym_frame f;

	CHECK(s);
	CHECK_EQ_INT(fixture_start(fixture_path("fixture-uses-lib"), &fp), 0);
	symbolizer__resolve_user(s, fp.pid, fixture_addr(&fp, "fixture_lib_spin") + 3, &f);
	fixture_stop(&fp);
	symbolizer__free(s);
	CHECK_EQ_STR(f.function, "fixture_lib_spin");
	CHECK(ends_with(f.module, "/libfixture.so"));
}

/* One window of the test below: main and the library's function of fp, named. */
static void resolve_lib_fixture(struct symbolizer *s, const struct fixture_proc *fp, bool lib,
				int *ret_failed)
{
	char name[SYM_NAME_MAX];
	int failed = 0;

	resolve_name(s, fp->pid, fixture_addr(fp, "main"), name, sizeof(name));
	if (strcmp(name, "main"))
		failed = 1;
	if (lib) {
		resolve_name(s, fp->pid, fixture_addr(fp, "fixture_lib_spin") + 3, name,
			     sizeof(name));
		if (strcmp(name, "fixture_lib_spin"))
			failed = 1;
	}
	*ret_failed |= failed;
}

TEST(symbol_tables_over_the_cap_are_dropped_at_window_end_when_unused_and_read_again)
{
	struct symbolizer_options o = {.max_symbol_bytes = 1}; /* every table is over the cap */
	struct symbolizer *s = symbolizer__new(&o);
	struct symbolizer_stats st;
	struct fixture_proc fp;
	int failed = 0;

	CHECK(s);
	CHECK_EQ_INT(fixture_start(fixture_path("fixture-uses-lib"), &fp), 0);
	resolve_lib_fixture(s, &fp, true, &failed); /* both used: both kept */
	symbolizer__end_window(s);
	symbolizer__stats(s, &st);
	CHECK_EQ_INT(st.symbol_tables_dropped, 0);
	resolve_lib_fixture(s, &fp, false, &failed); /* the library unused: dropped at the end */
	symbolizer__end_window(s);
	symbolizer__stats(s, &st);
	CHECK_EQ_INT(st.symbol_tables_dropped, 1);
	resolve_lib_fixture(s, &fp, true, &failed); /* and read again when a frame needs it */
	symbolizer__end_window(s);
	symbolizer__stats(s, &st);
	fixture_stop(&fp);
	symbolizer__free(s);
	CHECK_EQ_INT(failed, 0);
	CHECK_EQ_INT(st.binaries_loaded, 3);
	CHECK_EQ_INT(st.symbol_tables_reread, 1);
	CHECK_EQ_INT(st.symbol_cap_exceeded, 3);
}

/* The thrash of 2026-12-01 (tables needed every window dropped and parsed again every window
 * under a cap smaller than them): several processes whose tables exceed a small cap, named
 * window after window, parse each table once. */
TEST(symbol_tables_used_every_window_are_never_read_again_over_the_cap)
{
	struct symbolizer_options o = {.max_symbol_bytes = 1};
	struct symbolizer *s = symbolizer__new(&o);
	struct symbolizer_stats st;
	struct fixture_proc lib, cpp;
	char name[SYM_NAME_MAX];
	int failed = 0;

	CHECK(s);
	CHECK_EQ_INT(fixture_start(fixture_path("fixture-uses-lib"), &lib), 0);
	CHECK_EQ_INT(fixture_start(fixture_path("fixture-cpp"), &cpp), 0);
	for (int window = 0; window < 4; window++) {
		resolve_lib_fixture(s, &lib, true, &failed);
		for (size_t i = 0; i < cpp.n; i++) {
			resolve_name(s, cpp.pid, cpp.addrs[i], name, sizeof(name));
			failed |= strcmp(name, cpp.names[i]) != 0;
		}
		symbolizer__end_window(s);
	}
	symbolizer__stats(s, &st);
	fixture_stop(&lib);
	fixture_stop(&cpp);
	symbolizer__free(s);
	CHECK_EQ_INT(failed, 0);
	CHECK_EQ_INT(st.binaries_loaded, 3); /* uses-lib, libfixture.so, fixture-cpp */
	CHECK_EQ_INT(st.symbol_tables_reread, 0);
	CHECK_EQ_INT(st.symbol_tables_dropped, 0);
	CHECK_EQ_INT(st.symbol_cap_exceeded, 4); /* every window ended over the cap */
	CHECK(st.symbol_bytes > 1);
}

TEST(cpp_names_are_demangled)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct fixture_proc fp;
	char name[SYM_NAME_MAX];

	CHECK(s);
	CHECK_EQ_INT(fixture_start(fixture_path("fixture-cpp"), &fp), 0);
	CHECK_EQ_INT(fp.n, 2);
	for (size_t i = 0; i < fp.n; i++) {
		resolve_name(s, fp.pid, fp.addrs[i], name, sizeof(name));
		CHECK_EQ_STR(name, fp.names[i]);
	}
	fixture_stop(&fp);
	symbolizer__free(s);
}

/* Every window names its stacks again: a C++ name is demangled in the first only. */
TEST(cpp_names_are_demangled_once_across_windows)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct symbolizer_stats st;
	struct fixture_proc fp;
	char name[SYM_NAME_MAX];

	CHECK(s);
	CHECK_EQ_INT(fixture_start(fixture_path("fixture-cpp"), &fp), 0);
	CHECK_EQ_INT(fp.n, 2);
	for (int window = 0; window < 3; window++) {
		for (size_t i = 0; i < fp.n; i++) {
			resolve_name(s, fp.pid, fp.addrs[i], name, sizeof(name));
			CHECK_EQ_STR(name, fp.names[i]);
		}
		symbolizer__end_window(s);
	}
	symbolizer__stats(s, &st);
	fixture_stop(&fp);
	symbolizer__free(s);
	CHECK_EQ_INT(st.demangled.demangled, 2);
	CHECK_EQ_INT(st.demangled.hits, 4);
	CHECK_EQ_INT(st.demangled.entries, 2);
}

TEST(process_exited_after_capture_still_named)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct fixture_proc fp;
	char name[SYM_NAME_MAX];
	pid_t pid;

	CHECK(s);
	CHECK_EQ_INT(fixture_start(fixture_path("fixture-nopie"), &fp), 0);
	pid = fp.pid;
	CHECK_EQ_INT(process_registry__capture(symbolizer__registry(s), pid), 0);
	fixture_stop(&fp);
	/* gone and reaped (not kill(pid, 0): pid_max can be small and the pid reused at once) */
	CHECK(waitpid(pid, NULL, WNOHANG) < 0 && errno == ECHILD);
	resolve_name(s, pid, fixture_addr(&fp, "fixture_beta"), name, sizeof(name));
	CHECK_EQ_STR(name, "fixture_beta");
	CHECK_EQ_STR(comm_of(s, pid), "fixture-nopie");
	symbolizer__free(s);
}

TEST(never_seen_exited_process_is_unknown_no_mapping)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct symbolizer_stats st;
	struct fixture_proc fp;
	struct sym_frame f;

	CHECK(s);
	/* A pid reused by another process right after the fixture exited (other tests churn
	 * processes, pid_max may be 32768) would be captured: try again with a new fixture. */
	for (int attempt = 0; attempt < 5; attempt++) {
		CHECK_EQ_INT(fixture_start(fixture_path("fixture-nopie"), &fp), 0);
		fixture_stop(&fp);
		if (kill(fp.pid, 0) != 0)
			break;
	}
	CHECK_EQ_INT(process_registry__capture(symbolizer__registry(s), fp.pid), -ESRCH);
	symbolizer__resolve_user(s, fp.pid, fixture_addr(&fp, "fixture_beta"), &f);
	st = stats_and_free(s);
	CHECK_EQ_STR(f.function, "[unknown]");
	CHECK_EQ_STR(f.module, "");
	CHECK_EQ_INT(st.unknown[SYM_UNKNOWN_NO_MAPPING], 1);
}

TEST(deleted_binary_named_through_map_files_or_counted_unreadable)
{
	char dir[] = "/tmp/rt-symtest-XXXXXX", path[PATH_MAX], cmd[PATH_MAX * 2 + 8];
	struct symbolizer *s = symbolizer__new(NULL);
	struct symbolizer_stats st;
	struct fixture_proc fp;
	struct sym_frame f;
	int map_files_ok;

	CHECK(s);
	CHECK(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/fixture-copy", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s", fixture_path("fixture-pie"), path);
	CHECK_EQ_INT(system(cmd), 0);
	CHECK_EQ_INT(fixture_start(path, &fp), 0);
	unlink(path);
	snprintf(cmd, sizeof(cmd), "/proc/%d/map_files", (int)fp.pid);
	map_files_ok = access(cmd, R_OK) == 0 && geteuid() == 0;
	CHECK_EQ_INT(process_registry__capture(symbolizer__registry(s), fp.pid), 0);
	fixture_stop(&fp);
	symbolizer__resolve_user(s, fp.pid, fixture_addr(&fp, "fixture_alpha"), &f);
	st = stats_and_free(s);
	rm_tree(dir);
	CHECK_EQ_STR(f.module, path);
	if (map_files_ok) {
		/* As root the deleted file is still readable through /proc/PID/map_files. */
		CHECK_EQ_STR(f.function, "fixture_alpha");
	} else {
		CHECK_EQ_STR(f.function, "[unknown]");
		CHECK_EQ_INT(st.unknown[SYM_UNKNOWN_UNREADABLE], 1);
	}
}

/* Copies a fixture and points its section headers past the end of the file: it still runs
 * (the kernel needs only the program headers), but its symbols cannot be read. */
static int damaged_copy(const char *src, const char *dst)
{
	char cmd[PATH_MAX * 2 + 16];
	uint64_t shoff = 0x7ffffff0;
	int fd, ok;

	snprintf(cmd, sizeof(cmd), "cp %s %s", src, dst);
	if (system(cmd))
		return -EIO;
	fd = open(dst, O_WRONLY);
	if (fd < 0)
		return -errno;
	ok = pwrite(fd, &shoff, sizeof(shoff), 0x28) == sizeof(shoff); /* e_shoff, ELF64 */
	close(fd);
	return ok ? 0 : -EIO;
}

TEST(damaged_binary_is_unknown_unreadable_with_module)
{
	char dir[] = "/tmp/rt-symtest-XXXXXX", path[PATH_MAX];
	struct symbolizer *s = symbolizer__new(NULL);
	struct symbolizer_stats st;
	struct fixture_proc fp;
	struct sym_frame f;

	CHECK(s);
	CHECK(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/damaged", dir);
	CHECK_EQ_INT(damaged_copy(fixture_path("fixture-pie"), path), 0);
	CHECK_EQ_INT(fixture_start(path, &fp), 0);
	symbolizer__resolve_user(s, fp.pid, fixture_addr(&fp, "fixture_alpha"), &f);
	fixture_stop(&fp);
	st = stats_and_free(s);
	rm_tree(dir);
	CHECK_EQ_STR(f.function, "[unknown]");
	CHECK_EQ_STR(f.module, path);
	CHECK_EQ_INT(st.unknown[SYM_UNKNOWN_UNREADABLE], 1);
}

TEST(library_mapped_by_many_processes_is_read_once)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct symbolizer_stats st, first;
	struct fixture_proc fp[6];
	char name[SYM_NAME_MAX];
	size_t n = sizeof(fp) / sizeof(fp[0]);

	CHECK(s);
	for (size_t i = 0; i < n; i++) {
		CHECK_EQ_INT(fixture_start(fixture_path("fixture-uses-lib"), &fp[i]), 0);
		CHECK_EQ_INT(process_registry__capture(symbolizer__registry(s), fp[i].pid), 0);
		if (i == 0)
			symbolizer__stats(s, &first);
	}
	for (size_t i = 0; i < n; i++) {
		resolve_name(s, fp[i].pid, fixture_addr(&fp[i], "fixture_lib_spin"), name,
			     sizeof(name));
		CHECK_EQ_STR(name, "fixture_lib_spin");
		resolve_name(s, fp[i].pid, fixture_addr(&fp[i], "main"), name, sizeof(name));
		CHECK_EQ_STR(name, "main");
	}
	for (size_t i = 0; i < n; i++)
		fixture_stop(&fp[i]);
	st = stats_and_free(s);
	CHECK_EQ_INT(st.processes_captured, n);
	/* Files opened for the first process only; symbols parsed once per binary. */
	CHECK_EQ_INT(st.binaries_opened, first.binaries_opened);
	CHECK_EQ_INT(st.binaries_loaded, 2);
	CHECK(st.binary_cache_hits >= (n - 1) * 2);
}

TEST(binary_cache_is_bounded_and_evicted_binaries_stay_usable)
{
	struct symbolizer_options o = {.max_binaries = 2};
	struct symbolizer *s = symbolizer__new(&o);
	const char *names[] = {"fixture-pie", "fixture-nopie", "fixture-uses-lib", "fixture-cpp"};
	struct fixture_proc fp[4];
	struct symbolizer_stats st;
	char name[SYM_NAME_MAX];

	CHECK(s);
	for (size_t i = 0; i < 4; i++) {
		CHECK_EQ_INT(fixture_start(fixture_path(names[i]), &fp[i]), 0);
		CHECK_EQ_INT(process_registry__capture(symbolizer__registry(s), fp[i].pid), 0);
	}
	/* Processes keep their binaries alive after the cache dropped them. */
	for (size_t i = 0; i < 4; i++) {
		resolve_name(s, fp[i].pid, fp[i].addrs[0], name, sizeof(name));
		fixture_stop(&fp[i]);
		CHECK_EQ_STR(name, fp[i].names[0]);
	}
	st = stats_and_free(s);
	CHECK(st.binaries_evicted > 0);
}

TEST(process_cache_is_bounded)
{
	struct symbolizer_options o = {.max_processes = 2};
	struct symbolizer *s = symbolizer__new(&o);
	struct fixture_proc fp[3];
	struct symbolizer_stats st;
	char name[SYM_NAME_MAX];

	CHECK(s);
	for (size_t i = 0; i < 3; i++) {
		CHECK_EQ_INT(fixture_start(fixture_path("fixture-pie"), &fp[i]), 0);
		CHECK_EQ_INT(process_registry__capture(symbolizer__registry(s), fp[i].pid), 0);
	}
	symbolizer__stats(s, &st);
	CHECK_EQ_INT(st.processes_evicted, 1);
	CHECK_EQ_STR(comm_of(s, fp[0].pid), ""); /* the oldest went */
	/* Still alive: resolving re-captures it. */
	resolve_name(s, fp[0].pid, fixture_addr(&fp[0], "fixture_beta"), name, sizeof(name));
	CHECK_EQ_STR(name, "fixture_beta");
	process_registry__forget(symbolizer__registry(s), fp[1].pid);
	CHECK_EQ_STR(comm_of(s, fp[1].pid), "");
	for (size_t i = 0; i < 3; i++)
		fixture_stop(&fp[i]);
	symbolizer__free(s);
}

TEST(vdso_frames_named)
{
	struct symbolizer *s = symbolizer__new(NULL);
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	struct sym_frame f;
	int named = 0;

	CHECK(s);
	CHECK(base != 0);
	for (uint64_t off = 0; off < 8192 && !named; off += 4) {
		symbolizer__resolve_user(s, getpid(), base + off, &f);
		named = f.known;
	}
	symbolizer__free(s);
	CHECK(named);
	CHECK_EQ_STR(f.module, "[vdso]");
	CHECK(strstr(f.function, "time") || strstr(f.function, "getcpu"));
}

TEST(elf_reader_reports_build_id_and_dynsym_fallback)
{
	struct elf_symbols *full, *stripped;
	char id[ELF_BUILD_ID_HEX_MAX];
	int fd = open(fixture_path("fixture-pie"), O_RDONLY);

	CHECK(fd >= 0);
	CHECK_EQ_INT(build_id__read_fd(fd, id, sizeof(id)), 0);
	full = elf_symbols__load_fd(fd);
	close(fd);
	CHECK(full);
	CHECK_EQ_INT(strlen(id), 40); /* the registry's reader and libelf's agree */
	CHECK_EQ_STR(elf_symbols__build_id(full), id);
	CHECK_EQ_INT(elf_symbols__from_dynsym(full), 0);
	fd = open(fixture_path("fixture-stripped"), O_RDONLY);
	CHECK(fd >= 0);
	stripped = elf_symbols__load_fd(fd);
	close(fd);
	CHECK(stripped);
	CHECK_EQ_INT(elf_symbols__from_dynsym(stripped), 1);
	CHECK(elf_symbols__count(stripped) < elf_symbols__count(full));
	elf_symbols__free(full);
	elf_symbols__free(stripped);
	fd = open("/proc/self/status", O_RDONLY);
	CHECK(fd >= 0);
	CHECK(elf_symbols__load_fd(fd) == NULL);
	close(fd);
}

TEST(elf_without_any_symbol_table_loads_empty)
{
	int fd = open(fixture_path("fixture-static-stripped"), O_RDONLY);
	struct elf_symbols *es;

	CHECK(fd >= 0);
	es = elf_symbols__load_fd(fd);
	close(fd);
	CHECK(es); /* readable, just nothing to name: frames in it are [unknown] no_symbol */
	CHECK_EQ_INT(elf_symbols__count(es), 0);
	CHECK(elf_symbols__lookup(es, 0x401000) == NULL);
	elf_symbols__free(es);
}

/* --- fake /proc trees ------------------------------------------------------------------- */

#define FAKE_PID 4242

/* A fake proc root with FAKE_PID's maps and comm, plus a kallsyms file. */
static int fake_proc(char *dir, const char *maps, const char *kallsyms)
{
	char sub[PATH_MAX];
	int err;

	if (!mkdtemp(dir))
		return -errno;
	snprintf(sub, sizeof(sub), "%s/%d", dir, FAKE_PID);
	if (mkdir(sub, 0755))
		return -errno;
	err = write_file(sub, "maps", maps);
	if (!err)
		err = write_file(sub, "comm", "fakeproc\n");
	if (!err && kallsyms)
		err = write_file(dir, "kallsyms", kallsyms);
	return err;
}

TEST(unreadable_binary_is_unknown_with_module_and_counted)
{
	char dir[] = "/tmp/rt-fakeproc-XXXXXX";
	struct symbolizer_options o = {.proc_root = dir, .tmp_dir = dir};
	struct symbolizer *s;
	struct symbolizer_stats st;
	struct sym_frame f;

	CHECK_EQ_INT(
	    fake_proc(dir,
		      "00400000-00401000 r-xp 00000000 08:01 99999 /nonexistent/bin/app\n"
		      "00600000-00601000 r-xp 00000000 08:01 99998 /gone/lib.so (deleted)\n",
		      NULL),
	    0);
	s = symbolizer__new(&o);
	CHECK(s);
	CHECK_EQ_INT(process_registry__capture(symbolizer__registry(s), FAKE_PID), 0);
	CHECK_EQ_STR(comm_of(s, FAKE_PID), "fakeproc");
	symbolizer__resolve_user(s, FAKE_PID, 0x400123, &f);
	CHECK_EQ_STR(f.function, "[unknown]");
	CHECK_EQ_STR(f.module, "/nonexistent/bin/app");
	symbolizer__resolve_user(s, FAKE_PID, 0x600010, &f);
	CHECK_EQ_STR(f.function, "[unknown]");
	CHECK_EQ_STR(f.module, "/gone/lib.so");
	st = stats_and_free(s);
	rm_tree(dir);
	CHECK_EQ_INT(st.unknown[SYM_UNKNOWN_UNREADABLE], 2);
}

/* Rewrites FAKE_PID's maps and comm, as an exec (or an exit: no maps) would. */
static int fake_proc_image(const char *dir, const char *maps, const char *comm)
{
	char sub[PATH_MAX];
	int err;

	snprintf(sub, sizeof(sub), "%s/%d", dir, FAKE_PID);
	err = write_file(sub, "maps", maps);
	return err ? err : write_file(sub, "comm", comm);
}

TEST(samples_of_the_image_before_an_exec_are_named_after_it_until_the_window_ends)
{
	char dir[] = "/tmp/rt-fakeproc-XXXXXX";
	struct symbolizer_options o = {.proc_root = dir, .tmp_dir = dir};
	struct symbolizer_stats st;
	struct symbolizer *s;
	struct sym_frame f;

	CHECK_EQ_INT(
	    fake_proc(dir, "00400000-00401000 r-xp 00000000 08:01 99999 /old/bin/sh\n", NULL), 0);
	s = symbolizer__new(&o);
	CHECK(s);
	CHECK_EQ_INT(process_registry__capture_image(symbolizer__registry(s), FAKE_PID, 0), 0);
	CHECK_EQ_INT(
	    fake_proc_image(dir, "00500000-00501000 r-xp 00000000 08:01 99998 /new/app\n", "app\n"),
	    0);
	CHECK_EQ_INT(process_registry__capture_image(symbolizer__registry(s), FAKE_PID, 1), 0);
	symbolizer__resolve_user_image(s, FAKE_PID, 0, 0x400123, &f);
	CHECK_EQ_STR(f.module, "/old/bin/sh");
	symbolizer__resolve_user_image(s, FAKE_PID, 1, 0x500123, &f);
	CHECK_EQ_STR(f.module, "/new/app");
	CHECK_EQ_STR(comm_image(s, FAKE_PID, 0), "fakeproc");
	CHECK_EQ_STR(comm_image(s, FAKE_PID, 1), "app");
	/* The window that held the old image's samples is named: the old image goes. */
	process_registry__end_window(symbolizer__registry(s));
	symbolizer__resolve_user_image(s, FAKE_PID, 0, 0x400123, &f);
	CHECK_EQ_STR(f.function, "[unknown]");
	CHECK_EQ_STR(f.module, "");
	CHECK_EQ_STR(comm_image(s, FAKE_PID, 1), "app");
	st = stats_and_free(s);
	rm_tree(dir);
	CHECK_EQ_INT(st.images_replaced, 1);
}

TEST(exited_process_read_as_no_mappings_keeps_what_was_captured)
{
	char dir[] = "/tmp/rt-fakeproc-XXXXXX";
	struct symbolizer_options o = {.proc_root = dir, .tmp_dir = dir};
	struct symbolizer *s;
	struct sym_frame f;

	CHECK_EQ_INT(fake_proc(dir, "00500000-00501000 r-xp 00000000 08:01 99998 /new/app\n", NULL),
		     0);
	s = symbolizer__new(&o);
	CHECK(s);
	CHECK_EQ_INT(process_registry__capture_image(symbolizer__registry(s), FAKE_PID, 3), 0);
	/* A zombie: /proc/PID/maps reads empty until its parent reaps it. */
	CHECK_EQ_INT(fake_proc_image(dir, "", "fakeproc\n"), 0);
	usleep(150 * 1000); /* past the re-capture rate limit */
	symbolizer__resolve_user_image(s, FAKE_PID, 3, 0x900000, &f); /* a miss: re-read */
	symbolizer__resolve_user_image(s, FAKE_PID, 3, 0x500123, &f);
	symbolizer__free(s);
	rm_tree(dir);
	CHECK_EQ_STR(f.module, "/new/app");
}

TEST(jit_frames_named_from_perf_map)
{
	char dir[] = "/tmp/rt-fakeproc-XXXXXX", name[64];
	struct symbolizer_options o = {.proc_root = dir, .tmp_dir = dir};
	struct symbolizer *s;
	struct symbolizer_stats st;
	struct sym_frame f;

	CHECK_EQ_INT(fake_proc(dir, "7f0000000000-7f0000010000 rwxp 00000000 00:00 0 \n", NULL), 0);
	snprintf(name, sizeof(name), "perf-%d.map", FAKE_PID);
	CHECK_EQ_INT(write_file(dir, name,
				"7f0000001000 100 LazyCompile:*hot_loop app.js\n"
				"0x7f0000002000 0x40 Builtin:ArgumentsAdaptor\n"
				"7f0000003000 100 JS:~hot_loop /srv/app/app.js:3:30\n"
				"7f0000100000 20 stub_outside_mappings\n"),
		     0);
	s = symbolizer__new(&o);
	CHECK(s);
	/* V8's tiers: one function, its file apart, the runtime in the module */
	symbolizer__resolve_user(s, FAKE_PID, 0x7f0000001080, &f);
	CHECK_EQ_STR(f.function, "hot_loop");
	CHECK_EQ_STR(f.file, "app.js");
	CHECK_EQ_STR(f.module, "[jit:v8]");
	CHECK_EQ_INT(f.known, 1);
	symbolizer__resolve_user(s, FAKE_PID, 0x7f0000003010, &f);
	CHECK_EQ_STR(f.function, "hot_loop");
	CHECK_EQ_STR(f.file, "/srv/app/app.js");
	CHECK_EQ_STR(f.module, "[jit:v8]");
	/* formats we do not know: kept as written, under "[jit]" */
	symbolizer__resolve_user(s, FAKE_PID, 0x7f0000002010, &f);
	CHECK_EQ_STR(f.function, "Builtin:ArgumentsAdaptor");
	CHECK_EQ_STR(f.file, "");
	CHECK_EQ_STR(f.module, "[jit]");
	symbolizer__resolve_user(s, FAKE_PID, 0x7f0000100004, &f);
	CHECK_EQ_STR(f.function, "stub_outside_mappings");
	CHECK_EQ_STR(f.module, "[jit]");
	/* In the anonymous mapping, but not announced: unknown, counted as JIT. */
	symbolizer__resolve_user(s, FAKE_PID, 0x7f0000005000, &f);
	CHECK_EQ_STR(f.function, "[unknown]");
	CHECK_EQ_STR(f.module, "[anon]");
	st = stats_and_free(s);
	rm_tree(dir);
	CHECK_EQ_INT(st.unknown[SYM_UNKNOWN_JIT], 1);
}

TEST(perf_map_written_by_another_user_is_ignored)
{
	char dir[] = "/tmp/rt-fakeproc-XXXXXX", name[64], path[PATH_MAX];
	struct symbolizer_options o = {.proc_root = dir, .tmp_dir = dir};
	struct symbolizer *s;
	struct sym_frame f;

	CHECK_EQ_INT(fake_proc(dir, "7f0000000000-7f0000010000 rwxp 00000000 00:00 0 \n", NULL), 0);
	snprintf(name, sizeof(name), "perf-%d.map", FAKE_PID);
	CHECK_EQ_INT(write_file(dir, name, "7f0000001000 100 planted_name\n"), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	/* The fake process belongs to us; the map to someone else (only root can chown). */
	if (geteuid() == 0)
		CHECK_EQ_INT(chown(path, 54321, 54321), 0);
	s = symbolizer__new(&o);
	CHECK(s);
	symbolizer__resolve_user(s, FAKE_PID, 0x7f0000001080, &f);
	symbolizer__free(s);
	rm_tree(dir);
	CHECK_EQ_STR(f.function, geteuid() == 0 ? "[unknown]" : "planted_name");
}

TEST(new_mapping_after_capture_is_found_by_recapture)
{
	char dir[] = "/tmp/rt-fakeproc-XXXXXX", maps[PATH_MAX + 128], sub[PATH_MAX + 32];
	struct symbolizer_options o = {.proc_root = dir, .tmp_dir = dir};
	const char *lib = fixture_path("libfixture.so");
	struct elf_symbols *es;
	struct symbolizer *s;
	struct symbolizer_stats st;
	struct stat lst;
	char name[SYM_NAME_MAX];
	int fd;

	CHECK_EQ_INT(fake_proc(dir, "00400000-00401000 r-xp 00000000 00:00 0 \n", NULL), 0);
	s = symbolizer__new(&o);
	CHECK(s);
	CHECK_EQ_INT(process_registry__capture(symbolizer__registry(s), FAKE_PID), 0);
	/* "dlopen": the library's whole file mapped at 0x10000000 after the capture. */
	CHECK_EQ_INT(stat(lib, &lst), 0);
	snprintf(maps, sizeof(maps),
		 "00400000-00401000 r-xp 00000000 00:00 0 \n"
		 "10000000-10004000 r-xp 00000000 %02x:%02x %lu %s\n",
		 major(lst.st_dev), minor(lst.st_dev), (unsigned long)lst.st_ino, lib);
	snprintf(sub, sizeof(sub), "%s/%d", dir, FAKE_PID);
	CHECK_EQ_INT(write_file(sub, "maps", maps), 0);
	usleep(150 * 1000); /* past the re-capture rate limit */
	fd = open(lib, O_RDONLY);
	CHECK(fd >= 0);
	es = elf_symbols__load_fd(fd);
	close(fd);
	CHECK(es);
	/* The first PT_LOAD maps offset 0 at vaddr 0 in a shared library. */
	uint64_t vaddr = 0;

	for (vaddr = 0; vaddr < 0x4000; vaddr++) {
		const char *n = elf_symbols__lookup(es, vaddr);

		if (n && strcmp(n, "fixture_lib_spin") == 0)
			break;
	}
	elf_symbols__free(es);
	CHECK(vaddr < 0x4000);
	resolve_name(s, FAKE_PID, 0x10000000 + vaddr, name, sizeof(name));
	CHECK_EQ_STR(name, "fixture_lib_spin");
	st = stats_and_free(s);
	rm_tree(dir);
	CHECK_EQ_INT(st.recaptures, 1);
}

TEST(kernel_frames_from_kallsyms)
{
	char dir[] = "/tmp/rt-fakeproc-XXXXXX";
	struct symbolizer_options o = {.proc_root = dir, .tmp_dir = dir};
	struct symbolizer *s;
	struct symbolizer_stats st;
	struct sym_frame f;

	CHECK_EQ_INT(fake_proc(dir, "",
			       "ffffffff81000000 T _stext\n"
			       "ffffffff81001000 T do_syscall_64\n"
			       "ffffffff81002000 t vfs_read\n"
			       "ffffffff81003000 D some_data\n"
			       "ffffffff81004000 T last_text\n"),
		     0);
	s = symbolizer__new(&o);
	CHECK(s);
	symbolizer__resolve_kernel(s, 0xffffffff81001234, &f);
	CHECK_EQ_STR(f.function, "do_syscall_64");
	CHECK_EQ_STR(f.module, "[kernel]");
	CHECK_EQ_INT(f.known, 1);
	symbolizer__resolve_kernel(s, 0xffffffff81002fff, &f);
	CHECK_EQ_STR(f.function, "vfs_read");
	symbolizer__resolve_kernel(s, 0xffffffff81003010, &f); /* data, not text */
	CHECK_EQ_STR(f.function, "[unknown]");
	symbolizer__resolve_kernel(s, 0xffffffff81004010, &f); /* past the last: no end known */
	CHECK_EQ_STR(f.function, "[unknown]");
	symbolizer__resolve_kernel(s, 0x1000, &f);
	CHECK_EQ_STR(f.function, "[unknown]");
	st = stats_and_free(s);
	rm_tree(dir);
	CHECK_EQ_INT(st.unknown[SYM_UNKNOWN_KERNEL], 3);
}

TEST(hidden_kernel_addresses_are_unknown)
{
	char dir[] = "/tmp/rt-fakeproc-XXXXXX";
	struct symbolizer_options o = {.proc_root = dir, .tmp_dir = dir};
	struct symbolizer *s;
	struct sym_frame f;

	/* kptr_restrict as seen by an unprivileged reader: every address zero. */
	CHECK_EQ_INT(fake_proc(dir, "", "0000000000000000 T _stext\n0000000000000000 T vfs_read\n"),
		     0);
	s = symbolizer__new(&o);
	CHECK(s);
	symbolizer__resolve_kernel(s, 0xffffffff81001234, &f);
	symbolizer__free(s);
	rm_tree(dir);
	CHECK_EQ_STR(f.function, "[unknown]");
	CHECK_EQ_STR(f.module, "[kernel]");
}

TEST(reason_names_are_stable)
{
	CHECK_EQ_STR(symbolizer__reason_name(SYM_UNKNOWN_NO_MAPPING), "no_mapping");
	CHECK_EQ_STR(symbolizer__reason_name(SYM_UNKNOWN_UNREADABLE), "unreadable");
	CHECK_EQ_STR(symbolizer__reason_name(SYM_UNKNOWN_NO_SYMBOL), "no_symbol");
	CHECK_EQ_STR(symbolizer__reason_name(SYM_UNKNOWN_KERNEL), "kernel");
	CHECK_EQ_STR(symbolizer__reason_name(SYM_UNKNOWN_JIT), "jit_no_perf_map");
	CHECK_EQ_STR(symbolizer__reason_name(SYM_UNKNOWN_DEBUGINFOD_WAITING), "debuginfod_waiting");
	CHECK_EQ_STR(symbolizer__reason_name(SYM_UNKNOWN_DEBUGINFOD_FAILED), "debuginfod_failed");
}

TEST_MAIN("symbolizer", T(pie_binary_names_exported_and_static_functions),
	  T(non_pie_binary_names_exported_and_static_functions),
	  T(address_past_symbol_end_is_unknown_not_previous_symbol),
	  T(stripped_binary_names_dynsym_functions_only),
	  T(shared_library_function_named_with_library_module),
	  T(symbol_tables_over_the_cap_are_dropped_at_window_end_when_unused_and_read_again),
	  T(symbol_tables_used_every_window_are_never_read_again_over_the_cap),
	  T(cpp_names_are_demangled), T(cpp_names_are_demangled_once_across_windows),
	  T(process_exited_after_capture_still_named),
	  T(never_seen_exited_process_is_unknown_no_mapping),
	  T(deleted_binary_named_through_map_files_or_counted_unreadable),
	  T(damaged_binary_is_unknown_unreadable_with_module),
	  T(library_mapped_by_many_processes_is_read_once),
	  T(binary_cache_is_bounded_and_evicted_binaries_stay_usable), T(process_cache_is_bounded),
	  T(vdso_frames_named), T(elf_reader_reports_build_id_and_dynsym_fallback),
	  T(elf_without_any_symbol_table_loads_empty),
	  T(unreadable_binary_is_unknown_with_module_and_counted),
	  T(samples_of_the_image_before_an_exec_are_named_after_it_until_the_window_ends),
	  T(exited_process_read_as_no_mappings_keeps_what_was_captured),
	  T(jit_frames_named_from_perf_map), T(perf_map_written_by_another_user_is_ignored),
	  T(new_mapping_after_capture_is_found_by_recapture), T(kernel_frames_from_kallsyms),
	  T(hidden_kernel_addresses_are_unknown), T(reason_names_are_stable))
