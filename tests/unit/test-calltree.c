/* SPDX-License-Identifier: Apache-2.0 */
/* Call tree unit tests: self/total worked out by hand, recursion, and max_nodes folding
 * that keeps every total exact and never makes a node wider than its parent. */
#include <errno.h>

#include "test.h"
#include "query_fixture.h"

#include "query/calltree.h"

static const struct calltree_node *child(const struct calltree_node *n, const char *name)
{
	for (size_t i = 0; n && i < n->n_children; i++)
		if (strcmp(n->children[i]->name, name) == 0)
			return n->children[i];
	return NULL;
}

/* Checks self + sum(children totals) == total and child.total <= total everywhere;
 * returns the number of nodes, or -1 on a broken invariant. */
static long check_sums(const struct calltree_node *n)
{
	int64_t sum = n->self;
	long count = 1;

	for (size_t i = 0; i < n->n_children; i++) {
		long c = check_sums(n->children[i]);

		if (c < 0 || n->children[i]->total > n->total)
			return -1;
		if (i && n->children[i]->total > n->children[i - 1]->total &&
		    strcmp(n->children[i]->name, CALLTREE_OTHER_NAME) != 0)
			return -1; /* sorted by total, "other" last */
		sum += n->children[i]->total;
		count += c;
	}
	return sum == n->total ? count : -1;
}

static const char *const basic[] = {
    "main;a;b 10", "main;a 5", "main;c 20", "main;a;b 1", "other_root 4", NULL,
};

TEST(build_self_and_total_by_hand)
{
	struct merged_window w = fixture_window(basic, 1);
	struct calltree *t;
	const struct calltree_node *main_, *a, *b, *c;

	CHECK_EQ_INT(calltree_build(&w, &t), 0);
	CHECK_EQ_STR(t->root->name, "root");
	CHECK_EQ_INT(t->root->total, 40);
	CHECK_EQ_INT(t->root->self, 0);
	main_ = child(t->root, "main");
	a = child(main_, "a");
	b = child(a, "b");
	c = child(main_, "c");
	CHECK(main_ && a && b && c);
	CHECK_EQ_INT(main_->total, 36);
	CHECK_EQ_INT(main_->self, 0);
	CHECK_EQ_INT(a->total, 16);
	CHECK_EQ_INT(a->self, 5);
	CHECK_EQ_INT(b->total, 11); /* two identical stacks merge into one node */
	CHECK_EQ_INT(b->self, 11);
	CHECK_EQ_INT(c->self, 20);
	CHECK_EQ_INT(t->n_nodes, 6);
	CHECK_EQ_STR(main_->children[0]->name, "c"); /* widest first */
	CHECK_EQ_INT(check_sums(t->root), 6);
	calltree__free(t);
	fixture_free(&w);
}

TEST(recursion_is_a_path_not_a_merge)
{
	static const char *const rec[] = {"f;f;f 3", "f;g 2", NULL};
	struct merged_window w = fixture_window(rec, 1);
	struct calltree *t;
	const struct calltree_node *f1, *f2, *f3;

	CHECK_EQ_INT(calltree_build(&w, &t), 0);
	f1 = child(t->root, "f");
	f2 = child(f1, "f");
	f3 = child(f2, "f");
	CHECK(f1 && f2 && f3);
	CHECK_EQ_INT(f1->total, 5);
	CHECK_EQ_INT(f2->total, 3);
	CHECK_EQ_INT(f3->self, 3);
	CHECK(check_sums(t->root) > 0);
	calltree__free(t);
	fixture_free(&w);
}

TEST(fold_keeps_totals_exact)
{
	/* root -> {main: 36 -> {c: 20, a: 16 -> b: 11}, other_root: 4}: 6 nodes.
	 * Cap 5: root, main, c plus an "other" under main (a, b) and under root (other_root);
	 * keeping a too would need a and an "other" under a: 6. */
	struct merged_window w = fixture_window(basic, 1);
	struct calltree *t;
	const struct calltree_node *main_, *o_root, *o_main;

	CHECK_EQ_INT(calltree_build(&w, &t), 0);
	CHECK_EQ_INT(calltree__fold(t, 5), 0);
	CHECK_EQ_INT(t->n_nodes, 5);
	CHECK_EQ_INT(check_sums(t->root), 5);
	CHECK_EQ_INT(t->root->total, 40);
	main_ = child(t->root, "main");
	o_root = child(t->root, "other");
	o_main = child(main_, "other");
	CHECK(main_ && o_root && o_main && child(main_, "c"));
	CHECK_EQ_INT(main_->total, 36);
	CHECK_EQ_INT(o_main->total, 16); /* a and its subtree */
	CHECK_EQ_INT(o_main->self, 16);
	CHECK_EQ_INT(o_main->folded, 2);
	CHECK_EQ_INT(o_root->total, 4);
	CHECK_EQ_INT(o_root->folded, 1);
	calltree__free(t);
	fixture_free(&w);
}

