// SPDX-License-Identifier: Apache-2.0
/* libdw CFI -> unwind rows: every FDE's rows ([start, end) from dwarf_frame_info), compiled to
 * the 12-byte rows the BPF unwinder reads, sorted, gaps marked, identical neighbours merged. */
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

#include "cfi_compile.h"

#define DWARF_REG_RBP 6
#define DWARF_REG_RSP 7
#define DWARF_REG_RA 16
#define MAX_CIES 4096	     /* distinct CIEs remembered per file (libc has 1, big C++ a few) */
#define GAP_MIN_BYTES 16     /* smaller holes between FDEs are padding */
#define SIGFRAME_CFA_OFF 160 /* x86-64 rt_sigframe: saved rsp at sp + 160 */

struct cie_enc {
	Dwarf_Off offset;
	uint8_t fde_enc; /* DW_EH_PE_* encoding of the FDEs' initial location */
};

/* Growing row vector plus what one compile needs to remember. Rows hold ELF virtual
 * addresses (below 4 GiB: checked) until finish_rows(); each FDE ends with a weak GAP row
 * (cfa_off FDE_END) that a row starting at the same pc replaces. 12 bytes a row, no copy. */
struct compile_ctx {
	struct cfi_table *t;
	struct unwind_row *rows;
	size_t n, cap;
	struct cie_enc *cies;
	size_t n_cies;
};

#define FDE_END 1 /* cfa_off of a GAP row closing an FDE */

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

/* A section with contents, by name; NULL when absent or empty. */
static Elf_Scn *find_section(Elf *elf, const char *name, GElf_Shdr *ret_shdr)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, ret_shdr) || ret_shdr->sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(elf, shstrndx, ret_shdr->sh_name);
		if (n && !strcmp(n, name) && ret_shdr->sh_size)
			return scn;
	}
	return NULL;
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
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 4096;
		void *tmp;

		if (cap > CFI_MAX_ROWS + 1)
			return -E2BIG;
		tmp = realloc(c->rows, cap * sizeof(*c->rows));
		if (!tmp)
			return -ENOMEM;
		c->rows = tmp;
		c->cap = cap;
	}
	c->rows[c->n] = *row;
	c->rows[c->n].pc = (uint32_t)pc;
	c->n++;
	return 0;
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
	return push_row(c, hi,
			&(struct unwind_row){.cfa_type = UNWIND_ROW_GAP, .cfa_off = FDE_END});
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

/* Walks the section's CIEs and FDEs; each FDE's range is compiled row by row through cfi. */
static int compile_section(struct compile_ctx *c, Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
			   bool eh_frame, Dwarf_CFI *cfi)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	Dwarf_Off off = 0, next;
	Elf_Data *data;
	int ret;

	if (sh->sh_size > CFI_MAX_SECTION_BYTES)
		return -E2BIG; /* bounded compile time and memory for huge binaries */
	if ((sh->sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
		return -EINVAL; /* Go compresses .debug_frame */
	data = elf_getdata(scn, NULL);
	if (!data || !ident)
		return -EINVAL;
	for (;;) {
		Dwarf_CFI_Entry e;
		int r = dwarf_next_cfi(ident, data, eh_frame, off, &next, &e);

		if (r > 0)
			break;
		if (r < 0) {
			c->t->bad_entries++;
			if (next <= off || next == (Dwarf_Off)-1)
				break; /* cannot skip it safely */
			off = next;
			continue;
		}
		if (dwarf_cfi_cie_p(&e)) {
			ret = remember_cie(c, off, cie_fde_encoding(&e.cie, eh_frame));
			if (ret)
				return ret;
		} else {
			const uint8_t *p = e.fde.start, *end = e.fde.end;
			uint64_t field = sh->sh_addr + (uint64_t)(p - (const uint8_t *)data->d_buf);
			uint64_t lo, range;
			int enc = find_cie(c, e.fde.CIE_pointer);

			if (enc < 0 || enc == DW_EH_PE_omit ||
			    read_encoded(&p, end, enc, field, &lo) ||
			    read_encoded(&p, end, enc & 0x0f, 0, &range)) {
				c->t->bad_entries++;
			} else if (range) {
				c->t->n_fdes++;
				ret = compile_fde(c, cfi, lo, lo + range);
				if (ret)
					return ret;
			}
		}
		off = next;
	}
	return 0;
}

static bool is_fde_end(const struct unwind_row *r)
{
	return r->cfa_type == UNWIND_ROW_GAP && r->cfa_off == FDE_END;
}

/* By pc; at one pc an FDE's end marker first, so the row starting there replaces it. */
static int by_pc(const void *a, const void *b)
{
	const struct unwind_row *x = a, *y = b;

	if (x->pc != y->pc)
		return x->pc < y->pc ? -1 : 1;
	return is_fde_end(y) - is_fde_end(x);
}

static bool same_rule(const struct unwind_row *a, const struct unwind_row *b)
{
	return a->cfa_type == b->cfa_type && a->cfa_off == b->cfa_off &&
	       a->rbp_type == b->rbp_type && a->rbp_off == b->rbp_off;
}

/* Sorts, then compacts in place: an end marker stays only before a hole of GAP_MIN_BYTES or
 * more (smaller ones are alignment padding after a function, never executed, and the previous
 * row, usually "after ret", is right for it anyway), identical neighbours merge. */
static int finish_rows(struct compile_ctx *c)
{
	struct cfi_table *t = c->t;
	size_t n = 0;

	if (!c->n)
		return -ENOENT;
	qsort(c->rows, c->n, sizeof(*c->rows), by_pc);
	for (size_t i = 0; i < c->n; i++) {
		struct unwind_row row = c->rows[i];

		if (is_fde_end(&row)) {
			if (i + 1 < c->n && c->rows[i + 1].pc < row.pc + GAP_MIN_BYTES)
				continue;
			row.cfa_off = 0;
		}
		if (n && c->rows[n - 1].pc == row.pc)
			n--; /* overlapping FDEs: the later one wins */
		if (!n || !same_rule(&c->rows[n - 1], &row))
			c->rows[n++] = row;
	}
	t->vaddr_base = 0;
	t->rows = realloc(c->rows, n * sizeof(*c->rows)) ?: c->rows;
	c->rows = NULL;
	t->n_rows = n;
	return 0;
}

/* .debug_frame of elf (or of a separate debug file), through dwarf_getcfi. */
static int compile_debug_frame(struct compile_ctx *c, Elf *elf)
{
	GElf_Shdr sh;
	Elf_Scn *scn = find_section(elf, ".debug_frame", &sh);
	Dwarf *dw;
	Dwarf_CFI *cfi;
	int ret;

	if (!scn)
		return -ENOENT;
	dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!dw)
		return -EINVAL;
	cfi = dwarf_getcfi(dw);
	ret = cfi ? compile_section(c, elf, scn, &sh, false, cfi) : -EINVAL;
	dwarf_end(dw); /* also releases cfi */
	c->t->source = CFI_SOURCE_DEBUG_FRAME;
	return ret;
}

