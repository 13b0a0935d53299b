/* SPDX-License-Identifier: Apache-2.0 */
/* V8 (Node.js and other embedders exporting v8dbg_*) behind the runtime interface (runtime.h):
 * reads the binary's layout, hands BPF where JS frames are, names SharedFunctionInfos. */
#ifndef ROOTTRACE_V8_RUNTIME_H
#define ROOTTRACE_V8_RUNTIME_H

#include "runtimes/runtime.h"

#define V8_NAME_CACHE                                                                              \
	16384 /* (pid, SharedFunctionInfo) names kept, least recently used dropped                 \
	       */

#define V8_CODE_CACHE 4096 /* optimised code objects' inlining tables kept (about 1 KiB each) */

extern const struct runtime_ops v8_runtime_ops;

#endif
