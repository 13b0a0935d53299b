// SPDX-License-Identifier: Apache-2.0
/* Unit tests of the store fault record (store/store_fault.h): each cause's errno and name, the
 * 503 detail naming the backend in that fault, a read ending only "unreachable", a write ending
 * any fault, counts by backend and cause, which errors are an outage, and a series id
 * collision counted and described by name. */
#include <errno.h>
#include <string.h>

#include "store/store_fault.h"
#include "test.h"

TEST(a_cause_comes_back_as_its_errno_and_names_itself)
{
	CHECK_EQ_INT(store_fault__record(STORE_BACKEND_SQLITE, STORE_FAULT_DISK_FULL, "full\n"),
		     -ENOSPC);
	CHECK_EQ_INT(store_fault_errno(STORE_FAULT_READ_ONLY), -EROFS);
	CHECK_EQ_INT(store_fault_errno(STORE_FAULT_REFUSED), -EREMOTEIO);
	CHECK_EQ_INT(store_fault_errno(STORE_FAULT_UNREACHABLE), -EHOSTUNREACH);
	CHECK_EQ_STR(store_fault_cause_name(STORE_FAULT_DISK_FULL), "disk_full");
	CHECK_EQ_STR(store_fault_cause_name(STORE_FAULT_UNREACHABLE), "unreachable");
	CHECK_EQ_STR(store_backend_name(STORE_BACKEND_CLICKHOUSE), "clickhouse");
	store_fault__ok(STORE_BACKEND_SQLITE, true);
}

TEST(the_detail_names_the_backend_in_that_fault_in_its_own_words)
{
	char buf[256];

	store_fault__record(STORE_BACKEND_CLICKHOUSE, STORE_FAULT_UNREACHABLE,
			    "Couldn't connect to server\r\n");
	store_fault_describe(-EHOSTUNREACH, buf, sizeof(buf));
	CHECK_EQ_STR(buf, "the database server is unreachable (clickhouse: Couldn't connect to "
			  "server)");
	store_fault_describe(-ENOMEM, buf, sizeof(buf)); /* names no cause */
	CHECK_EQ_STR(buf, "");
	store_fault_describe(-EIO, buf, sizeof(buf)); /* a plain -EIO, no disk error recorded */
	CHECK_EQ_STR(buf, "");
	CHECK_EQ_STR(store_strerror(-ENOMEM), strerror(ENOMEM));
	CHECK_EQ_STR(store_strerror(-EHOSTUNREACH),
		     "the database server is unreachable (clickhouse: "
		     "Couldn't connect to server)");
	store_fault__ok(STORE_BACKEND_CLICKHOUSE, false);
	store_fault_describe(-EHOSTUNREACH, buf, sizeof(buf)); /* no backend in it: the cause */
	CHECK_EQ_STR(buf, "the database server is unreachable");
}

TEST(a_read_ends_only_unreachable_a_write_ends_any_fault)
{
	struct store_fault f;

	store_fault__record(STORE_BACKEND_POSTGRESQL, STORE_FAULT_DISK_FULL, "could not extend");
	store_fault__ok(STORE_BACKEND_POSTGRESQL, false); /* reads still work on a full disk */
	CHECK(store_fault__get(STORE_BACKEND_POSTGRESQL, &f));
	CHECK_EQ_INT(f.cause, STORE_FAULT_DISK_FULL);
	CHECK_EQ_STR(f.detail, "could not extend");
	store_fault__ok(STORE_BACKEND_POSTGRESQL, true);
	CHECK(!store_fault__get(STORE_BACKEND_POSTGRESQL, &f));
	store_fault__record(STORE_BACKEND_POSTGRESQL, STORE_FAULT_UNREACHABLE, "refused");
	store_fault__ok(STORE_BACKEND_POSTGRESQL, false);
	CHECK(!store_fault__get(STORE_BACKEND_POSTGRESQL, &f));
}

TEST(failures_are_counted_by_backend_and_cause)
{
	uint64_t before = store_fault__count(STORE_BACKEND_CLICKHOUSE, STORE_FAULT_READ_ONLY);
	uint64_t other = store_fault__count(STORE_BACKEND_SQLITE, STORE_FAULT_READ_ONLY);

	store_fault__record(STORE_BACKEND_CLICKHOUSE, STORE_FAULT_READ_ONLY, "READONLY");
	store_fault__record(STORE_BACKEND_CLICKHOUSE, STORE_FAULT_READ_ONLY, "READONLY");
	CHECK_EQ_INT(store_fault__count(STORE_BACKEND_CLICKHOUSE, STORE_FAULT_READ_ONLY),
		     before + 2);
	CHECK_EQ_INT(store_fault__count(STORE_BACKEND_SQLITE, STORE_FAULT_READ_ONLY), other);
	store_fault__ok(STORE_BACKEND_CLICKHOUSE, true);
}

TEST(an_outage_is_a_cause_or_eio_not_a_missing_row)
{
	CHECK(store_fault_is_outage(-EIO));
	CHECK(store_fault_is_outage(-ENOSPC));
	CHECK(store_fault_is_outage(-EHOSTUNREACH));
	CHECK(!store_fault_is_outage(-ENOENT));
	CHECK(!store_fault_is_outage(-EEXIST));
	CHECK(!store_fault_is_outage(0));
}

TEST(a_series_collision_is_counted_and_described_by_name_not_an_outage)
{
	uint64_t before = store_fault__collisions();
	char buf[256];

	CHECK_EQ_INT(store_fault__collision("series id 00000000000000ab of p/b is already p/a's\n"),
		     STORE_ERR_SERIES_COLLISION);
	CHECK_EQ_INT(store_fault__collisions(), before + 1);
	store_fault_describe(STORE_ERR_SERIES_COLLISION, buf, sizeof(buf));
	CHECK_EQ_STR(buf, "a series id collision (clickhouse: series id 00000000000000ab of p/b is"
			  " already p/a's)");
	CHECK(!store_fault_is_outage(STORE_ERR_SERIES_COLLISION));
}

TEST_MAIN("store-fault", T(a_cause_comes_back_as_its_errno_and_names_itself),
	  T(the_detail_names_the_backend_in_that_fault_in_its_own_words),
	  T(a_read_ends_only_unreachable_a_write_ends_any_fault),
	  T(failures_are_counted_by_backend_and_cause),
	  T(an_outage_is_a_cause_or_eio_not_a_missing_row),
	  T(a_series_collision_is_counted_and_described_by_name_not_an_outage))
