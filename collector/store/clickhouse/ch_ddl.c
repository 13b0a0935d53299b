// SPDX-License-Identifier: Apache-2.0
/* The ClickHouse store's SQL templates expanded for one server or a cluster (ch_ddl.h states
 * the placeholders and what CH_TABLE() becomes): the only file that knows the two modes apart,
 * so that a table added later is sharded and replicated like the others by declaring it. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "store/clickhouse/ch_ddl.h"

bool ch_ddl_valid_cluster(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len >= CH_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!(name[i] == '_' || (name[i] >= '0' && name[i] <= '9') ||
		      (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z')))
			return false;
	return true;
}

static bool on_cluster(const struct ch_client *c)
{
	return c->cluster[0] != '\0';
}

/* text (len bytes) with the placeholders replaced, appended to out. */
static void put_expanded(const struct ch_client *c, struct ch_buf *out, const char *text,
			 size_t len)
{
	static const char *const names[] = {"{db}", "{on_cluster}", "{local}", "{parts}"};
	const char *end = text + len;

	while (text < end) {
		const char *brace = memchr(text, '{', (size_t)(end - text));
		size_t i = 0, n;

		if (!brace) {
			ch_buf__put_bytes(out, text, (size_t)(end - text));
			return;
		}
		ch_buf__put_bytes(out, text, (size_t)(brace - text));
		for (; i < sizeof(names) / sizeof(names[0]); i++) {
			n = strlen(names[i]);
			if ((size_t)(end - brace) >= n && memcmp(brace, names[i], n) == 0)
				break;
		}
		if (i == sizeof(names) / sizeof(names[0])) { /* {shard}, {replica}: the server's */
			ch_buf__put_bytes(out, brace, 1);
			text = brace + 1;
			continue;
		}
		if (i == 0)
			ch_buf__put_bytes(out, c->database, strlen(c->database));
		else if (i == 1 && on_cluster(c))
			ch_buf__printf(out, " ON CLUSTER %s", c->cluster);
		else if (i == 2 && on_cluster(c))
			ch_buf__put_bytes(out, "_local", 6);
		else if (i == 3 && on_cluster(c))
			ch_buf__printf(out, "cluster('%s', system, parts)", c->cluster);
		else if (i == 3)
			ch_buf__put_bytes(out, "system.parts", 12);
		text = brace + n;
	}
}

static void put_statement_end(struct ch_buf *out)
{
	ch_buf__put_bytes(out, "", 1);
}

/* CH_TABLE's five fields. */
struct table_decl {
	const char *field[5]; /* name, columns, engine, layout, shard_key */
	size_t len[5];
};

static int parse_table(const char *decl, struct table_decl *t)
{
	for (int i = 0; i < 5; i++) {
		const char *sep = strstr(decl, CH_DDL_FIELD_SEP);

		if ((i < 4) != (sep != NULL))
			return -EINVAL;
		t->field[i] = decl;
		t->len[i] = sep ? (size_t)(sep - decl) : strlen(decl);
		decl = sep ? sep + 1 : decl;
	}
	return 0;
}

static void put_field(const struct ch_client *c, struct ch_buf *out, const struct table_decl *t,
		      int i)
{
	put_expanded(c, out, t->field[i], t->len[i]);
}

/* Replicated<engine>('/clickhouse/tables/{shard}/db/name_local', '{replica}'[, its args]). */
static void put_replicated_engine(const struct ch_client *c, struct ch_buf *out,
				  const struct table_decl *t)
{
	const char *engine = t->field[2], *open = memchr(engine, '(', t->len[2]);
	size_t name_len = open ? (size_t)(open - engine) : t->len[2];
	bool has_args = open && open[1] != ')';

	ch_buf__printf(out,
		       "Replicated%.*s('/clickhouse/tables/{shard}/%s/%.*s_local', '{replica}'",
		       (int)name_len, engine, c->database, (int)t->len[0], t->field[0]);
	if (has_args) {
		ch_buf__put_bytes(out, ", ", 2);
		put_expanded(c, out, open + 1, t->len[2] - name_len - 1); /* through ')' */
	} else {
		ch_buf__put_bytes(out, ")", 1);
	}
}

/* CREATE TABLE db.name ON CLUSTER c AS db.name_local ENGINE = Distributed(...): t's name and
 * shard key (fields 0 and 4). */
static void put_distributed(const struct ch_client *c, struct ch_buf *out,
			    const struct table_decl *t)
{
	ch_buf__printf(out, "CREATE TABLE %s.%.*s ON CLUSTER %s AS %s.%.*s_local", c->database,
		       (int)t->len[0], t->field[0], c->cluster, c->database, (int)t->len[0],
		       t->field[0]);
	ch_buf__printf(out, " ENGINE = Distributed(%s, %s, %.*s_local, ", c->cluster, c->database,
		       (int)t->len[0], t->field[0]);
	put_field(c, out, t, 4);
	ch_buf__put_bytes(out, ")", 1);
	put_statement_end(out);
}

