// SPDX-License-Identifier: Apache-2.0
/* libdw CFI -> unwind rows: every FDE's rows ([start, end) from dwarf_frame_info), compiled in
 * address order to the 12-byte rows the BPF unwinder reads and handed to a sink (cfi_rows.c
 * compacts them on the way). A small table is compiled once in memory; a big one (node, cc1)
 * is counted in a first pass and streamed in batches in a second, so a compile holds 8 bytes
 * an FDE, one batch and a bounded libdw cache whatever the size of the binary. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "unwind/cfi_compile.h"
#include "unwind/cfi_rows.h"
#include "symbolize/debug_file.h"
#include "unwind/eh_frame_image.h"
#include "unwind/go_rows.h"

#define DWARF_REG_RBP 6
#define DWARF_REG_RSP 7
#define DWARF_REG_RA 16
#define MAX_CIES 4096	     /* distinct CIEs remembered per file (libc has 1, big C++ a few) */
#define SIGFRAME_CFA_OFF 160 /* x86-64 rt_sigframe: saved rsp at sp + 160 */
/* A .gopclntab costs about this many times less to compile per byte than CFI through libdw
 * (the toolchain's compile: 4.3 MB in 25-40 ms; libc's 150 KB of .eh_frame: 7 ms). */
#define GO_TABLE_BYTES_PER_CFI_BYTE 8

struct cie_enc {
	Dwarf_Off offset;
	uint8_t fde_enc; /* DW_EH_PE_* encoding of the FDEs' initial location */
};

/* One FDE's code range, table-relative (the row format is 32-bit). */
struct fde_span {
	uint32_t lo, hi;
};

/* What one compile needs: the CIE encodings and FDE ranges of the section (8 bytes an FDE),
 * and the rows stage. */
struct compile_ctx {
	struct cfi_table *t;
	struct cfi_rows rows;
	struct cie_enc *cies;
	size_t n_cies;
	struct fde_span *spans;
	size_t n_spans, cap_spans;
	size_t walk_bad_entries; /* counted once by the section walk, before the passes */
	struct go_rows *go;	 /* a cgo binary's Go code, between the FDEs (go_rows.h) */
};

/* libdw keeps every FDE it has parsed until its Dwarf_CFI ends (~200 bytes an FDE, 15 MB for
 * node's 76k): the reader ends and reopens it every CFI_FDES_PER_READER FDEs. */
#define CFI_FDES_PER_READER 1024
/* A table up to this many rows is compiled once, in memory; a bigger one is counted in a
 * first pass and streamed to the sink in a second, so memory stays at one batch. */
#define CFI_ROWS_IN_MEMORY (64u << 10)

struct cfi_reader {
	Elf *elf;
	bool eh_frame; /* .eh_frame through dwarf_getcfi_elf, else .debug_frame */
	Dwarf *dw;     /* .debug_frame only: owns cfi */
	Dwarf_CFI *cfi;
	size_t fdes; /* compiled through this cfi */
};

/* --- ELF helpers ------------------------------------------------------------------------ */

static void build_id_hex(Elf *elf, char *buf, size_t len)
{
	const unsigned char *id;
	ssize_t n = dwelf_elf_gnu_build_id(elf, (const void **)&id);
	size_t w = 0;

	buf[0] = '\0';
	for (ssize_t i = 0; i < n && w + 3 <= len; i++, w += 2)
		snprintf(buf + w, 3, "%02x", id[i]);
}

static int read_segments(Elf *elf, struct cfi_table *t)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -EINVAL;
	for (size_t i = 0; i < n && t->n_segs < CFI_MAX_SEGMENTS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		t->segs[t->n_segs++] = (struct cfi_segment){ph.p_offset, ph.p_vaddr, ph.p_filesz};
	}
	return 0;
}

/* --- DW_EH_PE pointers ------------------------------------------------------------------- */

