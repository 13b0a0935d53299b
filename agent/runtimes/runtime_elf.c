// SPDX-License-Identifier: Apache-2.0
/* The few ELF facts runtime detection needs (a symbol's address and size, the load base), read
 * from the file with <elf.h> alone: the symboliser keeps libelf, this reads two tables. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtimes/runtime_elf.h"

struct runtime_elf {
	const unsigned char *image;
	size_t size;
	bool mapped; /* munmap on close */
};

static bool in_file(const struct runtime_elf *elf, uint64_t off, uint64_t len)
{
	return off <= elf->size && len <= elf->size - off;
}

static const Elf64_Ehdr *header(const struct runtime_elf *elf)
{
	return (const Elf64_Ehdr *)elf->image;
}

static bool valid_header(const struct runtime_elf *elf)
{
	const Elf64_Ehdr *eh = header(elf);

	if (elf->size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB)
		return false;
	return in_file(elf, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)) &&
	       in_file(elf, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr)) &&
	       (!eh->e_shnum || eh->e_shentsize == sizeof(Elf64_Shdr)) &&
	       (!eh->e_phnum || eh->e_phentsize == sizeof(Elf64_Phdr));
}

struct runtime_elf *runtime_elf__from_memory(const void *image, size_t size)
{
	struct runtime_elf *elf = calloc(1, sizeof(*elf));

	if (!elf)
		return NULL;
	elf->image = image;
	elf->size = size;
	if (!valid_header(elf)) {
		free(elf);
		errno = ENOEXEC;
		return NULL;
	}
	return elf;
}

struct runtime_elf *runtime_elf__open_fd(int fd)
{
	struct runtime_elf *elf;
	struct stat st;
	void *image;
	int saved;

	if (fstat(fd, &st))
		return NULL;
	if (st.st_size <= 0) {
		errno = ENOEXEC;
		return NULL;
	}
	image = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (image == MAP_FAILED)
		return NULL;
	elf = runtime_elf__from_memory(image, st.st_size);
	if (!elf) {
		saved = errno;
		munmap(image, st.st_size);
		errno = saved;
		return NULL;
	}
	elf->mapped = true;
	return elf;
}

struct runtime_elf *runtime_elf__open(const char *path)
{
	struct runtime_elf *elf;
	int fd = open(path, O_RDONLY | O_CLOEXEC), saved;

	if (fd < 0)
		return NULL;
	elf = runtime_elf__open_fd(fd);
	saved = errno;
	close(fd);
	errno = saved;
	return elf;
}

const void *runtime_elf__image(const struct runtime_elf *elf, size_t *ret_size)
{
	*ret_size = elf->size;
	return elf->image;
}

void runtime_elf__close(struct runtime_elf *elf)
{
	if (!elf)
		return;
	if (elf->mapped)
		munmap((void *)elf->image, elf->size);
	free(elf);
}

static const Elf64_Shdr *section(const struct runtime_elf *elf, size_t i)
{
	return (const Elf64_Shdr *)(elf->image + header(elf)->e_shoff) + i;
}

/* Searches one symbol table (type SHT_SYMTAB or SHT_DYNSYM) for a defined symbol. */
static int search_table(const struct runtime_elf *elf, uint32_t type, const char *name,
			uint64_t *ret_vaddr, uint64_t *ret_size)
{
	const Elf64_Ehdr *eh = header(elf);
	size_t name_len = strlen(name);

	for (size_t i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *sh = section(elf, i), *strtab;
		const Elf64_Sym *syms;
		size_t n;

		if (sh->sh_type != type || sh->sh_link >= eh->e_shnum ||
		    !in_file(elf, sh->sh_offset, sh->sh_size))
			continue;
		strtab = section(elf, sh->sh_link);
		if (!in_file(elf, strtab->sh_offset, strtab->sh_size))
			continue;
		syms = (const Elf64_Sym *)(elf->image + sh->sh_offset);
		n = sh->sh_size / sizeof(*syms);
		for (size_t k = 0; k < n; k++) {
			const char *s =
			    (const char *)elf->image + strtab->sh_offset + syms[k].st_name;

			if (syms[k].st_shndx == SHN_UNDEF || syms[k].st_name >= strtab->sh_size ||
			    strtab->sh_size - syms[k].st_name <= name_len ||
			    memcmp(s, name, name_len + 1))
				continue;
			*ret_vaddr = syms[k].st_value;
			*ret_size = syms[k].st_size;
			return 0;
		}
	}
	return -ENOENT;
}

int runtime_elf__symbol(const struct runtime_elf *elf, const char *name, uint64_t *ret_vaddr,
			uint64_t *ret_size)
{
	if (!search_table(elf, SHT_SYMTAB, name, ret_vaddr, ret_size))
		return 0;
	return search_table(elf, SHT_DYNSYM, name, ret_vaddr, ret_size);
}

