/* SPDX-License-Identifier: Apache-2.0 */
/* The merged call tree of a window, root first, with self and total per node, and folding
 * of the smallest nodes into one "other" node per parent so a capped tree still adds up. */
#ifndef ROOTTRACE_CALLTREE_H
#define ROOTTRACE_CALLTREE_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

#define CALLTREE_ROOT_NAME "root"
#define CALLTREE_OTHER_NAME "other"

struct calltree_node {
	const char *name; /* borrowed from the merged window, or a static string */
	int64_t self;	  /* value of stacks ending here */
	int64_t total;	  /* self + the children's totals */
	int64_t folded;	  /* for an "other" node: how many nodes it stands for */
	struct calltree_node *parent;
	struct calltree_node **children; /* after calltree_finish(): sorted by total, descending */
	size_t n_children, cap_children;
	int depth;
	int keep_; /* folding scratch */
};

struct calltree {
	struct calltree_node *root;
	size_t n_nodes; /* including the root */
	void *priv_;	/* node arena */
};

/* Builds the tree of w (borrowing w's frame strings: keep w alive while the tree is used).
 * Children are sorted by total descending, then name. 0 or -ENOMEM. */
int calltree_build(const struct merged_window *w, struct calltree **ret);

/* Keeps at most max_nodes nodes (>= 2, root and "other" included): the largest nodes by total
 * are kept, the rest folded into one "other" node under their parent, whose self and total
 * is the sum of what it replaces. Every node's total is unchanged. 0, -EINVAL, -ENOMEM. */
int calltree__fold(struct calltree *t, size_t max_nodes);

void calltree__free(struct calltree *t);

#endif