static int read_uleb(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
	uint64_t v = 0;
	int shift = 0;

	while (*p < end && shift < 64) {
		uint8_t b = *(*p)++;

		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return -EINVAL;
}

/* Reads one encoded pointer; pcrel is applied from section_addr + offset of the field. */
static int read_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t field_addr,
			uint64_t *ret)
{
	uint64_t v;
	int64_t s;
	size_t size;

	if (enc == DW_EH_PE_omit || (enc & DW_EH_PE_indirect))
		return -EINVAL;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		size = 8;
		break;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		size = 4;
		break;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		size = 2;
		break;
	case DW_EH_PE_uleb128:
		if (read_uleb(p, end, &v))
			return -EINVAL;
		goto apply;
	default:
		return -EINVAL;
	}
	if ((size_t)(end - *p) < size)
		return -EINVAL;
	if (size == 8) {
		memcpy(&v, *p, 8);
	} else if (size == 4) {
		uint32_t u;

		memcpy(&u, *p, 4);
		s = (enc & 0x0f) == DW_EH_PE_sdata4 ? (int32_t)u : (int64_t)u;
		v = (uint64_t)s;
	} else {
		uint16_t u;

		memcpy(&u, *p, 2);
		s = (enc & 0x0f) == DW_EH_PE_sdata2 ? (int16_t)u : (int64_t)u;
		v = (uint64_t)s;
	}
	*p += size;
apply:
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		v += field_addr;
		break;
	default: /* datarel, textrel, funcrel: not used for FDE locations on x86-64 */
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

/* The FDE pointer encoding from a CIE's augmentation ("zR", "zPLR", ...). */
static uint8_t cie_fde_encoding(const Dwarf_CIE *cie, bool eh_frame)
{
	const uint8_t *p = cie->augmentation_data;
	const uint8_t *end = p ? p + cie->augmentation_data_size : NULL;
	const char *aug = cie->augmentation;
	uint64_t skip;

	if (!eh_frame || !aug || aug[0] != 'z' || !p)
		return DW_EH_PE_absptr;
	for (aug++; *aug; aug++) {
		switch (*aug) {
		case 'R':
			return p < end ? *p : DW_EH_PE_absptr;
		case 'L':
			p++;
			break;
		case 'P':
			if (p >= end)
				return DW_EH_PE_omit;
			uint8_t enc = *p++;

			if (read_encoded(&p, end, enc & 0x0f, 0, &skip)) /* no pcrel: just skip */
				return DW_EH_PE_omit;
			break;
		case 'S':
		case 'B':
		case 'G':
			break;
		default:
			return DW_EH_PE_omit;
		}
	}
	return DW_EH_PE_absptr;
}

/* --- rows ------------------------------------------------------------------------------- */

static bool is_breg(const Dwarf_Op *op, int *ret_reg, int64_t *ret_off)
{
	if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
		*ret_reg = op->atom - DW_OP_breg0;
		*ret_off = (int64_t)op->number;
		return true;
	}
	if (op->atom == DW_OP_bregx) {
		*ret_reg = (int)op->number;
		*ret_off = (int64_t)op->number2;
		return true;
	}
	return false;
}

/* rsp + 8 + ((rip & 15) >= N) << 3: the two PLT expressions (N = 11 for .plt, 10 .plt.sec). */
static bool is_plt_expression(const Dwarf_Op *ops, size_t n, int *ret_threshold)
{
	static const uint8_t tail[] = {DW_OP_lit15, DW_OP_and, 0,	  DW_OP_ge,
				       DW_OP_lit3,  DW_OP_shl, DW_OP_plus};
	int reg;
	int64_t off;

	if (n != 9 || !is_breg(&ops[0], &reg, &off) || reg != DWARF_REG_RSP || off != 8 ||
	    !is_breg(&ops[1], &reg, &off) || reg != DWARF_REG_RA || off != 0)
		return false;
	for (size_t i = 0; i < sizeof(tail); i++)
		if (tail[i] && ops[2 + i].atom != tail[i])
			return false;
	if (ops[4].atom != DW_OP_lit11 && ops[4].atom != DW_OP_lit10)
		return false;
	*ret_threshold = ops[4].atom - DW_OP_lit0;
	return true;
}

