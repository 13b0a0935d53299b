// SPDX-License-Identifier: Apache-2.0
/* .gopclntab -> unwind rows: per function, its pcsp runs become "CFA = rsp + delta + 8, return
 * address at CFA - 8" rows, with rbp at CFA - 16 once the prologue has stored it. Compiled in
 * address order through cfi_rows.c, so the rows, the compaction and the bounds are those of an
 * .eh_frame table and the BPF walk reads them unchanged. */
/*
 * Facts of Go on x86-64 (cmd/internal/obj/x86/obj6.go, runtime/traceback.go):
 *   - pcsp is the SP delta from the function's entry (the return address just pushed), so
 *     CFA = SP + delta + 8 at every pc; 0 in a frameless function.
 *   - a function with a frame stores the caller's rbp at the frame's top, CFA - 16: Go 1.19
 *     `SUBQ $n, SP; MOVQ BP, n-8(SP); LEAQ n-8(SP), BP`, Go 1.21+ `PUSHQ BP; MOVQ SP, BP;
 *     SUBQ $n, SP`. Between SUBQ and the store (one instruction) rbp is still the caller's.
 *     The epilogue reloads rbp before ADDQ: its slot still holds the value, the rule holds.
 *     A frameless function leaves rbp alone: "same value".
 *   - TOPFRAME functions (goexit, mstart, rt0_go) were called by nothing: the walk ends there,
 *     as Go's own traceback does. SPWRITE functions (systemstack, mcall, gogo, morestack...)
 *     switch stacks: their deltas say nothing, so their code keeps the frame-pointer step.
 */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/gopclntab.h"
#include "unwind/cfi_rows.h"
#include "unwind/go_rows.h"

#define GO_ROWS_IN_MEMORY (64u << 10) /* as cfi_compile.c: a bigger table is counted, streamed */
#define RBP_SLOT (-16)		      /* the caller's rbp, from the CFA */
#define NO_SAVE UINT64_MAX

struct go_rows {
	struct gopclntab *gt;
	struct cfi_table *t;
	struct cfi_rows own_rows; /* a Go-only compile's */
	struct cfi_rows *rows;	  /* where rows go: own_rows, or a .eh_frame compile's */
	bool merged;		  /* beside .eh_frame: only functions with pcsp tables */
	size_t next;		  /* the next function to compile */
	bool frame_seen;	 /* the function's prologue was seen (its first run with a delta) */
	uint64_t rbp_saved_from; /* pcs at or above this have the caller's rbp at CFA - 16 */
	uint64_t last_lo;	 /* the function's last run pushed (rows never go back in pc) */
	size_t bad_funcs;
};

static int push(struct go_rows *c, uint64_t pc, const struct unwind_row *row)
{
	if (pc < c->t->vaddr_base || pc - c->t->vaddr_base > UINT32_MAX)
		return -E2BIG; /* code above 4 GiB: not in the 32-bit row format */
	return cfi_rows__push(c->rows, (uint32_t)(pc - c->t->vaddr_base), row);
}

/* Where the prologue has stored the caller's rbp, from the instruction that opened the frame
 * (first run with a delta, at lo): the end of Go 1.19's MOVQ BP, n-8(SP) at lo, or lo itself
 * after a PUSHQ BP. NO_SAVE: this function does not save it (frameless, assembly). */
static uint64_t rbp_save_end(const struct go_rows *c, uint64_t lo, int32_t delta)
{
	uint8_t b[8];
	int32_t disp;

	if (!gopclntab__read_vaddr(c->gt, lo - 1, b, 1) && b[0] == 0x55 && delta == 8)
		return lo; /* PUSHQ BP */
	if (gopclntab__read_vaddr(c->gt, lo, b, sizeof(b)) || b[0] != 0x48 || b[1] != 0x89)
		return NO_SAVE;
	if (b[2] == 0x6c && b[3] == 0x24 && (int8_t)b[4] == delta - 8)
		return lo + 5; /* MOVQ BP, disp8(SP) */
	memcpy(&disp, b + 4, 4);
	if (b[2] == 0xac && b[3] == 0x24 && disp == delta - 8)
		return lo + 8; /* MOVQ BP, disp32(SP) */
	return NO_SAVE;
}

