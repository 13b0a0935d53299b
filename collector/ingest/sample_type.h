/* SPDX-License-Identifier: Apache-2.0 */
/* Which of a pprof's sample types an upload of a profile type keeps, and the factor that turns
 * its unit into the stored one (time in any of s/ms/us/ns -> nanoseconds). No HTTP, no pprof
 * decoding: a list of (type, unit) pairs in, a choice out, so any decoder can call it. */
#ifndef ROOTTRACE_SAMPLE_TYPE_H
#define ROOTTRACE_SAMPLE_TYPE_H

#include <stddef.h>
#include <stdint.h>

#include "pprof.h"

struct sample_type_choice {
	int index;	  /* into the profile's sample types */
	int64_t scale;	  /* stored value = sent value x scale */
	const char *type; /* the chosen type and unit as sent (borrowed) */
	const char *unit;
	const char *expected; /* what fits, for a 422's detail: "cpu/nanoseconds (cpu or ...)" */
};

/* The sample type of `types` that fits profile_type (cpu, wall, heap, alloc, lock, and
 * alloc_objects for the object counts of an allocation profile): 0, -ENOENT when none fits
 * (ret->expected still set), -EINVAL for an unknown profile type. */
int sample_type_choose(const char *profile_type, const struct pprof_value_type *types, size_t n,
		       struct sample_type_choice *ret);

/* value x scale into *ret; -EOVERFLOW when it does not fit 64 bits. */
int sample_type_scale(int64_t value, int64_t scale, int64_t *ret);

#endif