static int expand_table(const struct ch_client *c, const char *decl, struct ch_buf *out)
{
	struct table_decl t;
	int rc = parse_table(decl, &t);

	if (rc)
		return rc;
	ch_buf__put_bytes(out, "CREATE TABLE ", 13);
	put_expanded(c, out, "{db}.", 5);
	put_field(c, out, &t, 0);
	if (!on_cluster(c)) {
		ch_buf__put_bytes(out, "(", 1);
		put_field(c, out, &t, 1);
		ch_buf__put_bytes(out, ") ENGINE = ", 11);
		put_field(c, out, &t, 2);
		ch_buf__put_bytes(out, " ", 1);
		put_field(c, out, &t, 3);
		put_statement_end(out);
		return 0;
	}
	ch_buf__printf(out, "_local ON CLUSTER %s(", c->cluster);
	put_field(c, out, &t, 1);
	ch_buf__put_bytes(out, ") ENGINE = ", 11);
	put_replicated_engine(c, out, &t);
	ch_buf__put_bytes(out, " ", 1);
	put_field(c, out, &t, 3);
	put_statement_end(out);
	put_distributed(c, out, &t);
	return 0;
}

/* CH_DISTRIBUTED's two fields. */
static int expand_distributed(const struct ch_client *c, const char *decl, struct ch_buf *out)
{
	const char *sep = strstr(decl, CH_DDL_FIELD_SEP);
	struct table_decl t = {0};

	if (!sep)
		return -EINVAL;
	if (!on_cluster(c))
		return 0;
	t.field[0] = decl;
	t.len[0] = (size_t)(sep - decl);
	t.field[4] = sep + 1;
	t.len[4] = strlen(sep + 1);
	put_distributed(c, out, &t);
	return 0;
}

int ch_ddl_expand(const struct ch_client *c, const char *tmpl, struct ch_buf *out)
{
	size_t mark = strlen(CH_DDL_TABLE_MARK);
	int rc = 0;

	if (strncmp(tmpl, CH_DDL_TABLE_MARK, mark) == 0) {
		rc = expand_table(c, tmpl + mark, out);
	} else if (strncmp(tmpl, CH_DDL_DISTRIBUTED_MARK, strlen(CH_DDL_DISTRIBUTED_MARK)) == 0) {
		rc = expand_distributed(c, tmpl + strlen(CH_DDL_DISTRIBUTED_MARK), out);
	} else {
		put_expanded(c, out, tmpl, strlen(tmpl));
		put_statement_end(out);
	}
	return rc ? rc : out->oom ? -ENOMEM : 0;
}

int ch_client__run_template(struct ch_client *c, const char *tmpl, struct ch_buf *out, char *why,
			    size_t why_len)
{
	struct ch_buf text = {0};
	int rc = ch_ddl_expand(c, tmpl, &text);

	for (size_t at = 0; !rc && at < text.len; at += strlen(text.data + at) + 1)
		rc = ch_client__exec(c, text.data + at, NULL, out, why, why_len);
	ch_buf__release(&text);
	return rc;
}

/* "Distributed(name, ..." -> name. */
static void cluster_of(const char *engine_full, size_t len, char *ret, size_t ret_len)
{
	static const char prefix[] = "Distributed(";
	size_t n = 0, skip = sizeof(prefix) - 1;

	ret[0] = '\0';
	if (len < skip || memcmp(engine_full, prefix, skip) != 0)
		return;
	engine_full += skip;
	len -= skip;
	while (len && *engine_full == ' ')
		engine_full++, len--;
	if (len && *engine_full == '\'') /* a quoted name */
		engine_full++, len--;
	while (n < len && n + 1 < ret_len && engine_full[n] != ',' && engine_full[n] != '\'' &&
	       engine_full[n] != ' ')
		n++;
	memcpy(ret, engine_full, n);
	ret[n] = '\0';
}

int ch_ddl_detect(struct ch_client *c)
{
	struct ch_buf sql = {0}, out = {0};
	const char *engine;
	size_t len;
	int rc;

	ch_buf__printf(&sql,
		       "SELECT engine_full FROM system.tables WHERE database = '%s'"
		       " AND name = 'rollups' FORMAT RowBinary",
		       c->database);
	rc = ch_client__run(c, &sql, &out);
	c->cluster[0] = '\0';
	if (!rc && out.len > 0 && !ch_buf__get_string(&out, &engine, &len))
		cluster_of(engine, len, c->cluster, sizeof(c->cluster));
	ch_buf__release(&sql);
	ch_buf__release(&out);
	return rc;
}
