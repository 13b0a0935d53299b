// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the unwind-table compiler (agent/unwind/cfi_compile.c): on the fixture ELF
 * files and this machine's libc, every row start readelf --debug-dump=frames-interp prints
 * gets the same rule from our table; corrupt CFI is counted, never a crash. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <glob.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "unwind/cfi_compile.h"
#include "unwind/eh_frame_image.h"
#include "fixture_files.h"
#include "test.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"
#define NODE "/usr/bin/node" /* Debian's nodejs (scripts/install-deps.sh): 2.7 MB of .eh_frame */
#define MAX_COLS 32

static struct cfi_table *compile_path(const char *path)
{
	struct cfi_table *t;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	t = cfi_compile_fd(fd);
	close(fd);
	return t;
}

/* What our row must say where readelf prints cfa/rbp/ra; NULL rbp = column absent. */
static bool row_matches(const struct unwind_row *r, const char *cfa, const char *rbp,
			const char *ra, char *why, size_t len)
{
	int off;

	if (!strcmp(ra, "u")) {
		snprintf(why, len, "ra undefined: want STOP, got type %d", r->cfa_type);
		return r->cfa_type == UNWIND_ROW_STOP;
	}
	snprintf(why, len, "cfa %s rbp %s ra %s: got type %d off %d rbp %d/%d", cfa,
		 rbp ? rbp : "-", ra, r->cfa_type, r->cfa_off, r->rbp_type, r->rbp_off);
	if (!strcmp(cfa, "exp"))
		return r->cfa_type == UNWIND_CFA_PLT || r->cfa_type == UNWIND_CFA_DEREF_RSP ||
		       r->cfa_type == UNWIND_CFA_DEREF_RBP || r->cfa_type == UNWIND_ROW_SIGNAL ||
		       r->cfa_type == UNWIND_ROW_CANNOT;
	if (sscanf(cfa, "rsp+%d", &off) == 1 && r->cfa_type != UNWIND_CFA_RSP)
		return r->cfa_type == UNWIND_ROW_CANNOT && strcmp(ra, "c-8");
	if (sscanf(cfa, "rbp+%d", &off) == 1 && r->cfa_type != UNWIND_CFA_RBP)
		return r->cfa_type == UNWIND_ROW_CANNOT && strcmp(ra, "c-8");
	if (strncmp(cfa, "rsp+", 4) && strncmp(cfa, "rbp+", 4)) /* another register */
		return r->cfa_type == UNWIND_ROW_CANNOT;
	if (r->cfa_off != off)
		return false;
	if (strcmp(ra, "c-8"))
		return r->cfa_type == UNWIND_ROW_CANNOT;
	if (!rbp || !strcmp(rbp, "u") || !strcmp(rbp, "s"))
		return r->rbp_type == UNWIND_RBP_SAME || r->rbp_type == UNWIND_RBP_UNDEFINED;
	if (sscanf(rbp, "c%d", &off) == 1)
		return r->rbp_type == UNWIND_RBP_AT_CFA && r->rbp_off == off;
	return r->cfa_type == UNWIND_ROW_CANNOT;
}

struct readelf_state {
	char cols[MAX_COLS][16];
	int n_cols;
	unsigned long fde_lo, fde_hi;
	bool fde_has_rows, in_fde;
	struct {
		unsigned long offset;
		char cfa[32], ra[32];
	} cies[64]; /* initial rows, for FDEs without instructions */
	size_t n_cies;
	unsigned long fde_cie;
	size_t checked, mismatches;
};

static void check_row(const struct cfi_table *t, struct readelf_state *st, unsigned long loc,
		      const char *cfa, const char *rbp, const char *ra)
{
	const struct unwind_row *r = cfi_table__lookup(t, (uint32_t)(loc - t->vaddr_base));
	char why[200];

	st->checked++;
	if (r && row_matches(r, cfa, rbp, ra, why, sizeof(why)))
		return;
	if (st->mismatches++ < 5)
		printf("  row at %#lx: %s\n", loc, r ? why : "no row");
}

