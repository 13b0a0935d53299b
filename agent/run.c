// SPDX-License-Identifier: Apache-2.0
/* `roottrace-agent run`: the node daemon. Parses the CLI, sets up the stages (daemon.h) and
 * runs the loop: poll the pipeline, poll the config, ship a window every upload interval;
 * SIGTERM -> final upload bounded by a timeout, detach, exit 0. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cli_args.h"
#include "commands.h"
#include "daemon.h"
#include "symbolize/debuginfod_fetch.h"
#include "http_client.h"
#include "listen_addr.h"
#include "logging.h"

static volatile sig_atomic_t exiting;

static void on_signal(int sig)
{
	exiting = 1;
}

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: roottrace-agent run --collector URL --token-file PATH [options]\n"
	    "\n"
	    "Runs the node daemon: polls GET URL/api/apm/config, samples every process's\n"
	    "on-CPU stacks only while the config says enabled, names each sample's service\n"
	    "from its cgroup and uploads one gzipped pprof per service every upload interval.\n"
	    "\n"
	    "Options:\n"
	    "  --collector URL      collector base URL (http:// or https://)\n"
	    "  --token-file PATH    file holding the collector token (Authorization: Collector)\n"
	    "  --node-name NAME     node name sent with every upload (default: hostname)\n"
	    "  --config FILE        local JSON config: service rules, fallback, kubelet, caps\n"
	    "                       (docs/agent.md)\n"
	    "  --spool-dir DIR      keep unsent profiles on disk (capped) across restarts\n"
	    "  --listen HOST:PORT   serve GET /healthz and /metrics (Prometheus) there; off by\n"
	    "                       default (docs/operations.md, \"Agent health and metrics\")\n"
	    "  --log-level LEVEL    debug, info (default), warn, error\n"
	    "  --ca-file FILE       CA bundle to verify the collector's TLS certificate\n"
	    "  --insecure           do not verify the collector's TLS certificate (testing only)\n"
	    "  -h, --help           this help\n"
	    "\n"
	    "Examples:\n"
	    "  roottrace-agent run --collector http://127.0.0.1:4040 \\\n"
	    "      --token-file /etc/roottrace/agent-token\n"
	    "  roottrace-agent run --collector https://collector.internal:4040 \\\n"
	    "      --token-file /var/run/secrets/roottrace/token --node-name \"$NODE_NAME\" \\\n"
	    "      --config /etc/roottrace/agent.json --spool-dir /var/cache/roottrace-agent \\\n"
	    "      --ca-file /etc/roottrace/ca.pem --listen 127.0.0.1:4041\n");
}

/* Reads and trims the token. 0 or -errno with a reason in err. */
static int read_token(const char *path, char **ret, char *err, size_t err_len)
{
	char buf[4096];
	size_t n, start = 0;
	FILE *f = fopen(path, "re");

	if (!f) {
		snprintf(err, err_len, "token file %s: %s", path, strerror(errno));
		return -errno;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' ||
		     buf[n - 1] == '\t'))
		n--;
	while (start < n && (buf[start] == ' ' || buf[start] == '\t'))
		start++;
	buf[n] = '\0';
	if (start == n) {
		snprintf(err, err_len, "token file %s is empty", path);
		return -EINVAL;
	}
	if (strpbrk(buf + start, "\r\n")) {
		snprintf(err, err_len, "token file %s: the token must be one line", path);
		return -EINVAL;
	}
	*ret = strdup(buf + start);
	return *ret ? 0 : -ENOMEM;
}

/* --test-upload-interval-s N: not in --help (docs/agent.md, "Test knobs"). It can only
 * shorten windows, to 1-10 s, so tests wait less for them; it is logged at start. */
static int parse_test_interval(const char *arg, int *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < 1 || v > UPLOAD_INTERVAL_MIN_S) {
		fprintf(stderr,
			"roottrace-agent run: --test-upload-interval-s %s: expected 1 to %d "
			"(seconds; for tests only)\n",
			arg, UPLOAD_INTERVAL_MIN_S);
		return -EINVAL;
	}
	*ret = (int)v;
	return 0;
}

static int run_option(int opt, const char *arg, void *ctx)
{
	struct daemon_options *o = ctx;
	int level;

	switch (opt) {
	case 'c':
		o->collector_url = arg;
		return 0;
	case 't':
		o->token_file = arg;
		return 0;
	case 'n':
		o->node_name = arg;
		return 0;
	case 'f':
		o->config_file = arg;
		return 0;
	case 's':
		o->spool_dir = arg;
		return 0;
	case 'a':
		o->ca_file = arg;
		return 0;
	case 'k':
		o->insecure = true;
		return 0;
	case 'L':
		o->listen = arg;
		return 0;
	case 'W':
		return parse_test_interval(arg, &o->test_upload_interval_s);
	case 'l':
		level = log_level_parse(arg);
		if (level < 0) {
			fprintf(stderr,
				"roottrace-agent run: --log-level %s: expected debug, info, warn "
				"or error\n",
				arg);
			return -EINVAL;
		}
		log_set_level(level);
		return 0;
	}
	return -ENOENT;
}

