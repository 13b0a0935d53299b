/* SPDX-License-Identifier: Apache-2.0 */
/* Configuration rules, free of HTTP and JSON: defaults, the clamp applied on write and again
 * on read, and how a service's effective values inherit from its environment. */
#ifndef ROOTTRACE_CONFIG_H
#define ROOTTRACE_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "contract.h"
#include "store/store.h"

/* A new environment: off until someone turns it on. */
#define DEFAULT_ENABLED false
#define DEFAULT_OFFCPU_ENABLED false
#define DEFAULT_SAMPLE_RATE_HZ 100
#define DEFAULT_UPLOAD_INTERVAL_S 60
#define DEFAULT_POLL_INTERVAL_S 60

struct effective_config {
	bool enabled;
	bool offcpu_enabled;
	int sample_rate_hz;
	int upload_interval_s;
	int poll_interval_s;
};

int clamp_sample_rate_hz(int64_t v);
int clamp_upload_interval_s(int64_t v);
int clamp_poll_interval_s(int64_t v);

/* Clamps every value the record holds. */
void settings_record__clamp(struct settings_record *r);

/* Defaults <- environment row <- service row (either may be NULL), clamped. */
struct effective_config config_effective(const struct settings_record *env,
					 const struct settings_record *service);

/* A service's own value that the node agent cannot apply (one perf event per CPU at the
 * environment's rate; one upload cycle for every service): a static reason, or NULL when the
 * service's effective value is the environment's anyway. */
enum config_setting { CONFIG_SAMPLE_RATE, CONFIG_UPLOAD_INTERVAL };
const char *config_not_applied_reason(enum config_setting what, const struct effective_config *env,
				      const struct effective_config *service);

#endif
