// SPDX-License-Identifier: Apache-2.0
/* The SQLite profile store's writer caches: stack hash -> dictionary id (SHA-256 of the joined
 * frames, and a verified cache by frames), frame names measured once per group, series ids. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../stack_cache.h"
#include "hashtab.h"
#include "profiles_internal.h"
#include "store_sqlite_db.h"

#define RECENT_STACKS_MAX (1u << 18) /* verified cache slots (at most half used) */
#define RECENT_TEXT_MAX (32u << 20)  /* verified cache frame text: 32 MiB */
#define STACK_CACHE_MAX (1u << 20)   /* stack ids cached; all forgotten past this */

/* ------------------------------------------------------------------ stack id cache ---- */

bool sqlite_stack_hash_is(uint64_t index, const void *key)
{
	const struct stack_hash_key *k = key;

	return memcmp(k->entries[index].hash, k->hash, SHA256_LEN) == 0;
}

uint64_t sqlite_stack_hash_prefix(const uint8_t *hash)
{
	uint64_t h;

	memcpy(&h, hash, sizeof(h));
	return h;
}

/* The cached id of the stack of this SHA-256; 0 when not cached. */
static int64_t cache_get(const struct sqlite_profiles *p, const uint8_t *hash)
{
	struct stack_hash_key key = {.entries = p->stack_hashes, .hash = hash};
	uint64_t index;

	if (!hashtab__find(&p->stack_ids, sqlite_stack_hash_prefix(hash), sqlite_stack_hash_is,
			   &key, &index))
		return 0;
	return p->stack_hashes[index].id;
}

static void cache_clear(struct sqlite_profiles *p)
{
	hashtab__clear(&p->stack_ids);
	p->n_stack_hashes = 0;
}

/* Also empties the verified cache: both may hold ids a rollback or retention removed. */
void sqlite_profiles_forget_stack_ids(struct sqlite_profiles *p)
{
	cache_clear(p);
	stack_cache__clear(p->recent);
}