static void cannot(struct unwind_row *row, enum unwind_cannot why)
{
	row->cfa_type = UNWIND_ROW_CANNOT;
	row->cfa_off = why;
	row->rbp_type = UNWIND_RBP_SAME;
	row->rbp_off = 0;
}

static void compile_cfa(Dwarf_Frame *frame, struct unwind_row *row)
{
	Dwarf_Op *ops;
	size_t n = 0;
	int reg, threshold;
	int64_t off;

	if (dwarf_frame_cfa(frame, &ops, &n) || !n)
		return cannot(row, UNWIND_CANNOT_CFA_EXPRESSION);
	if (n == 1 && is_breg(&ops[0], &reg, &off)) {
		if (reg != DWARF_REG_RSP && reg != DWARF_REG_RBP)
			return cannot(row, UNWIND_CANNOT_CFA_REGISTER);
		row->cfa_type = reg == DWARF_REG_RSP ? UNWIND_CFA_RSP : UNWIND_CFA_RBP;
	} else if (n == 2 && is_breg(&ops[0], &reg, &off) && ops[1].atom == DW_OP_deref) {
		if (reg != DWARF_REG_RSP && reg != DWARF_REG_RBP)
			return cannot(row, UNWIND_CANNOT_CFA_REGISTER);
		row->cfa_type = reg == DWARF_REG_RSP ? UNWIND_CFA_DEREF_RSP : UNWIND_CFA_DEREF_RBP;
	} else if (is_plt_expression(ops, n, &threshold)) {
		row->cfa_type = UNWIND_CFA_PLT;
		off = threshold;
	} else {
		return cannot(row, UNWIND_CANNOT_CFA_EXPRESSION);
	}
	if (off < INT32_MIN || off > INT32_MAX)
		return cannot(row, UNWIND_CANNOT_RANGE);
	row->cfa_off = (int32_t)off;
}

/* Offset N of an "at CFA + N" rule; false for any other rule. */
static bool at_cfa_offset(const Dwarf_Op *ops, size_t n, int64_t *ret_off)
{
	if (n == 1 && ops[0].atom == DW_OP_call_frame_cfa) {
		*ret_off = 0;
		return true;
	}
	if (n == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst) {
		*ret_off = (int64_t)ops[1].number;
		return true;
	}
	return false;
}

/* Return address and rbp rules; the CFA rule is already in row. */
static void compile_registers(Dwarf_Frame *frame, struct unwind_row *row)
{
	Dwarf_Op mem[3], *ops;
	size_t n;
	int64_t off;

	if (dwarf_frame_register(frame, DWARF_REG_RA, mem, &ops, &n))
		return cannot(row, UNWIND_CANNOT_RA_RULE);
	if (n == 0 && ops == mem) { /* undefined: nothing called this frame */
		row->cfa_type = UNWIND_ROW_STOP;
		row->cfa_off = 0;
		return;
	}
	if (row->cfa_type == UNWIND_ROW_CANNOT)
		return;
	if (!at_cfa_offset(ops, n, &off) || off != -8)
		return cannot(row, UNWIND_CANNOT_RA_RULE);
	if (dwarf_frame_register(frame, DWARF_REG_RBP, mem, &ops, &n))
		return cannot(row, UNWIND_CANNOT_RBP_RULE);
	if (n == 0) {
		row->rbp_type = ops ? UNWIND_RBP_UNDEFINED : UNWIND_RBP_SAME;
		return;
	}
	if (!at_cfa_offset(ops, n, &off))
		return cannot(row, UNWIND_CANNOT_RBP_RULE);
	if (off < INT16_MIN || off > INT16_MAX)
		return cannot(row, UNWIND_CANNOT_RANGE);
	row->rbp_type = UNWIND_RBP_AT_CFA;
	row->rbp_off = (int16_t)off;
}

