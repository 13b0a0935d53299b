// SPDX-License-Identifier: Apache-2.0
/* cgroup path picking from /proc/PID/cgroup contents (v1, v2, hybrid) and the per-pid cache
 * noticing a move to another cgroup. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../agent/cgroup.h"
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

TEST(cache_sees_a_move_and_keeps_the_path_of_an_exited_pid)
{
	char root[] = "/tmp/test-cgroup-XXXXXX", dir[128], file[160];
	struct cgroup_cache *c;
	const char *p;

	CHECK(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/42", root);
	mkdir(dir, 0700);
	snprintf(file, sizeof(file), "%s/cgroup", dir);
	write_file(file, "0::/system.slice/a.service\n");
	c = cgroup_cache__new(root, 16);
	CHECK(c);
	p = cgroup_cache__lookup(c, 42);
	CHECK_EQ_STR(p, "/system.slice/a.service");
	/* same generation: cached, no re-read */
	write_file(file, "0::/system.slice/b.service\n");
	CHECK_EQ_STR(cgroup_cache__lookup(c, 42), "/system.slice/a.service");
	cgroup_cache__next_generation(c, 3);
	CHECK_EQ_STR(cgroup_cache__lookup(c, 42), "/system.slice/b.service");
	unlink(file);
	rmdir(dir);
	cgroup_cache__next_generation(c, 3);
	CHECK_EQ_STR(cgroup_cache__lookup(c, 42), "/system.slice/b.service");
	CHECK(cgroup_cache__lookup(c, 43) == NULL);
	/* unseen for more than max_age generations: evicted */
	for (int i = 0; i < 5; i++)
		cgroup_cache__next_generation(c, 3);
	CHECK_EQ_INT(cgroup_cache__size(c), 0);
	CHECK(cgroup_cache__lookup(c, 42) == NULL);
	cgroup_cache__free(c);
	rmdir(root);
}

TEST(cache_is_bounded)
{
	struct cgroup_cache *c = cgroup_cache__new("/proc", 2);
	pid_t self = getpid(), parent = getppid();

	CHECK(c);
	CHECK(cgroup_cache__lookup(c, self));
	CHECK(cgroup_cache__lookup(c, parent));
	CHECK(cgroup_cache__lookup(c, 1) == NULL); /* full */
	CHECK_EQ_INT(cgroup_cache__size(c), 2);
	cgroup_cache__free(c);
}

TEST_MAIN("cgroup", T(pure_v2_uses_the_unified_line), T(v1_prefers_name_systemd),
	  T(v1_falls_back_to_cpu_when_systemd_is_root), T(v1_cpu_before_memory),
	  T(hybrid_non_root_unified_line_wins), T(all_root_gives_root), T(garbage_is_an_error),
	  T(no_trailing_newline), T(cache_sees_a_move_and_keeps_the_path_of_an_exited_pid),
	  T(cache_is_bounded))
