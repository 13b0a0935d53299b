/* SPDX-License-Identifier: Apache-2.0 */
/* HotSpot JVMs behind the runtime interface (runtime.h): finds libjvm.so, reads the VM's own
 * structure tables from the process, hands BPF the code cache, names Methods. */
#ifndef ROOTTRACE_HOTSPOT_RUNTIME_H
#define ROOTTRACE_HOTSPOT_RUNTIME_H

#include <stdbool.h>

#include "runtimes/runtime.h"

#define HOTSPOT_NAME_CACHE 16384  /* (pid, Method*) names kept, least recently used dropped */
#define HOTSPOT_INLINE_CACHE 4096 /* (pid, nmethod, pc) inlining chains kept (about 1 MiB) */

extern const struct runtime_ops hotspot_runtime_ops;

/* Opt-in (config key java_perfmap): a JVM whose structures cannot be read is asked for its
 * perf map (hotspot_attach.h), once per process. rt is the runtime's state. */
void hotspot_runtime__set_perfmap(void *rt, bool on);

#endif