/* The signal trampoline's frame (CIE augmentation 'S'): the kernel's rt_sigframe layout is
 * read directly by BPF; its CFI must be the standard CFA = *(rsp + 160). */
static void compile_signal(Dwarf_Frame *frame, struct unwind_row *row)
{
	Dwarf_Op *ops;
	size_t n = 0;
	int reg;
	int64_t off;

	if (dwarf_frame_cfa(frame, &ops, &n) || n != 2 || !is_breg(&ops[0], &reg, &off) ||
	    reg != DWARF_REG_RSP || off != SIGFRAME_CFA_OFF || ops[1].atom != DW_OP_deref)
		return cannot(row, UNWIND_CANNOT_CFA_EXPRESSION);
	row->cfa_type = UNWIND_ROW_SIGNAL;
}

static int push_row(struct compile_ctx *c, uint64_t pc, const struct unwind_row *row)
{
	if (pc > UINT32_MAX)
		return -E2BIG; /* code above 4 GiB: not in the 32-bit row format */
	return cfi_rows__push(&c->rows, (uint32_t)pc, row);
}

/* Every row of the FDE covering [lo, hi). */
static int compile_fde(struct compile_ctx *c, Dwarf_CFI *cfi, uint64_t lo, uint64_t hi)
{
	uint64_t pc = lo;
	int ret;

	while (pc < hi) {
		struct unwind_row row = {0};
		Dwarf_Frame *frame;
		Dwarf_Addr start, end;
		bool signal = false;

		if (dwarf_cfi_addrframe(cfi, pc, &frame)) {
			c->t->bad_entries++;
			return 0;
		}
		if (dwarf_frame_info(frame, &start, &end, &signal) < 0) {
			free(frame);
			c->t->bad_entries++;
			return 0;
		}
		if (signal)
			compile_signal(frame, &row);
		else
			compile_cfa(frame, &row);
		if (row.cfa_type != UNWIND_ROW_SIGNAL)
			compile_registers(frame, &row);
		free(frame);
		if (row.cfa_type == UNWIND_ROW_CANNOT)
			c->t->cannot[row.cfa_off]++;
		ret = push_row(c, pc, &row);
		if (ret)
			return ret;
		if (end <= pc)
			break;
		pc = end;
	}
	return push_row(
	    c, hi, &(struct unwind_row){.cfa_type = UNWIND_ROW_GAP, .cfa_off = CFI_ROWS_FDE_END});
}

static int remember_cie(struct compile_ctx *c, Dwarf_Off offset, uint8_t enc)
{
	if (!c->cies) {
		c->cies = calloc(MAX_CIES, sizeof(*c->cies));
		if (!c->cies)
			return -ENOMEM;
	}
	if (c->n_cies < MAX_CIES)
		c->cies[c->n_cies++] = (struct cie_enc){offset, enc};
	return 0;
}

static int find_cie(const struct compile_ctx *c, Dwarf_Off offset)
{
	for (size_t i = c->n_cies; i-- > 0;)
		if (c->cies[i].offset == offset)
			return c->cies[i].fde_enc;
	return -1;
}

static int remember_span(struct compile_ctx *c, uint64_t lo, uint64_t hi)
{
	if (hi > UINT32_MAX)
		return -E2BIG; /* code above 4 GiB: not in the 32-bit row format */
	if (c->n_spans == c->cap_spans) {
		size_t cap = c->cap_spans ? 2 * c->cap_spans : 1024;
		void *tmp = realloc(c->spans, cap * sizeof(*c->spans));

		if (!tmp)
			return -ENOMEM;
		c->spans = tmp;
		c->cap_spans = cap;
	}
	c->spans[c->n_spans++] = (struct fde_span){(uint32_t)lo, (uint32_t)hi};
	return 0;
}