static int parse_args(int argc, char **argv, struct daemon_options *o)
{
	static const struct option longopts[] = {
	    {"collector", required_argument, NULL, 'c'},
	    {"token-file", required_argument, NULL, 't'},
	    {"node-name", required_argument, NULL, 'n'},
	    {"config", required_argument, NULL, 'f'},
	    {"spool-dir", required_argument, NULL, 's'},
	    {"log-level", required_argument, NULL, 'l'},
	    {"ca-file", required_argument, NULL, 'a'},
	    {"insecure", no_argument, NULL, 'k'},
	    {"listen", required_argument, NULL, 'L'},
	    {"test-upload-interval-s", required_argument, NULL, 'W'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	static const struct cli_command cmd = {"roottrace-agent run", "h", longopts, usage,
					       run_option};
	struct sockaddr_in addr;
	char why[160];
	int ret;

	ret = cli_parse(&cmd, argc, argv, o);
	if (ret)
		return ret;
	if (!o->collector_url || !o->token_file) {
		fprintf(stderr, "roottrace-agent run: --collector and --token-file are required "
				"(see --help)\n");
		return -EINVAL;
	}
	if (o->listen && listen_addr_parse(o->listen, &addr, why, sizeof(why))) {
		fprintf(stderr, "roottrace-agent run: --listen %s\n", why);
		return -EINVAL;
	}
	if (strncmp(o->collector_url, "http://", 7) && strncmp(o->collector_url, "https://", 8)) {
		fprintf(stderr,
			"roottrace-agent run: --collector %s: expected an http:// or "
			"https:// URL\n",
			o->collector_url);
		return -EINVAL;
	}
	return 0;
}

/* Fails early when BPF or perf events are unusable, then unloads until enabled. */
static int check_pipeline(char *err, size_t err_len)
{
	struct pipeline_options popts = {0};
	struct pipeline *p = pipeline__open(&popts, err, err_len);

	if (!p)
		return errno ? -errno : -EPERM;
	pipeline__close(p);
	return 0;
}

/* The stages, in data-flow order; the pipeline is opened only when profiling is enabled. */
static int setup(struct daemon *d, char *err, size_t err_len)
{
	struct config_poll_options copts = {
	    .collector_url = d->opts.collector_url,
	    .auth_header = d->auth_header,
	    .ca_file = d->opts.ca_file,
	    .insecure = d->opts.insecure,
	    .grace_s = d->file_cfg.grace_s,
	    .test_upload_interval_s = d->opts.test_upload_interval_s,
	};
	struct shipper_options sopts = {
	    .node = d->node,
	    .agent_id = d->agent_id,
	    .upload = {.collector_url = d->opts.collector_url,
		       .auth_header = d->auth_header,
		       .http = {.ca_file = d->opts.ca_file,
				.insecure = d->opts.insecure,
				.connect_timeout_ms = 5000,
				.total_timeout_ms = 30000},
		       .queue_max_jobs = d->file_cfg.queue_max_profiles,
		       .queue_max_bytes = d->file_cfg.queue_max_bytes,
		       .spool_dir = d->opts.spool_dir,
		       .spool_max_bytes = d->file_cfg.spool_max_bytes,
		       .backoff_min_ms = 1000,
		       .backoff_max_ms = d->file_cfg.upload_backoff_max_s * 1000},
	};
	int r;

	r = check_pipeline(err, err_len);
	if (r)
		return r;
	d->control = config_poll__new(&copts);
	if (!d->control) {
		snprintf(err, err_len, "out of memory");
		return -ENOMEM;
	}
	d->tagger = service_tagger__new(&d->file_cfg, err, err_len);
	if (!d->tagger)
		return -errno;
	d->shipper = shipper__new(&sopts, err, err_len);
	if (!d->shipper)
		return -errno;
	d->cgroup_v2 = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0;
	return daemon_status_start(d, err, err_len);
}

/* node/pid-start-random: upload ids are this plus a counter, and the collector drops a
 * repeated id as a retry, so two agents (same node name, pid 1 in containers, restarted in
 * the same second) must never share it. */
static void set_agent_id(struct daemon *d)
{
	unsigned int nonce = 0;

	if (getrandom(&nonce, sizeof(nonce), GRND_NONBLOCK) != sizeof(nonce))
		nonce = (unsigned int)clock() ^ (unsigned int)getpid() << 16;
	snprintf(d->agent_id, sizeof(d->agent_id), "%.100s/%d-%lx-%08x", d->node, (int)getpid(),
		 (unsigned long)time(NULL), nonce);
}
static int init_identity(struct daemon *d, char *err, size_t err_len)
{
	char *token = NULL;
	int r;

	r = read_token(d->opts.token_file, &token, err, err_len);
	if (r)
		return r;
	if (asprintf(&d->auth_header, "Collector %s", token) < 0)
		d->auth_header = NULL;
	free(token);
	if (!d->auth_header)
		return -ENOMEM;
	if (d->opts.node_name)
		snprintf(d->node, sizeof(d->node), "%s", d->opts.node_name);
	else if (gethostname(d->node, sizeof(d->node) - 1) < 0)
		snprintf(d->node, sizeof(d->node), "unknown");
	set_agent_id(d);
	r = agent_file_config__defaults(&d->file_cfg);
	if (!r && d->opts.config_file) {
		char cerr[256];

		r = agent_file_config__load(d->opts.config_file, &d->file_cfg, cerr, sizeof(cerr));
		if (r)
			snprintf(err, err_len, "config file %s: %s", d->opts.config_file, cerr);
	}
	/* Set now, from the main thread (libdebuginfod reads the environment); the workers
	 * start at the first stripped binary. Off unless a URL is configured. */
	if (!r)
		debuginfod_fetch__configure(
		    &(struct debuginfod_fetch_options){.urls = d->file_cfg.debuginfod_urls});
	return r;
}

static void teardown(struct daemon *d)
{
	daemon_status_stop(d); /* first: the listener reads the stages' figures */
	if (d->pipeline) {
		pipeline__stop(d->pipeline);
		pipeline__close(d->pipeline);
	}
	shipper__free(d->shipper);
	service_tagger__free(d->tagger);
	config_poll__free(d->control);
	agent_file_config__clear(&d->file_cfg);
	free(d->auth_header);
	exclusion__clear(&d->excluded);
	agent_config__clear(&d->offcpu_applied);
}

/* Waits up to timeout_ms servicing the pipeline's first-sight events when sampling. */
static void wait_events(struct daemon *d, int timeout_ms)
{
	int r;

	if (!d->pipeline) {
		poll(NULL, 0, timeout_ms);
		return;
	}
	r = pipeline__poll(d->pipeline, timeout_ms);
	if (r < 0 && r != -EINTR)
		log_debug("pipeline poll: %s", strerror(-r));
}

/* The loop's longest wait: short while the pipeline has work that no event announces (tables
 * to capture or publish, a starting runtime), else long, so a steady daemon wakes for the
 * sampler's events, its deadlines and this heartbeat only (the status listener's control
 * figures, the upload state's log lines, are refreshed at each wake). */
#define BUSY_WAIT_MAX_MS 200
#define IDLE_WAIT_MAX_MS 1000

static int next_wait_ms(const struct daemon *d, int64_t now)
{
	int64_t next = config_poll__next_poll_ms(d->control);
	int max_ms = IDLE_WAIT_MAX_MS;

	if (d->pipeline && d->next_upload_ms < next)
		next = d->next_upload_ms;
	if (d->pipeline && pipeline__has_pending_work(d->pipeline))
		max_ms = BUSY_WAIT_MAX_MS;
	next -= now;
	return next < 0 ? 0 : next > max_ms ? max_ms : (int)next;
}

static void main_loop(struct daemon *d)
{
	while (!exiting) {
		int64_t now = daemon_now_ms();

		wait_events(d, next_wait_ms(d, now));
		if (exiting)
			break;
		now = daemon_now_ms();
		daemon_poll_config(d, now);
		daemon_offcpu_decide(d);
		if (d->pipeline && now >= d->next_upload_ms)
			daemon_ship_window(d);
		shipper__log_upload_state(d->shipper);
		daemon_publish_control(d, daemon_now_ms());
	}
}

static void shut_down(struct daemon *d)
{
	int64_t timeout_ms = d->file_cfg.shutdown_timeout_s * 1000LL;
	size_t left;

	log_info("shutting down: final upload (at most %d s)", d->file_cfg.shutdown_timeout_s);
	if (d->pipeline)
		daemon_ship_window(d);
	if (d->pipeline) {
		pipeline__stop(d->pipeline);
		pipeline__close(d->pipeline);
		d->pipeline = NULL;
	}
	left = shipper__flush(d->shipper, timeout_ms);
	if (left)
		log_warn("%zu profiles not uploaded at exit%s", left,
			 d->opts.spool_dir ? " (kept in the spool)" : "");
}

int cmd_run(int argc, char **argv)
{
	struct daemon d = {.opts.proc_root = "/proc"};
	struct sigaction sa = {.sa_handler = on_signal};
	char err[512] = "";
	int r;

	r = parse_args(argc, argv, &d.opts);
	if (r)
		return r > 0 ? 0 : 2;
	r = init_identity(&d, err, sizeof(err));
	if (!r && http_client_global_init() < 0) {
		snprintf(err, sizeof(err), "libcurl initialisation failed");
		r = -EIO;
	}
	if (!r)
		r = setup(&d, err, sizeof(err));
	if (r) {
		fprintf(stderr, "roottrace-agent run: %s\n", err[0] ? err : strerror(-r));
		teardown(&d);
		return 1;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	log_info("roottrace-agent %s on node %s: polling %s/api/apm/config; off until enabled",
		 ROOTTRACE_VERSION, d.node, d.opts.collector_url);
	if (d.opts.test_upload_interval_s)
		log_warn("test knob --test-upload-interval-s %d: uploading every %d s, not at the "
			 "served interval; for tests only, never on a production node",
			 d.opts.test_upload_interval_s, d.opts.test_upload_interval_s);
	main_loop(&d);
	shut_down(&d);
	teardown(&d);
	http_client_global_cleanup();
	log_info("stopped");
	return 0;
}
