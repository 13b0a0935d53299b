// SPDX-License-Identifier: Apache-2.0
/* Control-plane store on SQLite: environments, tokens, settings with their audit trail,
 * deployments and agent self-reports. One connection guarded by a mutex; small rows. Columns
 * added after a release are added to an older database when it is opened. */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/sqlite/store_sqlite.h"
#include "store/sqlite/store_sqlite_db.h"

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS environments("
    " id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, created_at INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS tokens("
    " id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
    " environment_id INTEGER NOT NULL REFERENCES environments(id),"
    " kind INTEGER NOT NULL, role INTEGER NOT NULL, revoked INTEGER NOT NULL DEFAULT 0,"
    " created_at INTEGER NOT NULL, hash BLOB NOT NULL UNIQUE);"
    /* NULL column = inherit (service rows) or the built-in default (environment rows). */
    "CREATE TABLE IF NOT EXISTS settings("
    " environment_id INTEGER NOT NULL REFERENCES environments(id), service TEXT NOT NULL,"
    " enabled INTEGER, sample_rate_hz INTEGER, upload_interval_s INTEGER,"
    " poll_interval_s INTEGER, updated_at INTEGER NOT NULL,"
    " PRIMARY KEY(environment_id, service));"
    "CREATE TABLE IF NOT EXISTS audit("
    " id INTEGER PRIMARY KEY, time INTEGER NOT NULL, token_id INTEGER NOT NULL,"
    " token_name TEXT NOT NULL, environment TEXT NOT NULL, service TEXT NOT NULL,"
    " before_json TEXT, after_json TEXT);"
    "CREATE INDEX IF NOT EXISTS audit_by_env ON audit(environment, time);"
    "CREATE TABLE IF NOT EXISTS deployments("
    " id INTEGER PRIMARY KEY, environment TEXT NOT NULL, service TEXT NOT NULL,"
    " version TEXT NOT NULL, time INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS deployments_by_service ON deployments(environment, service, time);"
    "CREATE TABLE IF NOT EXISTS agents("
    " environment TEXT NOT NULL, agent_id TEXT NOT NULL, service TEXT NOT NULL,"
    " node TEXT NOT NULL, version TEXT NOT NULL, reported_at INTEGER NOT NULL,"
    " window_s REAL, cpu_s REAL, bpf_s REAL, lost_samples INTEGER, unknown_frames INTEGER,"
    " processes INTEGER, PRIMARY KEY(environment, agent_id, service));";

enum {
	ST_BEGIN,
	ST_COMMIT,
	ST_ROLLBACK,
	ST_ENV_CREATE,
	ST_ENV_GET,
	ST_TOKEN_CREATE,
	ST_TOKEN_FIND,
	ST_TOKEN_LIST,
	ST_TOKEN_REVOKE,
	ST_SETTINGS_GET,
	ST_SETTINGS_LIST,
	ST_SETTINGS_PUT,
	ST_AUDIT_ADD,
	ST_AUDIT_LIST,
	ST_DEPLOY_ADD,
	ST_DEPLOY_LIST,
	ST_AGENT_PUT,
	ST_AGENT_LIST,
	ST_COUNT
};

/* ", unwind_tables, ...": the unwinder's figures, added to agents by add_unwind_columns(). */
#define UNWIND_COLUMN(id, name, kind) ", " name
#define UNWIND_COLUMNS UNWIND_FIGURES(UNWIND_COLUMN)
#define UNWIND_PLACEHOLDER(id, name, kind) ", ?"
#define UNWIND_PLACEHOLDERS UNWIND_FIGURES(UNWIND_PLACEHOLDER)
/* ST_AGENT_PUT's parameter and ST_AGENT_LIST's column of the first unwinder figure. */
#define AGENT_FIRST_UNWIND_PARAM 13
#define AGENT_FIRST_UNWIND_COLUMN 12

#define TOKEN_COLUMNS                                                                              \
	"t.id, t.name, t.environment_id, e.name, t.kind, t.role, t.revoked, t.created_at, t.hash"
#define SETTINGS_COLUMNS                                                                           \
	"e.name, s.service, s.enabled, s.sample_rate_hz, s.upload_interval_s, s.poll_interval_s,"  \
	" s.offcpu_enabled"

static const char *const statements[ST_COUNT] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_ENV_CREATE] = "INSERT INTO environments(name, created_at) VALUES(?1, ?2)",
    [ST_ENV_GET] = "SELECT id FROM environments WHERE name = ?1",
    [ST_TOKEN_CREATE] = "INSERT INTO tokens(name, environment_id, kind, role, created_at, hash)"
			" VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [ST_TOKEN_FIND] = "SELECT " TOKEN_COLUMNS " FROM tokens t JOIN environments e"
		      " ON e.id = t.environment_id WHERE t.hash = ?1",
    [ST_TOKEN_LIST] = "SELECT " TOKEN_COLUMNS " FROM tokens t JOIN environments e"
		      " ON e.id = t.environment_id ORDER BY t.id",
    [ST_TOKEN_REVOKE] = "UPDATE tokens SET revoked = 1 WHERE id = ?1",
    [ST_SETTINGS_GET] = "SELECT " SETTINGS_COLUMNS " FROM settings s JOIN environments e"
			" ON e.id = s.environment_id WHERE e.name = ?1 AND s.service = ?2",
    [ST_SETTINGS_LIST] = "SELECT " SETTINGS_COLUMNS " FROM settings s JOIN environments e"
			 " ON e.id = s.environment_id WHERE e.name = ?1 ORDER BY s.service",
    [ST_SETTINGS_PUT] =
	"INSERT INTO settings(environment_id, service, enabled, sample_rate_hz,"
	" upload_interval_s, poll_interval_s, updated_at, offcpu_enabled)"
	" SELECT id, ?2, ?3, ?4, ?5, ?6, ?7, ?8 FROM environments WHERE name = ?1"
	" ON CONFLICT(environment_id, service) DO UPDATE SET enabled = excluded.enabled,"
	" sample_rate_hz = excluded.sample_rate_hz,"
	" upload_interval_s = excluded.upload_interval_s,"
	" poll_interval_s = excluded.poll_interval_s, updated_at = excluded.updated_at,"
	" offcpu_enabled = excluded.offcpu_enabled",
    [ST_AUDIT_ADD] = "INSERT INTO audit(time, token_id, token_name, environment, service,"
		     " before_json, after_json) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [ST_AUDIT_LIST] = "SELECT id, time, token_id, token_name, environment, service,"
		      " before_json, after_json FROM audit"
		      " WHERE environment = ?1 AND time >= ?2 ORDER BY id DESC LIMIT ?3",
    [ST_DEPLOY_ADD] = "INSERT INTO deployments(environment, service, version, time)"
		      " VALUES(?1, ?2, ?3, ?4)",
    [ST_DEPLOY_LIST] = "SELECT id, environment, service, version, time FROM deployments"
		       " WHERE environment = ?1 AND (?2 IS NULL OR service = ?2)"
		       " AND time >= ?3 AND time < ?4 ORDER BY time, id",
    [ST_AGENT_PUT] = "INSERT OR REPLACE INTO agents(environment, agent_id, service, node, version,"
		     " reported_at, window_s, cpu_s, bpf_s, lost_samples, unknown_frames,"
		     " processes" UNWIND_COLUMNS ") VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9,"
		     " ?10, ?11, ?12" UNWIND_PLACEHOLDERS ")",
    [ST_AGENT_LIST] =
	"SELECT environment, agent_id, service, node, version, reported_at,"
	" window_s, cpu_s, bpf_s, lost_samples, unknown_frames, processes" UNWIND_COLUMNS
	" FROM agents WHERE environment = ?1 ORDER BY agent_id, service",
};