static int cache_grow(struct sqlite_profiles *p)
{
	size_t cap = p->stack_hashes_cap ? p->stack_hashes_cap * 2 : 2048;
	struct stack_slot *grown = realloc(p->stack_hashes, cap * sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	p->stack_hashes = grown;
	p->stack_hashes_cap = cap;
	return 0;
}

/* Caches a stack id not cached yet. */
static int cache_put(struct sqlite_profiles *p, const uint8_t *hash, int64_t id)
{
	struct stack_slot *slot;

	if (p->n_stack_hashes == STACK_CACHE_MAX)
		cache_clear(p); /* bounded memory: forget, the dictionary has them */
	if (p->n_stack_hashes == p->stack_hashes_cap && cache_grow(p))
		return -ENOMEM;
	if (hashtab__add(&p->stack_ids, sqlite_stack_hash_prefix(hash), p->n_stack_hashes))
		return -ENOMEM;
	slot = &p->stack_hashes[p->n_stack_hashes++];
	memcpy(slot->hash, hash, SHA256_LEN);
	slot->id = id;
	return 0;
}

/* --------------------------------------------------------- frame names, stack ids ---- */

/*
 * An upload's stacks share their frame name strings (one pointer per distinct name), so each
 * name is measured and hashed once per group, found again by its pointer. Valid for one group
 * only (the uploads' memory lives until they are acknowledged): a new group forgets it.
 */
struct name_memo {
	uint64_t hash;
	size_t len;
};

void sqlite_profiles_names_new_group(struct sqlite_profiles *p)
{
	hashtab__clear(&p->memo);
	p->n_memo = 0;
}

/* Measures and hashes a name not memoised in this group yet. */
static int memo_add(struct sqlite_profiles *p, const char *name, const struct name_memo **ret)
{
	struct name_memo *m;

	if (p->n_memo == p->memo_cap) {
		size_t cap = p->memo_cap ? p->memo_cap * 2 : 2048;
		struct name_memo *grown = realloc(p->memo_names, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		p->memo_names = grown;
		p->memo_cap = cap;
	}
	if (hashtab__put(&p->memo, (uintptr_t)name, p->n_memo))
		return -ENOMEM;
	m = &p->memo_names[p->n_memo++];
	m->len = strlen(name);
	m->hash = stack_cache__name_hash(name, m->len);
	*ret = m;
	return 0;
}

static int memo_get(struct sqlite_profiles *p, const char *name, size_t *ret_len,
		    uint64_t *ret_hash)
{
	const struct name_memo *m;
	uint64_t index;

	if (hashtab__get(&p->memo, (uintptr_t)name, &index)) {
		m = &p->memo_names[index];
	} else {
		int rc = memo_add(p, name, &m);

		if (rc)
			return rc;
	}
	*ret_len = m->len;
	*ret_hash = m->hash;
	return 0;
}

/* Frame lengths and name hashes of one stack into p->lens and p->name_hashes; returns the
 * joined length. */
static int frame_lengths(struct sqlite_profiles *p, const struct stack_value *sv, size_t *ret_len)
{
	size_t len = sv->n_frames ? sv->n_frames - 1 : 0;

	if (sv->n_frames > p->lens_cap) {
		size_t *lens = realloc(p->lens, sv->n_frames * sizeof(*lens));
		uint64_t *hashes;

		if (!lens)
			return -ENOMEM;
		p->lens = lens;
		hashes = realloc(p->name_hashes, sv->n_frames * sizeof(*hashes));
		if (!hashes)
			return -ENOMEM;
		p->name_hashes = hashes;
		p->lens_cap = sv->n_frames;
	}
	for (size_t i = 0; i < sv->n_frames; i++) {
		int rc = memo_get(p, sv->frames[i], &p->lens[i], &p->name_hashes[i]);

		if (rc)
			return rc;
		len += p->lens[i];
	}
	*ret_len = len;
	return 0;
}

/* Joins the frames with FRAME_SEP into p->frames_buf. */
static int join_frames(struct sqlite_profiles *p, const struct stack_value *sv, size_t len)
{
	size_t at = 0;

	if (len + 1 > p->frames_cap) {
		char *buf = realloc(p->frames_buf, len + 1);

		if (!buf)
			return -ENOMEM;
		p->frames_buf = buf;
		p->frames_cap = len + 1;
	}
	for (size_t i = 0; i < sv->n_frames; i++) {
		if (i)
			p->frames_buf[at++] = FRAME_SEP;
		memcpy(p->frames_buf + at, sv->frames[i], p->lens[i]);
		at += p->lens[i];
	}
	p->frames_buf[at] = '\0';
	return 0;
}

/* Looks the stack (joined in p->frames_buf) up in the dictionary, inserting it the first time
 * it is seen. */
static int stack_lookup_or_add(struct sqlite_profiles *p, const struct stack_value *sv,
			       const uint8_t *hash, size_t len, int64_t *ret_id)
{
	sqlite3_stmt *st = p->w[W_STACK_GET];
	int rc;

	sqlite3_bind_blob(st, 1, hash, SHA256_LEN, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*ret_id = sqlite3_column_int64(st, 0);
	sqlite_db_reset(st);
	if (rc == SQLITE_DONE) {
		st = p->w[W_STACK_ADD];
		sqlite3_bind_blob(st, 1, hash, SHA256_LEN, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, (int64_t)sv->n_frames);
		sqlite3_bind_text(st, 3, p->frames_buf, (int)len, SQLITE_STATIC);
		rc = sqlite3_step(st);
		if (rc == SQLITE_DONE)
			*ret_id = sqlite3_last_insert_rowid(p->wdb);
		sqlite_db_reset(st);
	}
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -EIO;
}

/* The stack's dictionary id. A stack seen recently is found by its frames in the verified
 * cache; otherwise its frames are joined and hashed with SHA-256 (the dictionary's key). */
int sqlite_profiles_stack_id(struct sqlite_profiles *p, const struct stack_value *sv,
			     int64_t *ret_id)
{
	uint8_t hash[SHA256_LEN];
	uint64_t fast;
	size_t len;
	int rc;

	rc = frame_lengths(p, sv, &len);
	if (rc)
		return rc;
	if (len > INT32_MAX)
		return -E2BIG;
	fast = stack_cache__hash_names(p->name_hashes, sv->n_frames);
	*ret_id = stack_cache__get(p->recent, fast, sv->frames, p->lens, sv->n_frames);
	if (*ret_id)
		return 0;
	rc = join_frames(p, sv, len);
	if (!rc)
		rc = sha256_with(p->sha, p->frames_buf, len, hash);
	if (rc)
		return rc;
	*ret_id = cache_get(p, hash);
	if (!*ret_id && ((rc = stack_lookup_or_add(p, sv, hash, len, ret_id)) ||
			 (rc = cache_put(p, hash, *ret_id))))
		return rc;
	/* Cached before commit; a rollback clears both caches. */
	return stack_cache__put(p->recent, fast, p->frames_buf, len, sv->n_frames, *ret_id);
}

/* ------------------------------------------------------------------- series cache ---- */

void sqlite_profiles_forget_series(struct sqlite_profiles *p)
{
	size_t iter = 0;
	uint64_t e;

	while (hashtab__next(&p->series, &iter, &e))
		free((struct series_entry *)(uintptr_t)e);
	hashtab__clear(&p->series);
	p->n_touched = 0;
}

static size_t series_key(const struct profile_batch *b, char *buf, size_t len)
{
	const char *parts[5] = {b->environment, b->service, b->profile_type,
				b->deployment ? b->deployment : "", b->node ? b->node : ""};
	size_t at = 0;

	for (int i = 0; i < 5; i++) {
		size_t n = strlen(parts[i]) + 1;

		if (n > len - at)
			return 0;
		memcpy(buf + at, parts[i], n);
		at += n;
	}
	return at;
}

static uint64_t key_hash(const char *key, size_t len)
{
	return hash_bytes(key, len);
}

/* What series_is() compares a cached series with. */
struct series_lookup {
	const char *key;
	size_t len;
};

static bool series_is(uint64_t entry, const void *key)
{
	const struct series_entry *e = (const struct series_entry *)(uintptr_t)entry;
	const struct series_lookup *k = key;

	return e->key_len == k->len && memcmp(e->key, k->key, k->len) == 0;
}

/* The series' id (created when new), its tier marks and its newest bucket, from the store. */
static int series_load(struct sqlite_profiles *p, const struct profile_batch *b,
		       struct series_entry *e)
{
	sqlite3_stmt *st = p->w[W_SERIES_GET];
	int rc;

	for (int pass = 0; pass < 2; pass++) {
		sqlite3_bind_text(st, 1, b->environment, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, b->service, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, b->profile_type, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, b->deployment ? b->deployment : "", -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, b->node ? b->node : "", -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
		if (pass == 0 && rc == SQLITE_ROW)
			e->id = sqlite3_column_int64(st, 0);
		else if (pass == 1 && rc == SQLITE_DONE)
			e->id = sqlite3_last_insert_rowid(p->wdb);
		sqlite_db_reset(st);
		if ((pass == 0 && rc == SQLITE_ROW) || pass == 1)
			break;
		if (rc != SQLITE_DONE)
			return -EIO;
		st = p->w[W_SERIES_ADD];
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return -EIO;
	e->hour_done = e->day_done = e->newest = -1;
	st = p->w[W_MARKS_GET];
	sqlite3_bind_int64(st, 1, e->id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		e->hour_done = sqlite3_column_int64(st, 0);
		e->day_done = sqlite3_column_int64(st, 1);
	}
	sqlite_db_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return -EIO;
	st = p->w[W_SERIES_SPAN];
	sqlite3_bind_int64(st, 1, e->id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 1) != SQLITE_NULL)
		e->newest = sqlite3_column_int64(st, 1);
	sqlite_db_reset(st);
	return rc == SQLITE_ROW ? 0 : -EIO;
}

/* A new series entry for the key, loaded from the store and cached. */
static int series_add(struct sqlite_profiles *p, const struct profile_batch *b,
		      const struct series_lookup *k, uint64_t h, struct series_entry **ret)
{
	struct series_entry *e = calloc(1, sizeof(*e) + k->len);
	int rc;

	if (!e)
		return -ENOMEM;
	e->key_len = k->len;
	memcpy(e->key, k->key, k->len);
	rc = series_load(p, b, e);
	if (!rc)
		rc = hashtab__add(&p->series, h, (uintptr_t)e);
	if (rc) {
		free(e);
		return rc;
	}
	*ret = e;
	return 0;
}

int sqlite_profiles_series_get(struct sqlite_profiles *p, const struct profile_batch *b,
			       struct series_entry **ret)
{
	char key[5 * STORE_NAME_MAX + 5];
	struct series_lookup k = {.key = key, .len = series_key(b, key, sizeof(key))};
	uint64_t h, found;

	if (!k.len)
		return -EINVAL;
	h = key_hash(key, k.len);
	if (hashtab__find(&p->series, h, series_is, &k, &found)) {
		*ret = (struct series_entry *)(uintptr_t)found;
		return 0;
	}
	return series_add(p, b, &k, h, ret);
}

int sqlite_profiles_series_touch(struct sqlite_profiles *p, struct series_entry *e)
{
	if (e->touched)
		return 0;
	if (p->n_touched == p->touched_cap) {
		size_t cap = p->touched_cap ? p->touched_cap * 2 : 16;
		struct series_entry **grown = realloc(p->touched, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		p->touched = grown;
		p->touched_cap = cap;
	}
	p->touched[p->n_touched++] = e;
	e->touched = true;
	return 0;
}

/* ------------------------------------------------------------------ create / free ---- */

int sqlite_profiles_caches_init(struct sqlite_profiles *p)
{
	p->sha = sha256_ctx__new();
	p->recent = stack_cache__new(RECENT_STACKS_MAX, RECENT_TEXT_MAX);
	return p->sha && p->recent ? 0 : -ENOMEM;
}

void sqlite_profiles_caches_free(struct sqlite_profiles *p)
{
	hashtab__free(&p->stack_ids);
	free(p->stack_hashes);
	free(p->frames_buf);
	free(p->lens);
	free(p->name_hashes);
	hashtab__free(&p->memo);
	free(p->memo_names);
	sqlite_profiles_forget_series(p);
	hashtab__free(&p->series);
	free(p->touched);
	sha256_ctx__free(p->sha);
	stack_cache__free(p->recent);
}
