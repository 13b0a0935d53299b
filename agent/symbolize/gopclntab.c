// SPDX-License-Identifier: Apache-2.0
/* Go's .gopclntab decoded in place (no copy: a 100k-function table costs a few pages of the
 * file mapping, not heap): function lookup by the sorted ftab, inline tree via pcdata. */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "gopclntab.h"

/* Facts of the format (src/runtime/symtab.go, runtime2.go of each release). */
#define MAGIC_12 0xfffffffbu
#define MAGIC_116 0xfffffffau
#define MAGIC_118 0xfffffff0u
#define MAGIC_120 0xfffffff1u
#define PCDATA_INL_TREE_INDEX 2
#define FUNCDATA_INL_TREE 3
#define FUNCDATA_NONE 0xffffffffu
/* Offset of moduledata.gofunc on 64-bit: 1.20 added covctrs/ecovctrs before it. */
#define MODULEDATA_GOFUNC_118 304
#define MODULEDATA_GOFUNC_120 320
#define INLINED_CALL_SIZE_116 20 /* parent, funcID, _, file, line, func_, parentPc */
#define INLINED_CALL_SIZE_120 16 /* funcID, _[3], nameOff, parentPc, startLine */
#define MAX_INLINE_STEPS 64	 /* a damaged tree must not loop */

struct gopclntab {
	struct go_image img;
	const uint8_t *tab;
	size_t tab_len;
	enum gopclntab_version version;
	unsigned quantum, ptrsize;
	uint64_t nfunc, text_start;
	const uint8_t *funcnames, *pctab, *pcln; /* pcln: the ftab and _func records */
	size_t funcnames_len, pctab_len, pcln_len;
	size_t ftab_entry; /* bytes per ftab entry */
	uint64_t gofunc_vaddr;
};

static uint64_t rd(const uint8_t *p, unsigned size)
{
	uint64_t v = 0;

	memcpy(&v, p, size); /* little-endian hosts only (x86-64, arm64) */
	return v;
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)rd(p, 4);
}

/* Bytes at vaddr with at least len of them in the file, or NULL. */
static const uint8_t *image_at(const struct go_image *img, uint64_t vaddr, size_t len)
{
	for (size_t i = 0; i < img->nsegs; i++) {
		uint64_t start = img->segs[i].vaddr, filesz = img->segs[i].filesz;

		if (vaddr < start || vaddr - start >= filesz || filesz - (vaddr - start) < len)
			continue;
		if (img->segs[i].offset + (vaddr - start) + len > img->size)
			return NULL;
		return img->data + img->segs[i].offset + (vaddr - start);
	}
	return NULL;
}

/* --- header -------------------------------------------------------------------------- */

static int version_of(uint32_t magic, enum gopclntab_version *ret)
{
	switch (magic) {
	case MAGIC_12:
		*ret = GOPCLNTAB_V12;
		return 0;
	case MAGIC_116:
		*ret = GOPCLNTAB_V116;
		return 0;
	case MAGIC_118:
		*ret = GOPCLNTAB_V118;
		return 0;
	case MAGIC_120:
		*ret = GOPCLNTAB_V120;
		return 0;
	}
	return -ENOENT;
}

/* A region [off, off + ...) of the table, to its end. */
static int region(const struct gopclntab *t, uint64_t off, const uint8_t **ret, size_t *ret_len)
{
	if (off >= t->tab_len)
		return -EINVAL;
	*ret = t->tab + off;
	*ret_len = t->tab_len - off;
	return 0;
}

static int parse_header(struct gopclntab *t)
{
	const uint8_t *h = t->tab;
	unsigned ps;
	int err;

	if (t->tab_len < 16 || h[4] || h[5] || (version_of(rd32(h), &t->version)))
		return -ENOENT;
	t->quantum = h[6];
	t->ptrsize = ps = h[7];
	if ((ps != 4 && ps != 8) || (t->quantum != 1 && t->quantum != 2 && t->quantum != 4))
		return -ENOENT;
	if (t->tab_len < 8 + 8 * (size_t)ps)
		return -EINVAL;
	t->nfunc = rd(h + 8, ps);
	if (t->version == GOPCLNTAB_V12) {
		/* Names, ftab and _func records are all relative to the table's start. */
		t->funcnames = t->pcln = t->pctab = t->tab;
		t->funcnames_len = t->pcln_len = t->pctab_len = t->tab_len;
		t->ftab_entry = 2 * ps;
		t->pcln = t->tab + 8 + ps;
		t->pcln_len = t->tab_len - 8 - ps;
		return 0;
	}
	/* 1.16: funcname, cu, filetab, pctab, pcln offsets after nfunc, nfiles; 1.18+ puts
	 * textStart between. */
	const uint8_t *o = h + 8 + 2 * ps;

	if (t->version >= GOPCLNTAB_V118) {
		t->text_start = rd(o, ps);
		o += ps;
	}
	err = region(t, rd(o, ps), &t->funcnames, &t->funcnames_len);
	if (!err)
		err = region(t, rd(o + 3 * ps, ps), &t->pctab, &t->pctab_len);
	if (!err)
		err = region(t, rd(o + 4 * ps, ps), &t->pcln, &t->pcln_len);
	t->ftab_entry = t->version >= GOPCLNTAB_V118 ? 8 : 2 * ps;
	return err;
}

