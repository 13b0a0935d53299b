// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the symbol sources around the symboliser: the debuglink CRC, where debug
 * files are looked for, MiniDebugInfo's bound, debuginfod's cache bounds, the config key, and
 * the resident memory of a 100k-function Go table. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <lzma.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "control/config_file.h"
#include "status/agent_metrics.h"
#include "symbolize/symbolizer.h"
#include "symbolize/debug_file.h"
#include "symbolize/debuginfod_fetch.h"
#include "symbolize/minidebuginfo.h"
#include "symbolize/symbol_source.h"
#include "test.h"

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	return remove(path);
}

static void rm_tree(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int mkdir_p(const char *dir)
{
	char path[512];

	snprintf(path, sizeof(path), "%s", dir);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(path, 0755) && errno != EEXIST ? -errno : 0;
}

static int write_file(const char *path, const char *contents, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, contents, len);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

static int read_fd(int fd, char *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len - 1, 0);

	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

TEST(debuglink_crc_is_the_ieee_crc32)
{
	/* The standard check value, and continuing a CRC over two halves. */
	CHECK_EQ_INT(debug_file__crc32(0, "123456789", 9), 0xcbf43926u);
	CHECK_EQ_INT(debug_file__crc32(debug_file__crc32(0, "1234", 4), "56789", 5), 0xcbf43926u);
	CHECK_EQ_INT(debug_file__crc32(0, "", 0), 0);
}

/* A fake debug root and binary directory: build-id first, then the link beside the binary,
 * in .debug/, and under the root + the binary's directory; a wrong CRC is skipped. */
TEST(debug_files_are_found_where_gdb_looks_in_order)
{
	char tmp[] = "/tmp/rt-debugfile-XXXXXX", root[128], bindir[128], path[512], buf[64];
	struct debug_file_query q = {.build_id = "abcdef0123", .debuglink = "app.debug"};
	int fd;

	CHECK(mkdtemp(tmp));
	snprintf(root, sizeof(root), "%s/root", tmp);
	snprintf(bindir, sizeof(bindir), "%s/bin", tmp);
	CHECK(!mkdir(root, 0755) && !mkdir(bindir, 0755));
	snprintf(path, sizeof(path), "%s/app", bindir);
	q.binary_path = path;
	/* under root + the binary's directory */
	snprintf(buf, sizeof(buf), "%s", "root-dir");
	q.debuglink_crc = debug_file__crc32(0, "root-dir", 8);
	{
		char d[512], f[600];

		snprintf(d, sizeof(d), "%s%s/bin", root, tmp);
		CHECK(!mkdir_p(d));
		snprintf(f, sizeof(f), "%s/app.debug", d);
		CHECK(!write_file(f, "root-dir", 8));
	}
	fd = debug_file__open(&q, root);
	CHECK(fd >= 0);
	CHECK(!read_fd(fd, buf, sizeof(buf)));
	CHECK_EQ_STR(buf, "root-dir");
	/* .debug/ beside the binary wins over the root, once its CRC matches */
	snprintf(path, sizeof(path), "%s/.debug", bindir);
	CHECK(!mkdir(path, 0755));
	snprintf(path, sizeof(path), "%s/.debug/app.debug", bindir);
	CHECK(!write_file(path, "dot-debug", 9));
	snprintf(path, sizeof(path), "%s/app", bindir);
	fd = debug_file__open(&q, root);
	CHECK(!read_fd(fd, buf, sizeof(buf)));
	CHECK_EQ_STR(buf, "root-dir"); /* CRC of another file: skipped */
	q.debuglink_crc = debug_file__crc32(0, "dot-debug", 9);
	fd = debug_file__open(&q, root);
	CHECK(!read_fd(fd, buf, sizeof(buf)));
	CHECK_EQ_STR(buf, "dot-debug");
	/* the binary's own directory first */
	snprintf(path, sizeof(path), "%s/app.debug", bindir);
	CHECK(!write_file(path, "beside", 6));
	snprintf(path, sizeof(path), "%s/app", bindir);
	q.debuglink_crc = debug_file__crc32(0, "beside", 6);
	fd = debug_file__open(&q, root);
	CHECK(!read_fd(fd, buf, sizeof(buf)));
	CHECK_EQ_STR(buf, "beside");
	/* the build-id file before any link */
	snprintf(path, sizeof(path), "%s/.build-id", root);
	CHECK(!mkdir(path, 0755));
	snprintf(path, sizeof(path), "%s/.build-id/ab", root);
	CHECK(!mkdir(path, 0755));
	snprintf(path, sizeof(path), "%s/.build-id/ab/cdef0123.debug", root);
	CHECK(!write_file(path, "by-build-id", 11));
	snprintf(path, sizeof(path), "%s/app", bindir);
	fd = debug_file__open(&q, root);
	CHECK(!read_fd(fd, buf, sizeof(buf)));
	CHECK_EQ_STR(buf, "by-build-id");
	/* nothing to go on */
	q = (struct debug_file_query){.build_id = "ffff"};
	CHECK_EQ_INT(debug_file__open(&q, root), -ENOENT);
	rm_tree(tmp);
}

TEST(minidebuginfo_decompresses_and_refuses_garbage)
{
	static uint8_t plain[100000], xz[4096];
	size_t xz_len = 0, out_len = 0;
	void *out = NULL;

	for (size_t i = 0; i < sizeof(plain); i++)
		plain[i] = (uint8_t)(i % 7);
	CHECK(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, NULL, plain, sizeof(plain), xz, &xz_len,
				      sizeof(xz)) == LZMA_OK);
	CHECK_EQ_INT(minidebuginfo__decompress(xz, xz_len, &out, &out_len), 0);
	CHECK_EQ_INT(out_len, sizeof(plain));
	CHECK(!memcmp(out, plain, sizeof(plain)));
	free(out);
	CHECK_EQ_INT(minidebuginfo__decompress("not xz at all", 13, &out, &out_len), -EINVAL);
	CHECK_EQ_INT(minidebuginfo__decompress(xz, xz_len / 2, &out, &out_len), -EINVAL);
}

