// SPDX-License-Identifier: Apache-2.0
/* Coverage history: a service counts at the end of a bucket when it uploaded within two of its
 * intervals (at least one bucket) before it, whoever sent the upload. */
#include <string.h>

#include "query/coverage.h"
#include "test.h"

#define B BUCKET_SECONDS

static struct service_bucket row(const char *service, int64_t bucket)
{
	struct service_bucket r = {.bucket = bucket, .last_upload = bucket + 10};

	snprintf(r.service, sizeof(r.service), "%s", service);
	return r;
}

TEST(each_bucket_counts_services_with_recent_uploads)
{
	/* "php" uploads every 60 s in buckets 0 and 1, then stops; "go" uploads every 600 s
	 * (reach 1,200 s = four buckets) once, in bucket 1 */
	struct service_bucket rows[] = {row("go", B), row("php", 0), row("php", B)};
	struct coverage_service svcs[] = {{"php", 60}, {"go", 600}, {"dark", 60}};
	struct query_window w = {0, 6 * B};
	size_t covered[6];

	CHECK_EQ_INT(coverage_buckets(w), 6);
	CHECK_EQ_INT(coverage_history(svcs, 3, rows, 3, w, covered), 0);
	CHECK_EQ_INT(covered[0], 1); /* php */
	CHECK_EQ_INT(covered[1], 2); /* php, go */
	CHECK_EQ_INT(covered[2], 1); /* go: bucket 1 is within 1,200 s of bucket 2's end */
	CHECK_EQ_INT(covered[4], 1);
	CHECK_EQ_INT(covered[5], 0); /* go's last upload is more than 1,200 s old */
}

TEST(no_rows_means_nothing_covered)
{
	struct coverage_service svcs[] = {{"php", 60}};
	struct query_window w = {B, 3 * B};
	size_t covered[2] = {7, 7};

	CHECK_EQ_INT(coverage_history(svcs, 1, NULL, 0, w, covered), 0);
	CHECK_EQ_INT(covered[0] + covered[1], 0);
}

TEST_MAIN("coverage", T(each_bucket_counts_services_with_recent_uploads),
	  T(no_rows_means_nothing_covered))
