// SPDX-License-Identifier: Apache-2.0
/* `roottrace-collector serve`: opens the store, starts the HTTP server and the retention job,
 * waits for SIGTERM/SIGINT, then stops accepting, finishes in-flight requests, closes the store. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/malloc_policy.h"
#include "collector.h"
#include "http/server.h"
#include "store/clickhouse/store_ch.h"
#include "store/retention.h"
#include "store/sqlite/store_sqlite.h"

#define DEFAULT_THREADS 4
/* Fleet mode: a thread per connection. A thread waits on a server round trip most of the time,
 * and a libmicrohttpd pool thread serves its connections one at a time; the pool hands a burst
 * of new connections to whichever threads accept first (16 clients landed on 6 to 16 of 64
 * threads), so the uploads of connections sharing a thread could not share an INSERT
 * (docs/performance.md, "Fleet mode: CPU per upload"). */
#define DEFAULT_FLEET_THREADS COLLECTOR_THREAD_PER_CONNECTION
#define DEFAULT_RETENTION_INTERVAL_S 3600
#define SHUTDOWN_GRACE_S 30

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: %s serve --data DIR [--listen HOST:PORT] [--tls-cert FILE --tls-key FILE]\n"
	    "          [--max-body BYTES] [--max-inflated BYTES] [--retention-days N]\n"
	    "          [--link-retention-hours N]\n"
	    "          [--threads N] [--sync full|normal] [--max-inflight BYTES]\n"
	    "          [--ingest-queue N] [--ingest-queue-bytes BYTES]\n"
	    "          [--max-samples N] [--max-stacks N] [--max-stack-frames N]\n"
	    "          [--max-upload-memory BYTES] [--max-decode-memory BYTES]\n"
	    "          [--source-dir DIR] [--debug-dir DIR] [--debuginfod-urls URLS]\n"
	    "       %s serve --control-store postgresql://... --profile-store \\\n"
	    "          clickhouse+http://HOST:PORT/DB --data DIR [--migrate] [OPTIONS]\n"
	    "  --control-store   PostgreSQL control plane (tokens, settings, audit, upload ids);\n"
	    "                    password from PGPASSWORD / PGPASSFILE or the config file\n"
	    "  --profile-store   ClickHouse profile store; password from\n"
	    "                    ROOTTRACE_CLICKHOUSE_PASSWORD or the config file\n"
	    "  --config          file of `key = value` lines: data, control_store, profile_store,\n"
	    "                    cluster, clickhouse_servers, control_store_password_file,\n"
	    "                    clickhouse_password_file, source_dir, debug_dir, debuginfod_urls\n"
	    "  --cluster         the ClickHouse cluster the profile store must spread over\n"
	    "                    (default: whichever `migrate --cluster` made it with)\n"
	    "  --clickhouse-servers  on a cluster, its servers' HTTP HOST:PORT, comma-separated:\n"
	    "                    the tier builder runs each shard's build on one of them\n"
	    "                    (default: system.clusters' hosts at --profile-store's port)\n"
	    "  --migrate         apply pending server schema migrations before serving\n"
	    "  --listen          address to serve (default %s; port 0 picks a free one)\n"
	    "  --max-body        request body cap, larger bodies get 413 (default %u)\n"
	    "  --max-inflated    decompressed pprof cap, gzip bombs get 413 (default %u)\n"
	    "  --retention-days  profile data older than this is deleted (default %d)\n"
	    "  --link-retention-hours  span links (samples with a trace context) older than\n"
	    "                    this are deleted, rollups are not (default %d)\n"
	    "  --threads         HTTP worker threads, 0 = one per connection (default %d;\n"
	    "                    one per connection in fleet mode)\n"
	    "  --sync            full: an acknowledged upload survives power loss (default);\n"
	    "                    normal: it survives a crash of the collector process\n"
	    "  --max-inflight    request bodies held at once over all connections; a request\n"
	    "                    that would pass it gets 503 with Retry-After (default %u)\n"
	    "  --ingest-queue    uploads waiting for or in one group commit; when full, uploads\n"
	    "                    get 429 with Retry-After (default %u)\n"
	    "  --ingest-queue-bytes  estimated decoded bytes of those uploads (default %u)\n"
	    "  --ingest-in-flight  fleet mode: groups of uploads inserting into ClickHouse at\n"
	    "                    once (default %d)\n"
	    "  --ingest-linger-ms  fleet mode: how long a group waits for more uploads before\n"
	    "                    its INSERT (default %d; 0: none)\n"
	    "  --tier-build-interval-ms  fleet mode: how often this collector builds the hour\n"
	    "                    and day tiers of closed periods (default %d; 0: never, the\n"
	    "                    other collectors or `tiers build` do)\n"
	    "  --tier-build-delay-s  fleet mode: a period is built once it ended this long ago\n"
	    "                    (default %d; 0: at once)\n"
	    "  --max-samples     samples in one upload; more get 413 (default %u)\n"
	    "  --max-stacks      distinct stacks in one upload; more get 413 (default %u)\n"
	    "  --max-stack-frames  frames summed over those stacks; more get 413 (default %u)\n"
	    "  --max-upload-memory  what decoding one upload may hold (its decompressed body,\n"
	    "                    tables, stacks and their write); more gets 413 (default %u)\n"
	    "  --max-decode-memory  what all uploads decoding at once may hold; an upload that\n"
	    "                    would pass it gets 503 with Retry-After (default %u)\n"
	    "  --source-dir      the lines view shows source text of files found under DIR\n"
	    "                    (a line's file, absolute or relative, looked up below it)\n"
	    "  --debug-dir       debug files by build-id (DIR/.build-id/xx/yyyy.debug) for\n"
	    "                    the lines of the agent's native frames\n"
	    "  --debuginfod-urls  debuginfod servers (space-separated) asked for those\n"
	    "examples:\n"
	    "  %s serve --data /var/lib/roottrace\n"
	    "  %s serve --data /var/lib/roottrace --listen 0.0.0.0:4443 \\\n"
	    "      --tls-cert /etc/roottrace/cert.pem --tls-key /etc/roottrace/key.pem\n"
	    "  %s serve --config /etc/roottrace/fleet.conf --data /var/lib/roottrace\n",
	    PROG, PROG, DEFAULT_LISTEN, DEFAULT_MAX_BODY, DEFAULT_MAX_INFLATED,
	    DEFAULT_RETENTION_DAYS, DEFAULT_LINK_RETENTION_HOURS, DEFAULT_THREADS,
	    DEFAULT_MAX_INFLIGHT, STORE_SQLITE_INGEST_QUEUE_ENTRIES,
	    STORE_SQLITE_INGEST_QUEUE_BYTES, STORE_CH_INGEST_IN_FLIGHT,
	    STORE_CH_INGEST_LINGER_US / 1000, STORE_CH_TIER_INTERVAL_MS, STORE_CH_TIER_DELAY_S,
	    DEFAULT_MAX_SAMPLES, DEFAULT_MAX_STACKS, DEFAULT_MAX_STACK_FRAMES,
	    DEFAULT_MAX_UPLOAD_MEMORY, DEFAULT_MAX_DECODE_MEMORY, PROG, PROG, PROG);
}

