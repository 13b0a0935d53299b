/* SPDX-License-Identifier: Apache-2.0 */
/* String interning: each distinct string is copied once into an arena and named by a dense id
 * (0, 1, 2... in first-seen order); ids and string pointers stay valid until intern__free(). */
#ifndef ROOTTRACE_INTERN_H
#define ROOTTRACE_INTERN_H

#include <stddef.h>
#include <stdint.h>

struct intern;

/* Empty. NULL and errno set on failure. */
struct intern *intern__new(void);
void intern__free(struct intern *in);

/* The id of s, copying s in when it is new. -ENOMEM (nothing added) on failure. */
int64_t intern__add(struct intern *in, const char *s);

/* The string of an id intern__add() returned. */
const char *intern__string(const struct intern *in, size_t id);

/* How many distinct strings: ids are 0 .. count - 1. */
size_t intern__count(const struct intern *in);

/* Every string by id (pprof's string table). Valid until the next intern__add(). */
char **intern__strings(struct intern *in);

#endif
