// SPDX-License-Identifier: Apache-2.0
/* Control-plane store on PostgreSQL: environments, tokens, settings with their audit event in
 * one transaction, deployments and agent self-reports, with the SQLite store's answers. Each
 * concern's SQL sits next to the function that runs it; connections come from pg_conn.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/postgresql/pg_conn.h"
#include "store/postgresql/store_pg.h"

struct pg_cp {
	struct cp_store base;
	struct pg_pool pool;
};

static struct pg_pool *pool_of(struct cp_store *s)
{
	return &((struct pg_cp *)s)->pool;
}

static void cp_close(struct cp_store *s)
{
	if (!s)
		return;
	pg_pool__release(pool_of(s));
	free(s);
}

/* The first column of the first row as the new or found id; -ENOENT when there is no row. */
static int exec_returning_id(struct pg_pool *pool, const char *sql, const struct pg_params *p,
			     int64_t *ret_id)
{
	PGresult *r;
	int rc = pg_pool__exec(pool, sql, p, &r);

	if (rc)
		return rc;
	rc = PQntuples(r) > 0 ? 0 : -ENOENT;
	if (!rc && ret_id)
		*ret_id = pg_int(r, 0, 0);
	PQclear(r);
	return rc;
}

/* An UPDATE: -ENOENT when it changed no row. */
static int exec_update(struct pg_pool *pool, const char *sql, const struct pg_params *p)
{
	PGresult *r;
	int rc = pg_pool__exec(pool, sql, p, &r);

	if (rc)
		return rc;
	rc = strcmp(PQcmdTuples(r), "0") == 0 ? -ENOENT : 0;
	PQclear(r);
	return rc;
}

static int exec_rows(struct pg_pool *pool, const char *sql, const struct pg_params *p,
		     const struct pg_row_reader *reader, void *ret, size_t *ret_n)
{
	PGresult *r;
	int rc = pg_pool__exec(pool, sql, p, &r);

	if (rc)
		return rc;
	rc = pg_read_rows(r, reader, ret, ret_n);
	PQclear(r);
	return rc;
}

/* One row into record by reader; -ENOENT when there is none. */
static int exec_row(struct pg_pool *pool, const char *sql, const struct pg_params *p,
		    const struct pg_row_reader *reader, void *record)
{
	PGresult *r;
	int rc = pg_pool__exec(pool, sql, p, &r);

	if (rc)
		return rc;
	rc = PQntuples(r) > 0 ? reader->read(r, 0, record) : -ENOENT;
	PQclear(r);
	return rc;
}

/* ---------------------------------------------------------------- environments ---- */

static int cp_environment_create(struct cp_store *s, const char *name, int64_t *ret_id)
{
	struct pg_params p = {0};

	pg_params__text(&p, name);
	pg_params__int(&p, time(NULL));
	return exec_returning_id(pool_of(s),
				 "INSERT INTO environments(name, created_at) VALUES($1, $2)"
				 " RETURNING id",
				 &p, ret_id);
}

static int cp_environment_get(struct cp_store *s, const char *name, int64_t *ret_id)
{
	struct pg_params p = {0};

	pg_params__text(&p, name);
	return exec_returning_id(pool_of(s), "SELECT id FROM environments WHERE name = $1", &p,
				 ret_id);
}

/* ---------------------------------------------------------------------- tokens ---- */

#define TOKEN_SELECT                                                                               \
	"SELECT t.id, t.name, t.environment_id, e.name, t.kind, t.role, t.revoked::int,"           \
	" t.created_at, encode(t.hash, 'hex') FROM tokens t JOIN environments e"                   \
	" ON e.id = t.environment_id"

static int hex_nibble(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : 0;
}