/* --- ftab and _func ------------------------------------------------------------------ */

static uint64_t ftab_entry_pc(const struct gopclntab *t, uint64_t i)
{
	const uint8_t *e = t->pcln + i * t->ftab_entry;

	if (t->version >= GOPCLNTAB_V118)
		return t->text_start + rd32(e);
	return rd(e, t->ptrsize);
}

static const uint8_t *func_record(const struct gopclntab *t, uint64_t i, size_t need)
{
	const uint8_t *e = t->pcln + i * t->ftab_entry;
	uint64_t off = t->version >= GOPCLNTAB_V118 ? rd32(e + 4) : rd(e + t->ptrsize, t->ptrsize);

	/* 1.2 counts from the table's start, later ones from pcln: t->pcln is both's base
	 * except 1.2, whose records are relative to tab. */
	if (t->version == GOPCLNTAB_V12)
		return off + need <= t->tab_len ? t->tab + off : NULL;
	return off + need <= t->pcln_len ? t->pcln + off : NULL;
}

/* Field offsets inside a _func record. */
static size_t func_entry_size(const struct gopclntab *t)
{
	return t->version >= GOPCLNTAB_V118 ? 4 : t->ptrsize;
}

static const char *name_at(const struct gopclntab *t, uint64_t nameoff)
{
	const char *s;

	if (nameoff >= t->funcnames_len)
		return NULL;
	s = (const char *)t->funcnames + nameoff;
	return memchr(s, '\0', t->funcnames_len - nameoff) && s[0] ? s : NULL;
}

static const char *func_name(const struct gopclntab *t, const uint8_t *f)
{
	return name_at(t, (uint32_t)rd32(f + func_entry_size(t)));
}

/* Offset of npcdata in a _func: after entry, nameoff, args, deferreturn, pcsp, pcfile,
 * pcln (1.2 has no deferreturn before 1.12's; only 1.16+ is decoded this far). */
static size_t npcdata_off(const struct gopclntab *t)
{
	return func_entry_size(t) + 6 * 4;
}

/* pcdata table offsets start after the fixed fields. */
static size_t pcdata_off(const struct gopclntab *t)
{
	switch (t->version) {
	case GOPCLNTAB_V116:
		return func_entry_size(t) + 9 * 4; /* ..., npcdata, cuOffset, funcID.._.nfuncdata */
	case GOPCLNTAB_V118:
		return 40;
	case GOPCLNTAB_V120:
		return 44; /* startLine before funcID */
	default:
		return 0;
	}
}

/* Bytes of a record that lookup reads before its pcdata. */
static size_t record_min(const struct gopclntab *t)
{
	return t->version == GOPCLNTAB_V12 ? func_entry_size(t) + 4 : pcdata_off(t);
}

/* Index i of the function covering pc, or -1. ftab has nfunc + 1 entries (the last: end). */
static int64_t find_func(const struct gopclntab *t, uint64_t pc)
{
	uint64_t lo = 0, hi = t->nfunc;

	if (!t->nfunc || pc < ftab_entry_pc(t, 0) || pc >= ftab_entry_pc(t, t->nfunc))
		return -1;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (ftab_entry_pc(t, mid) <= pc)
			lo = mid;
		else
			hi = mid;
	}
	return (int64_t)lo;
}

/* --- pcvalue tables and the inline tree ---------------------------------------------- */

