/* SPDX-License-Identifier: Apache-2.0 */
/* Call tree of a merged window: nodes from an arena, (parent, name) lookups through a hash
 * table (lib/hashtab) while building, and max_nodes folding that keeps every total exact. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "query/calltree.h"

#define ARENA_CHUNK 4096

struct arena {
	struct calltree_node **chunks;
	size_t n_chunks, used; /* used: nodes taken from the last chunk */
};

/* A child being looked up; the index maps child_hash() -> struct calltree_node *. */
struct child_key {
	const struct calltree_node *parent;
	const char *name;
};

struct tree_priv {
	struct arena arena;
	struct calltree tree;
};

static struct calltree_node *arena_new(struct arena *a)
{
	struct calltree_node **chunks;

	if (a->n_chunks == 0 || a->used == ARENA_CHUNK) {
		chunks = realloc(a->chunks, (a->n_chunks + 1) * sizeof(*chunks));
		if (!chunks)
			return NULL;
		a->chunks = chunks;
		a->chunks[a->n_chunks] = calloc(ARENA_CHUNK, sizeof(struct calltree_node));
		if (!a->chunks[a->n_chunks])
			return NULL;
		a->n_chunks++;
		a->used = 0;
	}
	return &a->chunks[a->n_chunks - 1][a->used++];
}

static uint64_t child_hash(const struct calltree_node *parent, const char *name)
{
	return hash_combine(hash_string(name), (uintptr_t)parent);
}

static bool is_child(uint64_t node, const void *key)
{
	const struct calltree_node *n = (const struct calltree_node *)(uintptr_t)node;
	const struct child_key *k = key;

	return n->parent == k->parent && strcmp(n->name, k->name) == 0;
}

static int add_child(struct calltree_node *parent, struct calltree_node *child)
{
	struct calltree_node **children;
	size_t cap;

	if (parent->n_children == parent->cap_children) {
		cap = parent->cap_children ? parent->cap_children * 2 : 4;
		children = realloc(parent->children, cap * sizeof(*children));
		if (!children)
			return -ENOMEM;
		parent->children = children;
		parent->cap_children = cap;
	}
	parent->children[parent->n_children++] = child;
	return 0;
}

static struct calltree_node *child_get(struct calltree *t, struct arena *a, struct hashtab *ix,
				       struct calltree_node *parent, const char *name)
{
	struct child_key key = {.parent = parent, .name = name};
	uint64_t h = child_hash(parent, name), found;
	struct calltree_node *node;

	if (hashtab__find(ix, h, is_child, &key, &found))
		return (struct calltree_node *)(uintptr_t)found;
	if (hashtab__reserve(ix, hashtab__count(ix) + 1))
		return NULL;
	node = arena_new(a);
	if (!node)
		return NULL;
	node->name = name;
	node->parent = parent;
	node->depth = parent->depth + 1;
	if (add_child(parent, node))
		return NULL;
	hashtab__add(ix, h, (uintptr_t)node); /* cannot fail: reserved */
	t->n_nodes++;
	return node;
}