static struct unwind_row sp_row(int32_t delta, bool rbp_saved)
{
	struct unwind_row row = {.cfa_type = UNWIND_CFA_RSP, .cfa_off = delta + 8};

	if (rbp_saved) {
		row.rbp_type = UNWIND_RBP_AT_CFA;
		row.rbp_off = RBP_SLOT;
	}
	return row;
}

/* One pcsp run [lo, hi): rows, split where the prologue's rbp store completes. */
static int push_run(void *ctx, uint64_t lo, uint64_t hi, int32_t delta)
{
	struct go_rows *c = ctx;
	struct unwind_row before, after;
	uint64_t from;
	int ret;

	if (delta < 0 || delta > INT32_MAX - 8) {
		c->t->cannot[UNWIND_CANNOT_RANGE]++;
		return push(c, lo,
			    &(struct unwind_row){.cfa_type = UNWIND_ROW_CANNOT,
						 .cfa_off = UNWIND_CANNOT_RANGE});
	}
	c->last_lo = lo;
	if (delta && !c->frame_seen) { /* the frame's first run: its prologue */
		c->frame_seen = true;
		c->rbp_saved_from = rbp_save_end(c, lo, delta);
	}
	from = delta ? c->rbp_saved_from : NO_SAVE;
	before = sp_row(delta, false);
	after = sp_row(delta, true);
	if (from >= hi)
		return push(c, lo, &before);
	if (from > lo && (ret = push(c, lo, &before)))
		return ret;
	return push(c, from > lo ? from : lo, &after);
}

static int compile_func(struct go_rows *c, const struct gopclntab_func *f)
{
	struct unwind_row end = {.cfa_type = UNWIND_ROW_GAP, .cfa_off = CFI_ROWS_FDE_END};
	int ret;

	if (f->flags & GOPCLNTAB_FLAG_TOPFRAME) {
		ret = push(c, f->entry, &(struct unwind_row){.cfa_type = UNWIND_ROW_STOP});
		return ret ? ret : push(c, f->end, &end);
	}
	if ((f->flags & GOPCLNTAB_FLAG_SPWRITE) || !f->pcsp)
		return push(c, f->entry, &(struct unwind_row){.cfa_type = UNWIND_ROW_GAP});
	c->frame_seen = false;
	c->rbp_saved_from = NO_SAVE;
	c->last_lo = f->entry;
	ret = gopclntab__pcsp_runs(c->gt, f, push_run, c);
	if (ret == -EINVAL) { /* damaged past its last good run: frame pointers from there */
		c->bad_funcs++;
		return push(c, c->last_lo, &(struct unwind_row){.cfa_type = UNWIND_ROW_GAP});
	}
	return ret ? ret : push(c, f->end, &end);
}

/* f is one to compile: 1, or 0 (skipped: out of order, or, beside .eh_frame, code without a
 * pcsp table of its own, which has its FDE or keeps the frame-pointer step). */
static int take_func(struct go_rows *c, uint64_t floor, const struct gopclntab_func *f)
{
	if (f->entry < floor || f->end <= f->entry) {
		c->bad_funcs++;
		return 0;
	}
	return !c->merged || (f->pcsp && !(f->flags & GOPCLNTAB_FLAG_SPWRITE));
}

static int push_until(struct go_rows *c, uint64_t limit, uint64_t *floor)
{
	size_t n = gopclntab__count(c->gt);
	int ret = 0;

	for (; !ret && c->next < n; c->next++) {
		struct gopclntab_func f;

		if (gopclntab__func(c->gt, c->next, &f)) {
			c->bad_funcs++;
			continue;
		}
		if (f.entry >= limit)
			break;
		if (f.end > limit) { /* runs into the next FDE */
			c->bad_funcs++;
			continue;
		}
		if (!take_func(c, *floor, &f))
			continue;
		ret = compile_func(c, &f);
		*floor = f.end;
	}
	return ret;
}

