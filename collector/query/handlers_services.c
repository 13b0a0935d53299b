/* SPDX-License-Identifier: Apache-2.0 */
/* Read-side handlers of the catalogue: GET /api/apm/services (services, their settings, nodes,
 * agents and profiling coverage) and GET /api/apm/deployments (deployment markers). */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "control/handlers.h"
#include "http/respond.h"
#include "query/coverage.h"
#include "query/handlers.h"
#include "query/read.h"

/* -------------------------------------------------------------------- services ---- */

/* Defaults <- environment row <- service row (collector/config.h): off until turned on. */
static struct effective_config effective_settings(const struct settings_record *rows, size_t n,
						  const char *service)
{
	const struct settings_record *env = NULL, *svc = NULL;

	for (size_t i = 0; i < n; i++) {
		if (rows[i].service[0] == '\0')
			env = &rows[i];
		else if (strcmp(rows[i].service, service) == 0)
			svc = &rows[i];
	}
	return config_effective(env, svc);
}

static json_t *service_entry(json_t *services, const char *name)
{
	json_t *s = json_object_get(services, name);

	if (s)
		return s;
	s = json_pack("{s:s, s:[], s:n, s:[], s:[]}", "name", name, "profile_types", "last_upload",
		      "nodes", "agents");
	if (s && json_object_set_new(services, name, s))
		return NULL;
	return s;
}

static void add_profile_types(json_t *services, const struct service_summary *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		json_t *s = service_entry(services, rows[i].service);
		json_t *last;

		if (!s)
			continue;
		json_array_append_new(json_object_get(s, "profile_types"),
				      json_pack("{s:s, s:I, s:I}", "profile_type",
						rows[i].profile_type, "last_upload",
						(json_int_t)rows[i].last_upload, "uploads",
						(json_int_t)rows[i].uploads));
		last = json_object_get(s, "last_upload");
		if (json_is_null(last) || json_integer_value(last) < rows[i].last_upload)
			json_object_set_new(s, "last_upload", json_integer(rows[i].last_upload));
	}
}

/* The nodes (hosts) each service's uploads came from: what node= and base_node= can compare. */
static void add_nodes(json_t *services, const struct service_node *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		json_t *s = service_entry(services, rows[i].service);

		if (s)
			json_array_append_new(json_object_get(s, "nodes"),
					      json_pack("{s:s?, s:I, s:I}", "node",
							rows[i].node[0] ? rows[i].node : NULL,
							"last_upload",
							(json_int_t)rows[i].last_upload, "uploads",
							(json_int_t)rows[i].uploads));
	}
}

static json_t *unwind_figure_json(const struct agent_report *r, int f)
{
	if (!r->unwind_sent[f])
		return json_null();
	if (unwind_figure_kinds[f] == UNWIND_FIGURE_COUNT)
		return json_integer((json_int_t)r->unwind[f]);
	return json_real(r->unwind[f]);
}

/* Each unwind_* figure (null when not sent, never 0) and unwind_reason: why some are null. */
static void add_unwind_figures(json_t *agent, const struct agent_report *r)
{
	size_t unsent = 0;

	for (int f = 0; f < UNWIND_FIGURE__COUNT; f++) {
		json_object_set_new(agent, unwind_figure_names[f], unwind_figure_json(r, f));
		unsent += !r->unwind_sent[f];
	}
	json_object_set_new(agent, "unwind_reason",
			    !unsent ? json_null()
			    : unsent == UNWIND_FIGURE__COUNT
				? json_string("the agent's report carried no unwinder figures "
					      "(an agent older than them, or a report stored "
					      "before the collector kept them)")
				: json_string("the agent's report left out the figures shown "
					      "as null"));
}

/* A self-report figure, or null when the report did not carry it (not measured). */
static json_t *real_figure(const struct agent_report *r, unsigned int bit, double value)
{
	return r->sent & bit ? json_real(value) : json_null();
}

