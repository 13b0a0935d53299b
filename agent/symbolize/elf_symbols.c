// SPDX-License-Identifier: Apache-2.0
/* ELF function symbols via libelf (and libdw's dwelf for the build-id): reads .symtab, else
 * .dynsym, into a sorted array of {addr, size, name offset} plus one string blob. */
#include <errno.h>
#include <gelf.h>
#include <elfutils/libdwelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "symbolize/elf_symbols.h"

#define MAX_SEGMENTS 16

struct elf_sym {
	uint64_t addr;
	uint32_t size;
	uint32_t name_off;
};

struct elf_segment {
	uint64_t offset, filesz, vaddr;
};

struct elf_symbols {
	struct elf_sym *syms;
	size_t nsyms;
	char *names;
	size_t names_len;
	struct elf_segment segs[MAX_SEGMENTS];
	size_t nsegs;
	char build_id[ELF_BUILD_ID_HEX_MAX];
	int from_dynsym;
};

/* A symbol being collected, with what deduplication and size-0 ranges need. */
struct raw_sym {
	uint64_t addr, size, section_end;
	const char *name;
	int rank; /* GLOBAL > WEAK > LOCAL, when two names share an address */
};

struct sym_vec {
	struct raw_sym *v;
	size_t n, cap;
	size_t name_bytes;
};

static Elf *elf_open_fd(int fd)
{
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = ENOSYS;
		return NULL;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		errno = ENOEXEC;
		return NULL;
	}
	if (elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		errno = ENOEXEC;
		return NULL;
	}
	return elf;
}

static void build_id_hex(Elf *elf, char *ret, size_t len)
{
	const unsigned char *id;
	ssize_t n = dwelf_elf_gnu_build_id(elf, (const void **)&id);

	ret[0] = '\0';
	for (ssize_t i = 0; i < n && (size_t)(2 * i + 2) < len; i++)
		snprintf(ret + 2 * i, 3, "%02x", id[i]);
}

static int read_segments(Elf *elf, struct elf_symbols *es)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -ENOEXEC;
	for (size_t i = 0; i < n && es->nsegs < MAX_SEGMENTS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		es->segs[es->nsegs++] = (struct elf_segment){
		    .offset = ph.p_offset, .filesz = ph.p_filesz, .vaddr = ph.p_vaddr};
	}
	return 0;
}

static bool is_function(const GElf_Sym *sym)
{
	int type = GELF_ST_TYPE(sym->st_info);

	return (type == STT_FUNC || type == STT_GNU_IFUNC) && sym->st_shndx != SHN_UNDEF &&
	       sym->st_shndx < SHN_LORESERVE && sym->st_value != 0;
}

static int sym_rank(const GElf_Sym *sym)
{
	switch (GELF_ST_BIND(sym->st_info)) {
	case STB_GLOBAL:
		return 3;
	case STB_WEAK:
		return 2;
	default:
		return 1;
	}
}

static int vec_push(struct sym_vec *vec, const struct raw_sym *rs)
{
	if (vec->n == vec->cap) {
		size_t cap = vec->cap ? vec->cap * 2 : 1024;
		struct raw_sym *v = realloc(vec->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		vec->v = v;
		vec->cap = cap;
	}
	vec->v[vec->n++] = *rs;
	vec->name_bytes += strlen(rs->name) + 1;
	return 0;
}

static uint64_t section_end(Elf *elf, size_t shndx)
{
	GElf_Shdr sh;
	Elf_Scn *scn = elf_getscn(elf, shndx);

	if (!scn || !gelf_getshdr(scn, &sh))
		return 0;
	return sh.sh_addr + sh.sh_size;
}

/* Collects the function symbols of one symbol-table section. */
static int collect_table(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct sym_vec *vec)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n;

	if (!data || !sh->sh_entsize)
		return 0;
	n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		struct raw_sym rs;
		const char *name;

		if (!gelf_getsym(data, (int)i, &sym) || !is_function(&sym))
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || !name[0])
			continue;
		rs = (struct raw_sym){.addr = sym.st_value,
				      .size = sym.st_size,
				      .section_end = section_end(elf, sym.st_shndx),
				      .name = name,
				      .rank = sym_rank(&sym)};
		if (vec_push(vec, &rs))
			return -ENOMEM;
	}
	return 0;
}

/* Collects .symtab's functions; when it has none (stripped), .dynsym's. */
static int collect_symbols(Elf *elf, struct sym_vec *vec, int *ret_from_dynsym)
{
	GElf_Word types[2] = {SHT_SYMTAB, SHT_DYNSYM};

	for (int t = 0; t < 2; t++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != types[t])
				continue;
			if (collect_table(elf, scn, &sh, vec))
				return -ENOMEM;
		}
		if (vec->n) {
			*ret_from_dynsym = t == 1;
			return 0;
		}
	}
	return 0;
}

static int raw_cmp(const void *a, const void *b)
{
	const struct raw_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Best first among aliases: a known size, then the strongest binding. */
	if ((x->size != 0) != (y->size != 0))
		return x->size ? -1 : 1;
	if (x->rank != y->rank)
		return y->rank - x->rank;
	return strcmp(x->name, y->name);
}

/* Size of a symbol: its own, or for size-0 symbols up to the next one within its section. */
static uint64_t effective_size(const struct raw_sym *v, size_t i, size_t n)
{
	uint64_t end;

	if (v[i].size)
		return v[i].size;
	if (!v[i].section_end || v[i].section_end <= v[i].addr)
		return 0;
	end = v[i].section_end;
	for (size_t j = i + 1; j < n; j++) {
		if (v[j].addr > v[i].addr) {
			if (v[j].addr < end)
				end = v[j].addr;
			break;
		}
	}
	return end - v[i].addr;
}

