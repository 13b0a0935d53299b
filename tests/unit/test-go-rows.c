// SPDX-License-Identifier: Apache-2.0
/* Unit tests for Go's unwind rows from .gopclntab (agent/unwind/go_rows.c) on a real Go 1.19
 * binary built in the tree (tests/helpers/goleaf, mk/goleaf.mk): the rows against the
 * unstripped build's own .debug_frame read by libdw at every pc, the rbp rules against
 * `go tool objdump`, and the stripped build against the unstripped one. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture_files.h"
#include "symbolize/gopclntab.h"
#include "test.h"
#include "unwind/cfi_compile.h"

#define DWARF_REG_RSP 7
#define DWARF_REG_RA 16

/* $(BUILD)/tests/test-go-rows -> $(BUILD)/goleaf/name */
static const char *goleaf_path(const char *name)
{
	static char path[PATH_MAX + 64];
	char rel[64];

	snprintf(rel, sizeof(rel), "../goleaf/%s", name);
	snprintf(path, sizeof(path), "%s", fixture_path(rel));
	return path;
}

static struct cfi_table *compile_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct cfi_table *t = fd >= 0 ? cfi_compile_fd(fd) : NULL;

	if (fd >= 0)
		close(fd);
	return t;
}

/* A file mapped whole, with its Go table read in place. */
struct go_file {
	void *data;
	size_t size;
	struct gopclntab *gt;
};

static int go_file_open(const char *path, struct go_file *g)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;

	memset(g, 0, sizeof(*g));
	if (fd < 0 || fstat(fd, &st))
		return -errno;
	g->size = (size_t)st.st_size;
	g->data = mmap(NULL, g->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (g->data == MAP_FAILED)
		return -errno;
	g->gt = gopclntab__open_elf(g->data, g->size);
	return g->gt ? 0 : -errno;
}

static void go_file_close(struct go_file *g)
{
	gopclntab__free(g->gt);
	if (g->data && g->data != MAP_FAILED)
		munmap(g->data, g->size);
}

/* The function named name: 0 or -ENOENT. */
static int find_func(const struct go_file *g, const char *name, struct gopclntab_func *ret)
{
	for (size_t i = 0; i < gopclntab__count(g->gt); i++) {
		const char *names[GOPCLNTAB_MAX_FRAMES];
		size_t n;

		if (gopclntab__func(g->gt, i, ret))
			continue;
		n = gopclntab__lookup(g->gt, ret->entry, names, GOPCLNTAB_MAX_FRAMES);
		if (n && !strcmp(names[n - 1], name))
			return 0;
	}
	return -ENOENT;
}

/* libdw's CFA at pc as rsp + *ret_off, with the return address at CFA - 8. false: no FDE
 * covers pc, or another rule (then *ret_off = INT64_MIN). */
static bool dwarf_rsp_cfa(Dwarf_CFI *cfi, uint64_t pc, int64_t *ret_off)
{
	Dwarf_Frame *frame;
	Dwarf_Op *ops, mem[3];
	size_t n;
	bool ok;

	*ret_off = INT64_MIN;
	if (dwarf_cfi_addrframe(cfi, pc, &frame))
		return false;
	/* libdw gives def_cfa as DW_OP_bregx (reg, offset) */
	if (!dwarf_frame_cfa(frame, &ops, &n) && n == 1 && ops[0].atom == DW_OP_bregx &&
	    ops[0].number == DWARF_REG_RSP) {
		*ret_off = (int64_t)ops[0].number2;
		ok = !dwarf_frame_register(frame, DWARF_REG_RA, mem, &ops, &n) && n == 2 &&
		     ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst &&
		     (int64_t)ops[1].number == -8;
		if (!ok)
			*ret_off = INT64_MIN;
	}
	free(frame);
	return true;
}

struct frame_check {
	size_t pcs, agree, special, no_fde;
	uint64_t first_bad_pc;
	int64_t bad_dwarf, bad_row;
};

