// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the collector's line resolver (issue 32) on a C program built with -g: debug
 * files found by build-id in a directory (split by objcopy or eu-strip, or a plain ELF), the
 * offsets of its hot function resolved to its lines as eu-addr2line does, never guessed. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture_files.h"
#include "lines/dwarf_lines.h"
#include "lines/line_resolver.h"
#include "test.h"

#define FN "lines_hot_loop"

/* The fixture's facts: its build-id, its hot function's file offsets, the source's lines. */
struct fixture {
	char build_id[129];
	uint64_t fn_offset, fn_size;
	uint64_t fn_vaddr;
	int fn_line, hot_line; /* the function's first line, the loop body's */
};

static const char *lines_fixture(const char *name)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s", fixture_path("lines/"));
	strncat(path, name, sizeof(path) - strlen(path) - 1);
	return path;
}

/* The function's symbol and its file offset, from the unstripped ELF's headers. */
static int read_symbol(const char *path, struct fixture *fx)
{
	int fd = open(path, O_RDONLY), ret = -ENOENT;
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t n;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d = elf_getdata(scn, NULL);

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;

			if (gelf_getsym(d, (int)i, &sym) &&
			    !strcmp(elf_strptr(elf, sh.sh_link, sym.st_name), FN)) {
				fx->fn_vaddr = sym.st_value;
				fx->fn_size = sym.st_size;
			}
		}
	}
	for (size_t i = 0; elf && !elf_getphdrnum(elf, &n) && i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    fx->fn_vaddr >= ph.p_vaddr && fx->fn_vaddr < ph.p_vaddr + ph.p_filesz) {
			fx->fn_offset = fx->fn_vaddr - ph.p_vaddr + ph.p_offset;
			ret = 0;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return ret;
}

/* The source lines of the function and of its loop body ("the hot line"). */
static int read_source_lines(struct fixture *fx)
{
	char path[PATH_MAX + 64], text[512];
	FILE *f;
	int n = 0;

	/* beside a build dir inside the checkout, else from the checkout (run-tests.sh's cwd) */
	snprintf(path, sizeof(path), "%s/../../tests/fixtures/lines/lines_hot.c", fixture_path(""));
	f = fopen(path, "r");
	if (!f)
		f = fopen("tests/fixtures/lines/lines_hot.c", "r");
	if (!f)
		return -errno;
	while (fgets(text, sizeof(text), f)) {
		n++;
		if (strstr(text, "void " FN "("))
			fx->fn_line = n;
		if (strstr(text, "/* the hot line */"))
			fx->hot_line = n;
	}
	fclose(f);
	return fx->fn_line && fx->hot_line ? 0 : -ENOENT;
}

static int load_fixture(struct fixture *fx)
{
	struct dwarf_lines *dl;
	int err;

	memset(fx, 0, sizeof(*fx));
	err = dwarf_lines__open(lines_fixture("lines-hot"), &dl);
	if (err)
		return err;
	snprintf(fx->build_id, sizeof(fx->build_id), "%s", dwarf_lines__build_id(dl));
	dwarf_lines__free(dl);
	err = read_symbol(lines_fixture("lines-hot"), fx);
	return err ? err : read_source_lines(fx);
}

/* A fresh directory <dir>/.build-id/xx/ holding copies of the fixture files: debug_name as
 * yyyy.debug, exe_name as yyyy (NULL: none). */