static int read_token(const PGresult *r, int row, void *record)
{
	struct token_record *t = record;
	const char *hex = PQgetvalue(r, row, 8);

	memset(t, 0, sizeof(*t));
	t->id = pg_int(r, row, 0);
	pg_copy(r, row, 1, t->name, sizeof(t->name));
	t->environment_id = pg_int(r, row, 2);
	pg_copy(r, row, 3, t->environment, sizeof(t->environment));
	t->kind = (enum token_kind)pg_int(r, row, 4);
	t->role = (enum token_role)pg_int(r, row, 5);
	t->revoked = pg_int(r, row, 6) != 0;
	t->created_at = pg_int(r, row, 7);
	if (strlen(hex) == 2 * sizeof(t->hash))
		for (size_t i = 0; i < sizeof(t->hash); i++)
			t->hash[i] =
			    (uint8_t)(hex_nibble(hex[2 * i]) << 4 | hex_nibble(hex[2 * i + 1]));
	return 0;
}

static const struct pg_row_reader token_rows = {.size = sizeof(struct token_record),
						.read = read_token};

static int cp_token_create(struct cp_store *s, const struct token_record *t, int64_t *ret_id)
{
	struct pg_params p = {0};

	pg_params__text(&p, t->name);
	pg_params__int(&p, t->environment_id);
	pg_params__int(&p, t->kind);
	pg_params__int(&p, t->role);
	pg_params__int(&p, t->created_at ? t->created_at : time(NULL));
	pg_params__bytes(&p, t->hash, sizeof(t->hash));
	return exec_returning_id(pool_of(s),
				 "INSERT INTO tokens(name, environment_id, kind, role, created_at,"
				 " hash) VALUES($1, $2, $3, $4, $5, $6) RETURNING id",
				 &p, ret_id);
}

static int cp_token_find_by_hash(struct cp_store *s, const uint8_t hash[32],
				 struct token_record *ret)
{
	struct pg_params p = {0};

	pg_params__bytes(&p, hash, 32);
	return exec_row(pool_of(s), TOKEN_SELECT " WHERE t.hash = $1", &p, &token_rows, ret);
}

static int cp_token_list(struct cp_store *s, struct token_record **ret, size_t *ret_n)
{
	return exec_rows(pool_of(s), TOKEN_SELECT " ORDER BY t.id", NULL, &token_rows, ret, ret_n);
}

static int cp_token_revoke(struct cp_store *s, int64_t id)
{
	struct pg_params p = {0};

	pg_params__int(&p, id);
	return exec_update(pool_of(s), "UPDATE tokens SET revoked = true WHERE id = $1", &p);
}

/* -------------------------------------------------------------------- settings ---- */

#define SETTINGS_SELECT                                                                            \
	"SELECT e.name, s.service, s.enabled::int, s.sample_rate_hz, s.upload_interval_s,"         \
	" s.poll_interval_s, s.offcpu_enabled::int FROM settings s JOIN environments e"            \
	" ON e.id = s.environment_id"

static int read_settings(const PGresult *r, int row, void *record)
{
	struct settings_record *s = record;

	memset(s, 0, sizeof(*s));
	pg_copy(r, row, 0, s->environment, sizeof(s->environment));
	pg_copy(r, row, 1, s->service, sizeof(s->service));
	s->has_enabled = !pg_null(r, row, 2);
	s->enabled = s->has_enabled && pg_int(r, row, 2) != 0;
	s->has_sample_rate_hz = !pg_null(r, row, 3);
	s->sample_rate_hz = (int)pg_int(r, row, 3);
	s->has_upload_interval_s = !pg_null(r, row, 4);
	s->upload_interval_s = (int)pg_int(r, row, 4);
	s->has_poll_interval_s = !pg_null(r, row, 5);
	s->poll_interval_s = (int)pg_int(r, row, 5);
	s->has_offcpu_enabled = !pg_null(r, row, 6);
	s->offcpu_enabled = s->has_offcpu_enabled && pg_int(r, row, 6) != 0;
	return 0;
}

static const struct pg_row_reader settings_rows = {.size = sizeof(struct settings_record),
						   .read = read_settings};

static int cp_settings_get(struct cp_store *s, const char *environment, const char *service,
			   struct settings_record *ret)
{
	struct pg_params p = {0};

	pg_params__text(&p, environment);
	pg_params__text(&p, service ? service : "");
	return exec_row(pool_of(s), SETTINGS_SELECT " WHERE e.name = $1 AND s.service = $2", &p,
			&settings_rows, ret);
}

static int cp_settings_list(struct cp_store *s, const char *environment,
			    struct settings_record **ret, size_t *ret_n)
{
	struct pg_params p = {0};