static int build_table(struct sym_vec *vec, struct elf_symbols *es)
{
	size_t out = 0, off = 0;

	if (vec->n) /* qsort(NULL, 0) is undefined */
		qsort(vec->v, vec->n, sizeof(*vec->v), raw_cmp);
	es->syms = malloc((vec->n ? vec->n : 1) * sizeof(*es->syms));
	es->names = malloc(vec->name_bytes ? vec->name_bytes : 1);
	if (!es->syms || !es->names)
		return -ENOMEM;
	for (size_t i = 0; i < vec->n; i++) {
		const struct raw_sym *rs = &vec->v[i];
		uint64_t size;
		size_t len;

		if (out && es->syms[out - 1].addr == rs->addr)
			continue; /* alias: the best name came first */
		size = effective_size(vec->v, i, vec->n);
		if (!size)
			continue;
		len = strlen(rs->name) + 1;
		memcpy(es->names + off, rs->name, len);
		es->syms[out++] =
		    (struct elf_sym){.addr = rs->addr,
				     .size = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size,
				     .name_off = (uint32_t)off};
		off += len;
	}
	es->nsyms = out;
	es->names_len = off;
	/* Give back what deduplication freed; failure to shrink is harmless. */
	if (out) {
		struct elf_sym *s = realloc(es->syms, out * sizeof(*s));
		char *names = realloc(es->names, off);

		if (s)
			es->syms = s;
		if (names)
			es->names = names;
	}
	return 0;
}

static struct elf_symbols *load_elf(Elf *elf)
{
	struct elf_symbols *es = calloc(1, sizeof(*es));
	struct sym_vec vec = {0};
	size_t nsections;
	GElf_Ehdr eh;
	int err = -ENOMEM;

	if (!es)
		goto fail;
	err = -ENOEXEC;
	if (!gelf_getehdr(elf, &eh) || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN))
		goto fail;
	/* Section headers out of the file (packed or damaged binary): unreadable, not empty. */
	if (elf_getshdrnum(elf, &nsections) || (eh.e_shnum && !elf_nextscn(elf, NULL)))
		goto fail;
	build_id_hex(elf, es->build_id, sizeof(es->build_id));
	err = read_segments(elf, es);
	if (err)
		goto fail;
	err = collect_symbols(elf, &vec, &es->from_dynsym);
	if (err)
		goto fail;
	err = build_table(&vec, es);
	if (err)
		goto fail;
	free(vec.v);
	elf_end(elf);
	return es;
fail:
	free(vec.v);
	elf_symbols__free(es);
	elf_end(elf);
	errno = -err;
	return NULL;
}

struct elf_symbols *elf_symbols__load_fd(int fd)
{
	Elf *elf = elf_open_fd(fd);

	return elf ? load_elf(elf) : NULL;
}

struct elf_symbols *elf_symbols__load_memory(const void *image, size_t size)
{
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = ENOSYS;
		return NULL;
	}
	/* libelf does not write through the pointer when opened read-only. */
	elf = elf_memory((char *)image, size);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		errno = ENOEXEC;
		return NULL;
	}
	return load_elf(elf);
}

struct elf_symbols *elf_symbols__load_own_vdso(size_t *ret_size)
{
	const GElf_Ehdr *eh = (const GElf_Ehdr *)getauxval(AT_SYSINFO_EHDR);
	size_t size;

	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64) {
		errno = ENOENT;
		return NULL;
	}
	/* The image ends with its section headers; the mapping is page-rounded. */
	size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	*ret_size = (size + 4095) & ~(size_t)4095;
	return elf_symbols__load_memory(eh, size);
}

void elf_symbols__free(struct elf_symbols *es)
{
	if (!es)
		return;
	free(es->syms);
	free(es->names);
	free(es);
}

int elf_symbols__offset_to_vaddr(const struct elf_symbols *es, uint64_t file_offset,
				 uint64_t *ret_vaddr)
{
	for (size_t i = 0; i < es->nsegs; i++) {
		const struct elf_segment *seg = &es->segs[i];

		if (file_offset >= seg->offset && file_offset < seg->offset + seg->filesz) {
			*ret_vaddr = file_offset - seg->offset + seg->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

const char *elf_symbols__lookup(const struct elf_symbols *es, uint64_t vaddr)
{
	size_t lo = 0, hi = es->nsyms;

	/* Last symbol starting at or before vaddr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (es->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	/* Past the end of the nearest symbol is unknown, never the previous symbol. */
	if (vaddr - es->syms[lo - 1].addr >= es->syms[lo - 1].size)
		return NULL;
	return es->names + es->syms[lo - 1].name_off;
}

void elf_symbols__copy_segments(struct elf_symbols *dst, const struct elf_symbols *src)
{
	memcpy(dst->segs, src->segs, sizeof(dst->segs));
	dst->nsegs = src->nsegs;
}

const char *elf_symbols__build_id(const struct elf_symbols *es)
{
	return es->build_id;
}

size_t elf_symbols__count(const struct elf_symbols *es)
{
	return es->nsyms;
}

size_t elf_symbols__memory(const struct elf_symbols *es)
{
	return sizeof(*es) + es->nsyms * sizeof(*es->syms) + es->names_len;
}

int elf_symbols__from_dynsym(const struct elf_symbols *es)
{
	return es->from_dynsym;
}