/* Every pc of function f: the row's CFA against libdw's. */
static void check_func(Dwarf_CFI *cfi, const struct cfi_table *t, const struct gopclntab_func *f,
		       struct frame_check *k)
{
	for (uint64_t pc = f->entry; pc < f->end; pc++) {
		const struct unwind_row *row = cfi_table__lookup(t, (uint32_t)(pc - t->vaddr_base));
		int64_t off;

		if (!dwarf_rsp_cfa(cfi, pc, &off)) {
			k->no_fde++; /* padding between functions */
			continue;
		}
		k->pcs++;
		if (row && (row->cfa_type == UNWIND_ROW_STOP || row->cfa_type == UNWIND_ROW_GAP) &&
		    (f->flags & (GOPCLNTAB_FLAG_TOPFRAME | GOPCLNTAB_FLAG_SPWRITE))) {
			k->special++; /* by design: outermost or stack-switching */
			continue;
		}
		if (row && row->cfa_type == UNWIND_CFA_RSP && row->cfa_off == off) {
			k->agree++;
			continue;
		}
		if (!k->first_bad_pc) {
			k->first_bad_pc = pc;
			k->bad_dwarf = off;
			k->bad_row = row ? (int64_t)row->cfa_type * 1000000 + row->cfa_off : -1;
		}
	}
}

/* At every pc of every function, the rows say what the binary's own .debug_frame says (the
 * linker writes it from the same pcsp tables): CFA = rsp + delta + 8, return address at
 * CFA - 8. Only the outermost and stack-switching functions differ, on purpose. */
TEST(rows_agree_with_debug_frame_at_every_pc)
{
	const char *path = goleaf_path("goleaf");
	struct cfi_table *t = compile_path(path);
	struct frame_check k = {0};
	struct go_file g;
	Dwarf *dw = NULL;
	Elf *elf = NULL;
	int fd = -1;

	CHECK(t);
	CHECK_EQ_INT(t->source, CFI_SOURCE_GOPCLNTAB);
	CHECK_EQ_INT(go_file_open(path, &g), 0);
	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
	dw = elf ? dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;
	Dwarf_CFI *cfi = dw ? dwarf_getcfi(dw) : NULL;

	if (cfi) {
		for (size_t i = 0; i < gopclntab__count(g.gt); i++) {
			struct gopclntab_func f;

			if (!gopclntab__func(g.gt, i, &f))
				check_func(cfi, t, &f, &k);
		}
	}
	printf("  %zu pcs: %zu agree, %zu outermost/stack-switching, %zu padding\n", k.pcs, k.agree,
	       k.special, k.no_fde);
	if (k.first_bad_pc)
		printf("  first disagreement at 0x%" PRIx64 ": dwarf rsp+%" PRId64
		       ", row type*1e6+off %" PRId64 "\n",
		       k.first_bad_pc, k.bad_dwarf, k.bad_row);
	if (dw)
		dwarf_end(dw);
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	go_file_close(&g);
	cfi_table__free(t);
	CHECK(cfi);
	CHECK(k.pcs > 100000); /* the whole runtime, not a sample */
	CHECK_EQ_INT((long long)k.agree + (long long)k.special, (long long)k.pcs);
	CHECK(k.special < k.pcs / 50);
}

/* Address and length of each instruction of a function, from `go tool objdump`. */
struct insn {
	uint64_t pc;
	unsigned len;
	char text[96];
};

/* The instructions of the function named exactly name (at most max). How many, 0 on error. */
static size_t objdump(const char *path, const char *name, struct insn *ret, size_t max)
{
	char cmd[PATH_MAX + 256], line[512];
	size_t n = 0;
	bool in = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "GOCACHE=/tmp go tool objdump -s '^%s$' '%s' 2>/dev/null", name,
		 path);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	while (fgets(line, sizeof(line), p)) {
		char file[256], hex[64], *text;
		unsigned long long pc;

		if (!strncmp(line, "TEXT ", 5)) {
			in =
			    !strncmp(line + 5, name, strlen(name)) && line[5 + strlen(name)] == '(';
			continue;
		}
		/* "  main.go:21\t\t0x481320\t\t31c9\t\t\tXORL CX, CX" */
		if (!in || n >= max || sscanf(line, " %255s 0x%llx %63s", file, &pc, hex) != 3)
			continue;
		text = strstr(line, hex) + strlen(hex);
		text += strspn(text, " \t");
		ret[n].pc = pc;
		ret[n].len = (unsigned)strlen(hex) / 2;
		snprintf(ret[n].text, sizeof(ret[n].text), "%.*s", (int)strcspn(text, "\t\n"),
			 text);
		n++;
	}
	pclose(p);
	return n;
}

static const struct unwind_row *row_at(const struct cfi_table *t, uint64_t pc)
{
	return cfi_table__lookup(t, (uint32_t)(pc - t->vaddr_base));
}

