/* SPDX-License-Identifier: Apache-2.0 */
/* The limits of the served configuration (GET /api/apm/config) that both sides clamp: the
 * collector when it stores and serves a value, the agent again when it applies one. */
#ifndef ROOTTRACE_CONTRACT_H
#define ROOTTRACE_CONTRACT_H

/* One perf event per CPU at this rate: below 10 Hz a minute holds too few samples, above
 * 200 Hz the overhead passes its budget. */
#define SAMPLE_RATE_MIN_HZ 10
#define SAMPLE_RATE_MAX_HZ 200

#define UPLOAD_INTERVAL_MIN_S 10
#define UPLOAD_INTERVAL_MAX_S 3600

/* Polls: the two sides' lower bounds differ on purpose. The collector serves at least 5 s, so
 * a fleet of agents cannot be told to poll it every second; the agent accepts down to 1 s
 * from whatever server it polls (tests, other implementations) and never polls faster. Both
 * poll at least once a minute. */
#define POLL_INTERVAL_SERVED_MIN_S 5
#define POLL_INTERVAL_APPLIED_MIN_S 1
#define POLL_INTERVAL_MAX_S 60

#endif
