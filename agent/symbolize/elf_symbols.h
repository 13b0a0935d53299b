/* SPDX-License-Identifier: Apache-2.0 */
/* One ELF file's function symbols (.symtab, else .dynsym), build-id and PT_LOAD segments,
 * copied into a compact table; the only module that uses libelf/libdw. No line numbers. */
#ifndef ROOTTRACE_ELF_SYMBOLS_H
#define ROOTTRACE_ELF_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#define ELF_BUILD_ID_HEX_MAX 41 /* 20 bytes as hex + NUL; longer ids are truncated */

struct elf_symbols;

/* Loads the function symbols of the ELF open at fd (or an in-memory image, e.g. the vDSO).
 * The fd is not kept: the result owns copies. NULL + errno (ENOEXEC: not ELF). */
struct elf_symbols *elf_symbols__load_fd(int fd);
struct elf_symbols *elf_symbols__load_memory(const void *image, size_t size);
/* This process's own vDSO image (the kernel maps the same one into every process of this
 * ABI). ret_size gets its mapped size. NULL + errno when there is none. */
struct elf_symbols *elf_symbols__load_own_vdso(size_t *ret_size);
void elf_symbols__free(struct elf_symbols *es);

/* Translates a file offset (runtime address - mapping start + mapping offset) to the ELF's
 * virtual address through its PT_LOAD segments: one rule for PIE, non-PIE and libraries.
 * 0 or -ENOENT when no loadable segment holds that offset. */
int elf_symbols__offset_to_vaddr(const struct elf_symbols *es, uint64_t file_offset,
				 uint64_t *ret_vaddr);

/* Name (raw, possibly mangled) of the function covering vaddr, or NULL. A symbol covers
 * [addr, addr + size); a size-0 symbol covers up to the next symbol within its section. */
const char *elf_symbols__lookup(const struct elf_symbols *es, uint64_t vaddr);

/* dst translates file offsets like src: a separate debug file's PT_LOADs have no file
 * contents (p_filesz 0), the binary's describe its mappings. */
void elf_symbols__copy_segments(struct elf_symbols *dst, const struct elf_symbols *src);

const char *elf_symbols__build_id(const struct elf_symbols *es); /* "" when none */
size_t elf_symbols__count(const struct elf_symbols *es);
size_t elf_symbols__memory(const struct elf_symbols *es);   /* bytes held */
int elf_symbols__from_dynsym(const struct elf_symbols *es); /* 1 when .symtab was absent */

#endif
