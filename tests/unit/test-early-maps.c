// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the early maps schedule: who is young, the re-reads at 100 ms, 500 ms and
 * 2 s after a capture, one read for steps a late poll passed, the cap. */
#include <stdint.h>

#include "sampling/early_maps.h"
#include "test.h"

#define MS 1000000ULL
#define T0 (3600 * 1000 * MS) /* an hour after boot */

TEST(only_young_or_just_execd_processes_are_queued)
{
	struct early_maps *em = early_maps__new();
	struct early_maps_stats st;
	pid_t due[4];

	CHECK(em);
	CHECK(early_maps__note(em, 10, T0 - 5 * MS, false, T0));     /* started 5 ms ago */
	CHECK(!early_maps__note(em, 11, T0 - 3000 * MS, false, T0)); /* running before */
	CHECK(early_maps__note(em, 12, T0 - 3000 * MS, true, T0));   /* exec'd just now */
	CHECK_EQ_INT(early_maps__due(em, T0 + 100 * MS, due, 4), 2);
	CHECK_EQ_INT(due[0], 10);
	CHECK_EQ_INT(due[1], 12);
	early_maps__stats(em, &st);
	CHECK_EQ_INT(st.noted, 2);
	early_maps__free(em);
}

TEST(three_rereads_then_never_again)
{
	struct early_maps *em = early_maps__new();
	struct early_maps_stats st;
	pid_t due[4];

	CHECK(em);
	CHECK(early_maps__note(em, 10, T0, false, T0));
	CHECK_EQ_INT(early_maps__due(em, T0 + 99 * MS, due, 4), 0);
	CHECK_EQ_INT(early_maps__due(em, T0 + 100 * MS, due, 4), 1);
	CHECK_EQ_INT(early_maps__due(em, T0 + 101 * MS, due, 4), 0);
	CHECK_EQ_INT(early_maps__due(em, T0 + 500 * MS, due, 4), 1);
	CHECK_EQ_INT(early_maps__due(em, T0 + 1999 * MS, due, 4), 0);
	CHECK(early_maps__pending(em)); /* the daemon's loop keeps its short wait until then */
	CHECK_EQ_INT(early_maps__due(em, T0 + 2000 * MS, due, 4), 1);
	CHECK(!early_maps__pending(em));
	CHECK_EQ_INT(early_maps__due(em, T0 + 60000 * MS, due, 4), 0);
	early_maps__stats(em, &st);
	CHECK_EQ_INT(st.rereads, 3);
	early_maps__free(em);
}

TEST(a_late_poll_reads_once_for_the_steps_it_passed)
{
	struct early_maps *em = early_maps__new();
	pid_t due[4];

	CHECK(em);
	CHECK(early_maps__note(em, 10, T0, false, T0));
	CHECK_EQ_INT(early_maps__due(em, T0 + 700 * MS, due, 4), 1); /* 100 and 500 ms */
	CHECK_EQ_INT(early_maps__due(em, T0 + 800 * MS, due, 4), 0);
	CHECK_EQ_INT(early_maps__due(em, T0 + 2500 * MS, due, 4), 1);
	CHECK_EQ_INT(early_maps__due(em, T0 + 5000 * MS, due, 4), 0);
	early_maps__free(em);
}

TEST(a_pid_noted_again_restarts_and_the_cap_holds)
{
	struct early_maps *em = early_maps__new();
	struct early_maps_stats st;
	pid_t due[4];

	CHECK(em);
	CHECK(early_maps__note(em, 10, T0, false, T0));
	CHECK(early_maps__note(em, 10, T0, true, T0 + 90 * MS)); /* exec'd: once, from then */
	CHECK_EQ_INT(early_maps__due(em, T0 + 150 * MS, due, 4), 0);
	CHECK_EQ_INT(early_maps__due(em, T0 + 190 * MS, due, 4), 1);
	for (pid_t pid = 100; pid < 100 + EARLY_MAPS_MAX_PIDS; pid++)
		early_maps__note(em, pid, T0, false, T0);
	early_maps__stats(em, &st);
	CHECK_EQ_INT(st.dropped, 1); /* pid 10 holds one of the places */
	CHECK_EQ_INT(early_maps__due(em, T0 + 200 * MS, due, 4), 4); /* up to cap */
	early_maps__free(em);
}

TEST_MAIN("early_maps", T(only_young_or_just_execd_processes_are_queued),
	  T(three_rereads_then_never_again), T(a_late_poll_reads_once_for_the_steps_it_passed),
	  T(a_pid_noted_again_restarts_and_the_cap_holds))