static int cmp_children(const void *a, const void *b)
{
	const struct calltree_node *x = *(const struct calltree_node *const *)a;
	const struct calltree_node *y = *(const struct calltree_node *const *)b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void sort_children(struct calltree_node *n)
{
	if (n->n_children > 1) /* a leaf's children array is NULL */
		qsort(n->children, n->n_children, sizeof(*n->children), cmp_children);
	for (size_t i = 0; i < n->n_children; i++)
		sort_children(n->children[i]);
}

static int add_stack(struct calltree *t, struct arena *a, struct hashtab *ix,
		     const struct merged_stack *s)
{
	struct calltree_node *node = t->root;

	if (s->value == 0)
		return 0;
	node->total += s->value;
	for (size_t i = 0; i < s->n_frames; i++) {
		node = child_get(t, a, ix, node, s->frames[i]);
		if (!node)
			return -ENOMEM;
		node->total += s->value;
	}
	node->self += s->value;
	return 0;
}

int calltree_build(const struct merged_window *w, struct calltree **ret)
{
	struct hashtab ix = {0}; /* child_hash() -> child node */
	struct tree_priv *p;
	int err = 0;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->tree.priv_ = p;
	p->tree.root = arena_new(&p->arena);
	if (!p->tree.root) {
		calltree__free(&p->tree);
		return -ENOMEM;
	}
	p->tree.root->name = CALLTREE_ROOT_NAME;
	p->tree.n_nodes = 1;
	for (size_t i = 0; i < w->n_stacks && !err; i++)
		err = add_stack(&p->tree, &p->arena, &ix, &w->stacks[i]);
	hashtab__free(&ix);
	if (err) {
		calltree__free(&p->tree);
		return err;
	}
	sort_children(p->tree.root);
	*ret = &p->tree;
	return 0;
}

static size_t collect(struct calltree_node *n, struct calltree_node **out, size_t at)
{
	for (size_t i = 0; i < n->n_children; i++) {
		out[at++] = n->children[i];
		at = collect(n->children[i], out, at);
	}
	return at;
}

/* Parents sort before children: a parent's total is at least its child's, and ties go to
 * the shallower node. */
static int cmp_fold_order(const void *a, const void *b)
{
	const struct calltree_node *x = *(const struct calltree_node *const *)a;
	const struct calltree_node *y = *(const struct calltree_node *const *)b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return x->depth - y->depth;
}

static int64_t subtree_size(const struct calltree_node *n)
{
	int64_t size = 1;

	for (size_t i = 0; i < n->n_children; i++)
		size += subtree_size(n->children[i]);
	return size;
}

/* Replaces the dropped children of a kept node with one "other" node. */
static int rebuild_children(struct arena *a, struct calltree_node *n)
{
	struct calltree_node *other = NULL;
	size_t kept = 0;

	for (size_t i = 0; i < n->n_children; i++) {
		struct calltree_node *c = n->children[i];

		if (c->keep_) {
			n->children[kept++] = c;
			continue;
		}
		if (!other) {
			other = arena_new(a);
			if (!other)
				return -ENOMEM;
			other->name = CALLTREE_OTHER_NAME;
			other->parent = n;
			other->depth = n->depth + 1;
			other->keep_ = 1;
		}
		other->self += c->total;
		other->total += c->total;
		other->folded += subtree_size(c);
	}
	n->n_children = kept;
	if (other)
		n->children[n->n_children++] = other; /* fits: at least one child was dropped */
	for (size_t i = 0; i < kept; i++)
		if (rebuild_children(a, n->children[i]))
			return -ENOMEM;
	return 0;
}

int calltree__fold(struct calltree *t, size_t max_nodes)
{
	struct tree_priv *p = t->priv_;
	struct calltree_node **order;
	size_t n = t->n_nodes - 1, size;
	int err;

	if (max_nodes < 2)
		return -EINVAL;
	if (t->n_nodes <= max_nodes)
		return 0;
	order = malloc(n * sizeof(*order));
	if (!order)
		return -ENOMEM;
	collect(t->root, order, 0);
	qsort(order, n, sizeof(*order), cmp_fold_order);

	/* keep_ counts a kept node's children not (yet) kept, plus one. */
	t->root->keep_ = 1 + (int)t->root->n_children;
	size = 1 + (t->root->n_children > 0);
	for (size_t i = 0; i < n; i++) {
		struct calltree_node *v = order[i];
		size_t grow = 1 + (v->n_children > 0);
		size_t shrink = v->parent->keep_ == 2; /* v was the parent's last dropped child */

		if (size + grow - shrink > max_nodes)
			break;
		size = size + grow - shrink;
		v->keep_ = 1 + (int)v->n_children;
		v->parent->keep_--;
	}
	free(order);
	err = rebuild_children(&p->arena, t->root);
	if (err)
		return err;
	t->n_nodes = size;
	return 0;
}

static void free_children(struct calltree_node *n)
{
	free(n->children);
	n->children = NULL;
}

void calltree__free(struct calltree *t)
{
	struct tree_priv *p;

	if (!t)
		return;
	p = t->priv_;
	for (size_t c = 0; c < p->arena.n_chunks; c++) {
		size_t used = c + 1 == p->arena.n_chunks ? p->arena.used : ARENA_CHUNK;

		for (size_t i = 0; i < used; i++)
			free_children(&p->arena.chunks[c][i]);
		free(p->arena.chunks[c]);
	}
	free(p->arena.chunks);
	free(p);
}