	pg_params__text(&p, environment);
	return exec_rows(pool_of(s), SETTINGS_SELECT " WHERE e.name = $1 ORDER BY s.service", &p,
			 &settings_rows, ret, ret_n);
}

static int settings_write(struct pg_link *l, const struct settings_record *r)
{
	struct pg_params p = {0};
	PGresult *res;
	int rc;

	pg_params__text(&p, r->environment);
	pg_params__text(&p, r->service);
	if (r->has_enabled)
		pg_params__text(&p, r->enabled ? "true" : "false");
	else
		pg_params__null(&p);
	pg_params__optional_int(&p, r->has_sample_rate_hz, r->sample_rate_hz);
	pg_params__optional_int(&p, r->has_upload_interval_s, r->upload_interval_s);
	pg_params__optional_int(&p, r->has_poll_interval_s, r->poll_interval_s);
	pg_params__int(&p, time(NULL));
	if (r->has_offcpu_enabled)
		pg_params__text(&p, r->offcpu_enabled ? "true" : "false");
	else
		pg_params__null(&p);
	rc = pg_link__exec(
	    l,
	    "INSERT INTO settings(environment_id, service, enabled, sample_rate_hz,"
	    " upload_interval_s, poll_interval_s, updated_at, offcpu_enabled)"
	    " SELECT id, $2, $3, $4, $5, $6, $7, $8 FROM environments WHERE name = $1"
	    " ON CONFLICT(environment_id, service) DO UPDATE SET enabled = excluded.enabled,"
	    " sample_rate_hz = excluded.sample_rate_hz,"
	    " upload_interval_s = excluded.upload_interval_s,"
	    " poll_interval_s = excluded.poll_interval_s, updated_at = excluded.updated_at,"
	    " offcpu_enabled = excluded.offcpu_enabled",
	    &p, &res);
	if (rc)
		return rc;
	rc = strcmp(PQcmdTuples(res), "0") == 0 ? -ENOENT : 0;
	PQclear(res);
	return rc;
}

static int audit_write(struct pg_link *l, const struct audit_record *a)
{
	struct pg_params p = {0};

	pg_params__int(&p, a->time ? a->time : time(NULL));
	pg_params__int(&p, a->token_id);
	pg_params__text(&p, a->token_name);
	pg_params__text(&p, a->environment);
	pg_params__text(&p, a->service);
	pg_params__text(&p, a->before_json);
	pg_params__text(&p, a->after_json);
	return pg_link__exec(l,
			     "INSERT INTO audit(time, token_id, token_name, environment, service,"
			     " before_json, after_json) VALUES($1, $2, $3, $4, $5, $6, $7)",
			     &p, NULL);
}

static int cp_settings_put(struct cp_store *s, const struct settings_record *r,
			   const struct audit_record *a)
{
	struct pg_link *l;
	int rc = pg_pool__acquire(pool_of(s), &l);

	if (rc)
		return rc;
	rc = pg_link__exec(l, "BEGIN", NULL, NULL);
	if (!rc)
		rc = settings_write(l, r);
	if (!rc && a)
		rc = audit_write(l, a);
	if (!rc)
		rc = pg_link__exec(l, "COMMIT", NULL, NULL);
	else if (l->conn)
		pg_link__exec(l, "ROLLBACK", NULL, NULL);
	pg_pool__return(l);
	return rc;
}

/* ----------------------------------------------------------------------- audit ---- */

static char *value_strdup(const PGresult *r, int row, int col, int *ret_oom)
{
	char *copy;

	if (pg_null(r, row, col))
		return NULL;
	copy = strdup(PQgetvalue(r, row, col));
	if (!copy)
		*ret_oom = 1;
	return copy;
}

static int read_audit(const PGresult *r, int row, void *record)
{
	struct audit_record *a = record;
	int oom = 0;

	a->id = pg_int(r, row, 0);
	a->time = pg_int(r, row, 1);
	a->token_id = pg_int(r, row, 2);
	pg_copy(r, row, 3, a->token_name, sizeof(a->token_name));
	pg_copy(r, row, 4, a->environment, sizeof(a->environment));
	pg_copy(r, row, 5, a->service, sizeof(a->service));
	a->before_json = value_strdup(r, row, 6, &oom);
	a->after_json = value_strdup(r, row, 7, &oom);
	return oom ? -ENOMEM : 0;
}

