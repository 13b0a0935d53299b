// SPDX-License-Identifier: Apache-2.0
/* The stacks dictionary as its writers (the rollups' ingest and the link store) share it: a
 * stack's key, the INSERT of RowBinary rows, and remembering the stacks ClickHouse stored. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../hash.h"
#include "ch_internal.h"

int ch_stack_hash(struct sha256_ctx *sha, struct ch_buf *joined, const char *const *frames,
		  size_t n_frames, uint64_t *ret)
{
	const char frame_sep = FRAME_SEP;
	uint8_t digest[SHA256_LEN];
	int rc;

	ch_buf_reset(joined);
	for (size_t f = 0; f < n_frames; f++) {
		if (f)
			ch_put_bytes(joined, &frame_sep, 1);
		ch_put_bytes(joined, frames[f], strlen(frames[f]));
	}
	if (joined->oom)
		return -ENOMEM;
	rc = sha256_with(sha, joined->data ? joined->data : "", joined->len, digest);
	if (rc)
		return rc;
	memcpy(ret, digest, sizeof(*ret));
	if (*ret == UPLOAD_MARK)
		*ret = 1;
	return 0;
}

int ch_insert(struct ch_client *c, const char *table, const struct ch_buf *rows)
{
	char sql[CH_NAME_MAX + 64];

	if (rows->len == 0)
		return 0;
	snprintf(sql, sizeof(sql), "INSERT INTO %s.%s FORMAT RowBinary", c->database, table);
	return ch_exec(c, sql, rows, NULL, NULL, 0);
}

int ch_stacks_remember(struct hashtab *known, struct ch_buf *stacks, size_t max)
{
	int rc = 0;

	if (hashtab__count(known) > max)
		hashtab__clear(known);
	for (stacks->pos = 0; !rc && stacks->pos < stacks->len;) {
		const char *frames;
		size_t len;
		uint64_t hash;

		rc = ch_get_u64(stacks, &hash) ?: ch_get_string(stacks, &frames, &len);
		if (!rc)
			rc = hashtab__put(known, hash, 1);
	}
	return rc;
}