/* main.mixLeaf has no frame (objdump: nothing moves SP, nothing touches BP): every pc of it
 * is "CFA = rsp + 8, rbp unchanged", so its caller is read from the stack top. */
TEST(frameless_leaf_rows_read_the_caller_from_the_stack_top)
{
	const char *path = goleaf_path("goleaf");
	struct cfi_table *t = compile_path(path);
	struct insn in[256];
	size_t n = objdump(path, "main.mixLeaf", in, 256);

	CHECK(t);
	CHECK(n >= 5);
	for (size_t i = 0; i < n; i++) {
		const struct unwind_row *row = row_at(t, in[i].pc);

		CHECK(!strstr(in[i].text, ", SP") && !strstr(in[i].text, "BP"));
		CHECK(row);
		CHECK_EQ_INT(row->cfa_type, UNWIND_CFA_RSP);
		CHECK_EQ_INT(row->cfa_off, 8);
		CHECK_EQ_INT(row->rbp_type, UNWIND_RBP_SAME);
	}
	cfi_table__free(t);
}

/* main.ledgerPass's prologue (objdump): SUBQ $n, SP; MOVQ BP, n-8(SP). Before the SUBQ, the
 * CFA is rsp + 8; from it, rsp + n + 8; the caller's rbp is in rbp up to the MOVQ's end and
 * at CFA - 16 from there until the ADDQ of the epilogue. */
TEST(framed_caller_rows_follow_its_prologue_and_epilogue)
{
	const char *path = goleaf_path("goleaf");
	struct cfi_table *t = compile_path(path);
	struct insn in[512];
	size_t n = objdump(path, "main.ledgerPass", in, 512), sub = 0, save = 0, add = 0;
	unsigned frame = 0;

	CHECK(t);
	for (size_t i = 0; i < n; i++) {
		if (!sub && sscanf(in[i].text, "SUBQ $0x%x, SP", &frame) == 1)
			sub = i;
		else if (sub && !save && strstr(in[i].text, "MOVQ BP, ") &&
			 strstr(in[i].text, "(SP)"))
			save = i;
		else if (save && !add && strstr(in[i].text, "ADDQ $") && strstr(in[i].text, ", SP"))
			add = i;
	}
	CHECK(sub && save == sub + 1 && add > save && frame >= 16);
	CHECK(row_at(t, in[0].pc)->cfa_off == 8);
	CHECK_EQ_INT(row_at(t, in[sub].pc)->cfa_off, 8); /* the SUBQ has not run yet */
	CHECK_EQ_INT(row_at(t, in[sub].pc)->rbp_type, UNWIND_RBP_SAME);
	CHECK_EQ_INT(row_at(t, in[save].pc)->cfa_off, frame + 8);
	CHECK_EQ_INT(row_at(t, in[save].pc)->rbp_type, UNWIND_RBP_SAME); /* not stored yet */
	for (size_t i = save + 1; i <= add; i++) {
		const struct unwind_row *row = row_at(t, in[i].pc);

		CHECK_EQ_INT(row->cfa_type, UNWIND_CFA_RSP);
		CHECK_EQ_INT(row->cfa_off, frame + 8);
		CHECK_EQ_INT(row->rbp_type, UNWIND_RBP_AT_CFA);
		CHECK_EQ_INT(row->rbp_off, -16);
	}
	CHECK_EQ_INT(row_at(t, in[add + 1].pc)->cfa_off, 8); /* the RET */
	CHECK_EQ_INT(row_at(t, in[add + 1].pc)->rbp_type, UNWIND_RBP_SAME);
	cfi_table__free(t);
}

/* runtime.goexit (TOPFRAME) ends the walk as Go's traceback does; runtime.systemstack
 * (SPWRITE) keeps the frame-pointer step. */
TEST(outermost_and_stack_switching_functions)
{
	const char *path = goleaf_path("goleaf-stripped");
	struct cfi_table *t = compile_path(path);
	struct gopclntab_func goexit, sys;
	struct go_file g;

	CHECK(t);
	CHECK_EQ_INT(go_file_open(path, &g), 0);
	CHECK_EQ_INT(find_func(&g, "runtime.goexit", &goexit), 0);
	CHECK_EQ_INT(find_func(&g, "runtime.systemstack", &sys), 0);
	go_file_close(&g);
	CHECK(goexit.flags & GOPCLNTAB_FLAG_TOPFRAME);
	CHECK(sys.flags & GOPCLNTAB_FLAG_SPWRITE);
	CHECK_EQ_INT(row_at(t, goexit.entry + 1)->cfa_type, UNWIND_ROW_STOP);
	CHECK_EQ_INT(row_at(t, sys.entry + 4)->cfa_type, UNWIND_ROW_GAP);
	cfi_table__free(t);
}