static void make_dir(char *dir, const struct fixture *fx, const char *debug_name,
		     const char *exe_name)
{
	char cmd[4 * PATH_MAX];

	strcpy(dir, "/tmp/rt-lines-XXXXXX");
	if (!mkdtemp(dir))
		abort();
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/.build-id/%.2s", dir, fx->build_id);
	if (system(cmd))
		abort();
	if (debug_name) {
		snprintf(cmd, sizeof(cmd), "cp %s %s/.build-id/%.2s/%s.debug",
			 lines_fixture(debug_name), dir, fx->build_id, fx->build_id + 2);
		if (system(cmd))
			abort();
	}
	if (exe_name) {
		snprintf(cmd, sizeof(cmd), "cp %s %s/.build-id/%.2s/%s", lines_fixture(exe_name),
			 dir, fx->build_id, fx->build_id + 2);
		if (system(cmd))
			abort();
	}
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

/* Every offset of the function resolves into the function's lines, the loop body among them. */
static void check_function_lines(struct line_resolver *r, const struct fixture *fx, int *ret_failed)
{
	struct resolved_line out;
	bool hot = false;

	CHECK(fx->fn_size > 4);
	for (uint64_t off = fx->fn_offset; off < fx->fn_offset + fx->fn_size; off++) {
		CHECK_EQ_INT(line_resolver__resolve(r, fx->build_id, off, &out), 0);
		CHECK(ends_with(out.file, "tests/fixtures/lines/lines_hot.c"));
		CHECK(out.line >= (uint32_t)fx->fn_line && out.line <= (uint32_t)fx->fn_line + 4);
		hot = hot || out.line == (uint32_t)fx->hot_line;
	}
	CHECK(hot);
}

static void check_dir(const char *debug_name, const char *exe_name, int *ret_failed)
{
	struct line_resolver *r;
	struct fixture fx;
	char dir[64];

	CHECK_EQ_INT(load_fixture(&fx), 0);
	make_dir(dir, &fx, debug_name, exe_name);
	CHECK_EQ_INT(line_resolver__new(&(struct line_resolver_config){.debug_dir = dir}, &r), 0);
	check_function_lines(r, &fx, ret_failed);
	line_resolver__free(r);
	rm_tree(dir);
}

TEST(eu_strip_debug_file_maps_offsets_itself)
{
	check_dir("lines-hot.eu.debug", NULL, ret_failed);
}

TEST(objcopy_debug_file_maps_offsets_through_the_executable)
{
	check_dir("lines-hot.debug", "lines-hot.stripped", ret_failed);
}

TEST(plain_elf_with_the_build_id_is_its_own_debug_file)
{
	check_dir(NULL, "lines-hot", ret_failed);
}

TEST(objcopy_debug_file_alone_cannot_map_offsets_and_says_so)
{
	struct line_resolver *r;
	struct resolved_line out;
	struct fixture fx;
	char dir[64], want[160];

	CHECK_EQ_INT(load_fixture(&fx), 0);
	make_dir(dir, &fx, "lines-hot.debug", NULL);
	CHECK_EQ_INT(line_resolver__new(&(struct line_resolver_config){.debug_dir = dir}, &r), 0);
	CHECK_EQ_INT(line_resolver__resolve(r, fx.build_id, fx.fn_offset, &out), -ENOENT);
	snprintf(want, sizeof(want), "no debug info for build-id %s: ", fx.build_id);
	CHECK(!strncmp(out.reason, want, strlen(want)));
	CHECK_EQ_INT(out.line, 0);
	CHECK_EQ_STR(out.file, "");
	line_resolver__free(r);
	rm_tree(dir);
}

TEST(unknown_build_id_is_no_debug_info_never_guessed)
{
	const char *other = "00112233445566778899aabbccddeeff00112233";
	struct line_resolver *r;
	struct resolved_line out;
	struct fixture fx;
	char dir[64], path[128], cmd[2 * PATH_MAX];

	CHECK_EQ_INT(load_fixture(&fx), 0);
	make_dir(dir, &fx, "lines-hot.eu.debug", NULL);
	/* another build-id's name on the fixture's debug file: it must not be taken */
	snprintf(path, sizeof(path), "%s/.build-id/%.2s", dir, other);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s && cp %s %s/%s.debug", path,
		 lines_fixture("lines-hot.eu.debug"), path, other + 2);
	CHECK_EQ_INT(system(cmd), 0);
	CHECK_EQ_INT(line_resolver__new(&(struct line_resolver_config){.debug_dir = dir}, &r), 0);
	CHECK_EQ_INT(line_resolver__resolve(r, other, fx.fn_offset, &out), -ENOENT);
	CHECK_EQ_STR(out.reason,
		     "no debug info for build-id 00112233445566778899aabbccddeeff00112233");
	CHECK_EQ_INT(line_resolver__resolve(r, "0011", 0x1000, &out), -ENOENT);
	CHECK_EQ_STR(out.reason, "no debug info for build-id 0011");
	CHECK_EQ_INT(line_resolver__resolve(r, "ABCD", 0x1000, &out), -EINVAL);
	CHECK_EQ_INT(line_resolver__resolve(r, "abc", 0x1000, &out), -EINVAL);
	CHECK_EQ_INT(line_resolver__resolve(r, "", 0x1000, &out), -EINVAL);
	line_resolver__free(r);
	rm_tree(dir);
}