static void free_audit_rows(void *records, size_t n)
{
	audit_records__free(records, n);
}

static int cp_audit_list(struct cp_store *s, const char *environment, int64_t since, size_t limit,
			 struct audit_record **ret, size_t *ret_n)
{
	static const struct pg_row_reader audit_rows = {
	    .size = sizeof(struct audit_record), .read = read_audit, .free = free_audit_rows};
	struct pg_params p = {0};

	pg_params__text(&p, environment);
	pg_params__int(&p, since);
	pg_params__int(&p, (int64_t)limit);
	return exec_rows(pool_of(s),
			 "SELECT id, time, token_id, token_name, environment, service,"
			 " before_json, after_json FROM audit"
			 " WHERE environment = $1 AND time >= $2 ORDER BY id DESC LIMIT $3",
			 &p, &audit_rows, ret, ret_n);
}

/* ----------------------------------------------------------------- deployments ---- */

static int cp_deployment_add(struct cp_store *s, const struct deployment_record *d, int64_t *ret_id)
{
	struct pg_params p = {0};

	pg_params__text(&p, d->environment);
	pg_params__text(&p, d->service);
	pg_params__text(&p, d->version);
	pg_params__int(&p, d->time);
	return exec_returning_id(pool_of(s),
				 "INSERT INTO deployments(environment, service, version, time)"
				 " VALUES($1, $2, $3, $4) RETURNING id",
				 &p, ret_id);
}

static int read_deployment(const PGresult *r, int row, void *record)
{
	struct deployment_record *d = record;

	d->id = pg_int(r, row, 0);
	pg_copy(r, row, 1, d->environment, sizeof(d->environment));
	pg_copy(r, row, 2, d->service, sizeof(d->service));
	pg_copy(r, row, 3, d->version, sizeof(d->version));
	d->time = pg_int(r, row, 4);
	return 0;
}

static int cp_deployment_list(struct cp_store *s, const char *environment, const char *service,
			      int64_t start, int64_t end, struct deployment_record **ret,
			      size_t *ret_n)
{
	static const struct pg_row_reader deployment_rows = {
	    .size = sizeof(struct deployment_record), .read = read_deployment};
	struct pg_params p = {0};

	pg_params__text(&p, environment);
	pg_params__text(&p, service && *service ? service : NULL);
	pg_params__int(&p, start);
	pg_params__int(&p, end);
	return exec_rows(pool_of(s),
			 "SELECT id, environment, service, version, time FROM deployments"
			 " WHERE environment = $1 AND ($2::text IS NULL OR service = $2)"
			 " AND time >= $3 AND time < $4 ORDER BY time, id",
			 &p, &deployment_rows, ret, ret_n);
}

/* -------------------------------------------------------------- agent reports ---- */

#define UNWIND_COLUMN(id, name, kind) ", " name
#define UNWIND_EXCLUDED(id, name, kind) ", " name " = excluded." name
#define AGENT_COLUMNS                                                                              \
	"environment, agent_id, service, node, version, reported_at, window_s, cpu_s, bpf_s,"      \
	" lost_samples, unknown_frames, processes" UNWIND_FIGURES(UNWIND_COLUMN)
#define AGENT_FIXED_COLUMNS 12
#define AGENT_FIRST_FIGURE 6 /* window_s: the enum agent_figure figures follow in bit order */