/* One line of a row table: LOC then one word per column. */
static void parse_row(const struct cfi_table *t, struct readelf_state *st, const char *line)
{
	char words[MAX_COLS + 1][32];
	const char *cfa = NULL, *rbp = NULL, *ra = NULL;
	unsigned long loc;
	int n = 0, used;

	while (n <= MAX_COLS && sscanf(line, "%31s%n", words[n], &used) == 1) {
		line += used;
		if (n && words[n][0] == '(') /* "r10 (r10)": one column */
			continue;
		n++;
	}
	if (n < 2 || strlen(words[0]) != 16 || sscanf(words[0], "%lx", &loc) != 1)
		return; /* not a row ("... ZERO terminator") */
	for (int i = 1; i < n && i - 1 < st->n_cols; i++) {
		const char *col = st->cols[i - 1];

		if (!strcmp(col, "CFA"))
			cfa = words[i];
		else if (!strcmp(col, "rbp"))
			rbp = words[i];
		else if (!strcmp(col, "ra"))
			ra = words[i];
	}
	if (!cfa || !ra)
		return;
	if (!st->in_fde) { /* the CIE's initial row */
		if (st->n_cies) {
			snprintf(st->cies[st->n_cies - 1].cfa, 32, "%s", cfa);
			snprintf(st->cies[st->n_cies - 1].ra, 32, "%s", ra);
		}
		return;
	}
	st->fde_has_rows = true;
	if (loc >= st->fde_hi) /* the program advanced past its FDE's range: never applies */
		return;
	check_row(t, st, loc, cfa, rbp, ra);
}

static void end_fde(const struct cfi_table *t, struct readelf_state *st)
{
	/* readelf prints no rows for an FDE without instructions: the CIE's row applies. */
	for (size_t i = 0; st->in_fde && !st->fde_has_rows && i < st->n_cies; i++)
		if (st->cies[i].offset == st->fde_cie && st->cies[i].cfa[0])
			check_row(t, st, st->fde_lo, st->cies[i].cfa, NULL, st->cies[i].ra);
	st->in_fde = false;
}

/* Compares every readelf row start with our table; returns rows checked, mismatches out. */
static size_t compare_with_readelf(const char *path, const struct cfi_table *t,
				   size_t *ret_mismatches)
{
	struct readelf_state st = {0};
	char cmd[PATH_MAX + 64], line[1024];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	while (fgets(line, sizeof(line), p)) {
		char *s;

		if (strstr(line, " CIE ")) {
			end_fde(t, &st);
			if (st.n_cies < 64) {
				st.cies[st.n_cies].cfa[0] = '\0';
				sscanf(line, "%lx", &st.cies[st.n_cies++].offset);
			}
		} else if ((s = strstr(line, " FDE ")) && (s = strstr(s, "pc="))) {
			end_fde(t, &st);
			sscanf(strstr(line, "cie="), "cie=%lx", &st.fde_cie);
			if (sscanf(s, "pc=%lx..%lx", &st.fde_lo, &st.fde_hi) == 2) {
				st.in_fde = true;
				st.fde_has_rows = false;
			}
		} else if (strstr(line, " LOC ")) {
			int used;

			st.n_cols = 0;
			s = strstr(line, "LOC") + 3;
			while (st.n_cols < MAX_COLS &&
			       sscanf(s, "%15s%n", st.cols[st.n_cols], &used) == 1) {
				s += used;
				st.n_cols++;
			}
		} else if (line[0] && strchr("0123456789abcdef", line[0])) {
			parse_row(t, &st, line);
		}
	}
	end_fde(t, &st);
	pclose(p);
	*ret_mismatches = st.mismatches;
	return st.checked;
}

static void agrees_with_readelf(const char *path, size_t min_rows, int *ret_failed)
{
	struct cfi_table *t = compile_path(path);
	size_t checked, mismatches = 0;

	if (!t)
		printf("  compiling %s: %s\n", path, strerror(errno));
	CHECK(t);
	CHECK(t->n_rows > 0);
	checked = compare_with_readelf(path, t, &mismatches);
	printf("  %s: %zu FDEs, %zu rows, %zu readelf rows checked, %zu mismatches\n", path,
	       t->n_fdes, t->n_rows, checked, mismatches);
	cfi_table__free(t);
	CHECK(checked >= min_rows);
	CHECK_EQ_INT(mismatches, 0);
}

TEST(pie_fixture_rows_agree_with_readelf)
{
	agrees_with_readelf(fixture_path("fixture-pie"), 5, ret_failed);
}

TEST(non_pie_fixture_rows_agree_with_readelf)
{
	agrees_with_readelf(fixture_path("fixture-nopie"), 5, ret_failed);
}

TEST(shared_library_fixture_rows_agree_with_readelf)
{
	agrees_with_readelf(fixture_path("libfixture.so"), 3, ret_failed);
}

TEST(cpp_fixture_rows_agree_with_readelf)
{
	agrees_with_readelf(fixture_path("fixture-cpp"), 5, ret_failed);
}

