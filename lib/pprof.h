/* SPDX-License-Identifier: Apache-2.0 */
/* pprof codec: builds and parses perftools.profiles.Profile messages (proto/profile.proto).
 * Plain structs in and out; protobuf-c stays inside lib/pprof_*.c. */
#ifndef ROOTTRACE_PPROF_H
#define ROOTTRACE_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "mem_meter.h"

struct pprof_value_type {
	const char *type; /* "cpu", "samples", "wall", "inuse_space", ... */
	const char *unit; /* "nanoseconds", "count", "bytes" */
};

struct pprof_label {
	const char *key;
	const char *str; /* NULL for a numeric label */
	int64_t num;
};

/* ---- encoding (agent, collector export) ---------------------------------------------- */

struct pprof_builder;

struct pprof_builder_options {
	const struct pprof_value_type *sample_types;
	size_t n_sample_types;
	struct pprof_value_type period_type;
	int64_t period;
	int64_t time_nanos;
	int64_t duration_nanos;
};

/* Returns NULL and sets errno on failure. Strings are copied. */
struct pprof_builder *pprof_builder__new(const struct pprof_builder_options *opts);
void pprof_builder__free(struct pprof_builder *b);

/* Mapping for a binary (has_functions: the names are in the functions); deduplicated by
 * (path, build-id). Returns its id (>0) or 0 with errno set. */
uint64_t pprof_builder__mapping(struct pprof_builder *b, const char *path, const char *build_id);

/* Location of one function (names only, no line numbers) in a mapping (0 = none);
 * deduplicated by (function name, mapping). Returns its id (>0) or 0 with errno set. */
uint64_t pprof_builder__location(struct pprof_builder *b, const char *function,
				 uint64_t mapping_id);

/* The same for a function whose source file is known (a JIT's): the file goes into the
 * Function's filename; deduplicated by (name, file, mapping). NULL or "" is no file. */
uint64_t pprof_builder__file_location(struct pprof_builder *b, const char *function,
				      const char *file, uint64_t mapping_id);

/* A native frame's location at `address` in its binary (the agent writes the file offset, as
 * perf and Parca do) with its function's name: deduplicated by (function, mapping, address), so
 * the collector can resolve the address to a line on demand. mapping_id must not be 0. Returns
 * its id (>0) or 0 with errno set. */
uint64_t pprof_builder__address_location(struct pprof_builder *b, const char *function,
					 uint64_t mapping_id, uint64_t address);

/* One sample: location ids leaf first (pprof order), one value per sample type. */
int pprof_builder__add_sample(struct pprof_builder *b, const uint64_t *location_ids,
			      size_t n_locations, const int64_t *values,
			      const struct pprof_label *labels, size_t n_labels);

/* Serialises (uncompressed). *ret_buf is malloc'd. 0 or -errno. */
int pprof_builder__encode(struct pprof_builder *b, uint8_t **ret_buf, size_t *ret_len);

/* ---- decoding (collector ingest, tests) ------------------------------------------------ */

/* Decoder limits. Outside bytes are hostile: every bound is checked and a profile that
 * exceeds one is rejected whole (-EINVAL and a reason), never truncated, so that a stored
 * stack is always the stack that was sent.
 *   PPROF_MAX_FRAMES        frames per sample, after expanding inlined lines (a 10,000-deep
 *                           stack is rejected)
 *   PPROF_MAX_LINES         lines (inlined frames) per location
 *   PPROF_MAX_LABELS        labels per sample
 *   PPROF_MAX_TABLE         entries in each of the string, mapping, function and location
 *                           tables (bounds what the stream keeps: at most ~100 bytes an entry)
 *   PPROF_MAX_LOCATION_FRAMES  lines summed over all locations (their frame layout)
 *   PPROF_MAX_TOTAL_FRAMES  frames summed over all samples, for pprof_decode() only (it keeps
 *                           every sample; the stream keeps one at a time)
 *   PPROF_MAX_STRING        bytes in any string-table entry (function names, label values)
 *   PPROF_MAX_MESSAGE_MEMORY bytes protobuf-c may allocate to unpack one Sample, Location,
 *                           Function or Mapping (its structs are far larger than their wire
 *                           form: a 2-byte label costs ~60 bytes)
 * Strings: a NUL inside a string-table entry ends the string there; each byte that is not
 * part of valid UTF-8 is replaced with '?' (so JSON output downstream never fails on a name;
 * a process name is never a reason to drop a profile). A location without lines, or whose
 * function has an empty name, yields the frame "[unknown]" (its mapping's file name is not
 * used: the product's "[unknown] module" form is the agent's, which always names functions). */
