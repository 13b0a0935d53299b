/* SPDX-License-Identifier: Apache-2.0 */
/* HotSpot JVMs behind the runtime interface (runtime.h): finds libjvm.so, reads the VM's own
 * structure tables from the process, hands BPF the code cache, names Methods. */
#ifndef ROOTTRACE_HOTSPOT_RUNTIME_H
#define ROOTTRACE_HOTSPOT_RUNTIME_H

#include "runtimes/runtime.h"

#define HOTSPOT_NAME_CACHE 16384 /* (pid, Method*) names kept, least recently used dropped */
#define HOTSPOT_SYMBOL_CACHE 8	 /* libjvm files whose table symbols are kept */

extern const struct runtime_ops hotspot_runtime_ops;

#endif