/* Cache files with given sizes and last uses (seconds ago), as libdebuginfod lays them out:
 * DIR/BUILDID/debuginfo. */
static int cache_file(const char *dir, const char *id, size_t bytes, int age_s)
{
	char path[512], *data = calloc(1, bytes + 1);
	struct timeval tv[2];
	int err;

	snprintf(path, sizeof(path), "%s/%s", dir, id);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/debuginfo", dir, id);
	err = data ? write_file(path, data, bytes) : -ENOMEM;
	free(data);
	gettimeofday(&tv[0], NULL);
	tv[0].tv_sec -= age_s;
	tv[1] = tv[0];
	return err ? err : utimes(path, tv);
}

static int exists(const char *dir, const char *id)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s/debuginfo", dir, id);
	return access(path, F_OK) == 0;
}

TEST(debuginfod_cache_is_bounded_by_age_then_size_oldest_first)
{
	char dir[] = "/tmp/rt-dcache-XXXXXX", path[512];
	uint64_t bytes = 0;

	CHECK(mkdtemp(dir));
	CHECK(!cache_file(dir, "aa", 4000, 10 * 86400)); /* past the age */
	CHECK(!cache_file(dir, "bb", 3000, 300));
	CHECK(!cache_file(dir, "cc", 3000, 200));
	CHECK(!cache_file(dir, "dd", 3000, 100));
	/* libdebuginfod's own settings at the top level stay */
	snprintf(path, sizeof(path), "%s/max_unused_age_s", dir);
	CHECK(!write_file(path, "604800\n", 7));
	/* a week, 7000 bytes: aa goes for its age, bb (oldest left) for the size */
	CHECK_EQ_INT(debuginfod_fetch__trim_cache(dir, 7000, 7 * 86400, &bytes), 2);
	CHECK_EQ_INT(bytes, 6000);
	CHECK(!exists(dir, "aa") && !exists(dir, "bb"));
	CHECK(exists(dir, "cc") && exists(dir, "dd"));
	CHECK(access(path, F_OK) == 0);
	/* within bounds: nothing more */
	CHECK_EQ_INT(debuginfod_fetch__trim_cache(dir, 7000, 7 * 86400, &bytes), 0);
	CHECK_EQ_INT(bytes, 6000);
	rm_tree(dir);
}