static json_t *count_figure(const struct agent_report *r, unsigned int bit, int64_t value)
{
	return r->sent & bit ? json_integer((json_int_t)value) : json_null();
}

/* Why overhead_pct is null (NULL when it is a number): never 0 for "not measured". */
static const char *overhead_reason(const struct agent_report *r)
{
	bool cpu = r->sent & AGENT_FIGURE_CPU_S, bpf = r->sent & AGENT_FIGURE_BPF_S;

	if (!cpu && !bpf)
		return "the report carried neither cpu_s nor bpf_s: the agent's overhead was not "
		       "measured";
	if (!cpu)
		return "the report carried no cpu_s: the agent's own CPU was not measured";
	if (!bpf)
		return "the report carried no bpf_s: BPF run-time statistics were off "
		       "(kernel.bpf_stats_enabled), so the BPF program's time was not measured";
	if (!(r->sent & AGENT_FIGURE_WINDOW_S) || r->window_s <= 0)
		return "the report carried no window_s: there is no window to divide by";
	return NULL;
}

static json_t *agent_json(const struct agent_report *r)
{
	const char *why_null = overhead_reason(r);
	json_t *agent = json_pack(
	    "{s:s, s:s, s:s, s:I, s:o, s:o, s:o, s:o, s:s?, s:o, s:o, s:o}", "agent_id",
	    r->agent_id, "node", r->node, "version", r->version, "reported_at",
	    (json_int_t)r->reported_at, "window_s",
	    real_figure(r, AGENT_FIGURE_WINDOW_S, r->window_s), "cpu_s",
	    real_figure(r, AGENT_FIGURE_CPU_S, r->cpu_s), "bpf_s",
	    real_figure(r, AGENT_FIGURE_BPF_S, r->bpf_s), "overhead_pct",
	    why_null ? json_null() : json_real((r->cpu_s + r->bpf_s) * 100.0 / r->window_s),
	    "overhead_reason", why_null, "lost_samples",
	    count_figure(r, AGENT_FIGURE_LOST_SAMPLES, r->lost_samples), "unknown_frames",
	    count_figure(r, AGENT_FIGURE_UNKNOWN_FRAMES, r->unknown_frames), "processes",
	    count_figure(r, AGENT_FIGURE_PROCESSES, r->processes));

	if (agent)
		add_unwind_figures(agent, r);
	return agent;
}

static void add_agents(json_t *services, const struct agent_report *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		json_t *s = service_entry(services, rows[i].service);

		if (s)
			json_array_append_new(json_object_get(s, "agents"), agent_json(&rows[i]));
	}
}

/* The interval a service's uploads arrive at: its own, never shorter than the environment's,
 * which the node agent uses for every service (config_not_applied_reason). */
static int64_t arrival_interval_s(const struct settings_record *settings, size_t n,
				  const char *service)
{
	struct effective_config env = effective_settings(settings, n, "");
	struct effective_config svc = effective_settings(settings, n, service);

	return svc.upload_interval_s > env.upload_interval_s ? svc.upload_interval_s
							     : env.upload_interval_s;
}

static bool agent_reported_since(json_t *service, int64_t since)
{
	json_t *agent;
	size_t i;

	json_array_foreach(json_object_get(service, "agents"), i, agent)
	{
		if (json_integer_value(json_object_get(agent, "reported_at")) >= since)
			return true;
	}
	return false;
}

/* Marks each service enabled/covered/reporting and returns the coverage object: a service is
 * covered when any upload (agent or SDK) arrived within two of its upload intervals. */