/* A server that cannot be reached is not "no such file": the reason says what went wrong. */
TEST(a_failed_debuginfod_fetch_says_why)
{
	const char *id = "00112233445566778899aabbccddeeff00112233";
	struct line_resolver *r;
	struct resolved_line out;
	char cache[] = "/tmp/rt-lines-cache-XXXXXX";

	CHECK(mkdtemp(cache));
	CHECK_EQ_INT(line_resolver__new(
			 &(struct line_resolver_config){.debuginfod_urls = "http://127.0.0.1:1",
							.cache_dir = cache},
			 &r),
		     0);
	CHECK_EQ_INT(line_resolver__resolve(r, id, 0x1000, &out), -ENOENT);
	CHECK(!strncmp(out.reason,
		       "no debug info for build-id 00112233445566778899aabbccddeeff00112233 "
		       "(debuginfod: ",
		       strlen("no debug info for build-id ") + 40 + strlen(" (debuginfod: ")));
	line_resolver__free(r);
	unsetenv("DEBUGINFOD_URLS");
	rm_tree(cache);
}

TEST(offset_outside_the_code_has_no_line)
{
	struct line_resolver *r;
	struct resolved_line out;
	struct fixture fx;
	char dir[64];

	CHECK_EQ_INT(load_fixture(&fx), 0);
	make_dir(dir, &fx, "lines-hot.eu.debug", NULL);
	CHECK_EQ_INT(line_resolver__new(&(struct line_resolver_config){.debug_dir = dir}, &r), 0);
	CHECK_EQ_INT(line_resolver__resolve(r, fx.build_id, 1ull << 40, &out), -ESRCH);
	CHECK(strstr(out.reason, "no line for offset 0x10000000000 in build-id "));
	CHECK_EQ_INT(line_resolver__resolve(r, fx.build_id, 0, &out), -ESRCH); /* ELF header */
	line_resolver__free(r);
	rm_tree(dir);
}

/* A line once resolved is answered from the cache (the file may go); a build-id not found is
 * not looked up again until its negative entry expires. */
TEST(results_are_cached_and_failures_expire)
{
	struct line_resolver *r;
	struct resolved_line out, first;
	struct fixture fx;
	char dir[64], empty[64];

	CHECK_EQ_INT(load_fixture(&fx), 0);
	make_dir(dir, &fx, "lines-hot.eu.debug", NULL);
	CHECK_EQ_INT(line_resolver__new(
			 &(struct line_resolver_config){.debug_dir = dir, .negative_ttl_s = 1}, &r),
		     0);
	CHECK_EQ_INT(line_resolver__resolve(r, fx.build_id, fx.fn_offset, &first), 0);
	rm_tree(dir);
	CHECK_EQ_INT(line_resolver__resolve(r, fx.build_id, fx.fn_offset, &out), 0);
	CHECK_EQ_STR(out.file, first.file);
	CHECK_EQ_INT(out.line, first.line);
	line_resolver__free(r);

	make_dir(empty, &fx, NULL, NULL);
	CHECK_EQ_INT(
	    line_resolver__new(
		&(struct line_resolver_config){.debug_dir = empty, .negative_ttl_s = 1}, &r),
	    0);
	CHECK_EQ_INT(line_resolver__resolve(r, fx.build_id, fx.fn_offset, &out), -ENOENT);
	rm_tree(empty);
	make_dir(dir, &fx, "lines-hot.eu.debug", NULL);
	/* the same path now holds it, but the failure is remembered for negative_ttl_s */
	CHECK_EQ_INT(rename(dir, empty), 0);
	CHECK_EQ_INT(line_resolver__resolve(r, fx.build_id, fx.fn_offset, &out), -ENOENT);
	usleep(1100 * 1000);
	CHECK_EQ_INT(line_resolver__resolve(r, fx.build_id, fx.fn_offset, &out), 0);
	CHECK_EQ_INT(out.line, first.line);
	line_resolver__free(r);
	rm_tree(empty);
}