TEST(debuginfod_off_without_urls_and_lookups_never_block)
{
	char path[256];

	unsetenv("DEBUGINFOD_URLS");
	CHECK_EQ_INT(debuginfod_fetch__configure(&(struct debuginfod_fetch_options){.urls = ""}),
		     0);
	CHECK_EQ_INT(debuginfod_fetch__lookup("0123456789abcdef", path, sizeof(path)),
		     DEBUGINFOD_OFF);
	CHECK_EQ_STR(debuginfod_fetch__failure_name(DEBUGINFOD_FAIL_NOT_FOUND), "not_found");
	CHECK_EQ_STR(debuginfod_fetch__failure_name(DEBUGINFOD_FAIL_TIMEOUT), "timeout");
}

/* A server that refuses connections: the lookup answers at once (waiting), the worker's
 * failure is counted by cause, and /metrics shows it with the unnamed frames by reason. */
TEST(debuginfod_failure_counted_by_cause_in_metrics)
{
	char dir[] = "/tmp/rt-dfetch-XXXXXX", path[256], *text = NULL;
	struct symbolizer_stats st = {0};
	struct debuginfod_fetch_stats d;
	struct agent_metrics *m;
	struct agent_status as;
	size_t len;

	CHECK(mkdtemp(dir));
	/* port 9 (discard) on loopback: nothing listens there, the connection is refused */
	CHECK_EQ_INT(debuginfod_fetch__configure(&(struct debuginfod_fetch_options){
			 .urls = "http://127.0.0.1:9", .cache_dir = dir, .timeout_s = 5}),
		     0);
	CHECK_EQ_INT(debuginfod_fetch__lookup("00112233445566778899aabbccddeeff00112233", path,
					      sizeof(path)),
		     DEBUGINFOD_WAITING);
	for (int i = 0; i < 100; i++) {
		debuginfod_fetch__stats(&d);
		if (d.requests && !d.in_flight && !d.queued)
			break;
		usleep(100 * 1000);
	}
	CHECK_EQ_INT(debuginfod_fetch__lookup("00112233445566778899aabbccddeeff00112233", path,
					      sizeof(path)),
		     DEBUGINFOD_FAILED);
	debuginfod_fetch__stats(&d);
	CHECK_EQ_INT(d.requests, 1);
	CHECK_EQ_INT(d.failed[DEBUGINFOD_FAIL_NETWORK], 1);
	CHECK_EQ_INT(d.negative_hits, 1);
	m = agent_metrics__new();
	CHECK(m);
	st.unknown[SYM_UNKNOWN_DEBUGINFOD_WAITING] = 3;
	st.unknown[SYM_UNKNOWN_DEBUGINFOD_FAILED] = 2;
	agent_metrics__symbolizer(m, &st);
	agent_metrics__snapshot(m, &as);
	agent_metrics__free(m);
	CHECK_EQ_INT(agent_metrics__render(&as, as.started_ms, &text, &len), 0);
	CHECK(strstr(
	    text,
	    "roottrace_agent_unknown_frame_lookups_total{reason=\"debuginfod_waiting\"} 3\n"));
	CHECK(strstr(
	    text, "roottrace_agent_unknown_frame_lookups_total{reason=\"debuginfod_failed\"} 2\n"));
	CHECK(strstr(text, "roottrace_agent_debuginfod_failures_total{cause=\"network\"} 1\n"));
	CHECK(strstr(text, "roottrace_agent_debuginfod_requests_total 1\n"));
	free(text);
	debuginfod_fetch__stop();
	rm_tree(dir);
}