TEST(fold_to_two_nodes_is_root_and_other)
{
	struct merged_window w = fixture_window(basic, 1);
	struct calltree *t;

	CHECK_EQ_INT(calltree_build(&w, &t), 0);
	CHECK_EQ_INT(calltree__fold(t, 1), -EINVAL);
	CHECK_EQ_INT(calltree__fold(t, 2), 0);
	CHECK_EQ_INT(t->n_nodes, 2);
	CHECK_EQ_INT(t->root->n_children, 1);
	CHECK_EQ_STR(t->root->children[0]->name, "other");
	CHECK_EQ_INT(t->root->children[0]->total, 40);
	CHECK_EQ_INT(t->root->children[0]->folded, 5); /* every node but the root */
	calltree__free(t);
	fixture_free(&w);
}

TEST(fold_not_needed_changes_nothing)
{
	struct merged_window w = fixture_window(basic, 1);
	struct calltree *t;

	CHECK_EQ_INT(calltree_build(&w, &t), 0);
	CHECK_EQ_INT(calltree__fold(t, 7), 0);
	CHECK_EQ_INT(calltree__fold(t, 6), 0);
	CHECK_EQ_INT(t->n_nodes, 6);
	CHECK(!child(t->root, "other"));
	calltree__free(t);
	fixture_free(&w);
}

TEST(fold_large_random_tree_invariants)
{
	/* 3000 stacks over a 6-ary tree of depth 5: every cap keeps sums exact and n <= cap. */
	static char lines_buf[3000][96];
	static const char *lines[3001];
	unsigned seed = 12345;
	struct merged_window w;

	for (int i = 0; i < 3000; i++) {
		int len = 0;
		int depth = 1 + (int)((seed = seed * 1103515245 + 12345) >> 16) % 5;

		for (int d = 0; d < depth; d++) {
			int k = (int)((seed = seed * 1103515245 + 12345) >> 16) % 6;

			len += snprintf(lines_buf[i] + len, sizeof(lines_buf[i]) - len, "%sf%d_%d",
					d ? ";" : "", d, k);
		}
		snprintf(lines_buf[i] + len, sizeof(lines_buf[i]) - len, " %u",
			 1 + ((seed = seed * 1103515245 + 12345) >> 16) % 1000);
		lines[i] = lines_buf[i];
	}
	lines[3000] = NULL;
	w = fixture_window(lines, 1);
	for (size_t cap = 2; cap < 1200; cap = cap * 3 / 2 + 1) {
		struct calltree *t;
		int64_t total;
		long n;

		CHECK_EQ_INT(calltree_build(&w, &t), 0);
		total = t->root->total;
		CHECK_EQ_INT(calltree__fold(t, cap), 0);
		n = check_sums(t->root);
		CHECK(n > 0);
		CHECK_EQ_INT(n, (long)t->n_nodes);
		CHECK((size_t)n <= cap);
		CHECK(cap < 10 || (size_t)n + 2 >= cap); /* and not needlessly small */
		CHECK_EQ_INT(t->root->total, total);
		calltree__free(t);
	}
	fixture_free(&w);
}

TEST(empty_window_is_a_zero_root)
{
	static const char *const none[] = {NULL};
	struct merged_window w = fixture_window(none, 0);
	struct calltree *t;

	CHECK_EQ_INT(calltree_build(&w, &t), 0);
	CHECK_EQ_INT(t->root->total, 0);
	CHECK_EQ_INT(t->root->n_children, 0);
	CHECK_EQ_INT(calltree__fold(t, 2), 0);
	calltree__free(t);
	fixture_free(&w);
}

TEST_MAIN("calltree", T(build_self_and_total_by_hand), T(recursion_is_a_path_not_a_merge),
	  T(fold_keeps_totals_exact), T(fold_to_two_nodes_is_root_and_other),
	  T(fold_not_needed_changes_nothing), T(fold_large_random_tree_invariants),
	  T(empty_window_is_a_zero_root))