struct sqlite_cp {
	struct cp_store base;
	pthread_mutex_t lock;
	sqlite3 *db;
	sqlite3_stmt *st[ST_COUNT];
};

static struct sqlite_cp *to_sqlite(struct cp_store *s)
{
	return (struct sqlite_cp *)s;
}

static void cp_close(struct cp_store *s)
{
	struct sqlite_cp *c = to_sqlite(s);

	if (!c)
		return;
	sqlite_db_close(c->db, c->st, ST_COUNT);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static void bind_text(sqlite3_stmt *st, int idx, const char *text)
{
	sqlite3_bind_text(st, idx, text, -1, SQLITE_TRANSIENT);
}

/* Steps an INSERT, then resets it: 0 with the new row's id in *ret_id (when not NULL),
 * -EEXIST when a constraint refused the row, or -EIO. */
static int insert_row(struct sqlite_cp *c, sqlite3_stmt *st, int64_t *ret_id)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_DONE && ret_id)
		*ret_id = sqlite3_last_insert_rowid(c->db);
	sqlite_db_reset(st);
	return rc == SQLITE_CONSTRAINT
		   ? -EEXIST
		   : sqlite_db_write_result(c->db, rc == SQLITE_DONE ? 0 : -EIO);
}

/* Steps an UPDATE, then resets it: 0, -ENOENT when it changed no row, or -EIO. */
static int update_row(struct sqlite_cp *c, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	rc = rc != SQLITE_DONE ? -EIO : sqlite3_changes(c->db) == 0 ? -ENOENT : 0;
	sqlite_db_reset(st);
	return rc == -ENOENT ? rc : sqlite_db_write_result(c->db, rc);
}

