/* SPDX-License-Identifier: Apache-2.0 */
/* C++ symbol demangling through libstdc++'s __cxa_demangle (the agent links -lstdc++).
 * Names that are not mangled C++ are copied unchanged. */
#ifndef ROOTTRACE_DEMANGLE_H
#define ROOTTRACE_DEMANGLE_H

#include <stddef.h>

/* Writes the demangled form of name into buf (truncated to len). 1 when demangled, 0 when
 * copied as is (not a mangled name, or the demangler refused it). */
int demangle(const char *name, char *buf, size_t len);

#endif