/* An FDE of the section walk: its range is remembered (field_addr: where its initial
 * location is, for pc-relative encodings). */
static int walk_fde(struct compile_ctx *c, const Dwarf_CFI_Entry *e, uint64_t field_addr)
{
	const uint8_t *p = e->fde.start, *end = e->fde.end;
	uint64_t lo, range;
	int enc = find_cie(c, e->fde.CIE_pointer);
	if (enc < 0 || enc == DW_EH_PE_omit || read_encoded(&p, end, enc, field_addr, &lo) ||
	    read_encoded(&p, end, enc & 0x0f, 0, &range)) {
		c->walk_bad_entries++;
		return 0;
	}
	if (!range)
		return 0;
	c->t->n_fdes++;
	return remember_span(c, lo, lo + range);
}

/* Walks the section's CIEs and FDEs, remembering each FDE's range. */
static int walk_section(struct compile_ctx *c, Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
			bool eh_frame)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	Dwarf_Off off = 0, next;
	Elf_Data *data;
	int ret;

	c->n_spans = c->n_cies = 0;
	if (sh->sh_size > CFI_MAX_SECTION_BYTES)
		return -E2BIG; /* bounded compile time for huge binaries */
	if ((sh->sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
		return -EINVAL; /* Go compresses .debug_frame */
	data = elf_getdata(scn, NULL);
	if (!data || !ident)
		return -EINVAL;
	for (;;) {
		Dwarf_CFI_Entry e;
		int status = dwarf_next_cfi(ident, data, eh_frame, off, &next, &e);

		if (status > 0)
			break;
		if (status < 0) {
			c->walk_bad_entries++;
			if (next <= off || next == (Dwarf_Off)-1)
				break; /* cannot skip it safely */
			off = next;
			continue;
		}
		if (dwarf_cfi_cie_p(&e))
			ret = remember_cie(c, off, cie_fde_encoding(&e.cie, eh_frame));
		else
			ret = walk_fde(c, &e,
				       sh->sh_addr +
					   (uint64_t)(e.fde.start - (const uint8_t *)data->d_buf));
		if (ret)
			return ret;
		off = next;
	}
	return 0;
}

static int by_lo(const void *a, const void *b)
{
	const struct fde_span *x = a, *y = b;

	return x->lo != y->lo ? (x->lo < y->lo ? -1 : 1) : 0;
}

static void cfi_reader_close(struct cfi_reader *r)
{
	if (r->dw)
		dwarf_end(r->dw); /* also releases cfi */
	else if (r->cfi)
		dwarf_cfi_end(r->cfi);
	r->dw = NULL;
	r->cfi = NULL;
}

static int cfi_reader_open(struct cfi_reader *r)
{
	r->fdes = 0;
	if (r->eh_frame) {
		r->cfi = dwarf_getcfi_elf(r->elf);
		return r->cfi ? 0 : -EINVAL;
	}
	r->dw = dwarf_begin_elf(r->elf, DWARF_C_READ, NULL);
	r->cfi = r->dw ? dwarf_getcfi(r->dw) : NULL;
	if (!r->cfi) {
		cfi_reader_close(r);
		return -EINVAL;
	}
	return 0;
}

/* The reader's cfi for one more FDE, reopened when its cache has grown. */
static Dwarf_CFI *cfi_reader_next_fde(struct cfi_reader *r)
{
	if (r->fdes++ < CFI_FDES_PER_READER)
		return r->cfi;
	cfi_reader_close(r);
	return cfi_reader_open(r) ? NULL : (r->fdes = 1, r->cfi);
}

/* Compiles every FDE in address order into the rows stage. An FDE that starts inside the one
 * before it (overlapping CFI: never emitted by GCC or LLVM) is skipped and counted as bad. */
static int compile_pass(struct compile_ctx *c, struct cfi_reader *r, enum cfi_rows_mode mode,
			size_t limit)
{
	uint32_t floor = 0;
	int ret;

	cfi_rows__reset(&c->rows, mode, limit);
	c->t->bad_entries = c->walk_bad_entries;
	memset(c->t->cannot, 0, sizeof(c->t->cannot));
	cfi_reader_close(r);
	ret = cfi_reader_open(r);
	if (c->go)
		go_rows__rewind(c->go, c->t, &c->rows);
	for (size_t i = 0; !ret && i < c->n_spans; i++) {
		const struct fde_span *sp = &c->spans[i];
		uint64_t go_floor = floor;
		Dwarf_CFI *cfi;

		if (c->go && (ret = go_rows__push_until(c->go, sp->lo, &go_floor)))
			break;
		floor = go_floor > floor ? (uint32_t)go_floor : floor;
		if (sp->lo < floor) {
			c->t->bad_entries++;
			continue;
		}
		cfi = cfi_reader_next_fde(r);
		ret = cfi ? compile_fde(c, cfi, sp->lo, sp->hi) : -EINVAL;
		floor = sp->hi;
	}
	if (!ret && c->go) {
		uint64_t go_floor = floor;

		ret = go_rows__push_until(c->go, UINT64_MAX, &go_floor);
	}
	return ret ? ret : cfi_rows__finish(&c->rows);
}

/* The rows of one section: in memory when they are few, else counted, then streamed. */
static int compile_section(struct compile_ctx *c, Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
			   bool eh_frame, const struct cfi_row_sink *sink)
{
	struct cfi_reader r = {.elf = elf, .eh_frame = eh_frame};
	size_t in_memory = sink->in_memory_max ? sink->in_memory_max : CFI_ROWS_IN_MEMORY;
	int ret = walk_section(c, elf, scn, sh, eh_frame);

	if (ret)
		return ret;
	c->t->bad_entries = c->walk_bad_entries;
	if (!c->n_spans)
		return 0;
	qsort(c->spans, c->n_spans, sizeof(*c->spans), by_lo);
	ret = compile_pass(c, &r, CFI_ROWS_COLLECT, in_memory);
	if (!ret) {
		c->t->n_rows = c->rows.emitted;
		ret = sink->begin(sink->ctx, c->t);
		if (!ret)
			ret = sink->write(sink->ctx, 0, c->rows.rows, c->rows.n);
	} else if (ret == -EOVERFLOW) {
		ret = compile_pass(c, &r, CFI_ROWS_COUNT, CFI_MAX_ROWS);
		c->t->n_rows = c->rows.emitted;
		if (!ret)
			ret = sink->begin(sink->ctx, c->t);
		c->rows.ctx = sink->ctx;
		c->rows.write = sink->write;
		if (!ret)
			ret = compile_pass(c, &r, CFI_ROWS_STREAM, c->t->n_rows);
		if (!ret && c->rows.emitted != c->t->n_rows)
			ret = -EIO; /* the second pass must see what the first counted */
	}
	cfi_reader_close(&r);
	return ret;
}

/* .debug_frame of elf (or of a separate debug file), through dwarf_getcfi. */
static int compile_debug_frame(struct compile_ctx *c, Elf *elf, const struct cfi_row_sink *sink)
{
	GElf_Shdr sh;
	Elf_Scn *scn = elf_section_named(elf, ".debug_frame", &sh);

	if (!scn)
		return -ENOENT;
	c->t->source = CFI_SOURCE_DEBUG_FRAME;
	return compile_section(c, elf, scn, &sh, false, sink);
}

static int compile_debug_file(struct compile_ctx *c, const struct cfi_row_sink *sink)
{
	/* The symboliser's lookup (debug_file.h): one place knows where debug files live. */
	struct debug_file_query q = {.build_id = c->t->build_id};
	Elf *elf;
	int fd, ret;

	fd = debug_file__open(&q, NULL);
	if (fd < 0)
		return -ENOENT;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	ret = elf ? compile_debug_frame(c, elf, sink) : -EINVAL;
	if (elf)
		elf_end(elf);
	close(fd);
	return ret;
}

/* .eh_frame; from the header-first image when libdw would not see the search table. */
static int compile_eh_frame(struct compile_ctx *c, Elf *elf, int fd,
			    const struct cfi_row_sink *sink)
{
	struct eh_frame_image img = {0};
	GElf_Shdr sh;
	Elf_Scn *scn;
	int ret;

	if (fd >= 0 && eh_frame_image__needed(elf) &&
	    !eh_frame_image__open(elf, fd, CFI_MAX_SECTION_BYTES, &img))
		elf = img.elf;
	scn = elf_section_named(elf, ".eh_frame", &sh);
	ret = scn ? compile_section(c, elf, scn, &sh, true, sink) : -EINVAL;
	eh_frame_image__close(&img);
	return ret;
}

/* .eh_frame, else Go's pcsp tables, else .debug_frame here or in the build-id debug file: the
 * first with an FDE.
 * fd: the file elf reads (-1 for an image in memory). */
static int compile_elf(Elf *elf, int fd, struct cfi_table *t, const struct cfi_row_sink *sink)
{
	struct compile_ctx c = {.t = t};
	GElf_Shdr sh;
	Elf_Scn *scn;
	int ret;

	if (elf_kind(elf) != ELF_K_ELF)
		return -ENOEXEC;
	build_id_hex(elf, t->build_id, sizeof(t->build_id));
	ret = read_segments(elf, t);
	if (ret)
		return ret;
	scn = elf_section_named(elf, ".eh_frame", &sh);
	if (!scn && fd >= 0) {
		/* Go without .eh_frame (cgo's has one): its pcsp tables exist even when stripped,
		 * and say more than its .debug_frame (rbp, outermost frames). */
		ret = go_rows__compile_fd(fd, t, sink);
		if (ret != -ENOENT)
			return ret;
	}
	if (scn) {
		t->source = CFI_SOURCE_EH_FRAME;
		/* a cgo binary: its FDEs cover the C code, the Go code's rows come from pcsp */
		c.go = fd >= 0 ? go_rows__open(fd) : NULL;
		ret = compile_eh_frame(&c, elf, fd, sink);
		go_rows__free(c.go);
		c.go = NULL;
	}
	if (!scn || (!ret && !c.n_spans)) {
		ret = compile_debug_frame(&c, elf, sink);
		if (ret == -ENOENT)
			ret = compile_debug_file(&c, sink);
	}
	if (!ret && !c.n_spans)
		ret = -ENOENT;
	if (ret == -ENOENT && t->bad_entries)
		ret = -EINVAL; /* there was CFI, none of it readable */
	cfi_rows__release(&c.rows);
	free(c.spans);
	free(c.cies);
	return ret;
}

static int compile_and_end(Elf *elf, int fd, struct cfi_table *t, const struct cfi_row_sink *sink)
{
	int ret;

	memset(t, 0, sizeof(*t));
	ret = compile_elf(elf, fd, t, sink);
	elf_end(elf);
	return ret;
}

static Elf *open_fd(int fd)
{
	return elf_version(EV_CURRENT) == EV_NONE ? NULL : elf_begin(fd, ELF_C_READ_MMAP, NULL);
}

/* The vDSO image of this process (the same the kernel maps into every process). */
static Elf *open_own_vdso(int *ret_err)
{
	const GElf_Ehdr *eh = (const GElf_Ehdr *)getauxval(AT_SYSINFO_EHDR);

	*ret_err = -ENOENT;
	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return NULL;
	*ret_err = -ENOEXEC;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	/* The image ends with its section headers; libelf does not write to it. */
	return elf_memory((char *)eh, eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize);
}

int cfi_compile_fd_to(int fd, struct cfi_table *t, const struct cfi_row_sink *sink)
{
	Elf *elf = open_fd(fd);

	return elf ? compile_and_end(elf, fd, t, sink) : -ENOEXEC;
}

int cfi_compile_own_vdso_to(struct cfi_table *t, const struct cfi_row_sink *sink)
{
	int err;
	Elf *elf = open_own_vdso(&err);

	return elf ? compile_and_end(elf, -1, t, sink) : err;
}

/* --- in-memory tables: a sink that keeps the rows --------------------------------------- */

struct row_vector {
	struct unwind_row *rows;
};

static int vector_begin(void *ctx, const struct cfi_table *header)
{
	struct row_vector *v = ctx;

	v->rows = malloc((header->n_rows ? header->n_rows : 1) * sizeof(*v->rows));
	return v->rows ? 0 : -ENOMEM;
}

static int vector_write(void *ctx, size_t first, const struct unwind_row *rows, size_t n)
{
	struct row_vector *v = ctx;

	memcpy(v->rows + first, rows, n * sizeof(*rows));
	return 0;
}

/* Runs compile into a new table that keeps its rows (fd: elf's file, or -1); NULL + errno. */
static struct cfi_table *compile_to_memory(Elf *elf, int fd, int err)
{
	struct cfi_table *t = calloc(1, sizeof(*t));
	struct row_vector v = {0};
	struct cfi_row_sink sink = {
	    .ctx = &v, .begin = vector_begin, .write = vector_write, .in_memory_max = CFI_MAX_ROWS};
	int ret = err;

	if (elf && t)
		ret = compile_and_end(elf, fd, t, &sink); /* ends elf */
	else if (elf)
		elf_end(elf);
	if (!t)
		ret = -ENOMEM;
	if (ret) {
		free(v.rows);
		free(t);
		errno = -ret;
		return NULL;
	}
	t->rows = v.rows;
	return t;
}

struct cfi_table *cfi_compile_fd(int fd)
{
	return compile_to_memory(open_fd(fd), fd, -ENOEXEC);
}

struct cfi_table *cfi_compile_memory(const void *image, size_t size)
{
	Elf *elf = elf_version(EV_CURRENT) == EV_NONE ? NULL : elf_memory((char *)image, size);

	return compile_to_memory(elf, -1, -ENOEXEC);
}

struct cfi_table *cfi_compile_own_vdso(void)
{
	int err;
	Elf *elf = open_own_vdso(&err);

	return compile_to_memory(elf, -1, err);
}

void cfi_table__free(struct cfi_table *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t);
}

