// SPDX-License-Identifier: Apache-2.0
/* Unit tests for collector/ingest/decode_budget.c: the collector-wide budget of decoding memory. */
#include <errno.h>
#include <pthread.h>

#include "ingest/decode_budget.h"
#include "test.h"

TEST(alone_an_upload_may_pass_the_budget)
{
	struct decode_budget b = {.limit = 100};
	struct decode_share s = {&b, 0};

	CHECK_EQ_INT(decode_share__grow(&s, 60), 0);
	CHECK_EQ_INT(decode_share__grow(&s, 500), 0); /* nobody else holds any of it */
	CHECK_EQ_INT(decode_budget__used(&b), 500);
	decode_share__release(&s);
	CHECK_EQ_INT(decode_budget__used(&b), 0);
	CHECK_EQ_INT(s.held, 0);
}

TEST(growth_past_the_budget_beside_others_is_ebusy_and_changes_nothing)
{
	struct decode_budget b = {.limit = 100};
	struct decode_share a = {&b, 0}, c = {&b, 0};

	CHECK_EQ_INT(decode_share__grow(&a, 60), 0);
	CHECK_EQ_INT(decode_share__grow(&c, 40), 0); /* exactly the limit */
	CHECK_EQ_INT(decode_share__grow(&c, 41), -EBUSY);
	CHECK_EQ_INT(c.held, 40);
	CHECK_EQ_INT(decode_budget__used(&b), 100);
	CHECK_EQ_INT(decode_share__grow(&c, 30), 0); /* a high-water mark: no change */
	CHECK_EQ_INT(c.held, 40);
	decode_share__release(&a);
	CHECK_EQ_INT(decode_share__grow(&c, 90), 0); /* alone again */
	CHECK_EQ_INT(decode_budget__used(&b), 90);
	decode_share__release(&c);
	CHECK_EQ_INT(decode_budget__used(&b), 0);
}

TEST(grab_takes_what_is_left_and_trim_gives_back)
{
	struct decode_budget b = {.limit = 100};
	struct decode_share a = {&b, 0}, c = {&b, 0};

	CHECK_EQ_INT(decode_share__grab(&a, 1000), 1000); /* alone: all it asks */
	CHECK_EQ_INT(decode_share__grab(&c, 10), 0);	  /* the budget is spent */
	decode_share__trim(&a, 70);
	CHECK_EQ_INT(decode_budget__used(&b), 70);
	CHECK_EQ_INT(decode_share__grab(&c, 50), 30);
	CHECK_EQ_INT(c.held, 30);
	decode_share__trim(&c, 80); /* never raises */
	CHECK_EQ_INT(c.held, 30);
	decode_share__release(&a);
	decode_share__release(&c);
	CHECK_EQ_INT(decode_budget__used(&b), 0);
}

TEST(without_a_budget_nothing_is_counted)
{
	struct decode_share s = {NULL, 0};

	CHECK_EQ_INT(decode_share__grow(&s, 1 << 30), 0);
	CHECK_EQ_INT(decode_share__grab(&s, 7), 7);
	decode_share__release(&s);
}

/* Threads growing and releasing at once: the counter ends at zero and never passes the limit
 * while two or more hold some of it. */
struct racer {
	struct decode_budget *b;
	int over;
};

static void *race(void *arg)
{
	struct racer *r = arg;

	for (int i = 0; i < 20000; i++) {
		struct decode_share s = {r->b, 0};

		for (size_t bytes = 8; bytes <= 64; bytes += 8) {
			if (decode_share__grow(&s, bytes))
				break;
			if (s.held < decode_budget__used(r->b) &&
			    decode_budget__used(r->b) > r->b->limit + 64)
				r->over = 1; /* someone else's growth was let through past it */
		}
		decode_share__release(&s);
	}
	return NULL;
}

TEST(concurrent_shares_balance_to_zero)
{
	struct decode_budget b = {.limit = 128};
	struct racer r[4];
	pthread_t t[4];

	for (int i = 0; i < 4; i++) {
		r[i] = (struct racer){&b, 0};
		CHECK_EQ_INT(pthread_create(&t[i], NULL, race, &r[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		CHECK_EQ_INT(r[i].over, 0);
	}
	CHECK_EQ_INT(decode_budget__used(&b), 0);
}

TEST_MAIN("decode-budget", T(alone_an_upload_may_pass_the_budget),
	  T(growth_past_the_budget_beside_others_is_ebusy_and_changes_nothing),
	  T(grab_takes_what_is_left_and_trim_gives_back), T(without_a_budget_nothing_is_counted),
	  T(concurrent_shares_balance_to_zero))