/* -s -w drops symbols and DWARF, not the pcsp tables: the very same rows. */
TEST(stripped_build_has_the_rows_of_the_unstripped_one)
{
	struct cfi_table *full = compile_path(goleaf_path("goleaf"));
	struct cfi_table *stripped = compile_path(goleaf_path("goleaf-stripped"));

	CHECK(full && stripped);
	CHECK_EQ_INT(stripped->source, CFI_SOURCE_GOPCLNTAB);
	CHECK_EQ_INT(stripped->n_rows, full->n_rows);
	CHECK(!memcmp(stripped->rows, full->rows, full->n_rows * sizeof(*full->rows)));
	cfi_table__free(full);
	cfi_table__free(stripped);
}

struct count_sink {
	size_t begun, got;
	bool out_of_order;
	uint32_t last_pc;
	const struct cfi_table *whole;
	bool differs;
};

static int count_begin(void *ctx, const struct cfi_table *t)
{
	((struct count_sink *)ctx)->begun = t->n_rows;
	return 0;
}

static int count_write(void *ctx, size_t first, const struct unwind_row *rows, size_t n)
{
	struct count_sink *k = ctx;

	if (first != k->got)
		k->out_of_order = true;
	for (size_t i = 0; i < n; i++)
		if (first + i >= k->whole->n_rows ||
		    memcmp(&rows[i], &k->whole->rows[first + i], sizeof(rows[i])))
			k->differs = true;
	k->got += n;
	return 0;
}

/* A table over the in-memory bound is counted, then streamed in batches, as .eh_frame tables
 * are: the same rows. */
TEST(streamed_rows_equal_rows_compiled_in_memory)
{
	const char *path = goleaf_path("goleaf-stripped");
	struct cfi_table *whole = compile_path(path), header;
	struct count_sink k = {.whole = whole};
	struct cfi_row_sink sink = {
	    .ctx = &k, .in_memory_max = 1, .begin = count_begin, .write = count_write};
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	CHECK(whole && fd >= 0);
	CHECK_EQ_INT(cfi_compile_fd_to(fd, &header, &sink), 0);
	close(fd);
	CHECK_EQ_INT(header.n_rows, whole->n_rows);
	CHECK_EQ_INT(k.begun, whole->n_rows);
	CHECK_EQ_INT(k.got, whole->n_rows);
	CHECK(!k.out_of_order && !k.differs);
	CHECK(whole->n_rows > 1000);
	cfi_table__free(whole);
}

/* The toolchain's own `go` (10k functions, no DWARF): its path, or NULL. */
static const char *toolchain_go(void)
{
	static char path[PATH_MAX];
	FILE *p = popen("GOCACHE=/tmp go env GOROOT 2>/dev/null", "r");
	bool ok = p && fgets(path, sizeof(path) - 8, p);

	if (p)
		pclose(p);
	if (!ok)
		return NULL;
	path[strcspn(path, "\n")] = '\0';
	strcat(path, "/bin/go");
	return access(path, R_OK) ? NULL : path;
}

struct run_check {
	const struct cfi_table *t;
	size_t runs, agree;
};

static int check_run(void *ctx, uint64_t lo, uint64_t hi, int32_t delta)
{
	struct run_check *k = ctx;
	const struct unwind_row *a = row_at(k->t, lo), *b = row_at(k->t, hi - 1);

	k->runs++;
	k->agree +=
	    delta < 0 || (a && b && a->cfa_type == UNWIND_CFA_RSP && a->cfa_off == delta + 8 &&
			  b->cfa_type == UNWIND_CFA_RSP && b->cfa_off == delta + 8);
	return 0;
}

/* A big binary compiled from the file (read through the table's block cache, while the
 * prologues are read through it too) has the rows of every run of its pcsp tables, decoded
 * here again from the file in memory; no function is damaged. */
