/* SPDX-License-Identifier: Apache-2.0 */
/* ClickHouse's HTTP interface through libcurl, and the RowBinary encoding of the rows sent and
 * read: what the ClickHouse store's files share, and only they include it. */
#ifndef ROOTTRACE_CH_HTTP_H
#define ROOTTRACE_CH_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CH_NAME_MAX 64

/* A growing byte buffer: a RowBinary body being built, or an answer being read. */
struct ch_buf {
	char *data;
	size_t len, cap, pos; /* pos: the reader's offset */
	bool oom;	      /* an append failed; the buffer is unusable */
};

void ch_buf__release(struct ch_buf *b);
void ch_buf__reset(struct ch_buf *b);
void ch_buf__put_bytes(struct ch_buf *b, const void *data, size_t len);
void ch_buf__put_string(struct ch_buf *b, const char *s);
void ch_buf__put_u32(struct ch_buf *b, uint32_t v);
void ch_buf__put_u64(struct ch_buf *b, uint64_t v);
/* A SQL string literal of s, quoted and escaped. */
void ch_buf__put_literal(struct ch_buf *b, const char *s);
/* printf into the buffer (SQL text). */
void ch_buf__printf(struct ch_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Readers of RowBinary answers: 0, or -EPROTO when the answer ends early. */
int ch_buf__get_string(struct ch_buf *b, const char **ret, size_t *ret_len);
int ch_buf__get_u64(struct ch_buf *b, uint64_t *ret);
int ch_buf__get_u32(struct ch_buf *b, uint32_t *ret);

struct ch_connections;

struct ch_client {
	char *url; /* http://host:port/ */
	char *user, *password;
	char database[CH_NAME_MAX];
	/* The remote_servers cluster the tables spread over, "" on one server (ch_ddl.h). On a
	 * cluster every request waits for its INSERT to reach the shards (what is acknowledged
	 * is stored), runs IN and JOIN subqueries on the initiator (each shard's answer would
	 * see only its rows), and keeps Replicated tables from dropping an INSERT whose rows
	 * equal a recent one's (two equal uploads are two uploads; upload ids dedupe in the
	 * control plane). */
	char cluster[CH_NAME_MAX];
	/* Kept-alive connections every request of this client may reuse, whatever its thread. */
	struct ch_connections *connections;
};

/* Parses clickhouse+http://[user@]host:port/database; password NULL = none. 0, -EINVAL (with
 * why), -ENOMEM. */
int ch_client__init(struct ch_client *c, const char *url, const char *password, char *why,
		    size_t why_len);
void ch_client__release(struct ch_client *c);

/* Runs sql; with data, sql is an INSERT ... FORMAT RowBinary and data its rows. The answer's
 * body is appended to out (NULL: discarded). 0, or the failure's cause recorded as the
 * clickhouse backend's fault (store/store_fault.h) and returned as its errno: -EHOSTUNREACH
 * when the server could not be reached, -ENOSPC or -EROFS when it said its disk is full or it
 * is read-only, -EREMOTEIO when it refused otherwise (its message in why when not NULL). */
int ch_client__exec(struct ch_client *c, const char *sql, const struct ch_buf *data,
		    struct ch_buf *out, char *why, size_t why_len);

/* ch_client__exec() of the SQL text built in sql: -ENOMEM when building it failed. */
int ch_client__run(struct ch_client *c, const struct ch_buf *sql, struct ch_buf *out);

#endif
