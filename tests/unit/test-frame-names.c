// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the runtimes' shared frame-name cache: a hit does not read again, a changed
 * cookie re-reads (the old name is not evicted, it is stale), the bound evicts and counts,
 * a name that cannot be read is [unknown] with the runtime's module and counted by reason. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "runtimes/frame_names.h"
#include "test.h"

/* A fake process memory: the object at addr has cookie addr * 10 (or stale_cookie). */
struct fake {
	int reads;
	uint64_t stale_addr;
	int fail_errno;
};

static int fake_read(void *ctx, pid_t pid, void *proc, uint64_t addr, uint64_t cookie,
		     struct sym_frame *ret)
{
	struct fake *f = ctx;

	f->reads++;
	if (proc != f)
		return -ENOENT; /* the runtime's process state is handed through */
	if (f->fail_errno)
		return -f->fail_errno;
	if (addr == f->stale_addr || cookie != addr * 10)
		return -ESTALE;
	snprintf(ret->function, sizeof(ret->function), "fn_%d_%llx", (int)pid,
		 (unsigned long long)addr);
	snprintf(ret->file, sizeof(ret->file), "/srv/%llx.py", (unsigned long long)addr);
	return 0;
}

TEST(hit_reads_once_and_fills_the_frame)
{
	struct fake f = {0};
	struct frame_names *c = frame_names__new(4, fake_read, &f);
	struct runtime_stats st = {0};
	struct sym_frame fr;

	CHECK(c);
	frame_names__name(c, 7, &f, 0x10, 0xa0, "[python]", &fr);
	frame_names__name(c, 7, &f, 0x10, 0xa0, "[python]", &fr);
	CHECK_EQ_INT(f.reads, 1);
	CHECK_EQ_STR(fr.function, "fn_7_10");
	CHECK_EQ_STR(fr.file, "/srv/10.py");
	CHECK_EQ_STR(fr.module, "[python]");
	CHECK_EQ_INT(fr.known, 1);
	frame_names__name(c, 8, &f, 0x10, 0xa0, "[python]", &fr); /* another pid: its own entry */
	CHECK_EQ_INT(f.reads, 2);
	frame_names__stats(c, &st);
	CHECK_EQ_INT(st.names_read, 2);
	CHECK_EQ_INT(st.names_cached, 2);
	CHECK_EQ_INT(st.names_evicted, 0);
	frame_names__free(c);
}

TEST(changed_cookie_reads_again_and_stale_is_unknown)
{
	struct fake f = {0};
	struct frame_names *c = frame_names__new(4, fake_read, &f);
	struct runtime_stats st = {0};
	struct sym_frame fr;

	CHECK(c);
	frame_names__name(c, 7, &f, 0x10, 0xa0, "[ruby]", &fr);
	f.stale_addr = 0x10; /* the object at 0x10 was replaced */
	frame_names__name(c, 7, &f, 0x10, 0x999, "[ruby]", &fr);
	CHECK_EQ_INT(f.reads, 2);
	CHECK_EQ_STR(fr.function, "[unknown]");
	CHECK_EQ_STR(fr.module, "[ruby]");
	CHECK_EQ_STR(fr.file, "");
	CHECK_EQ_INT(fr.known, 0);
	frame_names__stats(c, &st);
	CHECK_EQ_INT(st.names_stale, 1);
	CHECK_EQ_INT(st.names_cached, 0); /* dropped, not kept under the old cookie */
	CHECK_EQ_INT(st.names_evicted, 0);
	frame_names__free(c);
}

TEST(bound_evicts_least_recent_and_counts)
{
	struct fake f = {0};
	struct frame_names *c = frame_names__new(4, fake_read, &f);
	struct runtime_stats st = {0};
	struct sym_frame fr;

	CHECK(c);
	for (uint64_t a = 1; a <= 10; a++)
		frame_names__name(c, 1, &f, a, a * 10, "[php]", &fr);
	frame_names__stats(c, &st);
	CHECK_EQ_INT(st.names_cached, 4);
	CHECK_EQ_INT(st.names_evicted, 6);
	CHECK_EQ_INT(st.names_read, 10);
	frame_names__name(c, 1, &f, 10, 100, "[php]", &fr); /* the newest stayed */
	CHECK_EQ_INT(f.reads, 10);
	frame_names__name(c, 1, &f, 1, 10, "[php]", &fr); /* the oldest went */
	CHECK_EQ_INT(f.reads, 11);
	frame_names__free(c);
}

TEST(unreadable_is_unknown_and_counted)
{
	struct fake f = {.fail_errno = ESRCH};
	struct frame_names *c = frame_names__new(4, fake_read, &f);
	struct runtime_stats st = {0};
	struct sym_frame fr;

	CHECK(c);
	frame_names__name(c, 3, &f, 0x20, 0x140, "[jit:v8]", &fr);
	CHECK_EQ_STR(fr.function, "[unknown]");
	CHECK_EQ_STR(fr.module, "[jit:v8]");
	frame_names__stats(c, &st);
	CHECK_EQ_INT(st.names_unreadable, 1);
	CHECK_EQ_INT(st.names_stale, 0);
	CHECK_EQ_INT(st.names_cached, 0);
	frame_names__free(c);
}

TEST_MAIN("frame-names", T(hit_reads_once_and_fills_the_frame),
	  T(changed_cookie_reads_again_and_stale_is_unknown),
	  T(bound_evicts_least_recent_and_counts), T(unreadable_is_unknown_and_counted))