static int parse_option(struct collector_options *o, int opt, const char *arg, long long *n)
{
	switch (opt) {
	case 'l':
		o->listen = arg;
		return 0;
	case 'c':
		o->tls_cert = arg;
		return 0;
	case 'k':
		o->tls_key = arg;
		return 0;
	case 'b':
		if (cli_parse_long("--max-body", arg, 1, 1ll << 32, n))
			return -EINVAL;
		o->max_body = (size_t)*n;
		return 0;
	case 'i':
		if (cli_parse_long("--max-inflated", arg, 1, 1ll << 32, n))
			return -EINVAL;
		o->max_inflated = (size_t)*n;
		return 0;
	case 'f':
		if (cli_parse_long("--max-inflight", arg, 1, 1ll << 40, n))
			return -EINVAL;
		o->max_inflight = (size_t)*n;
		return 0;
	case 'q':
		if (cli_parse_long("--ingest-queue", arg, 1, 65536, n))
			return -EINVAL;
		o->ingest_queue = (size_t)*n;
		return 0;
	case 'Q':
		if (cli_parse_long("--ingest-queue-bytes", arg, 1, 1ll << 40, n))
			return -EINVAL;
		o->ingest_queue_bytes = (size_t)*n;
		return 0;
	case 'I':
		if (cli_parse_long("--ingest-in-flight", arg, 1, 16, n))
			return -EINVAL;
		o->ingest_in_flight = (size_t)*n;
		return 0;
	case 'G':
		if (cli_parse_long("--ingest-linger-ms", arg, 0, 1000, n))
			return -EINVAL;
		o->ingest_linger_us = *n ? (long)*n * 1000 : -1;
		return 0;
	case 'T':
		if (cli_parse_long("--tier-build-interval-ms", arg, 0, 86400000, n))
			return -EINVAL;
		o->tier_interval_ms = *n ? (long)*n : -1;
		return 0;
	case 'Y':
		if (cli_parse_long("--tier-build-delay-s", arg, 0, 86400 * 7, n))
			return -EINVAL;
		o->tier_delay_s = *n ? (long)*n : -1;
		return 0;
	case 'P': /* tests: a build holds its lock this long before replacing the tier */
		if (cli_parse_long("--tier-build-pause-ms", arg, 0, 3600000, n))
			return -EINVAL;
		o->tier_pause_ms = (long)*n;
		return 0;
	case 'S':
		if (cli_parse_long("--max-samples", arg, 1, 1ll << 32, n))
			return -EINVAL;
		o->max_samples = (size_t)*n;
		return 0;
	case 'K':
		if (cli_parse_long("--max-stacks", arg, 1, 1ll << 32, n))
			return -EINVAL;
		o->max_stacks = (size_t)*n;
		return 0;
	case 'F':
		if (cli_parse_long("--max-stack-frames", arg, 1, 1ll << 34, n))
			return -EINVAL;
		o->max_stack_frames = (size_t)*n;
		return 0;
	case 'M':
		if (cli_parse_long("--max-upload-memory", arg, 1 << 20, 1ll << 40, n))
			return -EINVAL;
		o->max_upload_memory = (size_t)*n;
		return 0;
	case 'D':
		if (cli_parse_long("--max-decode-memory", arg, 1 << 20, 1ll << 40, n))
			return -EINVAL;
		o->max_decode_memory = (size_t)*n;
		return 0;
	case 'r':
		if (cli_parse_long("--retention-days", arg, 1, 36500, n))
			return -EINVAL;
		o->retention_days = (int)*n;
		return 0;
	case 'L':
		if (cli_parse_long("--link-retention-hours", arg, 1, 36500 * 24, n))
			return -EINVAL;
		o->link_retention_hours = (int)*n;
		return 0;
	case 'o':
		o->source_dir = arg;
		return 0;
	case 'g':
		o->debug_dir = arg;
		return 0;
	case 'u':
		o->debuginfod_urls = arg;
		return 0;
	case 't':
		if (cli_parse_long("--threads", arg, 0, 256, n))
			return -EINVAL;
		o->threads = *n ? (int)*n : COLLECTOR_THREAD_PER_CONNECTION;
		return 0;
	case 's':
		if (strcmp(arg, "full") && strcmp(arg, "normal")) {
			fprintf(stderr, "%s: --sync %s: expected full or normal\n", PROG, arg);
			return -EINVAL;
		}
		o->sync_normal = strcmp(arg, "normal") == 0;
		return 0;
	default:
		return -EINVAL;
	}
}