/* Opens path with libelf: whether it needs the header-first image. -1: not readable. */
static int needs_image(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = -1;
	Elf *elf;

	if (fd < 0 || elf_version(EV_CURRENT) == EV_NONE)
		return -1;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf)
		ret = eh_frame_image__needed(elf);
	if (elf)
		elf_end(elf);
	close(fd);
	return ret;
}

/* gold puts .eh_frame before .eh_frame_hdr: compiled through the header-first image, the
 * rows are still readelf's. */
TEST(gold_fixture_rows_agree_with_readelf)
{
	CHECK_EQ_INT(needs_image(fixture_path("fixture-gold")), 1);
	CHECK_EQ_INT(needs_image(fixture_path("fixture-pie")), 0); /* GNU ld: header first */
	agrees_with_readelf(fixture_path("fixture-gold"), 5, ret_failed);
}

/* The image holds the two sections, header first, byte for byte, at their addresses. */
TEST(eh_frame_image_holds_both_sections_header_first)
{
	int fd = open(fixture_path("fixture-gold"), O_RDONLY | O_CLOEXEC);
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
	struct eh_frame_image img;
	const char *names[] = {".eh_frame_hdr", ".eh_frame"};
	size_t shstrndx;

	CHECK(elf);
	CHECK_EQ_INT(eh_frame_image__open(elf, fd, 64, &img), -E2BIG); /* 260 bytes of CFI */
	CHECK_EQ_INT(eh_frame_image__open(elf, fd, CFI_MAX_SECTION_BYTES, &img), 0);
	CHECK(img.elf && !elf_getshdrstrndx(img.elf, &shstrndx));
	CHECK_EQ_INT(eh_frame_image__needed(img.elf), 0);
	for (size_t i = 0; img.elf && i < 2; i++) {
		Elf_Scn *in = elf_getscn(img.elf, i + 1), *orig = NULL;
		GElf_Shdr a, b;
		size_t orig_strndx;
		Elf_Data *da, *db;

		CHECK(in && gelf_getshdr(in, &a));
		CHECK(!strcmp(elf_strptr(img.elf, shstrndx, a.sh_name), names[i]));
		CHECK(!elf_getshdrstrndx(elf, &orig_strndx));
		while ((orig = elf_nextscn(elf, orig)) && gelf_getshdr(orig, &b) &&
		       strcmp(elf_strptr(elf, orig_strndx, b.sh_name), names[i]))
			;
		CHECK(orig);
		CHECK(a.sh_addr == b.sh_addr && a.sh_size == b.sh_size);
		da = elf_rawdata(in, NULL);
		db = elf_rawdata(orig, NULL);
		CHECK(da && db && !memcmp(da->d_buf, db->d_buf, a.sh_size));
	}
	eh_frame_image__close(&img);
	elf_end(elf);
	close(fd);
}

TEST(static_stripped_fixture_rows_agree_with_readelf)
{
	agrees_with_readelf(fixture_path("fixture-static-stripped"), 1000, ret_failed);
}

TEST(libc_rows_agree_with_readelf)
{
	agrees_with_readelf(LIBC, 10000, ret_failed);
}

static double elapsed_ms(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return (b.tv_sec - a->tv_sec) * 1e3 + (b.tv_nsec - a->tv_nsec) / 1e6;
}

/* The libc table: the start frames stop cleanly, PLT and signal rows are recognised; prints
 * the figures docs/performance.md quotes (rows, bytes, build time). */
TEST(libc_table_has_stop_signal_and_plt_rows)
{
	struct timespec t0;
	struct cfi_table *t;
	size_t stop = 0, signal = 0, plt = 0, gaps = 0, cannot = 0;
	double ms;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	t = compile_path(LIBC);
	ms = elapsed_ms(&t0);
	CHECK(t);
	for (size_t i = 0; i < t->n_rows; i++) {
		stop += t->rows[i].cfa_type == UNWIND_ROW_STOP;
		signal += t->rows[i].cfa_type == UNWIND_ROW_SIGNAL;
		plt += t->rows[i].cfa_type == UNWIND_CFA_PLT;
		gaps += t->rows[i].cfa_type == UNWIND_ROW_GAP;
		cannot += t->rows[i].cfa_type == UNWIND_ROW_CANNOT;
	}
	printf("  libc: %zu rows (%zu bytes), %zu FDEs, build %.1f ms; stop %zu signal %zu plt %zu "
	       "gap %zu cannot %zu; build-id %s\n",
	       t->n_rows, t->n_rows * sizeof(t->rows[0]), t->n_fdes, ms, stop, signal, plt, gaps,
	       cannot, t->build_id);
	CHECK(t->build_id[0]);
	CHECK_EQ_INT(t->source, CFI_SOURCE_EH_FRAME);
	CHECK(stop >= 1);   /* clone3 / start_thread outermost frames */
	CHECK(signal >= 1); /* __restore_rt */
	CHECK(plt >= 1);
	for (size_t i = 1; i < t->n_rows; i++)
		CHECK(t->rows[i - 1].pc < t->rows[i].pc);
	cfi_table__free(t);
}