static void agent_report_params(struct pg_params *p, const struct agent_report *r)
{
	pg_params__text(p, r->environment);
	pg_params__text(p, r->agent_id);
	pg_params__text(p, r->service);
	pg_params__text(p, r->node);
	pg_params__text(p, r->version);
	pg_params__int(p, r->reported_at);
	/* The self-report's own figures in enum agent_figure order; one not measured is NULL. */
	pg_params__double(p, r->window_s);
	pg_params__double(p, r->cpu_s);
	pg_params__double(p, r->bpf_s);
	pg_params__int(p, r->lost_samples);
	pg_params__int(p, r->unknown_frames);
	pg_params__int(p, r->processes);
	for (int f = 0; f < AGENT_FIGURES__COUNT; f++)
		if (!(r->sent & (1u << f)))
			p->values[AGENT_FIRST_FIGURE + f] = NULL;
	/* A figure the agent did not send is NULL, so that it reads back as "not sent". */
	for (int f = 0; f < UNWIND_FIGURE__COUNT; f++) {
		if (!r->unwind_sent[f])
			pg_params__null(p);
		else if (unwind_figure_kinds[f] == UNWIND_FIGURE_COUNT)
			pg_params__int(p, (int64_t)r->unwind[f]);
		else
			pg_params__double(p, r->unwind[f]);
	}
}

static int cp_agent_report_put(struct cp_store *s, const struct agent_report *r)
{
	static const char sql[] =
	    "INSERT INTO agents(" AGENT_COLUMNS ") VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,"
	    " $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27,"
	    " $28) ON CONFLICT(environment, agent_id, service) DO UPDATE SET node = excluded.node,"
	    " version = excluded.version, reported_at = excluded.reported_at,"
	    " window_s = excluded.window_s, cpu_s = excluded.cpu_s, bpf_s = excluded.bpf_s,"
	    " lost_samples = excluded.lost_samples, unknown_frames = excluded.unknown_frames,"
	    " processes = excluded.processes" UNWIND_FIGURES(UNWIND_EXCLUDED);
	struct pg_params p = {0};

	_Static_assert(AGENT_FIXED_COLUMNS + UNWIND_FIGURE__COUNT == 28,
		       "agent_report_put's placeholders follow the agents columns");
	agent_report_params(&p, r);
	return pg_pool__exec(pool_of(s), sql, &p, NULL);
}

static int read_agent_report(const PGresult *r, int row, void *record)
{
	struct agent_report *a = record;

	pg_copy(r, row, 0, a->environment, sizeof(a->environment));
	pg_copy(r, row, 1, a->agent_id, sizeof(a->agent_id));
	pg_copy(r, row, 2, a->service, sizeof(a->service));
	pg_copy(r, row, 3, a->node, sizeof(a->node));
	pg_copy(r, row, 4, a->version, sizeof(a->version));
	a->reported_at = pg_int(r, row, 5);
	a->window_s = pg_double(r, row, 6);
	a->cpu_s = pg_double(r, row, 7);
	a->bpf_s = pg_double(r, row, 8);
	a->lost_samples = pg_int(r, row, 9);
	a->unknown_frames = pg_int(r, row, 10);
	a->processes = pg_int(r, row, 11);
	a->sent = 0;
	for (int f = 0; f < AGENT_FIGURES__COUNT; f++)
		if (!pg_null(r, row, AGENT_FIRST_FIGURE + f))
			a->sent |= 1u << f;
	for (int f = 0; f < UNWIND_FIGURE__COUNT; f++) {
		int col = AGENT_FIXED_COLUMNS + f;

		a->unwind_sent[f] = !pg_null(r, row, col);
		a->unwind[f] = a->unwind_sent[f] ? pg_double(r, row, col) : 0;
	}
	return 0;
}

static int cp_agent_report_list(struct cp_store *s, const char *environment,
				struct agent_report **ret, size_t *ret_n)
{
	static const struct pg_row_reader agent_rows = {.size = sizeof(struct agent_report),
							.read = read_agent_report};
	struct pg_params p = {0};

	pg_params__text(&p, environment);
	return exec_rows(pool_of(s),
			 "SELECT " AGENT_COLUMNS " FROM agents WHERE environment = $1"
			 " ORDER BY agent_id, service",
			 &p, &agent_rows, ret, ret_n);
}

static const struct cp_store_ops pg_cp_ops = {
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

int cp_store_pg_open(const char *conninfo, struct cp_store **ret)
{
	struct pg_cp *c;
	int err;

	*ret = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->base.ops = &pg_cp_ops;
	err = pg_pool__open_checked(&c->pool, conninfo);
	if (err) {
		cp_close(&c->base);
		return err;
	}
	*ret = &c->base;
	return 0;
}