static int compile_debug_file(struct compile_ctx *c)
{
	const char *id = c->t->build_id;
	char path[320];
	Elf *elf;
	int fd, ret;

	if (strlen(id) < 3)
		return -ENOENT;
	snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug", id, id + 2);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ENOENT;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	ret = elf ? compile_debug_frame(c, elf) : -EINVAL;
	if (elf)
		elf_end(elf);
	close(fd);
	return ret;
}

static int compile_elf(Elf *elf, struct cfi_table *t)
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
	scn = find_section(elf, ".eh_frame", &sh);
	if (scn) {
		Dwarf_CFI *cfi = dwarf_getcfi_elf(elf);

		t->source = CFI_SOURCE_EH_FRAME;
		ret = cfi ? compile_section(&c, elf, scn, &sh, true, cfi) : -EINVAL;
		if (cfi)
			dwarf_cfi_end(cfi);
	}
	if (!scn || (!ret && !c.n)) {
		ret = compile_debug_frame(&c, elf);
		if (ret == -ENOENT)
			ret = compile_debug_file(&c);
	}
	if (!ret)
		ret = finish_rows(&c);
	if (ret == -ENOENT && t->bad_entries)
		ret = -EINVAL; /* there was CFI, none of it readable */
	free(c.rows);
	free(c.cies);
	return ret;
}

static struct cfi_table *compile_and_end(Elf *elf)
{
	struct cfi_table *t = calloc(1, sizeof(*t));
	int ret = t ? compile_elf(elf, t) : -ENOMEM;

	elf_end(elf);
	if (ret) {
		cfi_table__free(t);
		errno = -ret;
		return NULL;
	}
	return t;
}

struct cfi_table *cfi_compile_fd(int fd)
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
	return compile_and_end(elf);
}

struct cfi_table *cfi_compile_memory(const void *image, size_t size)
{
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = ENOSYS;
		return NULL;
	}
	elf = elf_memory((char *)image, size); /* read-only: libelf does not write to it */
	if (!elf) {
		errno = ENOEXEC;
		return NULL;
	}
	return compile_and_end(elf);
}

struct cfi_table *cfi_compile_own_vdso(void)
{
	const GElf_Ehdr *eh = (const GElf_Ehdr *)getauxval(AT_SYSINFO_EHDR);

	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64) {
		errno = ENOENT;
		return NULL;
	}
	/* The image ends with its section headers. */
	return cfi_compile_memory(eh, eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize);
}

void cfi_table__free(struct cfi_table *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t);
}

int cfi_build_id_fd(int fd, char *ret_hex, size_t len)
{
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		return -ENOEXEC;
	}
	build_id_hex(elf, ret_hex, len);
	elf_end(elf);
	return ret_hex[0] ? 0 : -ENOENT;
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