static int read_uvarint(const uint8_t **p, const uint8_t *end, uint32_t *ret)
{
	uint32_t v = 0;

	for (unsigned shift = 0; *p < end && shift < 35; shift += 7) {
		uint8_t b = *(*p)++;

		v |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return -EINVAL;
}

/* Value of the pc-value table at off for target (entry: the function's first pc), or -1. */
static int32_t pcvalue(const struct gopclntab *t, uint32_t off, uint64_t entry, uint64_t target)
{
	const uint8_t *p, *end = t->pctab + t->pctab_len;
	uint64_t pc = entry;
	int32_t val = -1;
	bool first = true;

	if (!off || off >= t->pctab_len)
		return -1;
	p = t->pctab + off;
	for (;;) {
		uint32_t uv, pcdelta;

		if (read_uvarint(&p, end, &uv) || (uv == 0 && !first))
			return -1;
		val += (uv & 1) ? ~(int32_t)(uv >> 1) : (int32_t)(uv >> 1);
		if (read_uvarint(&p, end, &pcdelta))
			return -1;
		pc += (uint64_t)pcdelta * t->quantum;
		first = false;
		if (target < pc)
			return val;
	}
}

/* len bytes at p lie inside the records (a damaged table must not read past its file). */
static bool in_pcln(const struct gopclntab *t, const uint8_t *p, size_t len)
{
	return p >= t->pcln && (size_t)(p - t->pcln) <= t->pcln_len &&
	       t->pcln_len - (size_t)(p - t->pcln) >= len;
}

/* The function's inline tree, or NULL (none, or its base unknown). */
static const uint8_t *inline_tree(const struct gopclntab *t, const uint8_t *f, uint32_t npcdata,
				  uint8_t nfuncdata)
{
	size_t fd_off = pcdata_off(t) + 4 * (size_t)npcdata;
	uint64_t vaddr;

	if (nfuncdata <= FUNCDATA_INL_TREE)
		return NULL;
	if (t->version == GOPCLNTAB_V116) {
		/* Pointers, aligned to the pointer size at run time (the table is aligned). */
		if (t->ptrsize == 8 && ((uintptr_t)(f + fd_off) & 4))
			fd_off += 4;
		if (!in_pcln(t, f + fd_off, (FUNCDATA_INL_TREE + 1) * t->ptrsize))
			return NULL;
		vaddr = rd(f + fd_off + FUNCDATA_INL_TREE * t->ptrsize, t->ptrsize);
		return vaddr ? image_at(&t->img, vaddr, INLINED_CALL_SIZE_116) : NULL;
	}
	uint32_t off;

	if (!t->gofunc_vaddr || !in_pcln(t, f + fd_off, 4 * (FUNCDATA_INL_TREE + 1)))
		return NULL;
	off = rd32(f + fd_off + 4 * FUNCDATA_INL_TREE);
	if (off == FUNCDATA_NONE)
		return NULL;
	return image_at(&t->img, t->gofunc_vaddr + off, INLINED_CALL_SIZE_120);
}

/* Appends the inlined calls at pc, innermost first; returns how many were added. */
static size_t inlined_names(const struct gopclntab *t, const uint8_t *f, uint64_t entry,
			    uint64_t pc, const char **ret, size_t max)
{
	uint32_t npcdata = rd32(f + npcdata_off(t));
	size_t fixed = pcdata_off(t), n = 0;
	uint8_t nfuncdata = f[fixed - 1];
	size_t call_size =
	    t->version >= GOPCLNTAB_V120 ? INLINED_CALL_SIZE_120 : INLINED_CALL_SIZE_116;
	size_t name_off = t->version >= GOPCLNTAB_V120 ? 4 : 12;
	size_t parent_off = t->version >= GOPCLNTAB_V120 ? 8 : 16;
	const uint8_t *tree;
	uint32_t table;

	if (npcdata <= PCDATA_INL_TREE_INDEX || npcdata > 1024 ||
	    !in_pcln(t, f + fixed, 4 * (size_t)npcdata))
		return 0;
	tree = inline_tree(t, f, npcdata, nfuncdata);
	if (!tree)
		return 0;
	table = rd32(f + fixed + 4 * PCDATA_INL_TREE_INDEX);
	for (int steps = 0; steps < MAX_INLINE_STEPS && n < max; steps++) {
		int32_t ix = pcvalue(t, table, entry, pc);
		const uint8_t *call;
		const char *name;

		if (ix < 0)
			break;
		/* The tree is as long as its largest index: check it is still in the file. */
		call = tree + (size_t)ix * call_size;
		if (call + call_size > t->img.data + t->img.size || call < t->img.data)
			break;
		name = name_at(t, rd32(call + name_off));
		if (name)
			ret[n++] = name;
		/* The caller's frame: the pc of the call in the outer function, looked up again
		 * (1.20 dropped the parent index; parentPc works for every version). */
		pc = entry + (uint64_t)(int32_t)rd32(call + parent_off);
	}
	return n;
}

size_t gopclntab__lookup(const struct gopclntab *t, uint64_t vaddr, const char **ret_names,
			 size_t max)
{
	int64_t i = find_func(t, vaddr);
	const uint8_t *f;
	const char *name;
	size_t n = 0;

	if (i < 0 || !max)
		return 0;
	f = func_record(t, (uint64_t)i, record_min(t));
	if (!f || !(name = func_name(t, f)))
		return 0;
	if (t->version != GOPCLNTAB_V12)
		n = inlined_names(t, f, ftab_entry_pc(t, (uint64_t)i), vaddr, ret_names, max - 1);
	ret_names[n++] = name;
	return n;
}

/* --- finding the table in an ELF file ------------------------------------------------ */

struct gopclntab *gopclntab__open(const struct go_image *img, const uint8_t *tab, size_t tab_len,
				  uint64_t tab_vaddr, uint64_t gofunc_vaddr)
{
	struct gopclntab *t = calloc(1, sizeof(*t));
	const uint8_t *f;
	int err;

	if (!t)
		return NULL;
	t->img = *img;
	t->tab = tab;
	t->tab_len = tab_len;
	t->gofunc_vaddr = gofunc_vaddr;
	err = parse_header(t);
	/* The ftab and the first record must be in the table, and sorted at both ends. */
	if (!err && (t->nfunc + 1 > t->pcln_len / t->ftab_entry || !t->nfunc))
		err = -EINVAL;
	if (!err && ftab_entry_pc(t, 0) > ftab_entry_pc(t, t->nfunc))
		err = -EINVAL;
	if (!err && (!(f = func_record(t, 0, record_min(t))) ||
		     rd(f, func_entry_size(t)) != rd(t->pcln, func_entry_size(t))))
		err = -EINVAL;
	if (err) {
		free(t);
		errno = -err;
		return NULL;
	}
	(void)tab_vaddr;
	return t;
}

static int read_image(const uint8_t *data, size_t size, struct go_image *img)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)data;

	if (size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_phentsize != sizeof(Elf64_Phdr) ||
	    eh->e_phoff > size || (size - eh->e_phoff) / sizeof(Elf64_Phdr) < eh->e_phnum)
		return -ENOEXEC;
	*img = (struct go_image){.data = data, .size = size};
	for (size_t i = 0; i < eh->e_phnum && img->nsegs < GOPCLNTAB_MAX_SEGMENTS; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, data + eh->e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_LOAD || ph.p_offset > size)
			continue;
		img->segs[img->nsegs].executable = !!(ph.p_flags & PF_X);
		img->segs[img->nsegs].vaddr = ph.p_vaddr;
		img->segs[img->nsegs].offset = ph.p_offset;
		img->segs[img->nsegs].filesz =
		    ph.p_filesz < size - ph.p_offset ? ph.p_filesz : size - ph.p_offset;
		img->segs[img->nsegs++].writable = !!(ph.p_flags & PF_W);
	}
	return 0;
}

