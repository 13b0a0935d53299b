// SPDX-License-Identifier: Apache-2.0
/* Go's .gopclntab: the function index copied to the heap (12 bytes a function), the rest read
 * on demand through a bounded block cache, so memory is bounded by construction. */
/*
 * Memory bound. A table opened with gopclntab__open_file() holds, for its life:
 *   - the ftab (entry pc, record offset, name offset) as three uint32 a function:
 *     12 * (nfunc + 1) bytes;
 *   - at most CACHE_BLOCKS blocks of BLOCK_SIZE bytes (1 MiB) of the file, read with pread
 *     into the heap when a lookup needs them (records, names, pc-value tables, inline tree);
 *   - the names of the last lookup (GOPCLNTAB_MAX_FRAMES * NAME_MAX_LEN, 8 KiB).
 * A 100k-function binary costs ~2.2 MiB whatever its lookups, under the 8 MiB of issue 26.
 * No file page stays mapped after open: pread copies from the page cache, which the Go
 * process shares, without adding to the agent's resident set (an in-place mapping did, up to
 * the whole table: the kernel maps 64 KiB around each fault).
 * gopclntab__open() and gopclntab__open_elf() read a caller's memory in place (tests).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize/gopclntab.h"

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
#define RECORD_MAX 64		 /* fixed fields of a _func, all versions */

/* The cache: direct-mapped by block number (a lookup needs 1 to 6 blocks: name, then for a
 * function that inlines its record, pc-value table, inline tree, inlined names). 256 x 4 KiB
 * measured faster than 64 x 16 KiB and 1024 x 1 KiB in bench-gosyms (a miss is one pread). */
#define BLOCK_SIZE 4096
#define CACHE_BLOCKS 256
#define NAME_MAX_LEN 512 /* longer names are cut (the symboliser keeps 256) */
#define NO_BLOCK UINT64_MAX
#define NOWHERE UINT64_MAX

/* Bytes the decoder reads: the table, or the image (inline trees), each either in memory or
 * in the file at base. */
struct source {
	const uint8_t *mem; /* NULL: the file */
	uint64_t base, len;
};

struct block {
	uint64_t no;
	uint8_t *data;
	size_t valid;
};

struct ftab_slot {
	uint32_t pc;   /* - pc_base */
	uint32_t rec;  /* the _func record's offset, as the ftab writes it */
	uint32_t name; /* its nameoff | NAME_INLINES, or NAME_NONE; read at the first lookup */
};

#define NAME_INLINES 0x80000000u /* the record has an inline tree: read it at lookup */
#define NAME_NONE 0x7fffffffu