TEST(config_key_debuginfod_urls)
{
	static const char json[] = "{\"debuginfod_urls\": \"http://127.0.0.1:8002\"}";
	static const char bad[] = "{\"debuginfod_urls\": 5}";
	struct agent_file_config c;
	char err[256];

	CHECK_EQ_INT(agent_file_config__defaults(&c), 0);
	CHECK(!c.debuginfod_urls);
	CHECK_EQ_INT(agent_file_config__parse(json, sizeof(json) - 1, &c, err, sizeof(err)), 0);
	CHECK_EQ_STR(c.debuginfod_urls, "http://127.0.0.1:8002");
	agent_file_config__clear(&c);
	CHECK_EQ_INT(agent_file_config__defaults(&c), 0);
	CHECK_EQ_INT(agent_file_config__parse(bad, sizeof(bad) - 1, &c, err, sizeof(err)), -EINVAL);
	agent_file_config__clear(&c);
}

/* A stripped Go binary of GO_FUNCS functions as the linker lays it out (1.18 table): text at
 * GO_TEXT (16 bytes a function), .gopclntab at GO_TAB_OFF with names, ftab and records of
 * GO_REC bytes (real records carry pcdata and funcdata: ~120 bytes). ~16 MB. */
#define GO_FUNCS 100000
#define GO_VADDR 0x400000ULL
#define GO_TEXT_OFF 0x1000ULL
#define GO_TAB_OFF 0x200000ULL
#define GO_REC 128
#define GO_NAME_LEN 13 /* "main.f" + 6 digits + NUL */

static void go_put(uint8_t *b, uint64_t off, uint64_t v, unsigned size)
{
	memcpy(b + off, &v, size);
}

static int write_big_go(const char *path)
{
	static const char shstr[] = "\0.gopclntab\0.shstrtab";
	uint64_t names = 0x100, pcln = names + (uint64_t)GO_FUNCS * GO_NAME_LEN;
	uint64_t recs = pcln + (GO_FUNCS + 1) * 8ULL, tab_len = recs + (uint64_t)GO_FUNCS * GO_REC;
	uint64_t shstr_off = GO_TAB_OFF + tab_len, sh_off = (shstr_off + sizeof(shstr) + 7) & ~7ULL;
	size_t size = sh_off + 3 * sizeof(Elf64_Shdr);
	uint8_t *b = calloc(1, size), *t = b + GO_TAB_OFF;
	Elf64_Ehdr eh = {.e_type = ET_EXEC,
			 .e_machine = EM_X86_64,
			 .e_version = EV_CURRENT,
			 .e_phoff = sizeof(Elf64_Ehdr),
			 .e_shoff = sh_off,
			 .e_ehsize = sizeof(Elf64_Ehdr),
			 .e_phentsize = sizeof(Elf64_Phdr),
			 .e_phnum = 1,
			 .e_shentsize = sizeof(Elf64_Shdr),
			 .e_shnum = 3,
			 .e_shstrndx = 2};
	Elf64_Phdr ph = {.p_type = PT_LOAD,
			 .p_flags = PF_R | PF_X,
			 .p_vaddr = GO_VADDR,
			 .p_paddr = GO_VADDR,
			 .p_filesz = size,
			 .p_memsz = size,
			 .p_align = 0x1000};
	Elf64_Shdr sh[3] = {
	    {0},
	    {.sh_name = 1,
	     .sh_type = SHT_PROGBITS,
	     .sh_flags = SHF_ALLOC,
	     .sh_addr = GO_VADDR + GO_TAB_OFF,
	     .sh_offset = GO_TAB_OFF,
	     .sh_size = tab_len},
	    {.sh_name = 12,
	     .sh_type = SHT_STRTAB,
	     .sh_offset = shstr_off,
	     .sh_size = sizeof(shstr)},
	};
	int rc;

	if (!b)
		return -ENOMEM;
	memcpy(b, ELFMAG, SELFMAG);
	memcpy(eh.e_ident, b, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	memcpy(b, &eh, sizeof(eh));
	memcpy(b + eh.e_phoff, &ph, sizeof(ph));
	memcpy(b + shstr_off, shstr, sizeof(shstr));
	memcpy(b + sh_off, sh, sizeof(sh));
	go_put(t, 0, 0xfffffff0, 4); /* 1.18, quantum 1, pointers of 8 */
	go_put(t, 6, 1, 1);
	go_put(t, 7, 8, 1);
	go_put(t, 8, GO_FUNCS, 8);
	go_put(t, 24, GO_VADDR + GO_TEXT_OFF, 8); /* textStart */
	go_put(t, 32, names, 8);
	go_put(t, 56, names, 8); /* pctab: unused, no function has pcdata */
	go_put(t, 64, pcln, 8);
	for (uint64_t i = 0; i <= GO_FUNCS; i++) {
		uint64_t rec = (uint64_t)GO_FUNCS * 8 + 8 + i * GO_REC;

		go_put(t, pcln + i * 8, i * 16, 4); /* entry - textStart, record - pcln */
		go_put(t, pcln + i * 8 + 4, i < GO_FUNCS ? rec : 0, 4);
		if (i == GO_FUNCS)
			break;
		go_put(t, pcln + rec, i * 16, 4);
		go_put(t, pcln + rec + 4, i * GO_NAME_LEN, 4);
		snprintf((char *)t + names + i * GO_NAME_LEN, GO_NAME_LEN, "main.f%06u",
			 (unsigned)i);
	}
	rc = write_file(path, (const char *)b, size);
	free(b);
	return rc;
}

/* This process's resident KiB (anonymous and file pages): what the agent's RSS shows. */
static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "re");
	char line[256];
	long kib = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Rss: %ld kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

