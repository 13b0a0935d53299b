/* SPDX-License-Identifier: Apache-2.0 */
/* A binary's names from the first source that has them: Go's .gopclntab, .symtab, then for a
 * stripped binary MiniDebugInfo, a separate debug file, debuginfod (asynchronous), .dynsym. */
#ifndef ROOTTRACE_SYMBOL_SOURCE_H
#define ROOTTRACE_SYMBOL_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#define SYMTAB_MAX_FRAMES 16 /* names per address: a frame and the calls inlined into it */

/* Where a table's names came from. */
enum symtab_origin {
	SYMTAB_ORIGIN_NONE, /* no names: unknown frames are counted as no symbols */
	SYMTAB_ORIGIN_SYMTAB,
	SYMTAB_ORIGIN_DYNSYM,
	SYMTAB_ORIGIN_GOPCLNTAB,
	SYMTAB_ORIGIN_MINIDEBUGINFO,
	SYMTAB_ORIGIN_DEBUG_FILE,
	SYMTAB_ORIGIN_DEBUGINFOD,
};

/* Why an address of this binary has no name. */
enum symtab_unnamed {
	SYMTAB_UNNAMED_NO_SYMBOLS,
	SYMTAB_UNNAMED_DEBUGINFOD_WAITING, /* a fetch is under way: named once it arrives */
	SYMTAB_UNNAMED_DEBUGINFOD_FAILED,
};

struct symtab;

/* Loads the names of the binary open at fd (not kept; a Go table maps the file). build_id:
 * lowercase hex or "". debug_root: "/usr/lib/debug" unless testing (NULL). NULL + errno. */
struct symtab *symtab__load(int fd, const char *build_id, const char *debug_root);
void symtab__free(struct symtab *t);

/* Call at each use. A table waiting for debuginfod checks its fetch (never blocks, at most
 * once a second).
 * 1 when better names arrived (the memory changed), else 0. */
int symtab__refresh(struct symtab *t);

/* Names of the code at a file offset (runtime address - mapping start + mapping offset),
 * leaf first (Go's inlined calls before their caller). Raw names (C++ still mangled).
 * 0 when nothing names it. Pointers live until the table is freed or refreshed, and a Go
 * table's until its next lookup (copies from its bounded cache). */
size_t symtab__lookup(const struct symtab *t, uint64_t file_offset, const char **ret_names,
		      size_t max);

/* As symtab__lookup, and ret_wrapper[i] (NULL: not wanted) 1 when names[i] is a Go wrapper
 * that runtime/pprof elides (gopclntab.h); always 0 for names from other sources. */
size_t symtab__lookup_funcs(const struct symtab *t, uint64_t file_offset, const char **ret_names,
			    uint8_t *ret_wrapper, size_t max);

enum symtab_unnamed symtab__unnamed(const struct symtab *t);
enum symtab_origin symtab__origin(const struct symtab *t);
const char *symtab__origin_name(enum symtab_origin o);
size_t symtab__memory(const struct symtab *t); /* heap bytes (a Go table's file pages: not) */

#endif