struct gopclntab {
	struct go_image img; /* segments; img.data is NULL once read from the file */
	struct source tab, image;
	enum gopclntab_version version;
	unsigned quantum, ptrsize;
	uint64_t nfunc, text_start, pc_base;
	uint64_t funcnames, pctab, pcln; /* offsets in the table; pcln: ftab and _func records */
	uint64_t funcnames_len, pctab_len, pcln_len;
	size_t ftab_entry; /* bytes per ftab entry */
	uint64_t gofunc_vaddr;
	struct ftab_slot *ftab; /* nfunc + 1 entries, the last: the end of text */
	bool indexed;		/* ftab[].name read */
	int fd;
	size_t cache_bytes;
	struct block cache[CACHE_BLOCKS];
	char names[GOPCLNTAB_MAX_FRAMES][NAME_MAX_LEN]; /* of the last lookup */
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

/* --- reading: memory in place, or the file through the block cache ------------------- */

static const uint8_t *file_block(struct gopclntab *t, uint64_t no, size_t *ret_valid)
{
	struct block *b = &t->cache[no % CACHE_BLOCKS];
	ssize_t n;

	if (b->no != no) {
		if (!b->data) {
			b->data = malloc(BLOCK_SIZE);
			if (!b->data)
				return NULL;
			t->cache_bytes += BLOCK_SIZE;
		}
		n = pread(t->fd, b->data, BLOCK_SIZE, (off_t)(no * BLOCK_SIZE));
		b->no = n > 0 ? no : NO_BLOCK;
		if (n <= 0)
			return NULL;
		b->valid = (size_t)n;
	}
	*ret_valid = b->valid;
	return b->data;
}

/* Bytes at off of s: a pointer and how many follow it (>= 1), valid until the next read. */
static const uint8_t *span(struct gopclntab *t, const struct source *s, uint64_t off,
			   size_t *ret_avail)
{
	uint64_t abs = s->base + off;
	const uint8_t *b;
	size_t valid, in = abs % BLOCK_SIZE;

	if (off >= s->len)
		return NULL;
	if (s->mem) {
		*ret_avail = s->len - off;
		return s->mem + off;
	}
	b = file_block(t, abs / BLOCK_SIZE, &valid);
	if (!b || in >= valid)
		return NULL;
	*ret_avail = valid - in < s->len - off ? valid - in : s->len - off;
	return b + in;
}

/* len bytes at off of s into buf: 0 or -EINVAL (past the end, unreadable). */
static int get(struct gopclntab *t, const struct source *s, uint64_t off, void *buf, size_t len)
{
	uint8_t *out = buf;

	while (len) {
		size_t avail;
		const uint8_t *p = span(t, s, off, &avail);

		if (!p)
			return -EINVAL;
		if (avail > len)
			avail = len;
		memcpy(out, p, avail);
		out += avail;
		off += avail;
		len -= avail;
	}
	return 0;
}

static int get_uint(struct gopclntab *t, const struct source *s, uint64_t off, unsigned size,
		    uint64_t *ret)
{
	uint8_t b[8];

	if (get(t, s, off, b, size))
		return -EINVAL;
	*ret = rd(b, size);
	return 0;
}

/* File offset (in the image) of len bytes at vaddr, or NOWHERE. */
static uint64_t image_at(const struct go_image *img, uint64_t vaddr, size_t len)
{
	for (size_t i = 0; i < img->nsegs; i++) {
		uint64_t start = img->segs[i].vaddr, filesz = img->segs[i].filesz;

		if (vaddr < start || vaddr - start >= filesz || filesz - (vaddr - start) < len)
			continue;
		if (img->segs[i].offset + (vaddr - start) + len > img->size)
			return NOWHERE;
		return img->segs[i].offset + (vaddr - start);
	}
	return NOWHERE;
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
static int region(const struct gopclntab *t, uint64_t off, uint64_t *ret, uint64_t *ret_len)
{
	if (off >= t->tab.len)
		return -EINVAL;
	*ret = off;
	*ret_len = t->tab.len - off;
	return 0;
}

static int parse_header(struct gopclntab *t)
{
	uint8_t h[8 + 8 * 8];
	unsigned ps;
	int err;

	if (t->tab.len < 16 ||
	    get(t, &t->tab, 0, h, t->tab.len < sizeof(h) ? t->tab.len : sizeof(h)))
		return -ENOENT;
	if (h[4] || h[5] || (version_of(rd32(h), &t->version)))
		return -ENOENT;
	t->quantum = h[6];
	t->ptrsize = ps = h[7];
	if ((ps != 4 && ps != 8) || (t->quantum != 1 && t->quantum != 2 && t->quantum != 4))
		return -ENOENT;
	if (t->tab.len < 8 + 8 * (size_t)ps)
		return -EINVAL;
	t->nfunc = rd(h + 8, ps);
	if (t->version == GOPCLNTAB_V12) {
		/* Names, ftab and _func records are all relative to the table's start. */
		t->funcnames = t->pctab = 0;
		t->funcnames_len = t->pctab_len = t->tab.len;
		t->ftab_entry = 2 * ps;
		t->pcln = 8 + ps;
		t->pcln_len = t->tab.len - 8 - ps;
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

/* Entry i of the table's own ftab (open only: lookups use the heap copy). */
static int ftab_raw(struct gopclntab *t, uint64_t i, uint64_t *ret_pc, uint64_t *ret_rec)
{
	uint8_t e[16];

	if (get(t, &t->tab, t->pcln + i * t->ftab_entry, e, t->ftab_entry))
		return -EINVAL;
	if (t->version >= GOPCLNTAB_V118) {
		*ret_pc = t->text_start + rd32(e);
		*ret_rec = rd32(e + 4);
	} else {
		*ret_pc = rd(e, t->ptrsize);
		*ret_rec = rd(e + t->ptrsize, t->ptrsize);
	}
	return 0;
}

/* The heap copy: 8 bytes a function (text and table under 4 GiB, as Go's linker makes them). */
static int copy_ftab(struct gopclntab *t)
{
	uint64_t pc, rec, prev = 0;

	t->ftab = malloc((t->nfunc + 1) * sizeof(*t->ftab));
	if (!t->ftab)
		return -ENOMEM;
	for (uint64_t i = 0; i <= t->nfunc; i++) {
		if (ftab_raw(t, i, &pc, &rec))
			return -EINVAL;
		if (!i)
			t->pc_base = prev = pc;
		if (pc < prev || pc - t->pc_base > UINT32_MAX || rec > UINT32_MAX)
			return -EINVAL; /* not sorted: binary search would miss */
		t->ftab[i] =
		    (struct ftab_slot){(uint32_t)(pc - t->pc_base), (uint32_t)rec, NAME_NONE};
		prev = pc;
	}
	return 0;
}

static uint64_t entry_pc(const struct gopclntab *t, uint64_t i)
{
	return t->pc_base + t->ftab[i].pc;
}

/* The table offset of function i's record with need bytes in it, or NOWHERE. */
static uint64_t record_at(const struct gopclntab *t, uint64_t off, size_t need)
{
	/* 1.2 counts from the table's start, later ones from pcln. */
	if (t->version == GOPCLNTAB_V12)
		return off + need <= t->tab.len ? off : NOWHERE;
	return off + need <= t->pcln_len ? t->pcln + off : NOWHERE;
}

static uint64_t func_record(const struct gopclntab *t, uint64_t i, size_t need)
{
	return record_at(t, t->ftab[i].rec, need);
}

/* Field offsets inside a _func record. */
static size_t func_entry_size(const struct gopclntab *t)
{
	return t->version >= GOPCLNTAB_V118 ? 4 : t->ptrsize;
}

/* The name at nameoff, copied into out (NAME_MAX_LEN bytes), or NULL. */
static const char *name_at(struct gopclntab *t, uint64_t nameoff, char *out)
{
	uint64_t off = t->funcnames + nameoff, end = t->funcnames + t->funcnames_len;
	size_t n = 0;

	if (nameoff >= t->funcnames_len)
		return NULL;
	while (off < end) {
		size_t avail, take;
		const uint8_t *p = span(t, &t->tab, off, &avail), *nul;

		if (!p)
			return NULL;
		if (avail > end - off)
			avail = (size_t)(end - off);
		nul = memchr(p, '\0', avail);
		take = nul ? (size_t)(nul - p) : avail;
		if (take > NAME_MAX_LEN - 1 - n) {
			take = NAME_MAX_LEN - 1 - n;
			nul = p; /* cut */
		}
		memcpy(out + n, p, take);
		n += take;
		if (nul) {
			out[n] = '\0';
			return n ? out : NULL;
		}
		off += avail;
	}
	return NULL;
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

	if (!t->nfunc || pc < entry_pc(t, 0) || pc >= entry_pc(t, t->nfunc))
		return -1;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (entry_pc(t, mid) <= pc)
			lo = mid;
		else
			hi = mid;
	}
	return (int64_t)lo;
}

/* --- pcvalue tables and the inline tree ---------------------------------------------- */

/* Reads the pc-value tables byte by byte without copying them. */
struct cursor {
	struct gopclntab *t;
	uint64_t off;
	const uint8_t *p;
	size_t avail;
};

static int next_byte(struct cursor *c, uint8_t *ret)
{
	if (!c->avail && !(c->p = span(c->t, &c->t->tab, c->off, &c->avail)))
		return -EINVAL;
	*ret = *c->p++;
	c->avail--;
	c->off++;
	return 0;
}

static int read_uvarint(struct cursor *c, uint32_t *ret)
{
	uint32_t v = 0;
	uint8_t b;

	for (unsigned shift = 0; shift < 35 && !next_byte(c, &b); shift += 7) {
		v |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return -EINVAL;
}

/* Value of the pc-value table at off for target (entry: the function's first pc), or -1. */
static int32_t pcvalue(struct gopclntab *t, uint32_t off, uint64_t entry, uint64_t target)
{
	struct cursor c = {.t = t, .off = t->pctab + off};
	uint64_t pc = entry;
	int32_t val = -1;
	bool first = true;

	if (!off || off >= t->pctab_len)
		return -1;
	for (;;) {
		uint32_t uv, pcdelta;

		if (read_uvarint(&c, &uv) || (uv == 0 && !first))
			return -1;
		val += (uv & 1) ? ~(int32_t)(uv >> 1) : (int32_t)(uv >> 1);
		if (read_uvarint(&c, &pcdelta))
			return -1;
		pc += (uint64_t)pcdelta * t->quantum;
		first = false;
		if (target < pc)
			return val;
	}
}

/* len bytes at table offset off lie inside the records (a damaged table must not read past
 * its file). */
static bool in_pcln(const struct gopclntab *t, uint64_t off, size_t len)
{
	return off >= t->pcln && off - t->pcln <= t->pcln_len &&
	       t->pcln_len - (off - t->pcln) >= len;
}

/* Address of table offset off as the runtime sees it, modulo 8 (the table is aligned). */
static uint64_t tab_addr(const struct gopclntab *t, uint64_t off)
{
	return t->tab.mem ? (uint64_t)(uintptr_t)(t->tab.mem + off) : t->tab.base + off;
}

/* The image offset of the inline tree of the record at rec, or NOWHERE (none, or its base
 * unknown). */
static uint64_t inline_tree(struct gopclntab *t, uint64_t rec, uint32_t npcdata, uint8_t nfuncdata)
{
	uint64_t fd_off = rec + pcdata_off(t) + 4 * (uint64_t)npcdata, v;

	if (nfuncdata <= FUNCDATA_INL_TREE)
		return NOWHERE;
	if (t->version == GOPCLNTAB_V116) {
		/* Pointers, aligned to the pointer size at run time (the table is aligned). */
		if (t->ptrsize == 8 && (tab_addr(t, fd_off) & 4))
			fd_off += 4;
		if (!in_pcln(t, fd_off, (FUNCDATA_INL_TREE + 1) * t->ptrsize) ||
		    get_uint(t, &t->tab, fd_off + FUNCDATA_INL_TREE * t->ptrsize, t->ptrsize, &v))
			return NOWHERE;
		return v ? image_at(&t->img, v, INLINED_CALL_SIZE_116) : NOWHERE;
	}
	if (!t->gofunc_vaddr || !in_pcln(t, fd_off, 4 * (FUNCDATA_INL_TREE + 1)) ||
	    get_uint(t, &t->tab, fd_off + 4 * FUNCDATA_INL_TREE, 4, &v) || v == FUNCDATA_NONE)
		return NOWHERE;
	return image_at(&t->img, t->gofunc_vaddr + v, INLINED_CALL_SIZE_120);
}

/* Appends the inlined calls at pc, innermost first; returns how many were added. f: the
 * record's fixed fields, rec: its table offset. */
static size_t inlined_names(struct gopclntab *t, const uint8_t *f, uint64_t rec, uint64_t entry,
			    uint64_t pc, const char **ret, size_t max)
{
	uint32_t npcdata = rd32(f + npcdata_off(t));
	size_t fixed = pcdata_off(t), n = 0;
	uint8_t nfuncdata;
	size_t call_size =
	    t->version >= GOPCLNTAB_V120 ? INLINED_CALL_SIZE_120 : INLINED_CALL_SIZE_116;
	size_t name_off = t->version >= GOPCLNTAB_V120 ? 4 : 12;
	size_t parent_off = t->version >= GOPCLNTAB_V120 ? 8 : 16;
	uint64_t tree, table;

	if (fixed < 1 || fixed > RECORD_MAX)
		return 0; /* 1.2: no pcdata */
	nfuncdata = f[fixed - 1];
	if (npcdata <= PCDATA_INL_TREE_INDEX || npcdata > 1024 ||
	    !in_pcln(t, rec + fixed, 4 * (size_t)npcdata))
		return 0;
	tree = inline_tree(t, rec, npcdata, nfuncdata);
	if (tree == NOWHERE ||
	    get_uint(t, &t->tab, rec + fixed + 4 * PCDATA_INL_TREE_INDEX, 4, &table))
		return 0;
	for (int steps = 0; steps < MAX_INLINE_STEPS && n < max; steps++) {
		int32_t ix = pcvalue(t, (uint32_t)table, entry, pc);
		uint8_t call[INLINED_CALL_SIZE_116];
		const char *name;

		/* The tree is as long as its largest index: check it is still in the file. */
		if (ix < 0 || get(t, &t->image, tree + (uint64_t)ix * call_size, call, call_size))
			break;
		name = name_at(t, rd32(call + name_off), t->names[n]);
		if (name)
			ret[n++] = name;
		/* The caller's frame: the pc of the call in the outer function, looked up again
		 * (1.20 dropped the parent index; parentPc works for every version). */
		pc = entry + (uint64_t)(int32_t)rd32(call + parent_off);
	}
	return n;
}

/* Each function's name offset and whether it inlines, read once: a lookup then reads the
 * record only for a function with an inline tree (the record and its name are rarely in one
 * block: this halves the cache misses of a burst). Sequential: a few ms at 100k functions. */
static void index_records(struct gopclntab *t)
{
	size_t fixed = pcdata_off(t), min = record_min(t);
	uint8_t f[RECORD_MAX];

	t->indexed = true;
	for (uint64_t i = 0; i < t->nfunc; i++) {
		uint64_t rec = func_record(t, i, min), nameoff;
		uint32_t npcdata;

		if (rec == NOWHERE || get(t, &t->tab, rec, f, min))
			continue;
		nameoff = rd32(f + func_entry_size(t));
		if (nameoff >= NAME_NONE)
			continue;
		t->ftab[i].name = (uint32_t)nameoff;
		if (t->version == GOPCLNTAB_V12)
			continue;
		npcdata = rd32(f + npcdata_off(t));
		/* Most functions list funcdata past the inline tree's slot (ArgInfo): only a
		 * tree that is there counts. */
		if (npcdata > PCDATA_INL_TREE_INDEX && npcdata <= 1024 &&
		    inline_tree(t, rec, npcdata, f[fixed - 1]) != NOWHERE)
			t->ftab[i].name |= NAME_INLINES;
	}
}

size_t gopclntab__lookup(const struct gopclntab *ct, uint64_t vaddr, const char **ret_names,
			 size_t max)
{
	struct gopclntab *t = (struct gopclntab *)ct; /* the cache changes, the table does not */
	int64_t i = find_func(t, vaddr);
	uint8_t f[RECORD_MAX];
	const char *name;
	uint32_t slot;
	uint64_t rec;
	size_t n = 0;

	if (i < 0 || !max)
		return 0;
	if (max > GOPCLNTAB_MAX_FRAMES)
		max = GOPCLNTAB_MAX_FRAMES;
	if (!t->indexed)
		index_records(t);
	slot = t->ftab[i].name;
	if (slot == NAME_NONE)
		return 0;
	if (slot & NAME_INLINES) {
		rec = func_record(t, (uint64_t)i, record_min(t));
		if (rec != NOWHERE && !get(t, &t->tab, rec, f, record_min(t)))
			n = inlined_names(t, f, rec, entry_pc(t, (uint64_t)i), vaddr, ret_names,
					  max - 1);
	}
	name = name_at(t, slot & ~NAME_INLINES, t->names[n]);
	if (!name)
		return 0;
	ret_names[n++] = name;
	return n;
}

/* --- finding the table in an ELF file ------------------------------------------------ */

/* The first record's entry field equals the ftab's first entry (a table, not a match). */
static int check_first_record(struct gopclntab *t)
{
	unsigned size = (unsigned)func_entry_size(t);
	uint64_t pc, rec, a, b;

	if (ftab_raw(t, 0, &pc, &rec))
		return -EINVAL;
	rec = record_at(t, rec, record_min(t));
	if (rec == NOWHERE || get_uint(t, &t->tab, rec, size, &a) ||
	    get_uint(t, &t->tab, t->pcln, size, &b) || a != b)
		return -EINVAL;
	return 0;
}

struct gopclntab *gopclntab__open(const struct go_image *img, const uint8_t *tab, size_t tab_len,
				  uint64_t tab_vaddr, uint64_t gofunc_vaddr)
{
	struct gopclntab *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return NULL;
	t->fd = -1;
	for (size_t i = 0; i < CACHE_BLOCKS; i++)
		t->cache[i].no = NO_BLOCK;
	t->img = *img;
	t->tab = (struct source){.mem = tab, .len = tab_len};
	t->image = (struct source){.mem = img->data, .len = img->size};
	t->gofunc_vaddr = gofunc_vaddr;
	err = parse_header(t);
	/* The ftab and the first record must be in the table, the ftab sorted. */
	if (!err && (t->nfunc + 1 > t->pcln_len / t->ftab_entry || !t->nfunc))
		err = -EINVAL;
	if (!err)
		err = check_first_record(t);
	if (!err)
		err = copy_ftab(t);
	if (err) {
		gopclntab__free(t);
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
	uint64_t names_vaddr = tab_vaddr + t->funcnames;
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
			if (image_at(&t->img, gofunc, 1) != NOWHERE)
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

/* Reads go through the file from now on: the mapping at data can go. */
struct gopclntab *gopclntab__open_file(int fd, const void *data, size_t size)
{
	struct gopclntab *t = gopclntab__open_elf(data, size);
	int err;

	if (!t)
		return NULL;
	t->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (t->fd < 0) {
		err = errno;
		gopclntab__free(t);
		errno = err;
		return NULL;
	}
	t->tab.base = (uint64_t)(t->tab.mem - (const uint8_t *)data);
	t->tab.mem = t->image.mem = t->img.data = NULL;
	return t;
}

void gopclntab__free(struct gopclntab *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < CACHE_BLOCKS; i++)
		free(t->cache[i].data);
	if (t->fd >= 0)
		close(t->fd);
	free(t->ftab);
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
	return sizeof(*t) + (t->nfunc + 1) * sizeof(*t->ftab) + t->cache_bytes;
}

int gopclntab__has_inline(const struct gopclntab *t)
{
	return t->version == GOPCLNTAB_V116 || (t->version >= GOPCLNTAB_V118 && t->gofunc_vaddr);
}
