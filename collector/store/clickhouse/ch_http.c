// SPDX-License-Identifier: Apache-2.0
/* ClickHouse over HTTP with libcurl: one POST per statement (the statement in the query string
 * when the body carries rows), any status but 200 is a failure; and the RowBinary encoding. */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/backend_errors.h"
#include "store/clickhouse/ch_http.h"
#include "store/store_fault.h"

#define CONNECT_TIMEOUT_MS 2000
#define REQUEST_TIMEOUT_S 30

void ch_buf__release(struct ch_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

void ch_buf__reset(struct ch_buf *b)
{
	b->len = b->pos = 0;
}

static bool ch_reserve(struct ch_buf *b, size_t more)
{
	size_t cap = b->cap ? b->cap : 4096;
	char *data;

	if (b->oom)
		return false;
	if (b->len + more + 1 <= b->cap)
		return true;
	while (cap < b->len + more + 1)
		cap *= 2;
	data = realloc(b->data, cap);
	if (!data) {
		b->oom = true;
		return false;
	}
	b->data = data;
	b->cap = cap;
	return true;
}

void ch_buf__put_bytes(struct ch_buf *b, const void *data, size_t len)
{
	if (!ch_reserve(b, len))
		return;
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
}

static void put_varint(struct ch_buf *b, uint64_t v)
{
	uint8_t out[10];
	size_t n = 0;

	do {
		out[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			out[n] |= 0x80;
		n++;
	} while (v);
	ch_buf__put_bytes(b, out, n);
}

void ch_buf__put_string(struct ch_buf *b, const char *s)
{
	size_t len = strlen(s);

	put_varint(b, len);
	ch_buf__put_bytes(b, s, len);
}

/* RowBinary integers are little-endian; so is every target this builds for. */
void ch_buf__put_u32(struct ch_buf *b, uint32_t v)
{
	ch_buf__put_bytes(b, &v, sizeof(v));
}

void ch_buf__put_u64(struct ch_buf *b, uint64_t v)
{
	ch_buf__put_bytes(b, &v, sizeof(v));
}

void ch_buf__put_literal(struct ch_buf *b, const char *s)
{
	ch_buf__put_bytes(b, "'", 1);
	for (; *s; s++) {
		if (*s == '\'' || *s == '\\')
			ch_buf__put_bytes(b, "\\", 1);
		ch_buf__put_bytes(b, s, 1);
	}
	ch_buf__put_bytes(b, "'", 1);
}

void ch_buf__printf(struct ch_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !ch_reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

static int get_varint(struct ch_buf *b, uint64_t *ret)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		uint8_t byte;

		if (b->pos >= b->len)
			return -EPROTO;
		byte = (uint8_t)b->data[b->pos++];
		v |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return -EPROTO;
}

int ch_buf__get_string(struct ch_buf *b, const char **ret, size_t *ret_len)
{
	uint64_t len;

	if (get_varint(b, &len) || len > b->len - b->pos)
		return -EPROTO;
	*ret = b->data + b->pos;
	*ret_len = (size_t)len;
	b->pos += (size_t)len;
	return 0;
}

static int get_fixed(struct ch_buf *b, void *ret, size_t size)
{
	if (b->len - b->pos < size)
		return -EPROTO;
	memcpy(ret, b->data + b->pos, size);
	b->pos += size;
	return 0;
}

int ch_buf__get_u64(struct ch_buf *b, uint64_t *ret)
{
	return get_fixed(b, ret, sizeof(*ret));
}

int ch_buf__get_u32(struct ch_buf *b, uint32_t *ret)
{
	return get_fixed(b, ret, sizeof(*ret));
}

static bool valid_database(const char *s, size_t len)
{
	if (len == 0 || len >= CH_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

/* libcurl's share of connections (and name lookups) between the easy handles of one client:
 * a request reuses a connection an earlier one left open instead of opening its own, a TCP
 * handshake and ClickHouse's session set-up less each time. libcurl calls the lock functions
 * around every use of the shared cache, one mutex per kind of data. */
struct ch_connections {
	CURLSH *share;
	pthread_mutex_t lock[CURL_LOCK_DATA_LAST];
};

static void connections_lock(CURL *curl, curl_lock_data data, curl_lock_access access, void *ctx)
{
	struct ch_connections *cc = ctx;

	(void)curl;
	(void)access;
	pthread_mutex_lock(&cc->lock[data]);
}

static void connections_unlock(CURL *curl, curl_lock_data data, void *ctx)
{
	struct ch_connections *cc = ctx;

	(void)curl;
	pthread_mutex_unlock(&cc->lock[data]);
}

static void connections_free(struct ch_connections *cc)
{
	if (!cc)
		return;
	if (cc->share)
		curl_share_cleanup(cc->share); /* closes the connections still open */
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&cc->lock[i]);
	free(cc);
}

static struct ch_connections *connections_new(void)
{
	struct ch_connections *cc = calloc(1, sizeof(*cc));

	if (!cc)
		return NULL;
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&cc->lock[i], NULL);
	cc->share = curl_share_init();
	if (!cc->share || curl_share_setopt(cc->share, CURLSHOPT_LOCKFUNC, connections_lock) ||
	    curl_share_setopt(cc->share, CURLSHOPT_UNLOCKFUNC, connections_unlock) ||
	    curl_share_setopt(cc->share, CURLSHOPT_USERDATA, cc) ||
	    curl_share_setopt(cc->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT) ||
	    curl_share_setopt(cc->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS)) {
		connections_free(cc);
		return NULL;
	}
	return cc;
}

int ch_client__init(struct ch_client *c, const char *url, const char *password, char *why,
		    size_t why_len)
{
	static const char scheme[] = "clickhouse+http://";
	const char *host, *at, *slash;

	memset(c, 0, sizeof(*c));
	if (strncmp(url, scheme, sizeof(scheme) - 1) != 0) {
		snprintf(why, why_len, "%s: expected clickhouse+http://[user@]host:port/database",
			 url);
		return -EINVAL;
	}
	host = url + sizeof(scheme) - 1;
	slash = strchr(host, '/');
	if (!slash || !valid_database(slash + 1, strlen(slash + 1))) {
		snprintf(why, why_len,
			 "%s: expected a database name of letters, digits and _ "
			 "after the host",
			 url);
		return -EINVAL;
	}
	at = memchr(host, '@', (size_t)(slash - host));
	if (at) {
		if (memchr(host, ':', (size_t)(at - host))) {
			snprintf(why, why_len,
				 "%s: a password in the URL is refused; use the "
				 "password file or the environment",
				 url);
			return -EINVAL;
		}
		c->user = strndup(host, (size_t)(at - host));
		host = at + 1;
	}
	snprintf(c->database, sizeof(c->database), "%s", slash + 1);
	if (asprintf(&c->url, "http://%.*s/", (int)(slash - host), host) < 0)
		c->url = NULL;
	c->password = password ? strdup(password) : NULL;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	c->connections = connections_new();
	if (!c->url || (at && !c->user) || (password && !c->password) || !c->connections) {
		ch_client__release(c);
		return -ENOMEM;
	}
	return 0;
}

void ch_client__release(struct ch_client *c)
{
	connections_free(c->connections);
	free(c->url);
	free(c->user);
	if (c->password) {
		memset(c->password, 0, strlen(c->password));
		free(c->password);
	}
	memset(c, 0, sizeof(*c));
}

static size_t collect(char *data, size_t size, size_t n, void *arg)
{
	struct ch_buf *out = arg;

	if (out)
		ch_buf__put_bytes(out, data, size * n);
	return out && out->oom ? 0 : size * n;
}

/* The connections the transfer had to open (0 when it reused one). */
static void count_connections(CURL *curl)
{
	long opened = 0;

	curl_easy_getinfo(curl, CURLINFO_NUM_CONNECTS, &opened);
	while (opened-- > 0)
		backend_connections__count(BACKEND_CLICKHOUSE);
}

/* The request's URL: the statement in the query string when the body carries rows. */
static char *request_url(CURL *curl, const struct ch_client *c, const char *sql, bool has_data)
{
	char *escaped = has_data ? curl_easy_escape(curl, sql, 0) : NULL;
	char *url = NULL;

	if (has_data && !escaped)
		return NULL;
	/* Statements name {db}.table: the database may not exist yet when migrate runs. */
	if (asprintf(&url, "%s?%s%s%s", c->url,
		     c->cluster[0] ? "insert_distributed_sync=1&distributed_product_mode=global"
				     "&insert_deduplicate=0&"
				   : "",
		     has_data ? "query=" : "", has_data ? escaped : "") < 0)
		url = NULL;
	curl_free(escaped);
	return url;
}

/* ClickHouse's error code in an error answer ("Code: 243. DB::Exception: ..."), 0 if none. */
static long answer_code(const struct ch_buf *answer)
{
	const char *code = answer->data ? strstr(answer->data, "Code: ") : NULL;

	return code ? strtol(code + 6, NULL, 10) : 0;
}

/* A statement that only reads: its success does not show that writes go through again. */
static bool reads_only(const char *sql, bool has_data)
{
	return !has_data && (strncmp(sql, "SELECT", 6) == 0 || strncmp(sql, "WITH", 4) == 0);
}

/* The system errno a file error answer carries: "errno: 28, strerror: ..." (ErrnoException)
 * or "e.code() = 30, ..." (Poco's file exceptions), 0 if none. */
static long answer_errno(const struct ch_buf *answer)
{
	const char *at;

	if (!answer->data)
		return 0;
	if ((at = strstr(answer->data, "errno: ")))
		return strtol(at + 7, NULL, 10);
	if ((at = strstr(answer->data, "e.code() = ")))
		return strtol(at + 11, NULL, 10);
	return 0;
}

/* The cause an error answer names. 18.16 reports a full disk under an insert as a failed
 * write (CANNOT_WRITE_TO_FILE_DESCRIPTOR 75, errno 28) and a read-only file system as a Poco
 * file error (1000, e.code() 30): the errno decides; NOT_ENOUGH_SPACE (243, a merge's or a
 * newer server's reservation), READONLY (164, a readonly profile) and TABLE_IS_READ_ONLY
 * (242, a replica without ZooKeeper) name theirs; any other is "refused". */
static enum store_fault_cause answer_cause(const struct ch_buf *answer)
{
	long code = answer_code(answer), err = answer_errno(answer);

	if (code == 243 || err == ENOSPC || err == EDQUOT)
		return STORE_FAULT_DISK_FULL;
	if (code == 164 || code == 242 || err == EROFS)
		return STORE_FAULT_READ_ONLY;
	return STORE_FAULT_REFUSED;
}

/* Names the failure's cause (store_fault.h) and returns its errno: no answer is "unreachable",
 * an error answer says its own (answer_cause). */
static int failed(CURLcode res, const struct ch_buf *answer)
{
	enum store_fault_cause cause =
	    res != CURLE_OK ? STORE_FAULT_UNREACHABLE : answer_cause(answer);

	backend_errors__count(BACKEND_CLICKHOUSE);
	return store_fault__record(STORE_BACKEND_CLICKHOUSE, cause,
				   res != CURLE_OK ? curl_easy_strerror(res)
				   : answer->data  ? answer->data
						   : "error answer without a message");
}

int ch_client__exec(struct ch_client *c, const char *sql, const struct ch_buf *data,
		    struct ch_buf *out, char *why, size_t why_len)
{
	struct ch_buf answer = {0};
	struct curl_slist *headers = NULL;
	CURL *curl = curl_easy_init();
	long status = 0;
	char *url;
	CURLcode res;
	int err = 0;

	if (!curl)
		return -ENOMEM;
	url = request_url(curl, c, sql, data != NULL);
	if (!url) {
		curl_easy_cleanup(curl);
		return -ENOMEM;
	}
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDS, data ? data->data : sql);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
			 (curl_off_t)(data ? data->len : strlen(sql)));
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_TIMEOUT_MS);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT, (long)REQUEST_TIMEOUT_S);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_SHARE, c->connections->share);
	/* No "Expect: 100-continue": ClickHouse 18.16 does not answer it, and libcurl would wait
	 * a second before sending each body over 1 KiB. */
	headers = curl_slist_append(headers, "Expect:");
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer);
	if (c->user)
		curl_easy_setopt(curl, CURLOPT_USERNAME, c->user);
	if (c->password)
		curl_easy_setopt(curl, CURLOPT_PASSWORD, c->password);
	backend_requests__count(BACKEND_CLICKHOUSE);
	res = curl_easy_perform(curl);
	if (res == CURLE_OK)
		curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	count_connections(curl);
	if (why)
		snprintf(why, why_len, "%s",
			 res != CURLE_OK ? curl_easy_strerror(res)
			 : status != 200 ? (answer.data ? answer.data : "error")
					 : "");
	if (res == CURLE_OK && status == 200 && out)
		ch_buf__put_bytes(out, answer.data ? answer.data : "", answer.len);
	if (res != CURLE_OK || status != 200)
		err = failed(res, &answer);
	else
		store_fault__ok(STORE_BACKEND_CLICKHOUSE, !reads_only(sql, data != NULL));
	curl_easy_cleanup(curl);
	curl_slist_free_all(headers);
	free(url);
	ch_buf__release(&answer);
	return err ? err : out && out->oom ? -ENOMEM : 0;
}

int ch_client__run(struct ch_client *c, const struct ch_buf *sql, struct ch_buf *out)
{
	return sql->oom || !sql->data ? -ENOMEM : ch_client__exec(c, sql->data, NULL, out, NULL, 0);
}
