// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the /proc/PID/maps parser: file, anonymous, special and deleted mappings,
 * paths with spaces, malformed lines, and reading this process's own maps. */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "process/procmaps.h"
#include "test.h"

TEST(file_mapping_fields)
{
	struct procmap_entry e;

	CHECK_EQ_INT(procmaps__parse_line("55d0c8a00000-55d0c8a21000 r-xp 00002000 fd:01 1311 "
					  "           /usr/bin/cat\n",
					  &e),
		     0);
	CHECK_EQ_INT(e.start, 0x55d0c8a00000);
	CHECK_EQ_INT(e.end, 0x55d0c8a21000);
	CHECK_EQ_INT(e.offset, 0x2000);
	CHECK_EQ_INT(e.dev_major, 0xfd);
	CHECK_EQ_INT(e.dev_minor, 1);
	CHECK_EQ_INT(e.inode, 1311);
	CHECK(e.readable && !e.writable && e.executable && !e.deleted);
	CHECK_EQ_STR(e.path, "/usr/bin/cat");
	CHECK(procmaps__is_file(&e));
}

TEST(anonymous_and_special_mappings_are_not_files)
{
	struct procmap_entry e;

	CHECK_EQ_INT(procmaps__parse_line("7f0000000000-7f0000010000 rwxp 00000000 00:00 0\n", &e),
		     0);
	CHECK_EQ_STR(e.path, "");
	CHECK(!procmaps__is_file(&e));
	CHECK_EQ_INT(procmaps__parse_line("7ffd1000-7ffd3000 r-xp 00000000 00:00 0    [vdso]", &e),
		     0);
	CHECK_EQ_STR(e.path, "[vdso]");
	CHECK(!procmaps__is_file(&e));
	CHECK_EQ_INT(
	    procmaps__parse_line("7f00-8f00 r-xs 00000000 00:01 77 /memfd:jit (deleted)", &e), 0);
	CHECK(e.deleted);
	CHECK(!procmaps__is_file(&e));
}

TEST(deleted_suffix_split_off)
{
	struct procmap_entry e;

	CHECK_EQ_INT(
	    procmaps__parse_line("400000-401000 r-xp 00000000 08:01 42 /opt/app (deleted)\n", &e),
	    0);
	CHECK(e.deleted);
	CHECK_EQ_STR(e.path, "/opt/app");
	CHECK(procmaps__is_file(&e));
}

TEST(path_with_spaces_kept_whole)
{
	struct procmap_entry e;

	CHECK_EQ_INT(
	    procmaps__parse_line("400000-401000 r--p 00000000 08:01 42 /opt/my app/bin x\n", &e),
	    0);
	CHECK_EQ_STR(e.path, "/opt/my app/bin x");
	CHECK(!e.executable);
}

TEST(malformed_lines_rejected)
{
	struct procmap_entry e;

	CHECK_EQ_INT(procmaps__parse_line("", &e), -EINVAL);
	CHECK_EQ_INT(procmaps__parse_line("garbage", &e), -EINVAL);
	CHECK_EQ_INT(procmaps__parse_line("401000-400000 r-xp 00000000 08:01 42 /x", &e), -EINVAL);
	CHECK_EQ_INT(procmaps__parse_line("400000-401000 r-xp", &e), -EINVAL);
	CHECK_EQ_INT(procmaps__parse_line("400000-401000 r-xp 0 08:01 x /x", &e), -EINVAL);
}

struct own_ctx {
	uintptr_t code;
	int found, lines;
};

static int find_own_code(const struct procmap_entry *e, void *arg)
{
	struct own_ctx *c = arg;

	c->lines++;
	if (c->code >= e->start && c->code < e->end && e->executable && procmaps__is_file(e))
		c->found = 1;
	return 0;
}

TEST(own_maps_hold_own_code)
{
	struct own_ctx c = {.code = (uintptr_t)find_own_code};

	CHECK_EQ_INT(procmaps__foreach("/proc", getpid(), find_own_code, &c), 0);
	CHECK(c.lines > 3);
	CHECK_EQ_INT(c.found, 1);
}

TEST(missing_process_is_esrch)
{
	struct own_ctx c = {0};

	CHECK_EQ_INT(procmaps__foreach("/proc", 0x3ffffff0, find_own_code, &c), -ESRCH);
}

TEST_MAIN("procmaps", T(file_mapping_fields), T(anonymous_and_special_mappings_are_not_files),
	  T(deleted_suffix_split_off), T(path_with_spaces_kept_whole), T(malformed_lines_rejected),
	  T(own_maps_hold_own_code), T(missing_process_is_esrch))
