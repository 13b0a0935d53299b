/* SPDX-License-Identifier: Apache-2.0 */
/* JIT frame names from perf maps, reduced to the function: V8 tiers and source positions,
 * CPython perf trampolines, JVM signatures and .NET tiers are split off the name. */
#ifndef ROOTTRACE_JITNAME_H
#define ROOTTRACE_JITNAME_H

#include <stddef.h>

enum jit_runtime {
	JIT_RUNTIME_UNKNOWN = 0, /* a format we do not know: the name is kept as written */
	JIT_RUNTIME_V8,		 /* Node.js, Deno, Chrome: --perf-basic-prof */
	JIT_RUNTIME_PYTHON,	 /* CPython 3.12+: -X perf */
	JIT_RUNTIME_JVM,	 /* -XX:+DumpPerfMapAtExit, jcmd Compiler.perfmap, perf-map-agent */
	JIT_RUNTIME_DOTNET,	 /* DOTNET_PerfMapEnabled=1 */
};

struct jit_name {
	char function[256]; /* the function alone: no tier, line, column, signature or path */
	char file[256];	    /* its source file when the runtime wrote one, else "" */
	enum jit_runtime runtime;
};

/* Splits one perf-map symbol. Never fails: an unknown format is copied as it is. */
void jitname__parse(const char *symbol, struct jit_name *ret);

/* "v8", "python", "jvm", "dotnet", "" for unknown. */
const char *jitname__runtime_name(enum jit_runtime runtime);

#endif