/* A sink that checks rows arrive in order, in batches, and fingerprints them. */
struct check_sink {
	size_t begun_rows, got, batches, max_batch;
	uint64_t hash;
	bool out_of_order;
};

static int check_begin(void *ctx, const struct cfi_table *t)
{
	struct check_sink *k = ctx;

	k->begun_rows = t->n_rows;
	k->hash = 1469598103934665603ULL;
	return 0;
}

static uint64_t fnv_rows(uint64_t h, const struct unwind_row *rows, size_t n)
{
	const unsigned char *p = (const unsigned char *)rows;

	for (size_t i = 0; i < n * sizeof(*rows); i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

static int check_write(void *ctx, size_t first, const struct unwind_row *rows, size_t n)
{
	struct check_sink *k = ctx;

	k->out_of_order |= first != k->got;
	k->got += n;
	k->batches++;
	if (n > k->max_batch)
		k->max_batch = n;
	k->hash = fnv_rows(k->hash, rows, n);
	return 0;
}

static long peak_rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6))
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

/* Resets VmHWM to the current RSS (Linux: "5" in clear_refs). */
static bool reset_peak_rss(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
	bool ok = fd >= 0 && write(fd, "5", 1) == 1;

	if (fd >= 0)
		close(fd);
	return ok;
}

/* Streams path's table (counted, then written in batches: in_memory_max 1 forces it). */
static int stream_path(const char *path, size_t in_memory_max, struct check_sink *k,
		       struct cfi_table *t)
{
	struct cfi_row_sink sink = {
	    .ctx = k, .in_memory_max = in_memory_max, .begin = check_begin, .write = check_write};
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	memset(k, 0, sizeof(*k));
	ret = cfi_compile_fd_to(fd, t, &sink);
	close(fd);
	return ret;
}

/* The two-pass streamed compile gives the very rows of the one-pass compile in memory. */
TEST(streamed_rows_equal_rows_compiled_in_memory)
{
	struct cfi_table *whole = compile_path(LIBC), header;
	struct check_sink k;

	CHECK(whole);
	CHECK_EQ_INT(stream_path(LIBC, 1, &k, &header), 0);
	CHECK_EQ_INT((int)header.n_rows, (int)whole->n_rows);
	CHECK_EQ_INT((int)k.begun_rows, (int)whole->n_rows);
	CHECK_EQ_INT((int)k.got, (int)whole->n_rows);
	CHECK(!k.out_of_order);
	CHECK(k.batches > 1 && k.max_batch <= 4096);
	CHECK(k.hash == fnv_rows(1469598103934665603ULL, whole->rows, whole->n_rows));
	CHECK(!header.rows);
	cfi_table__free(whole);
}

/* Streams path's table: more than min_rows rows in pc order, and (not under ASan, whose
 * redzones and quarantine inflate it) a peak RSS under max_kib above the start. */
static void streams_within(const char *path, size_t min_rows, long max_kib, int *ret_failed)
{
	struct cfi_table header;
	struct check_sink k;
	long before, peak;

	CHECK(reset_peak_rss());
	before = peak_rss_kb();
	CHECK_EQ_INT(stream_path(path, 0, &k, &header), 0);
	peak = peak_rss_kb();
	printf("  %s: %zu rows in %zu batches, %zu FDEs; peak RSS +%ld KiB\n", path, k.got,
	       k.batches, header.n_fdes, peak - before);
	CHECK(k.got > min_rows && k.got == header.n_rows);
	CHECK(!k.out_of_order);
#ifndef UNDER_ASAN
	CHECK(peak - before < max_kib);
#endif
}

/* node's 2.7 MB of CFI (277k rows, 3.3 MB of rows) compiles with a bounded footprint: the FDE
 * list, one batch, libdw's cache of at most 1024 FDEs and the mapped section (the in-memory
 * compile of the same file peaked 21 MB above its start before rows were streamed). */
TEST(big_cfi_streams_within_a_bounded_footprint)
{
	CHECK(access(NODE, R_OK) == 0);
	streams_within(NODE, 200000, 8 * 1024, ret_failed);
}

/* Debian's libLLVM (clang's, installed with it) has its .eh_frame before .eh_frame_hdr and
 * 95k FDEs: through the header-first image libdw finds each FDE by binary search, so the
 * compile stays bounded (scanning from the section start it kept every FDE it passed:
 * 14.6 MiB above its start, and 4-5 s instead of 0.3 s). */