/* Calls fn for every defined symbol of one table whose name starts with prefix. */
static int foreach_in_table(const struct runtime_elf *elf, uint32_t type, const char *prefix,
			    runtime_elf_symbol_fn fn, void *ctx)
{
	const Elf64_Ehdr *eh = header(elf);
	size_t prefix_len = strlen(prefix);
	int ret;

	for (size_t i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *sh = section(elf, i), *strtab;
		const Elf64_Sym *syms;

		if (sh->sh_type != type || sh->sh_link >= eh->e_shnum ||
		    !in_file(elf, sh->sh_offset, sh->sh_size))
			continue;
		strtab = section(elf, sh->sh_link);
		if (!in_file(elf, strtab->sh_offset, strtab->sh_size) || !strtab->sh_size ||
		    elf->image[strtab->sh_offset + strtab->sh_size - 1] != '\0')
			continue; /* an unterminated table: names could run past it */
		syms = (const Elf64_Sym *)(elf->image + sh->sh_offset);
		for (size_t k = 0; k < sh->sh_size / sizeof(*syms); k++) {
			const char *s =
			    (const char *)elf->image + strtab->sh_offset + syms[k].st_name;

			if (syms[k].st_shndx == SHN_UNDEF || syms[k].st_name >= strtab->sh_size ||
			    strncmp(s, prefix, prefix_len))
				continue;
			ret = fn(s, syms[k].st_value, syms[k].st_size, ctx);
			if (ret)
				return ret;
		}
	}
	return 0;
}

int runtime_elf__foreach_symbol(const struct runtime_elf *elf, const char *prefix,
				runtime_elf_symbol_fn fn, void *ctx)
{
	int ret = foreach_in_table(elf, SHT_SYMTAB, prefix, fn, ctx);

	return ret ? ret : foreach_in_table(elf, SHT_DYNSYM, prefix, fn, ctx);
}

static const Elf64_Phdr *segment(const struct runtime_elf *elf, size_t i)
{
	return (const Elf64_Phdr *)(elf->image + header(elf)->e_phoff) + i;
}

int runtime_elf__load_base(const struct runtime_elf *elf, uint64_t *ret_base)
{
	for (size_t i = 0; i < header(elf)->e_phnum; i++) {
		const Elf64_Phdr *ph = segment(elf, i);

		if (ph->p_type != PT_LOAD)
			continue;
		*ret_base = (ph->p_vaddr - ph->p_offset) & ~(uint64_t)4095;
		return 0;
	}
	return -ENOENT;
}

const void *runtime_elf__at(const struct runtime_elf *elf, uint64_t vaddr, size_t len)
{
	for (size_t i = 0; i < header(elf)->e_phnum; i++) {
		const Elf64_Phdr *ph = segment(elf, i);
		uint64_t off;

		if (ph->p_type != PT_LOAD || vaddr < ph->p_vaddr ||
		    vaddr - ph->p_vaddr > ph->p_filesz ||
		    len > ph->p_filesz - (vaddr - ph->p_vaddr))
			continue;
		off = ph->p_offset + (vaddr - ph->p_vaddr);
		return in_file(elf, off, len) ? elf->image + off : NULL;
	}
	return NULL;
}

/* True when the dynamic symbol at index in the table at symtab is called name. */
static bool dynsym_named(const struct runtime_elf *elf, const Elf64_Shdr *symtab, uint64_t index,
			 const char *name)
{
	const Elf64_Shdr *strtab = section(elf, symtab->sh_link);
	const Elf64_Sym *sym;
	size_t name_len = strlen(name);

	if (index >= symtab->sh_size / sizeof(*sym) ||
	    !in_file(elf, strtab->sh_offset, strtab->sh_size))
		return false;
	sym = (const Elf64_Sym *)(elf->image + symtab->sh_offset) + index;
	return sym->st_name < strtab->sh_size && strtab->sh_size - sym->st_name > name_len &&
	       !memcmp(elf->image + strtab->sh_offset + sym->st_name, name, name_len + 1);
}

int runtime_elf__reloc(const struct runtime_elf *elf, const char *name, uint32_t type,
		       uint64_t *ret_vaddr)
{
	const Elf64_Ehdr *eh = header(elf);

	for (size_t i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *sh = section(elf, i), *symtab;
		const Elf64_Rela *rela;
		size_t n;

		if (sh->sh_type != SHT_RELA || sh->sh_link >= eh->e_shnum ||
		    !in_file(elf, sh->sh_offset, sh->sh_size))
			continue;
		symtab = section(elf, sh->sh_link);
		if (symtab->sh_type != SHT_DYNSYM || symtab->sh_link >= eh->e_shnum ||
		    !in_file(elf, symtab->sh_offset, symtab->sh_size))
			continue;
		rela = (const Elf64_Rela *)(elf->image + sh->sh_offset);
		n = sh->sh_size / sizeof(*rela);
		for (size_t k = 0; k < n; k++) {
			if (ELF64_R_TYPE(rela[k].r_info) != type ||
			    !dynsym_named(elf, symtab, ELF64_R_SYM(rela[k].r_info), name))
				continue;
			*ret_vaddr = rela[k].r_offset;
			return 0;
		}
	}
	return -ENOENT;
}