static json_t *coverage(json_t *services, const struct settings_record *settings, size_t n_settings,
			int64_t now)
{
	struct effective_config env = effective_settings(settings, n_settings, "");
	size_t enabled = 0, covered = 0, reporting = 0;
	const char *name;
	json_t *s;

	json_object_foreach(services, name, s)
	{
		struct effective_config e = effective_settings(settings, n_settings, name);
		int64_t since = now - 2 * arrival_interval_s(settings, n_settings, name);
		json_t *last = json_object_get(s, "last_upload");
		bool is_covered = !json_is_null(last) && json_integer_value(last) >= since;
		bool agent = agent_reported_since(s, since);

		json_object_set_new(s, "enabled", json_boolean(e.enabled));
		json_object_set_new(s, "upload_interval_s", json_integer(e.upload_interval_s));
		json_object_set_new(s, "not_applied", config_not_applied_json(&env, &e));
		json_object_set_new(s, "covered", json_boolean(is_covered));
		json_object_set_new(s, "reporting", json_boolean(agent));
		enabled += e.enabled;
		covered += e.enabled && is_covered;
		reporting += e.enabled && agent;
	}
	return json_pack("{s:I, s:I, s:I, s:o}", "enabled_services", (json_int_t)enabled, "covered",
			 (json_int_t)covered, "reporting", (json_int_t)reporting, "share_pct",
			 enabled ? json_real(covered * 100.0 / enabled) : json_null());
}

/* The enabled services with the interval their uploads arrive at (names borrowed). */
static struct coverage_service *enabled_services(json_t *services,
						 const struct settings_record *settings,
						 size_t n_settings, size_t *ret_n)
{
	struct coverage_service *out = calloc(json_object_size(services) + 1, sizeof(*out));
	const char *name;
	json_t *s;

	*ret_n = 0;
	json_object_foreach(services, name, s)
	{
		if (out && json_is_true(json_object_get(s, "enabled")))
			out[(*ret_n)++] = (struct coverage_service){
			    name, arrival_interval_s(settings, n_settings, name)};
	}
	return out;
}

/* Coverage per bucket of the window (up to now), for today's enabled services. */
static json_t *coverage_history_json(json_t *services, const struct settings_record *settings,
				     size_t n_settings, const struct service_bucket *rows, size_t n,
				     struct query_window w)
{
	size_t n_enabled, n_buckets = coverage_buckets(w);
	struct coverage_service *enabled =
	    enabled_services(services, settings, n_settings, &n_enabled);
	size_t *covered = calloc(n_buckets + 1, sizeof(*covered));
	json_t *arr = NULL;

	if (enabled && covered && !coverage_history(enabled, n_enabled, rows, n, w, covered))
		arr = json_array();
	for (size_t i = 0; arr && i < n_buckets; i++) {
		int64_t b = w.start + (int64_t)i * BUCKET_SECONDS;

		if (b > read_now_s())
			break;
		json_array_append_new(
		    arr,
		    json_pack("{s:I, s:I, s:I, s:o}", "bucket", (json_int_t)b, "enabled_services",
			      (json_int_t)n_enabled, "covered", (json_int_t)covered[i], "share_pct",
			      n_enabled ? json_real(covered[i] * 100.0 / n_enabled) : json_null()));
	}
	free(enabled);
	free(covered);
	return arr ? arr : json_null();
}

struct services_input {
	const struct service_summary *sum;
	size_t n_sum;
	const struct agent_report *agents;
	size_t n_agents;
	const struct settings_record *settings;
	size_t n_settings;
	const struct service_bucket *buckets;
	size_t n_buckets;
	const struct service_node *nodes;
	size_t n_nodes;
	struct query_window window;
};

static json_t *services_doc(const struct request *req, const struct services_input *in)
{
	json_t *by_name = json_object(), *list = json_array(), *doc, *s, *cov;
	const char *name;

	for (size_t i = 0; by_name && i < in->n_settings; i++) /* configured but silent */
		if (in->settings[i].service[0])
			service_entry(by_name, in->settings[i].service);
	add_profile_types(by_name, in->sum, in->n_sum);
	add_nodes(by_name, in->nodes, in->n_nodes);
	add_agents(by_name, in->agents, in->n_agents);
	cov = coverage(by_name, in->settings, in->n_settings, read_now_s());
	if (cov)
		json_object_set_new(cov, "history",
				    coverage_history_json(by_name, in->settings, in->n_settings,
							  in->buckets, in->n_buckets, in->window));
	doc = json_pack("{s:s, s:o, s:o}", "environment", read_environment(req), "window",
			read_window_json(in->window), "coverage", cov);
	json_object_foreach(by_name, name, s) json_array_append(list, s);
	json_decref(by_name);
	if (doc)
		json_object_set_new(doc, "services", list);
	else
		json_decref(list);
	return doc;
}

