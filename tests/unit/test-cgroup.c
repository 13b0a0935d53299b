// SPDX-License-Identifier: Apache-2.0
/* cgroup path picking from /proc/PID/cgroup contents (v1, v2, hybrid) and the per-pid cache
 * noticing a move to another cgroup. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "service/cgroup.h"
#include "test.h"

static const char *pick(const char *content)
{
	static char path[CGROUP_PATH_MAX];

	if (cgroup_pick_path(content, path, sizeof(path)) < 0)
		return "(error)";
	return path;
}

TEST(pure_v2_uses_the_unified_line)
{
	CHECK_EQ_STR(pick("0::/system.slice/checkout-api.service\n"),
		     "/system.slice/checkout-api.service");
}

TEST(v1_prefers_name_systemd)
{
	CHECK_EQ_STR(pick("12:pids:/user.slice\n"
			  "4:cpu,cpuacct:/system.slice/other.service\n"
			  "1:name=systemd:/system.slice/checkout-api.service\n"),
		     "/system.slice/checkout-api.service");
}

TEST(v1_falls_back_to_cpu_when_systemd_is_root)
{
	CHECK_EQ_STR(pick("9:name=systemd:/\n8:pids:/\n4:memory:/process_api/e21357\n"
			  "2:cpuacct:/\n1:cpu:/kubepods/burstable/pod1234/abcdef\n0::/\n"),
		     "/kubepods/burstable/pod1234/abcdef");
}

TEST(v1_cpu_before_memory)
{
	CHECK_EQ_STR(pick("4:memory:/mem/path\n3:cpu,cpuacct:/cpu/path\n"), "/cpu/path");
}

TEST(hybrid_non_root_unified_line_wins)
{
	CHECK_EQ_STR(pick("1:name=systemd:/system.slice/a.service\n0::/system.slice/b.service\n"),
		     "/system.slice/b.service");
}

TEST(all_root_gives_root)
{
	CHECK_EQ_STR(pick("9:name=systemd:/\n1:cpu:/\n0::/\n"), "/");
}

TEST(garbage_is_an_error)
{
	CHECK_EQ_STR(pick("nothing here"), "(error)");
	CHECK_EQ_STR(pick(""), "(error)");
}

TEST(no_trailing_newline)
{
	CHECK_EQ_STR(pick("0::/a/b"), "/a/b");
}

static void write_file(const char *path, const char *content)
{
	FILE *f = fopen(path, "w");

	fputs(content, f);
	fclose(f);
}

/* A fake proc root holding one process, pid 42, and its cgroup file. */
struct fake_proc {
	char root[32], dir[128], file[160];
};

/* The store reading fp's proc root, or NULL when the fake proc cannot be made. */
static struct cgroup_pids *fake_proc_store(struct fake_proc *fp, const char *cgroup)
{
	snprintf(fp->root, sizeof(fp->root), "/tmp/test-cgroup-XXXXXX");
	if (!mkdtemp(fp->root))
		return NULL;
	snprintf(fp->dir, sizeof(fp->dir), "%s/42", fp->root);
	mkdir(fp->dir, 0700);
	snprintf(fp->file, sizeof(fp->file), "%s/cgroup", fp->dir);
	write_file(fp->file, cgroup);
	return cgroup_pids__new(fp->root, 16);
}

/* Whatever the test left of it: missing entries are fine. */
static void fake_proc_remove(const struct fake_proc *fp)
{
	unlink(fp->file);
	rmdir(fp->dir);
	rmdir(fp->root);
}

TEST(store_keeps_the_path_captured_at_first_sight_after_the_pid_is_gone)
{
	struct fake_proc fp;
	struct cgroup_pids *c = fake_proc_store(&fp, "0::/system.slice/a.service\n");

	CHECK(c);
	CHECK_EQ_INT(cgroup_pids__capture(c, 42, 7), 0);
	unlink(fp.file);
	rmdir(fp.dir);
	/* gone, and even with a stale capture: the last known path */
	CHECK_EQ_STR(cgroup_pids__get(c, 42, 7, 0), "/system.slice/a.service");
	CHECK(cgroup_pids__get(c, 43, 0, 60000) == NULL);
	cgroup_pids__forget(c, 42);
	CHECK_EQ_INT(cgroup_pids__size(c), 0);
	CHECK(cgroup_pids__get(c, 42, 7, 60000) == NULL);
	cgroup_pids__free(c);
	fake_proc_remove(&fp);
}

TEST(store_rereads_on_a_new_cgroup_id_or_when_stale_not_otherwise)
{
	struct fake_proc fp;
	struct cgroup_pids *c = fake_proc_store(&fp, "0::/system.slice/a.service\n");

	CHECK(c);
	CHECK_EQ_STR(cgroup_pids__get(c, 42, 7, 60000), "/system.slice/a.service");
	write_file(fp.file, "0::/system.slice/b.service\n");
	/* same id, fresh capture: no /proc read */
	CHECK_EQ_STR(cgroup_pids__get(c, 42, 7, 60000), "/system.slice/a.service");
	/* another BPF cgroup id: it moved (cgroup v2) */
	CHECK_EQ_STR(cgroup_pids__get(c, 42, 8, 60000), "/system.slice/b.service");
	write_file(fp.file, "0::/system.slice/c.service\n");
	/* id 0 (cgroup v1): only the age triggers a re-read */
	CHECK_EQ_STR(cgroup_pids__get(c, 42, 0, 60000), "/system.slice/b.service");
	usleep(5000);
	CHECK_EQ_STR(cgroup_pids__get(c, 42, 0, 1), "/system.slice/c.service");
	/* an exec re-captures */
	write_file(fp.file, "0::/system.slice/d.service\n");
	CHECK_EQ_INT(cgroup_pids__capture(c, 42, 8), 0);
	CHECK_EQ_STR(cgroup_pids__get(c, 42, 8, 60000), "/system.slice/d.service");
	cgroup_pids__free(c);
	fake_proc_remove(&fp);
}