struct serve_args {
	struct store_location loc;
	bool migrate;
	int retention_interval_s;
};

static int parse_args(int argc, char **argv, struct collector_options *o, struct serve_args *a)
{
	static const struct option options[] = {
	    CLI_DATA_OPTION,
	    CLI_STORE_OPTIONS,
	    {"migrate", no_argument, NULL, CLI_OPT_MIGRATE},
	    {"listen", required_argument, NULL, 'l'},
	    {"tls-cert", required_argument, NULL, 'c'},
	    {"tls-key", required_argument, NULL, 'k'},
	    {"max-body", required_argument, NULL, 'b'},
	    {"max-inflated", required_argument, NULL, 'i'},
	    {"retention-days", required_argument, NULL, 'r'},
	    {"link-retention-hours", required_argument, NULL, 'L'},
	    {"retention-interval", required_argument, NULL, 'R'}, /* seconds; for tests */
	    {"threads", required_argument, NULL, 't'},
	    {"sync", required_argument, NULL, 's'},
	    {"max-inflight", required_argument, NULL, 'f'},
	    {"ingest-queue", required_argument, NULL, 'q'},
	    {"ingest-queue-bytes", required_argument, NULL, 'Q'},
	    {"ingest-in-flight", required_argument, NULL, 'I'},
	    {"ingest-linger-ms", required_argument, NULL, 'G'},
	    {"tier-build-interval-ms", required_argument, NULL, 'T'},
	    {"tier-build-delay-s", required_argument, NULL, 'Y'},
	    {"tier-build-pause-ms", required_argument, NULL, 'P'}, /* for tests */
	    {"max-samples", required_argument, NULL, 'S'},
	    {"max-stacks", required_argument, NULL, 'K'},
	    {"max-stack-frames", required_argument, NULL, 'F'},
	    {"max-upload-memory", required_argument, NULL, 'M'},
	    {"max-decode-memory", required_argument, NULL, 'D'},
	    {"source-dir", required_argument, NULL, 'o'},
	    {"debug-dir", required_argument, NULL, 'g'},
	    {"debuginfod-urls", required_argument, NULL, 'u'},
	    CLI_HELP_OPTION,
	    {0},
	};
	long long n;
	int opt;

	while ((opt = getopt_long(argc, argv, "d:l:h", options, NULL)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			return 1;
		}
		if (opt == 'R') {
			if (cli_parse_long("--retention-interval", optarg, 1, 86400, &n))
				return -EINVAL;
			a->retention_interval_s = (int)n;
			continue;
		}
		if (opt == CLI_OPT_MIGRATE) {
			a->migrate = true;
			continue;
		}
		if (store_location__parse_option(&a->loc, opt, optarg))
			continue;
		if (opt == '?' || parse_option(o, opt, optarg, &n))
			return -EINVAL;
	}
	if (optind != argc) {
		usage(stderr);
		return -EINVAL;
	}
	if (store_location__resolve(&a->loc, true))
		return -EINVAL;
	collector_options__set_stores(o, &a->loc);
	if (!o->source_dir) /* the command line wins over the config file */
		o->source_dir = a->loc.source_dir;
	if (!o->debug_dir)
		o->debug_dir = a->loc.debug_dir;
	if (!o->debuginfod_urls)
		o->debuginfod_urls = a->loc.debuginfod_urls;
	if (!o->threads)
		o->threads = o->profile_store ? DEFAULT_FLEET_THREADS : DEFAULT_THREADS;
	return 0;
}