/* Steps a lookup of one row, read into record (when not NULL), then resets it: 0, -ENOENT
 * when there is no such row, or -EIO. */
static int find_row(sqlite3_stmt *st, int (*read_row)(sqlite3_stmt *st, void *record), void *record)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW && record)
		read_row(st, record);
	sqlite_db_reset(st);
	return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : -EIO;
}

/* A record's field kept in one column: binding and reading whole records from one table. */
struct column_field {
	enum { FIELD_TEXT, FIELD_INT64, FIELD_DOUBLE } type;
	size_t offset, size;
};

#define FIELD(type, record, member)                                                                \
	{                                                                                          \
		type, offsetof(struct record, member), sizeof(((struct record *)0)->member)        \
	}
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ST_DEPLOY_ADD's parameters; ST_DEPLOY_LIST's columns after the id. */
static const struct column_field deployment_fields[] = {
    FIELD(FIELD_TEXT, deployment_record, environment),
    FIELD(FIELD_TEXT, deployment_record, service),
    FIELD(FIELD_TEXT, deployment_record, version),
    FIELD(FIELD_INT64, deployment_record, time),
};

/* ST_AGENT_PUT's parameters and ST_AGENT_LIST's columns. */
static const struct column_field agent_report_fields[] = {
    FIELD(FIELD_TEXT, agent_report, environment),
    FIELD(FIELD_TEXT, agent_report, agent_id),
    FIELD(FIELD_TEXT, agent_report, service),
    FIELD(FIELD_TEXT, agent_report, node),
    FIELD(FIELD_TEXT, agent_report, version),
    FIELD(FIELD_INT64, agent_report, reported_at),
    FIELD(FIELD_DOUBLE, agent_report, window_s),
    FIELD(FIELD_DOUBLE, agent_report, cpu_s),
    FIELD(FIELD_DOUBLE, agent_report, bpf_s),
    FIELD(FIELD_INT64, agent_report, lost_samples),
    FIELD(FIELD_INT64, agent_report, unknown_frames),
    FIELD(FIELD_INT64, agent_report, processes),
};

/* Binds the n fields of record to the parameters from `first` on. */
static void bind_fields(sqlite3_stmt *st, int first, const struct column_field *fields, size_t n,
			const void *record)
{
	for (size_t i = 0; i < n; i++) {
		const void *field = (const char *)record + fields[i].offset;
		int idx = first + (int)i;

		if (fields[i].type == FIELD_TEXT)
			bind_text(st, idx, field);
		else if (fields[i].type == FIELD_INT64)
			sqlite3_bind_int64(st, idx, *(const int64_t *)field);
		else
			sqlite3_bind_double(st, idx, *(const double *)field);
	}
}

/* Reads the n fields of record from the columns from `first` on. */
static void read_fields(sqlite3_stmt *st, int first, const struct column_field *fields, size_t n,
			void *record)
{
	for (size_t i = 0; i < n; i++) {
		void *field = (char *)record + fields[i].offset;
		int col = first + (int)i;

		if (fields[i].type == FIELD_TEXT)
			sqlite_db_column_copy(st, col, field, fields[i].size);
		else if (fields[i].type == FIELD_INT64)
			*(int64_t *)field = sqlite3_column_int64(st, col);
		else
			*(double *)field = sqlite3_column_double(st, col);
	}
}