/* Every function in address order; below the first, frame pointers (C code of a cgo binary
 * whose .eh_frame could not be found). */
static int compile_pass(struct go_rows *c, enum cfi_rows_mode mode, size_t limit)
{
	uint64_t floor = 0;
	int ret;

	cfi_rows__reset(c->rows, mode, limit);
	memset(c->t->cannot, 0, sizeof(c->t->cannot));
	c->bad_funcs = 0;
	c->next = 0;
	ret = push(c, c->t->vaddr_base, &(struct unwind_row){.cfa_type = UNWIND_ROW_GAP});
	if (!ret)
		ret = push_until(c, UINT64_MAX, &floor);
	c->t->bad_entries = c->bad_funcs;
	return ret ? ret : cfi_rows__finish(c->rows);
}

/* In memory when small, else counted, then streamed (cfi_compile.c's compile_section). */
static int compile_rows(struct go_rows *c, const struct cfi_row_sink *sink)
{
	size_t in_memory = sink->in_memory_max ? sink->in_memory_max : GO_ROWS_IN_MEMORY;
	int ret = compile_pass(c, CFI_ROWS_COLLECT, in_memory);

	if (!ret) {
		c->t->n_rows = c->rows->emitted;
		ret = sink->begin(sink->ctx, c->t);
		return ret ? ret : sink->write(sink->ctx, 0, c->rows->rows, c->rows->n);
	}
	if (ret != -EOVERFLOW)
		return ret;
	ret = compile_pass(c, CFI_ROWS_COUNT, CFI_MAX_ROWS);
	c->t->n_rows = c->rows->emitted;
	if (!ret)
		ret = sink->begin(sink->ctx, c->t);
	c->rows->ctx = sink->ctx;
	c->rows->write = sink->write;
	if (!ret)
		ret = compile_pass(c, CFI_ROWS_STREAM, c->t->n_rows);
	if (!ret && c->rows->emitted != c->t->n_rows)
		ret = -EIO; /* the second pass must see what the first counted */
	return ret;
}

/* The table of fd, read with pread once open (the mapping goes before compiling). */
static struct gopclntab *open_table(int fd)
{
	struct gopclntab *gt = NULL;
	struct stat st;
	void *data;

	if (fstat(fd, &st) || st.st_size < (off_t)sizeof(Elf64_Ehdr))
		return NULL;
	data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (data == MAP_FAILED)
		return NULL;
	if (((const Elf64_Ehdr *)data)->e_machine == EM_X86_64)
		gt = gopclntab__open_file(fd, data, (size_t)st.st_size);
	munmap(data, (size_t)st.st_size);
	return gt;
}

struct go_rows *go_rows__open(int fd)
{
	struct go_rows *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->gt = open_table(fd);
	if (!c->gt || gopclntab__quantum(c->gt) != 1) {
		go_rows__free(c);
		return NULL;
	}
	c->rows = &c->own_rows;
	return c;
}

void go_rows__free(struct go_rows *c)
{
	if (!c)
		return;
	gopclntab__free(c->gt);
	cfi_rows__release(&c->own_rows);
	free(c);
}

void go_rows__rewind(struct go_rows *c, struct cfi_table *t, struct cfi_rows *rows)
{
	c->t = t;
	c->rows = rows;
	c->merged = true;
	c->next = 0;
	c->bad_funcs = 0;
}

int go_rows__push_until(struct go_rows *c, uint64_t limit, uint64_t *floor)
{
	return push_until(c, limit, floor);
}

int go_rows__compile_fd(int fd, struct cfi_table *t, const struct cfi_row_sink *sink)
{
	struct go_rows *c = go_rows__open(fd);
	int ret;

	if (!c)
		return -ENOENT;
	c->t = t;
	t->source = CFI_SOURCE_GOPCLNTAB;
	t->vaddr_base = 0;
	t->n_fdes = gopclntab__count(c->gt);
	ret = compile_rows(c, sink);
	if (!ret && c->bad_funcs == t->n_fdes)
		ret = -EINVAL; /* a table, none of it readable */
	go_rows__free(c);
	return ret;
}