uint64_t cfi_bytes_fd(int fd)
{
	Elf *elf = open_fd(fd);
	GElf_Shdr sh;
	uint64_t bytes = 0;

	if (!elf)
		return 0;
	if (elf_kind(elf) != ELF_K_ELF)
		bytes = 0;
	else if (elf_section_named(elf, ".eh_frame", &sh))
		bytes = sh.sh_size;
	else if (elf_section_named(elf, ".gopclntab", &sh) ||
		 elf_section_named(elf, ".data.rel.ro.gopclntab", &sh))
		bytes = sh.sh_size / GO_TABLE_BYTES_PER_CFI_BYTE; /* go_rows.c compiles it */
	else if (elf_section_named(elf, ".debug_frame", &sh))
		bytes = sh.sh_size;
	elf_end(elf);
	return bytes;
}

const struct unwind_row *cfi_table__lookup(const struct cfi_table *t, uint32_t pc)
{
	size_t lo = 0, hi = t->n_rows;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &t->rows[lo - 1] : NULL;
}

int cfi_table__offset_to_vaddr(const struct cfi_table *t, uint64_t file_offset, uint64_t *ret_vaddr)
{
	for (size_t i = 0; i < t->n_segs; i++) {
		const struct cfi_segment *seg = &t->segs[i];

		if (file_offset >= seg->offset && file_offset < seg->offset + seg->filesz) {
			*ret_vaddr = file_offset - seg->offset + seg->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}