TEST(go_table_of_100k_functions_stays_under_8_mib_resident)
{
	char path[] = "/tmp/test-symbol-sources-go.XXXXXX";
	const char *names[SYMTAB_MAX_FRAMES];
	long base, peak = 0;
	struct symtab *t;
	size_t named = 0;
	char want[32];
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ_INT(write_big_go(path), 0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	malloc_trim(0); /* free heap pages of earlier tests must not hide the table's */
	base = rss_kib();
	CHECK(base > 0);
	t = symtab__load(fd, "", NULL);
	CHECK(t);
	CHECK_EQ_INT(symtab__origin(t), SYMTAB_ORIGIN_GOPCLNTAB);
	/* A burst over 10k distinct functions spread over the table, as a profile of a big
	 * service asks, measured in resident memory (not time: robust under load). */
	for (uint64_t k = 0; k < 10000; k++) {
		uint64_t i = (k * 7919) % GO_FUNCS;
		size_t n = symtab__lookup(t, GO_TEXT_OFF + i * 16 + (k & 15), names, 1);

		snprintf(want, sizeof(want), "main.f%06u", (unsigned)i);
		named += n == 1 && !strcmp(names[0], want);
		if (k % 500 == 0 && rss_kib() - base > peak)
			peak = rss_kib() - base;
	}
	if (rss_kib() - base > peak)
		peak = rss_kib() - base;
	fprintf(stderr, "  go table: %zu bytes of heap, peak +%ld KiB resident\n",
		symtab__memory(t), peak);
	CHECK_EQ_INT(named, 10000);
	CHECK(peak <= 8 * 1024);
	CHECK(symtab__memory(t) <= 8u << 20);
	symtab__free(t);
	close(fd);
	unlink(path);
}

TEST_MAIN("symbol_sources", T(debuglink_crc_is_the_ieee_crc32),
	  T(debug_files_are_found_where_gdb_looks_in_order),
	  T(minidebuginfo_decompresses_and_refuses_garbage),
	  T(debuginfod_cache_is_bounded_by_age_then_size_oldest_first),
	  T(debuginfod_off_without_urls_and_lookups_never_block),
	  T(debuginfod_failure_counted_by_cause_in_metrics), T(config_key_debuginfod_urls),
	  T(go_table_of_100k_functions_stays_under_8_mib_resident))
