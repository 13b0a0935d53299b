/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's shipping stage: each enabled service group of a window encoded as a gzipped
 * pprof with its labels and the agent's self-report, and handed to the uploader thread. Owns
 * the uploader, the upload ids, the agent-CPU mark and the upload-state log. */
#ifndef ROOTTRACE_SHIPPER_H
#define ROOTTRACE_SHIPPER_H

#include <stddef.h>
#include <stdint.h>

#include "ship/selfreport.h"
#include "service/tagger.h"
#include "ship/uploader.h"
#include "sampling/window.h"

struct shipper_options {
	const char *node;     /* the "node" label and self-report field */
	const char *agent_id; /* node/pid-start-random: upload ids are this plus a counter */
	struct uploader_options upload;
};

struct shipper;

/* Starts the uploader (replaying the spool). NULL + errno on failure, with a reason in err. */
struct shipper *shipper__new(const struct shipper_options *opts, char *err, size_t err_len);
/* Stops the uploader; jobs still queued stay in the spool when there is one. */
void shipper__free(struct shipper *s);

/* Sampling starts: the agent's CPU is counted from now. */
void shipper__mark_cpu(struct shipper *s);
/* The self-report of window w: who the agent is, its CPU since the mark (the mark moves to
 * now), what w could not see, and the profiles the queue dropped since the last report. */
void shipper__report(struct shipper *s, const struct window *w, int sampling_hz,
		     struct selfreport *ret);
/* Encodes and queues one pprof per enabled group of w, each with rep. Never blocks on the
 * network; failures are logged. */
void shipper__ship(struct shipper *s, const struct window *w, const struct service_groups *g,
		   const struct selfreport *rep);

/* Logs uploader state changes (failing, recovered, queue dropping). */
void shipper__log_upload_state(struct shipper *s);
/* The uploader's counters (thread-safe). */
void shipper__upload_stats(struct shipper *s, struct uploader_stats *ret);
/* Waits until everything is uploaded or timeout_ms passed; returns the jobs still queued. */
size_t shipper__flush(struct shipper *s, int timeout_ms);

#endif
