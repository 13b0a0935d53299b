// SPDX-License-Identifier: Apache-2.0
/* Fuzz target: request bodies through the real collector handlers on a real SQLite store (in
 * /dev/shm): the first byte picks PUT /api/apm/config (JSON body) or POST /api/apm/profiles
 * with one of the five profile types (pprof body, gzip sniffed); a first byte from 0xf0 picks
 * POST /ingest (Pyroscope's) with a folded (even) or pprof (odd) body; from 0xe0, POST
 * /v1development/profiles (OTLP) with a protobuf (even) or JSON (odd) body. Bad bodies must get a
 * 4xx, never a crash or a 500. The query arguments are set in struct request as the HTTP layer
 * would (collector/http.o, libmicrohttpd, is not linked). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "collector.h"
#include "control/handlers.h"
#include "ingest/handlers.h"
#include "http/request.h"

static char data_dir[] = "/dev/shm/rt-fuzz-collector-XXXXXX";
static struct collector *collector;
static struct token_record admin, agent;

static void remove_data_dir(void)
{
	DIR *d = opendir(data_dir);
	struct dirent *e;
	char path[512];

	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", data_dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(data_dir);
}

static void setup(void)
{
	struct collector_options o = {
	    .data_dir = data_dir,
	    .max_body = DEFAULT_MAX_BODY,
	    .max_inflated = 4u << 20,
	    .retention_days = DEFAULT_RETENTION_DAYS,
	    .threads = 1,
	    .sync_normal = true,
	};
	int64_t env_id;

	if (!mkdtemp(data_dir) || collector__open(&o, &collector) ||
	    collector->cp->ops->environment_create(collector->cp, "production", &env_id))
		abort();
	atexit(remove_data_dir);
	admin = (struct token_record){.id = 1,
				      .name = "fuzz-admin",
				      .environment_id = env_id,
				      .environment = "production",
				      .kind = TOKEN_KIND_USER,
				      .role = TOKEN_ROLE_ADMIN};
	agent = (struct token_record){.id = 2,
				      .name = "fuzz-agent",
				      .environment_id = env_id,
				      .environment = "production",
				      .kind = TOKEN_KIND_COLLECTOR};
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const types[] = {"cpu", "wall", "heap", "alloc", "lock"};
	struct request_field query[] = {{"service", "fuzz-svc"}, {"profile_type", NULL}};
	struct request req = {.query = query, .n_query = 1};
	struct response resp = {0};

	if (!collector)
		setup();
	if (size < 1)
		return 0;
	req.collector = collector;
	req.body = data + 1;
	req.body_len = size - 1;
	if (data[0] >= 0xf0) {
		req.method = "POST";
		req.path = "/ingest";
		req.token = &agent;
		query[0] = (struct request_field){"name", "fuzz-svc{pod=a}"};
		query[1] = (struct request_field){"format", data[0] % 2 ? "pprof" : "folded"};
		req.n_query = 2;
		handle_pyroscope_ingest(&req, &resp);
	} else if (data[0] >= 0xe0) {
		req.method = "POST";
		req.path = "/v1development/profiles";
		req.content_type = data[0] % 2 ? "application/json" : "application/x-protobuf";
		req.token = &agent;
		req.n_query = 0;
		handle_otlp_profiles(&req, &resp);
	} else if (data[0] % 2 == 0) {
		req.method = "PUT";
		req.path = "/api/apm/config";
		req.content_type = "application/json";
		req.token = &admin;
		handle_config_put(&req, &resp);
	} else {
		req.method = "POST";
		req.path = "/api/apm/profiles";
		req.content_type = "application/octet-stream";
		req.token = &agent;
		query[1].value = types[(data[0] >> 1) % 5];
		req.n_query = 2;
		handle_profiles_ingest(&req, &resp);
	}
	if (getenv("FUZZ_VERBOSE")) /* to check what the seeds reach */
		fprintf(stderr, "status %d: %.*s\n", resp.status, (int)resp.body_len,
			resp.body ? resp.body : "");
	if (resp.status >= 500 && resp.status != 503) {
		fprintf(stderr, "status %d: %.*s\n", resp.status, (int)resp.body_len,
			resp.body ? resp.body : "");
		abort();
	}
	free(resp.body);
	return 0;
}
