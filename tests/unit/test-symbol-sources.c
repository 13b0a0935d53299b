// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the symbol sources around the symboliser: the debuglink CRC, where debug
 * files are looked for, MiniDebugInfo's bound, debuginfod's cache bounds, the config key. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <lzma.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "../../agent/control/config_file.h"
#include "../../agent/status/agent_metrics.h"
#include "../../agent/symbolize/symbolizer.h"
#include "../../agent/symbolize/debug_file.h"
#include "../../agent/symbolize/debuginfod_fetch.h"
#include "../../agent/symbolize/minidebuginfo.h"
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

TEST_MAIN("symbol_sources", T(debuglink_crc_is_the_ieee_crc32),
	  T(debug_files_are_found_where_gdb_looks_in_order),
	  T(minidebuginfo_decompresses_and_refuses_garbage),
	  T(debuginfod_cache_is_bounded_by_age_then_size_oldest_first),
	  T(debuginfod_off_without_urls_and_lookups_never_block),
	  T(debuginfod_failure_counted_by_cause_in_metrics), T(config_key_debuginfod_urls))