TEST(store_reads_a_new_process_once_more_after_it_settled_into_its_cgroup)
{
	struct fake_proc fp;
	struct cgroup_pids *c = fake_proc_store(&fp, "1:name=systemd:/user.slice\n");

	CHECK(c);
	/* first seen (cgroup v1: id 0) before it joined its unit, as a forked child can be */
	CHECK_EQ_STR(cgroup_pids__get(c, 42, 0, 60000), "/user.slice");
	write_file(fp.file, "1:name=systemd:/system.slice/a.service\n");
	CHECK_EQ_STR(cgroup_pids__get(c, 42, 0, 60000), "/user.slice"); /* not settled yet */
	usleep(550 * 1000);
	CHECK_EQ_STR(cgroup_pids__get(c, 42, 0, 60000), "/system.slice/a.service");
	/* settled: from now on only the age (or a new v2 id) reads it again */
	write_file(fp.file, "1:name=systemd:/system.slice/b.service\n");
	usleep(550 * 1000);
	CHECK_EQ_STR(cgroup_pids__get(c, 42, 0, 60000), "/system.slice/a.service");
	/* a new process under the same pid (or an exec) is captured again, and settles again */
	CHECK_EQ_INT(cgroup_pids__capture(c, 42, 0), 0);
	write_file(fp.file, "1:name=systemd:/system.slice/c.service\n");
	CHECK_EQ_STR(cgroup_pids__get(c, 42, 0, 60000), "/system.slice/b.service");
	usleep(550 * 1000);
	CHECK_EQ_STR(cgroup_pids__get(c, 42, 0, 60000), "/system.slice/c.service");
	cgroup_pids__free(c);
	fake_proc_remove(&fp);
}

TEST(samples_before_an_exec_keep_the_old_images_path)
{
	struct fake_proc fp;
	struct cgroup_pids *c = fake_proc_store(&fp, "1:name=systemd:/user.slice\n");

	CHECK(c);
	CHECK_EQ_STR(cgroup_pids__get_image(c, 42, 0, 0, 60000), "/user.slice");
	/* it moved itself into its unit and exec'd: image 1 */
	write_file(fp.file, "1:name=systemd:/system.slice/a.service\n");
	CHECK_EQ_INT(cgroup_pids__capture_image(c, 42, 0, 1), 0);
	CHECK_EQ_STR(cgroup_pids__get_image(c, 42, 0, 1, 60000), "/system.slice/a.service");
	CHECK_EQ_STR(cgroup_pids__get_image(c, 42, 0, 0, 60000), "/user.slice");
	/* and exec'd again (sh -> the program) within the same window: both old images kept */
	write_file(fp.file, "1:name=systemd:/system.slice/b.service\n");
	CHECK_EQ_INT(cgroup_pids__capture_image(c, 42, 0, 2), 0);
	CHECK_EQ_STR(cgroup_pids__get_image(c, 42, 0, 0, 60000), "/user.slice");
	CHECK_EQ_STR(cgroup_pids__get_image(c, 42, 0, 1, 60000), "/system.slice/a.service");
	CHECK_EQ_STR(cgroup_pids__get_image(c, 42, 0, 2, 60000), "/system.slice/b.service");
	cgroup_pids__free(c);
	fake_proc_remove(&fp);
}

TEST(store_is_bounded_least_recent_dropped)
{
	struct cgroup_pids *c = cgroup_pids__new("/proc", 2);
	pid_t self = getpid(), parent = getppid();

	CHECK(c);
	CHECK_EQ_INT(cgroup_pids__capture(c, self, 0), 0);
	CHECK_EQ_INT(cgroup_pids__capture(c, parent, 0), 0);
	CHECK_EQ_INT(cgroup_pids__capture(c, 1, 0), 0);
	CHECK_EQ_INT(cgroup_pids__size(c), 2);
	CHECK_EQ_INT(cgroup_pids__capture(c, 0x3ffffff0, 0), -ENOENT);
	cgroup_pids__free(c);
}

TEST_MAIN("cgroup", T(pure_v2_uses_the_unified_line), T(v1_prefers_name_systemd),
	  T(v1_falls_back_to_cpu_when_systemd_is_root), T(v1_cpu_before_memory),
	  T(hybrid_non_root_unified_line_wins), T(all_root_gives_root), T(garbage_is_an_error),
	  T(no_trailing_newline),
	  T(store_keeps_the_path_captured_at_first_sight_after_the_pid_is_gone),
	  T(store_rereads_on_a_new_cgroup_id_or_when_stale_not_otherwise),
	  T(store_reads_a_new_process_once_more_after_it_settled_into_its_cgroup),
	  T(samples_before_an_exec_keep_the_old_images_path),
	  T(store_is_bounded_least_recent_dropped))