TEST(big_binary_rows_hold_every_pcsp_run)
{
	const char *path = toolchain_go();
	struct cfi_table *t = path ? compile_path(path) : NULL;
	struct run_check k = {.t = t};
	struct go_file g;

	CHECK(t);
	CHECK_EQ_INT(t->source, CFI_SOURCE_GOPCLNTAB);
	CHECK_EQ_INT(t->bad_entries, 0);
	CHECK(t->n_rows > 20000);
	CHECK_EQ_INT(go_file_open(path, &g), 0);
	for (size_t i = 0; i < gopclntab__count(g.gt); i++) {
		struct gopclntab_func f;

		if (!gopclntab__func(g.gt, i, &f) && f.pcsp &&
		    !(f.flags & (GOPCLNTAB_FLAG_TOPFRAME | GOPCLNTAB_FLAG_SPWRITE)))
			gopclntab__pcsp_runs(g.gt, &f, check_run, &k);
	}
	go_file_close(&g);
	cfi_table__free(t);
	printf("  %zu runs, %zu agree\n", k.runs, k.agree);
	CHECK(k.runs > 50000);
	CHECK_EQ_INT(k.agree, k.runs);
}

/* A Go table has a compile cost (unwind_tables.c builds a costly one on its builder thread)
 * though it has no CFI section: an eighth of its size, in .eh_frame bytes of the same cost. */
TEST(go_table_has_a_compile_cost)
{
	const char *path = goleaf_path("goleaf-stripped");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint64_t bytes = fd >= 0 ? cfi_bytes_fd(fd) : 0;

	if (fd >= 0)
		close(fd);
	CHECK(bytes > 10000 && bytes < 200000); /* 360 KB of .gopclntab */
}

/* A cgo binary linked externally has .eh_frame for its C code only: its table keeps those FDEs
 * and takes the Go functions' rows from pcsp between them (the leaf and its caller as in a
 * Go-only build). */
TEST(cgo_binary_gets_go_rows_between_its_fdes)
{
	const char *path = goleaf_path("goleaf-cgo");
	struct cfi_table *t = compile_path(path);
	struct gopclntab_func leaf, caller, first, last;
	size_t c_rows = 0;
	struct go_file g;

	CHECK(t);
	CHECK_EQ_INT(t->source, CFI_SOURCE_EH_FRAME);
	CHECK_EQ_INT(go_file_open(path, &g), 0);
	CHECK_EQ_INT(find_func(&g, "main.mixLeaf", &leaf), 0);
	CHECK_EQ_INT(find_func(&g, "main.ledgerPass", &caller), 0);
	CHECK_EQ_INT(gopclntab__func(g.gt, 0, &first), 0);
	CHECK_EQ_INT(gopclntab__func(g.gt, gopclntab__count(g.gt) - 1, &last), 0);
	go_file_close(&g);
	for (size_t i = 0; i < t->n_rows; i++)
		c_rows += (t->rows[i].pc < first.entry || t->rows[i].pc >= last.end) &&
			  t->rows[i].cfa_type != UNWIND_ROW_GAP;
	CHECK(c_rows > 0); /* the C code's, from .eh_frame */
	CHECK_EQ_INT(row_at(t, leaf.entry + 4)->cfa_type, UNWIND_CFA_RSP);
	CHECK_EQ_INT(row_at(t, leaf.entry + 4)->cfa_off, 8);
	CHECK_EQ_INT(row_at(t, leaf.entry + 4)->rbp_type, UNWIND_RBP_SAME);
	CHECK_EQ_INT(row_at(t, caller.end - 1)->cfa_type, UNWIND_CFA_RSP);
	CHECK(row_at(t, caller.entry + 0x30)->cfa_off > 16); /* its body: the frame's size */
	CHECK_EQ_INT(row_at(t, caller.entry + 0x30)->rbp_type, UNWIND_RBP_AT_CFA);
	cfi_table__free(t);
}

TEST_MAIN("go_rows", T(rows_agree_with_debug_frame_at_every_pc),
	  T(frameless_leaf_rows_read_the_caller_from_the_stack_top),
	  T(framed_caller_rows_follow_its_prologue_and_epilogue),
	  T(outermost_and_stack_switching_functions),
	  T(stripped_build_has_the_rows_of_the_unstripped_one),
	  T(streamed_rows_equal_rows_compiled_in_memory), T(big_binary_rows_hold_every_pcsp_run),
	  T(go_table_has_a_compile_cost), T(cgo_binary_gets_go_rows_between_its_fdes))