#define PPROF_MAX_FRAMES 4096
#define PPROF_MAX_LINES 256
#define PPROF_MAX_LABELS 1024
#define PPROF_MAX_TABLE (512u << 10)
#define PPROF_MAX_LOCATION_FRAMES (2u << 20)
#define PPROF_MAX_TOTAL_FRAMES (8u << 20)
#define PPROF_MAX_STRING (64u << 10)
#define PPROF_MAX_MESSAGE_MEMORY (16u << 20)
#define PPROF_UNKNOWN_FRAME "[unknown]"

struct pprof_decoded_sample {
	const char **frames; /* function names, leaf first; "[unknown]" where a location has none */
	size_t n_frames;
	const int64_t *values; /* n_sample_types values */
	const struct pprof_label *labels;
	size_t n_labels;
	/* The leaf location's source position, for the lines view (never part of a frame):
	 * its innermost line's Function.filename and Line.line, and its mapping's build id with
	 * Location.address (the agent sends the leaf's file offset in the mapping there). */
	const char *leaf_file;	   /* "" when none */
	int64_t leaf_line;	   /* 0 when none */
	const char *leaf_build_id; /* "" when none */
	uint64_t leaf_address;	   /* 0 when none */
	const char *leaf_module;   /* its mapping's filename, "" when none */
};

struct pprof_decoded {
	struct pprof_value_type *sample_types;
	size_t n_sample_types;
	struct pprof_value_type period_type;
	int64_t period;
	int64_t time_nanos;
	int64_t duration_nanos;
	struct pprof_decoded_sample *samples; /* NULL in a stream's header */
	size_t n_samples;
	void *priv_; /* owns everything above */
};

/* ---- streaming decode (collector ingest): one sample at a time ------------------------- */

/*
 * The memory of a stream is its tables (strings, mappings, functions, locations: at most
 * ~100 bytes an entry, see PPROF_MAX_TABLE) and one unpacked Sample, not the samples: the
 * collector merges each sample into its aggregate as it is read, so decoding costs a bounded
 * multiple of the tables, whatever the number of samples. buf must outlive the stream.
 */
struct pprof_stream;

/* Reads and validates everything but the samples (string table, header, mappings, functions,
 * locations) and counts the samples. 0, or -EINVAL (or -ENOMEM) with a one-line reason in err
 * ("string index 7 out of range (table has 5)", "duplicate location id 3", ...). */
int pprof_stream__open(const uint8_t *buf, size_t len, struct pprof_stream **ret, char *err,
		       size_t err_len);
/* The same, asking meter (NULL: nobody) before the arena that unpacks one message at a time grows,
 * with the arena's whole size after the growth (at most PPROF_MAX_MESSAGE_MEMORY and a chunk);
 * a refusal ends pprof_stream__open() or __next() with -EBUSY ("the memory to decode a sample
 * was refused"). The meter must outlive the stream. */
int pprof_stream__open_metered(const uint8_t *buf, size_t len, const struct mem_meter *meter,
			       struct pprof_stream **ret, char *err, size_t err_len);
void pprof_stream__free(struct pprof_stream *s);

/* The bytes the stream's tables hold (strings and their text, mappings, functions, locations,
 * the current sample's frames and labels), without the one unpacked message (at most
 * PPROF_MAX_MESSAGE_MEMORY): what an upload's memory limit counts. */
size_t pprof_stream__bytes(const struct pprof_stream *s);

/* The header: sample types, period, times; samples is NULL and n_samples the number of
 * samples the profile holds. Valid until pprof_stream__free(). */
const struct pprof_decoded *pprof_stream__header(const struct pprof_stream *s);

/* The next sample, validated and flattened: 1 and *ret (frames, values and labels valid until
 * the next call; names until pprof_stream__free()), 0 after the last one, or -EINVAL /
 * -ENOMEM with the reason in err ("sample 2 has 1 values, profile declares 2 sample types"). */
int pprof_stream__next(struct pprof_stream *s, struct pprof_decoded_sample *ret, char *err,
		       size_t err_len);

/* ---- whole-profile decode (tests, tools): every sample kept --------------------------- */

/* Parses and validates an uncompressed pprof through the stream, keeping every sample. On
 * failure returns -EINVAL (or -ENOMEM) and writes a one-line reason to err. */
int pprof_decode(const uint8_t *buf, size_t len, struct pprof_decoded **ret, char *err,
		 size_t err_len);
void pprof_decoded__free(struct pprof_decoded *p);

/* Index of the sample type (type, unit), or -1 (a decoded profile or a stream's header). */
int pprof_decoded__find_type(const struct pprof_decoded *p, const char *type, const char *unit);

#endif