/* Blocks until SIGTERM or SIGINT; they are blocked in every thread, so only this sees them. */
static int wait_for_signal(const sigset_t *set)
{
	int sig = 0;

	while (sigwait(set, &sig) != 0)
		;
	return sig;
}

int cmd_serve(int argc, char **argv)
{
	struct collector_options o = {
	    .listen = DEFAULT_LISTEN,
	    .max_body = DEFAULT_MAX_BODY,
	    .max_inflated = DEFAULT_MAX_INFLATED,
	    .max_inflight = DEFAULT_MAX_INFLIGHT,
	    .max_samples = DEFAULT_MAX_SAMPLES,
	    .max_stacks = DEFAULT_MAX_STACKS,
	    .max_stack_frames = DEFAULT_MAX_STACK_FRAMES,
	    .max_upload_memory = DEFAULT_MAX_UPLOAD_MEMORY,
	    .max_decode_memory = DEFAULT_MAX_DECODE_MEMORY,
	    .retention_days = DEFAULT_RETENTION_DAYS,
	    .link_retention_hours = DEFAULT_LINK_RETENTION_HOURS,
	    .threads = 0, /* DEFAULT_THREADS, or DEFAULT_FLEET_THREADS in fleet mode */
	    .tier_interval_ms = STORE_CH_TIER_INTERVAL_MS,
	};
	/* static: the config file's values it holds (store.c) live as long as the process and
	 * stay reachable, so a leak check at exit does not count them */
	static struct serve_args a = {.retention_interval_s = DEFAULT_RETENTION_INTERVAL_S};
	int rc, sig, err;
	struct retention_job *retention = NULL;
	struct http_server *server = NULL;
	struct collector *c = NULL;
	struct cp_store *probe;
	sigset_t set;
	char why[256];

	rc = parse_args(argc, argv, &o, &a);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (a.migrate && cli_migrate_stores(&a.loc))
		return 1;
	if (cli_open_store_cp(&a.loc, &probe)) /* refuses an uninitialised store */
		return 1;
	probe->ops->close(probe);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	malloc_policy__apply();

	err = collector__open(&o, &c);
	if (err) {
		if (o.profile_store || o.control_store)
			cli_store_error("cannot open the", "stores", err);
		else
			fprintf(stderr, "%s: cannot open the store in %s: %s\n", PROG, o.data_dir,
				strerror(-err));
		return 1;
	}
	err = retention_job__start(c, a.retention_interval_s, &retention);
	if (err) {
		fprintf(stderr, "%s: retention job: %s\n", PROG, strerror(-err));
		goto out;
	}
	err = http_server__start(c, &server, why, sizeof(why));
	if (err) {
		fprintf(stderr, "%s: %s\n", PROG, why);
		goto out;
	}
	fprintf(stderr, "%s: listening on %.*s:%d (%s, %s %s, sync %s)\n", PROG,
		(int)(strrchr(o.listen, ':') - o.listen), o.listen, http_server__port(server),
		o.tls_cert ? "https" : "http", o.profile_store ? "fleet mode, profiles" : "data",
		o.profile_store ? o.profile_store : o.data_dir, o.sync_normal ? "normal" : "full");
	sig = wait_for_signal(&set);
	fprintf(stderr, "%s: %s: finishing in-flight requests\n", PROG, strsignal(sig));
out:
	http_server__stop(server, SHUTDOWN_GRACE_S);
	retention_job__stop(retention);
	collector__close(c);
	if (!err)
		fprintf(stderr, "%s: stopped\n", PROG);
	return err ? 1 : 0;
}
