/* SPDX-License-Identifier: Apache-2.0 */
/* Pyroscope's ingest name, `app[.type]{key=value,...}`: the application name, the profile type
 * suffix (only Pyroscope's own type names count as one) and the labels. Pure parsing. */
#ifndef ROOTTRACE_PYROSCOPE_NAME_H
#define ROOTTRACE_PYROSCOPE_NAME_H

#include <stdbool.h>
#include <stddef.h>

#define PYROSCOPE_NAME_MAX 4096 /* bytes of the whole name */
#define PYROSCOPE_LABELS_MAX 64

/* A Pyroscope profile type name and the RootTrace type it is stored as (NULL: not stored). */
struct pyroscope_type {
	const char *name;	  /* "cpu", "inuse_space", "goroutines", ... */
	const char *profile_type; /* "cpu", "wall", "heap", "alloc", "lock" or NULL */
	bool counts_objects;	  /* *_objects: a folded body has counts, not bytes */
};

struct pyroscope_label {
	const char *key;
	const char *value; /* unescaped */
};

struct pyroscope_name {
	const char *app;		   /* without the type suffix; never empty */
	const struct pyroscope_type *type; /* NULL when the name has no type suffix */
	struct pyroscope_label labels[PYROSCOPE_LABELS_MAX];
	size_t n_labels;
	char buf[PYROSCOPE_NAME_MAX + 2 * PYROSCOPE_LABELS_MAX + 1]; /* owns the strings above */
};

/* Parses name into ret. 0, or -EINVAL with a one-line reason in err ("label 3 has no '='",
 * "name ends inside the labels: '}' missing", ...). Grammar (docs/api.md):
 *   name   = app [ "." type ] [ "{" [ label *( "," label ) [","] ] "}" ]
 *   label  = key "=" value     (spaces around key and value are dropped)
 *   key    = [A-Za-z_][A-Za-z0-9_.]*
 *   value  = any bytes but "," and "}" unless escaped with "\" ("\\" is a backslash)
 * A key may appear once. */
int pyroscope_name_parse(const char *name, struct pyroscope_name *ret, char *err, size_t err_len);

/* The value of a label, or NULL. */
const char *pyroscope_name__label(const struct pyroscope_name *n, const char *key);

/* Pyroscope's type name, or NULL when it is not one. */
const struct pyroscope_type *pyroscope_type_find(const char *name);

/* "cpu, itimer, wall, ..." : the type names RootTrace stores (profile_type not NULL). */
void pyroscope_types_accepted(char *buf, size_t len);

#endif
