/* SPDX-License-Identifier: Apache-2.0 */
/* The few ELF facts runtime detection needs (a symbol's address and size, the load base), read
 * from the file with <elf.h> alone: the symboliser keeps libelf, this reads two tables. */
#ifndef ROOTTRACE_RUNTIME_ELF_H
#define ROOTTRACE_RUNTIME_ELF_H

#include <stddef.h>
#include <stdint.h>

struct runtime_elf;

/* Maps the ELF64 file at path read-only. NULL + errno (ENOEXEC: not a 64-bit ELF). */
struct runtime_elf *runtime_elf__open(const char *path);
/* The same for a file open at fd (the caller keeps it: a registry binary's pinned fd). */
struct runtime_elf *runtime_elf__open_fd(int fd);
/* The same over a caller's buffer (kept, not copied): for tests. */
struct runtime_elf *runtime_elf__from_memory(const void *image, size_t size);
void runtime_elf__close(struct runtime_elf *elf);
/* The whole file's bytes (a version string searched anywhere in it). */
const void *runtime_elf__image(const struct runtime_elf *elf, size_t *ret_size);

/* A defined symbol (function or object) by exact name, .symtab first, then .dynsym.
 * 0 or -ENOENT. */
int runtime_elf__symbol(const struct runtime_elf *elf, const char *name, uint64_t *ret_vaddr,
			uint64_t *ret_size);
/* Calls fn(name, vaddr, size, ctx) for every defined symbol whose name starts with prefix,
 * .symtab then .dynsym (a symbol in both comes twice); stops at fn's first non-zero return,
 * which it returns. One pass, where a family of symbols (V8's v8dbg_*) is wanted. */
typedef int (*runtime_elf_symbol_fn)(const char *name, uint64_t vaddr, uint64_t size, void *ctx);
int runtime_elf__foreach_symbol(const struct runtime_elf *elf, const char *prefix,
				runtime_elf_symbol_fn fn, void *ctx);
/* The first PT_LOAD's page-aligned vaddr: runtime address = vaddr - base + where the file's
 * offset-0 mapping starts. -ENOENT when there is none. */
int runtime_elf__load_base(const struct runtime_elf *elf, uint64_t *ret_base);
/* The bytes at a vaddr inside a PT_LOAD segment's file contents, or NULL (bss, out of range). */
const void *runtime_elf__at(const struct runtime_elf *elf, uint64_t vaddr, size_t len);

/* Where the dynamic linker writes the relocation of that type (R_X86_64_*) against the
 * dynamic symbol name: its vaddr (a GOT slot, such as a TLS variable's module id). 0 or
 * -ENOENT. */
int runtime_elf__reloc(const struct runtime_elf *elf, const char *name, uint32_t type,
		       uint64_t *ret_vaddr);

#endif
