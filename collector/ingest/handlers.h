/* SPDX-License-Identifier: Apache-2.0 */
/* Upload route handlers: pprof, OTLP profiles and Pyroscope's ingest. */
#ifndef ROOTTRACE_INGEST_HANDLERS_H
#define ROOTTRACE_INGEST_HANDLERS_H

#include "http/request.h"

int handle_profiles_ingest(const struct request *req,
			   struct response *resp); /* POST /api/apm/profiles */
int handle_otlp_profiles(const struct request *req,
			 struct response *resp); /* POST /v1development/profiles */
int handle_pyroscope_ingest(const struct request *req,
			    struct response *resp); /* POST /ingest (Pyroscope's HTTP ingest) */

#endif