/* The section named name: 0, -ENOENT, or -ENODATA when the file has no section headers. */
static int find_section(const uint8_t *data, size_t size, const char *want, uint64_t *ret_off,
			uint64_t *ret_len, uint64_t *ret_vaddr)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)data;
	Elf64_Shdr strs, sh;

	if (!eh->e_shoff || eh->e_shentsize != sizeof(sh) || eh->e_shoff > size ||
	    (size - eh->e_shoff) / sizeof(sh) < eh->e_shnum || eh->e_shstrndx >= eh->e_shnum)
		return -ENODATA;
	memcpy(&strs, data + eh->e_shoff + eh->e_shstrndx * sizeof(sh), sizeof(sh));
	if (strs.sh_offset > size || strs.sh_size > size - strs.sh_offset)
		return -ENODATA;
	for (size_t i = 0; i < eh->e_shnum; i++) {
		const char *name;

		memcpy(&sh, data + eh->e_shoff + i * sizeof(sh), sizeof(sh));
		if (sh.sh_name >= strs.sh_size || sh.sh_type == SHT_NOBITS)
			continue;
		name = (const char *)data + strs.sh_offset + sh.sh_name;
		if (!memchr(name, '\0', strs.sh_size - sh.sh_name))
			continue;
		if (strcmp(name, want))
			continue;
		if (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset)
			return -EINVAL;
		*ret_off = sh.sh_offset;
		*ret_len = sh.sh_size;
		*ret_vaddr = sh.sh_addr;
		return 0;
	}
	return -ENOENT;
}