static int cp_environment_create(struct cp_store *s, const char *name, int64_t *ret_id)
{
	struct sqlite_cp *c = to_sqlite(s);
	sqlite3_stmt *st = c->st[ST_ENV_CREATE];
	int rc;

	pthread_mutex_lock(&c->lock);
	bind_text(st, 1, name);
	sqlite3_bind_int64(st, 2, time(NULL));
	rc = insert_row(c, st, ret_id);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static int read_id(sqlite3_stmt *st, void *record)
{
	int64_t *id = record;

	*id = sqlite3_column_int64(st, 0);
	return 0;
}

static int cp_environment_get(struct cp_store *s, const char *name, int64_t *ret_id)
{
	struct sqlite_cp *c = to_sqlite(s);
	sqlite3_stmt *st = c->st[ST_ENV_GET];
	int rc;

	pthread_mutex_lock(&c->lock);
	bind_text(st, 1, name);
	rc = find_row(st, read_id, ret_id);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static int cp_token_create(struct cp_store *s, const struct token_record *t, int64_t *ret_id)
{
	struct sqlite_cp *c = to_sqlite(s);
	sqlite3_stmt *st = c->st[ST_TOKEN_CREATE];
	int rc;

	pthread_mutex_lock(&c->lock);
	bind_text(st, 1, t->name);
	sqlite3_bind_int64(st, 2, t->environment_id);
	sqlite3_bind_int(st, 3, t->kind);
	sqlite3_bind_int(st, 4, t->role);
	sqlite3_bind_int64(st, 5, t->created_at ? t->created_at : time(NULL));
	sqlite3_bind_blob(st, 6, t->hash, sizeof(t->hash), SQLITE_TRANSIENT);
	rc = insert_row(c, st, ret_id);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static int read_token(sqlite3_stmt *st, void *record)
{
	struct token_record *t = record;
	const void *hash = sqlite3_column_blob(st, 8);

	memset(t, 0, sizeof(*t));
	t->id = sqlite3_column_int64(st, 0);
	sqlite_db_column_copy(st, 1, t->name, sizeof(t->name));
	t->environment_id = sqlite3_column_int64(st, 2);
	sqlite_db_column_copy(st, 3, t->environment, sizeof(t->environment));
	t->kind = sqlite3_column_int(st, 4);
	t->role = sqlite3_column_int(st, 5);
	t->revoked = sqlite3_column_int(st, 6) != 0;
	t->created_at = sqlite3_column_int64(st, 7);
	if (hash && sqlite3_column_bytes(st, 8) == sizeof(t->hash))
		memcpy(t->hash, hash, sizeof(t->hash));
	return 0;
}

static const struct sqlite_db_row_reader token_rows = {
    .size = sizeof(struct token_record),
    .read = read_token,
};

static int cp_token_find_by_hash(struct cp_store *s, const uint8_t hash[32],
				 struct token_record *ret)
{
	struct sqlite_cp *c = to_sqlite(s);
	sqlite3_stmt *st = c->st[ST_TOKEN_FIND];
	int rc;

	pthread_mutex_lock(&c->lock);
	sqlite3_bind_blob(st, 1, hash, 32, SQLITE_TRANSIENT);
	rc = find_row(st, read_token, ret);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static int cp_token_list(struct cp_store *s, struct token_record **ret, size_t *ret_n)
{
	struct sqlite_cp *c = to_sqlite(s);
	int rc;

	pthread_mutex_lock(&c->lock);
	rc = sqlite_db_read_rows(c->st[ST_TOKEN_LIST], &token_rows, ret, ret_n);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static int cp_token_revoke(struct cp_store *s, int64_t id)
{
	struct sqlite_cp *c = to_sqlite(s);
	sqlite3_stmt *st = c->st[ST_TOKEN_REVOKE];
	int rc;

	pthread_mutex_lock(&c->lock);
	sqlite3_bind_int64(st, 1, id);
	rc = update_row(c, st);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static int read_settings(sqlite3_stmt *st, void *record)
{
	struct settings_record *r = record;

	memset(r, 0, sizeof(*r));
	sqlite_db_column_copy(st, 0, r->environment, sizeof(r->environment));
	sqlite_db_column_copy(st, 1, r->service, sizeof(r->service));
	r->has_enabled = sqlite3_column_type(st, 2) != SQLITE_NULL;
	r->enabled = sqlite3_column_int(st, 2) != 0;
	r->has_sample_rate_hz = sqlite3_column_type(st, 3) != SQLITE_NULL;
	r->sample_rate_hz = sqlite3_column_int(st, 3);
	r->has_upload_interval_s = sqlite3_column_type(st, 4) != SQLITE_NULL;
	r->upload_interval_s = sqlite3_column_int(st, 4);
	r->has_poll_interval_s = sqlite3_column_type(st, 5) != SQLITE_NULL;
	r->poll_interval_s = sqlite3_column_int(st, 5);
	r->has_offcpu_enabled = sqlite3_column_type(st, 6) != SQLITE_NULL;
	r->offcpu_enabled = sqlite3_column_int(st, 6) != 0;
	return 0;
}

static const struct sqlite_db_row_reader settings_rows = {
    .size = sizeof(struct settings_record),
    .read = read_settings,
};

static int cp_settings_get(struct cp_store *s, const char *environment, const char *service,
			   struct settings_record *ret)
{
	struct sqlite_cp *c = to_sqlite(s);
	sqlite3_stmt *st = c->st[ST_SETTINGS_GET];
	int rc;

	pthread_mutex_lock(&c->lock);
	bind_text(st, 1, environment);
	bind_text(st, 2, service ? service : "");
	rc = find_row(st, read_settings, ret);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* The rows of a list statement whose only parameter is the environment. */
static int list_environment(struct sqlite_cp *c, int stmt, const char *environment,
			    const struct sqlite_db_row_reader *reader, void *ret, size_t *ret_n)
{
	int rc;

	pthread_mutex_lock(&c->lock);
	bind_text(c->st[stmt], 1, environment);
	rc = sqlite_db_read_rows(c->st[stmt], reader, ret, ret_n);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static int cp_settings_list(struct cp_store *s, const char *environment,
			    struct settings_record **ret, size_t *ret_n)
{
	return list_environment(to_sqlite(s), ST_SETTINGS_LIST, environment, &settings_rows, ret,
				ret_n);
}

static void bind_optional_int(sqlite3_stmt *st, int idx, bool has, int value)
{
	if (has)
		sqlite3_bind_int(st, idx, value);
	else
		sqlite3_bind_null(st, idx);
}

static int settings_write(struct sqlite_cp *c, const struct settings_record *r)
{
	sqlite3_stmt *st = c->st[ST_SETTINGS_PUT];

	bind_text(st, 1, r->environment);
	bind_text(st, 2, r->service);
	bind_optional_int(st, 3, r->has_enabled, r->enabled);
	bind_optional_int(st, 4, r->has_sample_rate_hz, r->sample_rate_hz);
	bind_optional_int(st, 5, r->has_upload_interval_s, r->upload_interval_s);
	bind_optional_int(st, 6, r->has_poll_interval_s, r->poll_interval_s);
	sqlite3_bind_int64(st, 7, time(NULL));
	bind_optional_int(st, 8, r->has_offcpu_enabled, r->offcpu_enabled);
	return update_row(c, st);
}

static int audit_write(struct sqlite_cp *c, const struct audit_record *a)
{
	sqlite3_stmt *st = c->st[ST_AUDIT_ADD];

	sqlite3_bind_int64(st, 1, a->time ? a->time : time(NULL));
	sqlite3_bind_int64(st, 2, a->token_id);
	bind_text(st, 3, a->token_name);
	bind_text(st, 4, a->environment);
	bind_text(st, 5, a->service);
	bind_text(st, 6, a->before_json);
	bind_text(st, 7, a->after_json);
	return sqlite_db_step_done(st);
}

static int cp_settings_put(struct cp_store *s, const struct settings_record *r,
			   const struct audit_record *a)
{
	struct sqlite_cp *c = to_sqlite(s);
	int rc;

	pthread_mutex_lock(&c->lock);
	rc = sqlite_db_step_done(c->st[ST_BEGIN]);
	if (rc)
		goto out;
	rc = settings_write(c, r);
	if (!rc && a)
		rc = audit_write(c, a);
	if (!rc)
		rc = sqlite_db_step_done(c->st[ST_COMMIT]);
	if (rc)
		sqlite_db_step_done(c->st[ST_ROLLBACK]);
out:
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static char *column_strdup(sqlite3_stmt *st, int col, int *ret_oom)
{
	const unsigned char *text = sqlite3_column_text(st, col);
	char *copy;

	if (!text)
		return NULL;
	copy = strdup((const char *)text);
	if (!copy)
		*ret_oom = 1;
	return copy;
}

static int read_audit(sqlite3_stmt *st, void *record)
{
	struct audit_record *a = record;
	int oom = 0;

	a->id = sqlite3_column_int64(st, 0);
	a->time = sqlite3_column_int64(st, 1);
	a->token_id = sqlite3_column_int64(st, 2);
	sqlite_db_column_copy(st, 3, a->token_name, sizeof(a->token_name));
	sqlite_db_column_copy(st, 4, a->environment, sizeof(a->environment));
	sqlite_db_column_copy(st, 5, a->service, sizeof(a->service));
	a->before_json = column_strdup(st, 6, &oom);
	a->after_json = column_strdup(st, 7, &oom);
	return oom ? -ENOMEM : 0;
}

static void free_audit_rows(void *records, size_t n)
{
	audit_records__free(records, n);
}

static const struct sqlite_db_row_reader audit_rows = {
    .size = sizeof(struct audit_record),
    .read = read_audit,
    .free = free_audit_rows,
};

static int cp_audit_list(struct cp_store *s, const char *environment, int64_t since, size_t limit,
			 struct audit_record **ret, size_t *ret_n)
{
	struct sqlite_cp *c = to_sqlite(s);
	sqlite3_stmt *st = c->st[ST_AUDIT_LIST];
	int rc;

	pthread_mutex_lock(&c->lock);
	bind_text(st, 1, environment);
	sqlite3_bind_int64(st, 2, since);
	sqlite3_bind_int64(st, 3, (int64_t)limit);
	rc = sqlite_db_read_rows(st, &audit_rows, ret, ret_n);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static int cp_deployment_add(struct cp_store *s, const struct deployment_record *d, int64_t *ret_id)
{
	struct sqlite_cp *c = to_sqlite(s);
	sqlite3_stmt *st = c->st[ST_DEPLOY_ADD];
	int rc;

	pthread_mutex_lock(&c->lock);
	bind_fields(st, 1, deployment_fields, ARRAY_LEN(deployment_fields), d);
	rc = insert_row(c, st, ret_id);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static int read_deployment(sqlite3_stmt *st, void *record)
{
	struct deployment_record *d = record;

	d->id = sqlite3_column_int64(st, 0);
	read_fields(st, 1, deployment_fields, ARRAY_LEN(deployment_fields), d);
	return 0;
}

static const struct sqlite_db_row_reader deployment_rows = {
    .size = sizeof(struct deployment_record),
    .read = read_deployment,
};

static int cp_deployment_list(struct cp_store *s, const char *environment, const char *service,
			      int64_t start, int64_t end, struct deployment_record **ret,
			      size_t *ret_n)
{
	struct sqlite_cp *c = to_sqlite(s);
	sqlite3_stmt *st = c->st[ST_DEPLOY_LIST];
	int rc;

	pthread_mutex_lock(&c->lock);
	bind_text(st, 1, environment);
	if (service && *service)
		bind_text(st, 2, service);
	sqlite3_bind_int64(st, 3, start);
	sqlite3_bind_int64(st, 4, end);
	rc = sqlite_db_read_rows(st, &deployment_rows, ret, ret_n);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* A figure the agent did not send is NULL, so that it reads back as "not sent", not 0. */
static void bind_unwind_figures(sqlite3_stmt *st, const struct agent_report *r)
{
	for (int f = 0; f < UNWIND_FIGURE__COUNT; f++) {
		int idx = AGENT_FIRST_UNWIND_PARAM + f;

		if (!r->unwind_sent[f])
			sqlite3_bind_null(st, idx);
		else if (unwind_figure_kinds[f] == UNWIND_FIGURE_COUNT)
			sqlite3_bind_int64(st, idx, (int64_t)r->unwind[f]);
		else
			sqlite3_bind_double(st, idx, r->unwind[f]);
	}
}

static void read_unwind_figures(sqlite3_stmt *st, struct agent_report *r)
{
	for (int f = 0; f < UNWIND_FIGURE__COUNT; f++) {
		int col = AGENT_FIRST_UNWIND_COLUMN + f;

		r->unwind_sent[f] = sqlite3_column_type(st, col) != SQLITE_NULL;
		r->unwind[f] = r->unwind_sent[f] ? sqlite3_column_double(st, col) : 0;
	}
}

/* ST_AGENT_PUT's parameter (and, one less, ST_AGENT_LIST's column) of window_s; the other
 * enum agent_figure figures follow it in bit order. */
#define AGENT_FIRST_FIGURE_PARAM 7

/* A figure the sender did not measure is NULL, read back as "not measured", not 0. */
static void bind_unmeasured(sqlite3_stmt *st, const struct agent_report *r)
{
	for (int f = 0; f < AGENT_FIGURES__COUNT; f++)
		if (!(r->sent & (1u << f)))
			sqlite3_bind_null(st, AGENT_FIRST_FIGURE_PARAM + f);
}

static void read_measured(sqlite3_stmt *st, struct agent_report *r)
{
	r->sent = 0;
	for (int f = 0; f < AGENT_FIGURES__COUNT; f++)
		if (sqlite3_column_type(st, AGENT_FIRST_FIGURE_PARAM - 1 + f) != SQLITE_NULL)
			r->sent |= 1u << f;
}

static int cp_agent_report_put(struct cp_store *s, const struct agent_report *r)
{
	struct sqlite_cp *c = to_sqlite(s);
	sqlite3_stmt *st = c->st[ST_AGENT_PUT];
	int rc;

	pthread_mutex_lock(&c->lock);
	bind_fields(st, 1, agent_report_fields, ARRAY_LEN(agent_report_fields), r);
	bind_unmeasured(st, r);
	bind_unwind_figures(st, r);
	rc = sqlite_db_step_done(st);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static int read_agent_report(sqlite3_stmt *st, void *record)
{
	read_fields(st, 0, agent_report_fields, ARRAY_LEN(agent_report_fields), record);
	read_measured(st, record);
	read_unwind_figures(st, record);
	return 0;
}

static const struct sqlite_db_row_reader agent_report_rows = {
    .size = sizeof(struct agent_report),
    .read = read_agent_report,
};

static int cp_agent_report_list(struct cp_store *s, const char *environment,
				struct agent_report **ret, size_t *ret_n)
{
	return list_environment(to_sqlite(s), ST_AGENT_LIST, environment, &agent_report_rows, ret,
				ret_n);
}

static const struct cp_store_ops sqlite_cp_ops = {
    .close = cp_close,
    .environment_create = cp_environment_create,
    .environment_get = cp_environment_get,
    .token_create = cp_token_create,
    .token_find_by_hash = cp_token_find_by_hash,
    .token_list = cp_token_list,
    .token_revoke = cp_token_revoke,
    .settings_get = cp_settings_get,
    .settings_list = cp_settings_list,
    .settings_put = cp_settings_put,
    .audit_list = cp_audit_list,
    .deployment_add = cp_deployment_add,
    .deployment_list = cp_deployment_list,
    .agent_report_put = cp_agent_report_put,
    .agent_report_list = cp_agent_report_list,
};

/* Databases made before the agent report kept the unwinder's figures get their columns. */
static int add_unwind_columns(sqlite3 *db, void *arg)
{
	(void)arg;
	for (int f = 0; f < UNWIND_FIGURE__COUNT; f++) {
		const char *type =
		    unwind_figure_kinds[f] == UNWIND_FIGURE_COUNT ? "INTEGER" : "REAL";
		int err = sqlite_db_add_column(db, "agents", unwind_figure_names[f], type);

		if (err)
			return err;
	}
	return 0;
}

int cp_store_sqlite_open(const char *path, const struct store_sqlite_options *opts,
			 struct cp_store **ret)
{
	enum store_sqlite_durability durability =
	    opts ? opts->durability : STORE_SQLITE_DURABILITY_FULL;
	struct sqlite_cp *c;
	int err;

	*ret = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->base.ops = &sqlite_cp_ops;
	pthread_mutex_init(&c->lock, NULL);
	err = sqlite_db_open(path, schema, durability, &c->db);
	if (!err)
		err = sqlite_db_in_transaction(c->db, add_unwind_columns, NULL);
	if (!err) /* added with off-CPU time: NULL inherits, as the other settings */
		err = sqlite_db_add_column(c->db, "settings", "offcpu_enabled", "INTEGER");
	if (!err)
		err = sqlite_db_prepare_all(c->db, statements, c->st, ST_COUNT);
	if (err) {
		cp_close(&c->base);
		return err;
	}
	*ret = &c->base;
	return 0;
}