struct thread_arg {
	struct line_resolver *r;
	const struct fixture *fx;
	int failed;
};

static void *resolve_all(void *p)
{
	struct thread_arg *a = p;
	int *ret_failed = &a->failed;

	for (int round = 0; round < 20; round++)
		check_function_lines(a->r, a->fx, ret_failed);
	return NULL;
}

TEST(threads_share_one_resolver)
{
	struct thread_arg args[4];
	pthread_t threads[4];
	struct line_resolver *r;
	struct fixture fx;
	char dir[64];

	CHECK_EQ_INT(load_fixture(&fx), 0);
	make_dir(dir, &fx, "lines-hot.debug", "lines-hot.stripped");
	CHECK_EQ_INT(line_resolver__new(&(struct line_resolver_config){.debug_dir = dir}, &r), 0);
	for (int i = 0; i < 4; i++) {
		args[i] = (struct thread_arg){.r = r, .fx = &fx};
		CHECK_EQ_INT(pthread_create(&threads[i], NULL, resolve_all, &args[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(threads[i], NULL);
		CHECK_EQ_INT(args[i].failed, 0);
	}
	line_resolver__free(r);
	rm_tree(dir);
}

/* The peer: eu-addr2line on the unstripped program gives the same line for every address. */
TEST(lines_agree_with_eu_addr2line)
{
	struct line_resolver *r;
	struct resolved_line out;
	struct fixture fx;
	char dir[64], cmd[PATH_MAX + 64], text[1024];
	FILE *peer;

	CHECK_EQ_INT(load_fixture(&fx), 0);
	make_dir(dir, &fx, "lines-hot.debug", "lines-hot.stripped");
	CHECK_EQ_INT(line_resolver__new(&(struct line_resolver_config){.debug_dir = dir}, &r), 0);
	for (uint64_t i = 0; i < fx.fn_size; i++) {
		char *colon;

		snprintf(cmd, sizeof(cmd), "eu-addr2line -e %s 0x%llx", lines_fixture("lines-hot"),
			 (unsigned long long)(fx.fn_vaddr + i));
		peer = popen(cmd, "r");
		CHECK(peer && fgets(text, sizeof(text), peer));
		pclose(peer);
		/* FILE:LINE:COLUMN */
		colon = strrchr(text, ':');
		CHECK(colon);
		*colon = '\0';
		colon = strrchr(text, ':');
		CHECK(colon);
		CHECK_EQ_INT(line_resolver__resolve(r, fx.build_id, fx.fn_offset + i, &out), 0);
		CHECK_EQ_INT(out.line, atoi(colon + 1));
		*colon = '\0';
		CHECK_EQ_STR(out.file, text);
	}
	line_resolver__free(r);
	rm_tree(dir);
}

TEST_MAIN("line-resolver", T(eu_strip_debug_file_maps_offsets_itself),
	  T(objcopy_debug_file_maps_offsets_through_the_executable),
	  T(plain_elf_with_the_build_id_is_its_own_debug_file),
	  T(objcopy_debug_file_alone_cannot_map_offsets_and_says_so),
	  T(unknown_build_id_is_no_debug_info_never_guessed), T(a_failed_debuginfod_fetch_says_why),
	  T(offset_outside_the_code_has_no_line), T(results_are_cached_and_failures_expire),
	  T(threads_share_one_resolver), T(lines_agree_with_eu_addr2line))