int handle_services(const struct request *req, struct response *resp)
{
	struct profile_store *ps = req->collector->profiles;
	struct cp_store *cp = req->collector->cp;
	struct service_summary *sum = NULL;
	struct agent_report *agents = NULL;
	struct settings_record *settings = NULL;
	struct service_bucket *buckets = NULL;
	struct service_node *nodes = NULL;
	struct services_input in = {0};
	char why[QUERY_ERR_MAX];
	json_t *doc = NULL;
	int err;

	if (query_window_parse(read_param, req, "", read_now_s(), READ_DEFAULT_RANGE_S, &in.window,
			       why, sizeof(why)))
		return response__error(resp, 400, "bad_request", "%s", why);
	err = ps->ops->services(ps, read_environment(req), &sum, &in.n_sum);
	if (!err)
		err = cp->ops->agent_report_list(cp, read_environment(req), &agents, &in.n_agents);
	if (!err)
		err = cp->ops->settings_list(cp, read_environment(req), &settings, &in.n_settings);
	/* Uploads up to two upload intervals before the window decide its first buckets. */
	if (!err)
		err = ps->ops->service_buckets(ps, read_environment(req),
					       in.window.start - 2 * UPLOAD_INTERVAL_MAX_S,
					       in.window.end, &buckets, &in.n_buckets);
	if (!err)
		err = ps->ops->service_nodes(ps, read_environment(req), &nodes, &in.n_nodes);
	if (!err) {
		in.sum = sum;
		in.agents = agents;
		in.settings = settings;
		in.buckets = buckets;
		in.nodes = nodes;
		doc = services_doc(req, &in);
	}
	free(sum);
	free(agents);
	free(settings);
	free(buckets);
	free(nodes);
	if (err)
		return response__store_error(resp, err, "listing services");
	return response__json_flags(resp, 200, doc, READ_JSON_FLAGS);
}

/* ----------------------------------------------------------------- deployments ---- */

int handle_deployments_list(const struct request *req, struct response *resp)
{
	const char *service = request__query(req, "service");
	struct cp_store *cp = req->collector->cp;
	struct deployment_record *d = NULL;
	struct query_window w;
	char err_s[QUERY_ERR_MAX];
	size_t n = 0;
	json_t *doc, *arr;
	int err;

	if (query_window_parse(read_param, req, "", read_now_s(), 30 * 86400, &w, err_s,
			       sizeof(err_s)))
		return response__error(resp, 400, "bad_request", "%s", err_s);
	if (service && (!*service || strlen(service) >= STORE_NAME_MAX))
		return response__error(resp, 400, "bad_request",
				       "service must be 1 to %d characters", STORE_NAME_MAX - 1);
	err = cp->ops->deployment_list(cp, read_environment(req), service, w.start, w.end, &d, &n);
	if (err)
		return response__store_error(resp, err, "listing deployments");
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		json_array_append_new(arr,
				      json_pack("{s:I, s:s, s:s, s:I}", "id", (json_int_t)d[i].id,
						"service", d[i].service, "version", d[i].version,
						"time", (json_int_t)d[i].time));
	free(d);
	doc = json_pack("{s:s?, s:o, s:o}", "service", service, "window", read_window_json(w),
			"deployments", arr ? arr : json_null());
	return response__json_flags(resp, 200, doc, READ_JSON_FLAGS);
}
