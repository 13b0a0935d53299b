// SPDX-License-Identifier: Apache-2.0
/* On-disk spool: atomic files, replay in order after a restart, byte cap with oldest
 * dropped and counted, removal after upload so nothing is replayed twice. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ship/spool.h"
#include "test.h"

static char dir[64];

static void fresh_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test-spool-XXXXXX");
	if (!mkdtemp(dir))
		abort();
}

static void remove_dir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("  cleanup of %s failed\n", dir);
}

static size_t count_files(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static struct upload_job *job(uint64_t seq, const char *query, size_t len, char fill)
{
	struct upload_job *j = calloc(1, sizeof(*j));

	j->seq = seq;
	j->query = strdup(query);
	j->body = malloc(len);
	memset(j->body, fill, len);
	j->len = len;
	return j;
}

TEST(write_replay_remove_round_trip)
{
	char err[256];
	struct spool *s;
	struct upload_job *a, *b, **jobs;
	size_t n;

	fresh_dir();
	s = spool__open(dir, 1 << 20, err, sizeof(err));
	CHECK(s);
	a = job(7, "service=a&profile_type=cpu", 100, 'a');
	b = job(9, "service=b&profile_type=cpu", 50, 'b');
	CHECK_EQ_INT(spool__write(s, a), 0);
	CHECK_EQ_INT(spool__write(s, b), 0);
	CHECK(a->spool_name);
	CHECK_EQ_INT(count_files(), 2);
	spool__close(s);

	/* restart: both come back, oldest first, byte for byte */
	s = spool__open(dir, 1 << 20, err, sizeof(err));
	CHECK(s);
	CHECK_EQ_INT(spool__files(s), 2);
	CHECK_EQ_INT(spool__max_seq(s), 9);
	CHECK_EQ_INT(spool__replay(s, &jobs, &n), 0);
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_INT(jobs[0]->seq, 7);
	CHECK_EQ_STR(jobs[0]->query, "service=a&profile_type=cpu");
	CHECK_EQ_INT(jobs[0]->len, 100);
	CHECK(memcmp(jobs[0]->body, a->body, 100) == 0);
	CHECK_EQ_INT(jobs[1]->seq, 9);
	CHECK_EQ_INT(jobs[1]->len, 50);

	/* uploaded: removed, so the next start replays nothing (no duplicates) */
	CHECK_EQ_INT(spool__remove(s, jobs[0]->spool_name), 0);
	CHECK_EQ_INT(spool__remove(s, jobs[1]->spool_name), 0);
	CHECK_EQ_INT(spool__remove(s, jobs[1]->spool_name), 0); /* twice is harmless */
	for (size_t i = 0; i < n; i++)
		upload_job__free(jobs[i]);
	free(jobs);
	spool__close(s);
	s = spool__open(dir, 1 << 20, err, sizeof(err));
	CHECK_EQ_INT(spool__files(s), 0);
	CHECK_EQ_INT(count_files(), 0);
	spool__close(s);
	upload_job__free(a);
	upload_job__free(b);
	remove_dir();
}

TEST(cap_drops_oldest_files_and_counts)
{
	char err[256];
	struct spool *s;
	struct upload_job *j;

	fresh_dir();
	s = spool__open(dir, 100 << 10, err, sizeof(err));
	CHECK(s);
	for (uint64_t i = 1; i <= 10; i++) {
		j = job(i, "service=x", 30 << 10, 'x');
		CHECK_EQ_INT(spool__write(s, j), 0);
		upload_job__free(j);
		CHECK(spool__bytes(s) <= 100 << 10);
	}
	CHECK_EQ_INT(spool__files(s), 3);
	CHECK_EQ_INT(spool__dropped(s), 7);
	CHECK_EQ_INT(count_files(), 3);
	/* one job over the cap alone is refused, nothing else is touched */
	j = job(11, "service=x", 200 << 10, 'x');
	CHECK_EQ_INT(spool__write(s, j), -EFBIG);
	CHECK_EQ_INT(spool__files(s), 3);
	upload_job__free(j);
	spool__close(s);
	remove_dir();
}

TEST(stale_tmp_and_corrupt_files_are_cleaned_up)
{
	char err[256], path[128];
	struct upload_job **jobs;
	struct spool *s;
	size_t n;
	FILE *f;

	fresh_dir();
	snprintf(path, sizeof(path), "%s/.tmp-0000000000000001.rtp", dir);
	f = fopen(path, "w");
	fputs("half written", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/0000000000000002.rtp", dir);
	f = fopen(path, "w");
	fputs("not a spool file", f);
	fclose(f);
	s = spool__open(dir, 1 << 20, err, sizeof(err));
	CHECK(s);
	CHECK_EQ_INT(spool__replay(s, &jobs, &n), 0);
	CHECK_EQ_INT(n, 0);
	CHECK_EQ_INT(spool__corrupt(s), 1);
	free(jobs);
	CHECK_EQ_INT(count_files(), 0);
	spool__close(s);
	remove_dir();
}

TEST(unwritable_dir_is_a_clear_error)
{
	char err[256] = "";

	CHECK(spool__open("/proc/no-such-dir/spool", 1 << 20, err, sizeof(err)) == NULL);
	CHECK(strstr(err, "/proc/no-such-dir/spool"));
}

TEST_MAIN("spool", T(write_replay_remove_round_trip), T(cap_drops_oldest_files_and_counts),
	  T(stale_tmp_and_corrupt_files_are_cleaned_up), T(unwritable_dir_is_a_clear_error))