/* moduledata begins {pcHeader *, funcnametab []byte, ...}: a pointer to the table followed by
 * one to its names. Its gofunc field is the base of 1.18+'s funcdata offsets. */
static uint64_t find_gofunc(const struct gopclntab *t, uint64_t tab_vaddr)
{
	uint64_t names_vaddr = tab_vaddr + (uint64_t)(t->funcnames - t->tab);
	size_t field = t->version >= GOPCLNTAB_V120 ? MODULEDATA_GOFUNC_120 : MODULEDATA_GOFUNC_118;

	if (t->version < GOPCLNTAB_V118 || t->ptrsize != 8)
		return 0;
	for (size_t s = 0; s < t->img.nsegs; s++) {
		const uint8_t *p = t->img.data + t->img.segs[s].offset;
		size_t len = t->img.segs[s].filesz;

		if (!t->img.segs[s].writable)
			continue;
		for (size_t off = 0; off + field + 8 <= len; off += 8) {
			uint64_t gofunc;

			if (rd(p + off, 8) != tab_vaddr || rd(p + off + 8, 8) != names_vaddr)
				continue;
			gofunc = rd(p + off + field, 8);
			if (image_at(&t->img, gofunc, 1))
				return gofunc;
		}
	}
	return 0;
}

/* Section headers gone: the header's signature in a loadable segment, checked by parsing. */
static struct gopclntab *scan_segments(const struct go_image *img, uint64_t *ret_vaddr)
{
	static const uint32_t magics[] = {MAGIC_120, MAGIC_118, MAGIC_116, MAGIC_12};

	for (size_t s = 0; s < img->nsegs; s++) {
		const uint8_t *seg = img->data + img->segs[s].offset;
		size_t len = img->segs[s].filesz;

		if (img->segs[s].executable) /* the table is data: read-only or relro */
			continue;
		for (size_t m = 0; m < sizeof(magics) / sizeof(magics[0]); m++) {
			uint8_t sig[8];

			memcpy(sig, &magics[m], 4);
			sig[4] = sig[5] = 0;
			sig[6] = 1; /* x86-64: quantum 1, pointers of 8 */
			sig[7] = 8;
			for (const uint8_t *p = seg;
			     (p = memmem(p, len - (size_t)(p - seg), sig, 8)); p += 8) {
				struct gopclntab *t;

				if ((p - seg) % 8) /* the table is aligned */
					continue;
				*ret_vaddr = img->segs[s].vaddr + (uint64_t)(p - seg);
				t = gopclntab__open(img, p, len - (size_t)(p - seg), *ret_vaddr, 0);
				if (t)
					return t;
			}
		}
	}
	return NULL;
}

/* Worth a scan: a Go binary (its build-info or build-id section), or no section headers. */
static bool is_go(const uint8_t *data, size_t size)
{
	uint64_t off, len, vaddr;
	int err = find_section(data, size, ".go.buildinfo", &off, &len, &vaddr);

	if (err == -ENOENT)
		err = find_section(data, size, ".note.go.buildid", &off, &len, &vaddr);
	return err != -ENOENT;
}

struct gopclntab *gopclntab__open_elf(const void *data, size_t size)
{
	uint64_t off, len, vaddr;
	struct gopclntab *t;
	struct go_image img;
	int err = read_image(data, size, &img);

	if (err) {
		errno = -err;
		return NULL;
	}
	if (!find_section(data, size, ".gopclntab", &off, &len, &vaddr) ||
	    !find_section(data, size, ".data.rel.ro.gopclntab", &off, &len, &vaddr))
		t = gopclntab__open(&img, (const uint8_t *)data + off, len, vaddr, 0);
	else if (is_go(data, size))
		t = scan_segments(&img, &vaddr); /* external linking merged the section away */
	else
		t = NULL;
	if (!t) {
		errno = ENOENT;
		return NULL;
	}
	t->gofunc_vaddr = find_gofunc(t, vaddr);
	return t;
}

void gopclntab__free(struct gopclntab *t)
{
	free(t);
}

enum gopclntab_version gopclntab__version(const struct gopclntab *t)
{
	return t->version;
}

size_t gopclntab__count(const struct gopclntab *t)
{
	return t->nfunc;
}

size_t gopclntab__memory(const struct gopclntab *t)
{
	return sizeof(*t);
}

int gopclntab__has_inline(const struct gopclntab *t)
{
	return t->version == GOPCLNTAB_V116 || (t->version >= GOPCLNTAB_V118 && t->gofunc_vaddr);
}
