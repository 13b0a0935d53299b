// SPDX-License-Identifier: Apache-2.0
/* Upload queue bounds: FIFO order, drop-oldest by count and by bytes, counted, with the
 * drop callback seeing each dropped job once. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ship/upload_queue.h"
#include "test.h"

static struct upload_job *job(uint64_t seq, size_t len)
{
	struct upload_job *j = calloc(1, sizeof(*j));

	j->seq = seq;
	j->query = strdup("service=x&profile_type=cpu");
	j->body = calloc(1, len ? len : 1);
	j->len = len;
	return j;
}

struct drops {
	uint64_t seqs[64];
	size_t n;
};

static void on_drop(const struct upload_job *j, void *ctx)
{
	struct drops *d = ctx;

	d->seqs[d->n++] = j->seq;
}

TEST(fifo_order)
{
	struct upload_queue *q = upload_queue__new(10, 0, NULL, NULL);
	struct upload_job *j;

	for (uint64_t i = 1; i <= 3; i++)
		CHECK_EQ_INT(upload_queue__push(q, job(i, 10)), 0);
	CHECK_EQ_INT(upload_queue__len(q), 3);
	CHECK_EQ_INT(upload_queue__bytes(q), 30);
	for (uint64_t i = 1; i <= 3; i++) {
		j = upload_queue__pop(q);
		CHECK(j);
		CHECK_EQ_INT(j->seq, i);
		upload_job__free(j);
	}
	CHECK(upload_queue__pop(q) == NULL);
	CHECK_EQ_INT(upload_queue__bytes(q), 0);
	upload_queue__free(q);
}

TEST(full_by_count_drops_oldest_and_counts)
{
	struct drops d = {0};
	struct upload_queue *q = upload_queue__new(3, 0, on_drop, &d);
	struct upload_job *j;

	for (uint64_t i = 1; i <= 5; i++)
		upload_queue__push(q, job(i, 100));
	CHECK_EQ_INT(upload_queue__len(q), 3);
	CHECK_EQ_INT(upload_queue__dropped(q), 2);
	CHECK_EQ_INT(upload_queue__dropped_bytes(q), 200);
	CHECK_EQ_INT(d.n, 2);
	CHECK_EQ_INT(d.seqs[0], 1);
	CHECK_EQ_INT(d.seqs[1], 2);
	j = upload_queue__pop(q);
	CHECK_EQ_INT(j->seq, 3);
	upload_job__free(j);
	upload_queue__free(q);
}

TEST(full_by_bytes_drops_oldest)
{
	struct upload_queue *q = upload_queue__new(100, 1000, NULL, NULL);

	upload_queue__push(q, job(1, 400));
	upload_queue__push(q, job(2, 400));
	CHECK_EQ_INT(upload_queue__dropped(q), 0);
	CHECK_EQ_INT(upload_queue__push(q, job(3, 400)), 1);
	CHECK_EQ_INT(upload_queue__len(q), 2);
	CHECK(upload_queue__bytes(q) <= 1000);
	/* a job bigger than the cap on its own cannot be kept */
	CHECK_EQ_INT(upload_queue__push(q, job(4, 5000)), 3);
	CHECK_EQ_INT(upload_queue__len(q), 0);
	CHECK_EQ_INT(upload_queue__dropped(q), 4);
	upload_queue__free(q);
}

TEST(failed_job_goes_back_to_the_head)
{
	struct drops d = {0};
	struct upload_queue *q = upload_queue__new(2, 0, on_drop, &d);
	struct upload_job *j;

	upload_queue__push(q, job(1, 1));
	upload_queue__push(q, job(2, 1));
	j = upload_queue__pop(q);
	upload_queue__push(q, job(3, 1)); /* while 1 was in flight */
	upload_queue__push_front(q, j);	  /* 1 failed: oldest again, over the bound: dropped */
	CHECK_EQ_INT(d.n, 1);
	CHECK_EQ_INT(d.seqs[0], 1);
	j = upload_queue__pop(q);
	CHECK_EQ_INT(j->seq, 2);
	upload_job__free(j);
	j = upload_queue__pop(q);
	CHECK_EQ_INT(j->seq, 3);
	upload_job__free(j);
	upload_queue__free(q);
}

TEST(memory_stays_bounded_over_a_long_outage)
{
	struct upload_queue *q = upload_queue__new(16, 64 << 10, NULL, NULL);

	for (uint64_t i = 1; i <= 10000; i++) {
		upload_queue__push(q, job(i, 4096));
		CHECK(upload_queue__len(q) <= 16);
		CHECK(upload_queue__bytes(q) <= 64 << 10);
	}
	CHECK_EQ_INT(upload_queue__dropped(q) + upload_queue__len(q), 10000);
	upload_queue__free(q);
}

TEST_MAIN("upload_queue", T(fifo_order), T(full_by_count_drops_oldest_and_counts),
	  T(full_by_bytes_drops_oldest), T(failed_job_goes_back_to_the_head),
	  T(memory_stays_bounded_over_a_long_outage))