TEST(gold_layout_library_streams_within_a_bounded_footprint)
{
	char path[PATH_MAX] = "";
	glob_t g;

	if (!glob("/usr/lib/x86_64-linux-gnu/libLLVM-*.so.1", 0, NULL, &g) && g.gl_pathc)
		snprintf(path, sizeof(path), "%s", g.gl_pathv[0]);
	globfree(&g);
	CHECK(path[0]); /* clang's library: scripts/install-deps.sh installs clang */
	if (!path[0])
		return;
	CHECK_EQ_INT(needs_image(path), 1);
	streams_within(path, 500000, 10 * 1024, ret_failed);
}

TEST(own_vdso_compiles)
{
	struct cfi_table *t = cfi_compile_own_vdso();

	CHECK(t);
	CHECK(t->n_rows > 1);
	CHECK(t->n_segs >= 1);
	cfi_table__free(t);
}

TEST(file_without_cfi_is_enoent)
{
	char path[] = "/tmp/rt-cfi-XXXXXX";
	int fd = mkstemp(path);
	struct cfi_table *t;

	CHECK(fd >= 0);
	CHECK(write(fd, "not an ELF file at all", 22) == 22);
	t = cfi_compile_fd(fd);
	close(fd);
	unlink(path);
	CHECK(!t);
	CHECK(errno == ENOEXEC || errno == ENOENT);
}

/* Overwrites .eh_frame (found through readelf) with a byte pattern. */
static int corrupt_eh_frame(const char *path, unsigned char byte)
{
	char cmd[PATH_MAX + 96], line[512];
	unsigned long off = 0, size = 0;
	unsigned char *junk;
	FILE *p;
	int fd;

	snprintf(cmd, sizeof(cmd), "readelf -SW '%s'", path);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		char *s = strstr(line, " .eh_frame ");

		if (s && sscanf(s, " .eh_frame PROGBITS %*x %lx %lx", &off, &size) == 2)
			break;
	}
	pclose(p);
	if (!off || !size || !(junk = malloc(size)))
		return -1;
	memset(junk, byte, size);
	for (size_t i = 0; i < size; i += 7)
		junk[i] = (unsigned char)(i * 31);
	fd = open(path, O_WRONLY);
	if (fd < 0 || pwrite(fd, junk, size, off) != (ssize_t)size) {
		free(junk);
		return -1;
	}
	free(junk);
	close(fd);
	return 0;
}

TEST(corrupt_eh_frame_is_counted_not_a_crash)
{
	static const unsigned char patterns[] = {0x00, 0xff, 0x41};
	char path[] = "/tmp/rt-cfi-corrupt-XXXXXX";
	char cmd[PATH_MAX * 2];

	for (size_t i = 0; i < sizeof(patterns); i++) {
		struct cfi_table *t;
		int fd = mkstemp(path);

		CHECK(fd >= 0);
		close(fd);
		snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", fixture_path("fixture-pie"), path);
		CHECK(system(cmd) == 0);
		CHECK(corrupt_eh_frame(path, patterns[i]) == 0);
		t = compile_path(path);
		unlink(path);
		strcpy(path, "/tmp/rt-cfi-corrupt-XXXXXX");
		/* Either refused as unreadable, or what was readable, with the rest counted. */
		if (t) {
			for (size_t r = 1; r < t->n_rows; r++)
				CHECK(t->rows[r - 1].pc < t->rows[r].pc);
			cfi_table__free(t);
		} else {
			CHECK(errno == EINVAL || errno == ENOENT);
		}
	}
}

TEST_MAIN("cfi_compile", T(pie_fixture_rows_agree_with_readelf),
	  T(non_pie_fixture_rows_agree_with_readelf),
	  T(shared_library_fixture_rows_agree_with_readelf), T(cpp_fixture_rows_agree_with_readelf),
	  T(static_stripped_fixture_rows_agree_with_readelf), T(libc_rows_agree_with_readelf),
	  T(libc_table_has_stop_signal_and_plt_rows), T(own_vdso_compiles),
	  T(streamed_rows_equal_rows_compiled_in_memory),
	  T(big_cfi_streams_within_a_bounded_footprint),
	  T(gold_layout_library_streams_within_a_bounded_footprint),
	  T(gold_fixture_rows_agree_with_readelf),
	  T(eh_frame_image_holds_both_sections_header_first), T(file_without_cfi_is_enoent),
	  T(corrupt_eh_frame_is_counted_not_a_crash))
