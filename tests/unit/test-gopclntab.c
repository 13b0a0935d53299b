// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the .gopclntab decoder: a table of each header magic (1.2, 1.16, 1.18, 1.20)
 * written here byte by byte with two functions and an inlined call, then looked up. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <libgen.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/gopclntab.h"
#include "test.h"

#define TEXT 0x401000ULL
#define IMAGE_VADDR 0x500000ULL /* where the fake image's one segment lives */
#define INLTREE_OFF 0x100	/* inline tree's offset in the image (= from gofunc) */
/* Function names, as in funcnametab. */
static const char NAMES[] = "main.outer\0main.other\0main.inner";
#define NAME_OUTER 0
#define NAME_OTHER 11
#define NAME_INNER 22

struct buf {
	uint8_t *b;
	size_t len;
};

static void put(struct buf *b, size_t off, uint64_t v, unsigned size)
{
	memcpy(b->b + off, &v, size);
	if (off + size > b->len)
		b->len = off + size;
}

/* pc-value table: -1 on [0, 0x10), 0 (inline index 0) on [0x10, 0x20), -1 to 0x100. */
static size_t put_inline_pcdata(struct buf *b, size_t off)
{
	static const uint8_t table[] = {0x00, 0x10, 0x02, 0x10, 0x01, 0xe0, 0x01, 0x00};

	memcpy(b->b + off, table, sizeof(table));
	if (off + sizeof(table) > b->len)
		b->len = off + sizeof(table);
	return sizeof(table);
}

/* The image: one segment holding the inline tree (1.16: its absolute address is in funcdata). */
struct fake {
	uint64_t words[4096]; /* aligned storage for table and image */
	struct buf tab, img;
	struct go_image gi;
};

static void fake_init(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	f->tab.b = (uint8_t *)f->words;
	f->img.b = (uint8_t *)f->words + 16384;
	f->gi.data = f->img.b;
	f->gi.size = 4096;
	f->gi.segs[0].vaddr = IMAGE_VADDR;
	f->gi.segs[0].offset = 0;
	f->gi.segs[0].filesz = 4096;
	f->gi.nsegs = 1;
}

/* inlinedCall of main.inner called at outer+8: 1.16-1.19 layout (20 bytes) or 1.20's (16). */
static void put_inlined_call(struct fake *f, int v120)
{
	if (v120) {
		put(&f->img, INLTREE_OFF + 4, NAME_INNER, 4); /* nameOff */
		put(&f->img, INLTREE_OFF + 8, 8, 4);	      /* parentPc */
	} else {
		put(&f->img, INLTREE_OFF + 0, 0xffff, 2);      /* parent -1 */
		put(&f->img, INLTREE_OFF + 12, NAME_INNER, 4); /* func_ */
		put(&f->img, INLTREE_OFF + 16, 8, 4);	       /* parentPc */
	}
}

/* 1.18 and 1.20: header with textStart, u32 ftab, u32 funcdata from gofunc. */
static struct gopclntab *build_118(struct fake *f, uint32_t magic, int v120)
{
	size_t names = 0x60, pctab = 0x100, pcln = 0x200, rec0, rec1, fixed = v120 ? 44 : 40;

	put(&f->tab, 0, magic, 4);
	put(&f->tab, 6, 1, 1);
	put(&f->tab, 7, 8, 1);
	put(&f->tab, 8, 2, 8);	    /* nfunc */
	put(&f->tab, 24, TEXT, 8);  /* textStart */
	put(&f->tab, 32, names, 8); /* funcnameOffset */
	put(&f->tab, 56, pctab, 8); /* pctabOffset */
	put(&f->tab, 64, pcln, 8);  /* pclnOffset */
	memcpy(f->tab.b + names, NAMES, sizeof(NAMES));
	put_inline_pcdata(&f->tab, pctab + 1); /* offset 0 means "no table" */
	rec0 = 3 * 8;
	rec1 = rec0 + fixed + 3 * 4 + 4 * 4;
	put(&f->tab, pcln + 0, 0, 4); /* ftab: entryoff, funcoff */
	put(&f->tab, pcln + 4, rec0, 4);
	put(&f->tab, pcln + 8, 0x100, 4);
	put(&f->tab, pcln + 12, rec1, 4);
	put(&f->tab, pcln + 16, 0x200, 4); /* end */
	/* outer: npcdata 3 (inline index in the third), nfuncdata 4 (inline tree in the fourth) */
	put(&f->tab, pcln + rec0 + 0, 0, 4);
	put(&f->tab, pcln + rec0 + 4, NAME_OUTER, 4);
	put(&f->tab, pcln + rec0 + 28, 3, 4);
	put(&f->tab, pcln + rec0 + fixed - 1, 4, 1);
	put(&f->tab, pcln + rec0 + fixed + 8, 1, 4); /* pcdata[2] -> pctab + 1 */
	for (int i = 0; i < 3; i++)
		put(&f->tab, pcln + rec0 + fixed + 12 + 4 * i, 0xffffffff, 4);
	put(&f->tab, pcln + rec0 + fixed + 24, INLTREE_OFF, 4);
	put(&f->tab, pcln + rec1 + 0, 0x100, 4);
	put(&f->tab, pcln + rec1 + 4, NAME_OTHER, 4);
	put_inlined_call(f, v120);
	return gopclntab__open(&f->gi, f->tab.b, 0x400, 0x480000, IMAGE_VADDR);
}

/* 1.16: pointer-sized header fields and ftab, funcdata as absolute pointers. */
static struct gopclntab *build_116(struct fake *f)
{
	size_t names = 0x40, pctab = 0x100, pcln = 0x200, rec0 = 3 * 16, rec1 = rec0 + 0x60;

	put(&f->tab, 0, 0xfffffffa, 4);
	put(&f->tab, 6, 1, 1);
	put(&f->tab, 7, 8, 1);
	put(&f->tab, 8, 2, 8);
	put(&f->tab, 24, names, 8);
	put(&f->tab, 48, pctab, 8);
	put(&f->tab, 56, pcln, 8);
	memcpy(f->tab.b + names, NAMES, sizeof(NAMES));
	put_inline_pcdata(&f->tab, pctab + 1);
	put(&f->tab, pcln + 0, TEXT, 8);
	put(&f->tab, pcln + 8, rec0, 8);
	put(&f->tab, pcln + 16, TEXT + 0x100, 8);
	put(&f->tab, pcln + 24, rec1, 8);
	put(&f->tab, pcln + 32, TEXT + 0x200, 8);
	put(&f->tab, pcln + rec0 + 0, TEXT, 8);
	put(&f->tab, pcln + rec0 + 8, NAME_OUTER, 4);
	put(&f->tab, pcln + rec0 + 32, 3, 4); /* npcdata */
	put(&f->tab, pcln + rec0 + 43, 4, 1); /* nfuncdata */
	put(&f->tab, pcln + rec0 + 44 + 8, 1, 4);
	/* pcdata ends at 56: already 8-aligned; funcdata[3] is the tree's address */
	put(&f->tab, pcln + rec0 + 56 + 24, IMAGE_VADDR + INLTREE_OFF, 8);
	put(&f->tab, pcln + rec1 + 0, TEXT + 0x100, 8);
	put(&f->tab, pcln + rec1 + 8, NAME_OTHER, 4);
	put_inlined_call(f, 0);
	return gopclntab__open(&f->gi, f->tab.b, 0x400, 0x480000, 0);
}

/* 1.2: names and records relative to the table's start, names only. */
static struct gopclntab *build_12(struct fake *f)
{
	size_t names = 0x100, rec0 = 0x80, rec1 = 0xa0;

	put(&f->tab, 0, 0xfffffffb, 4);
	put(&f->tab, 6, 1, 1);
	put(&f->tab, 7, 8, 1);
	put(&f->tab, 8, 2, 8);
	put(&f->tab, 16, TEXT, 8);
	put(&f->tab, 24, rec0, 8);
	put(&f->tab, 32, TEXT + 0x100, 8);
	put(&f->tab, 40, rec1, 8);
	put(&f->tab, 48, TEXT + 0x200, 8);
	put(&f->tab, rec0, TEXT, 8);
	put(&f->tab, rec0 + 8, names + NAME_OUTER, 4);
	put(&f->tab, rec1, TEXT + 0x100, 8);
	put(&f->tab, rec1 + 8, names + NAME_OTHER, 4);
	memcpy(f->tab.b + names, NAMES, sizeof(NAMES));
	return gopclntab__open(&f->gi, f->tab.b, 0x400, 0x480000, 0);
}

/* The common expectations: outer with its inlined call at +0x10..0x20, other, the edges. */
static void check_lookups(struct gopclntab *t, int inlines, int *ret_failed)
{
	const char *names[GOPCLNTAB_MAX_FRAMES];

	CHECK(t);
	CHECK_EQ_INT(gopclntab__count(t), 2);
	CHECK_EQ_INT(gopclntab__lookup(t, TEXT + 4, names, 16), 1);
	CHECK_EQ_STR(names[0], "main.outer");
	if (inlines) {
		CHECK_EQ_INT(gopclntab__lookup(t, TEXT + 0x15, names, 16), 2);
		CHECK_EQ_STR(names[0], "main.inner");
		CHECK_EQ_STR(names[1], "main.outer");
		/* room for one name only: the holder is kept, the inlined call dropped */
		CHECK_EQ_INT(gopclntab__lookup(t, TEXT + 0x15, names, 1), 1);
		CHECK_EQ_STR(names[0], "main.outer");
	} else {
		CHECK_EQ_INT(gopclntab__lookup(t, TEXT + 0x15, names, 16), 1);
		CHECK_EQ_STR(names[0], "main.outer");
	}
	CHECK_EQ_INT(gopclntab__lookup(t, TEXT + 0x20, names, 16), 1);
	CHECK_EQ_STR(names[0], "main.outer");
	CHECK_EQ_INT(gopclntab__lookup(t, TEXT + 0x150, names, 16), 1);
	CHECK_EQ_STR(names[0], "main.other");
	CHECK_EQ_INT(gopclntab__lookup(t, TEXT - 1, names, 16), 0);
	CHECK_EQ_INT(gopclntab__lookup(t, TEXT + 0x200, names, 16), 0);
}

/* funcID bytes (runtime2.go's _func of each release): at rec + fid_off of the records outer
 * (rec0, set to 1: a special function, funcID_abort, not a wrapper) and other (rec1: id), and
 * in the inlined call (inl_off: id). Written after open: the records are read at first lookup. */
static void put_funcids(struct fake *f, size_t rec0, size_t rec1, size_t fid_off, size_t inl_off,
			uint8_t id)
{
	put(&f->tab, rec0 + fid_off, 1, 1);
	put(&f->tab, rec1 + fid_off, id, 1);
	put(&f->img, INLTREE_OFF + inl_off, id, 1);
}

/* other and the inlined call are wrappers; outer (special, not a wrapper) is not. */
static void check_wrappers(struct gopclntab *t, int marked, int *ret_failed)
{
	const char *names[GOPCLNTAB_MAX_FRAMES];
	uint8_t w[GOPCLNTAB_MAX_FRAMES];

	memset(w, 7, sizeof(w));
	CHECK_EQ_INT(gopclntab__lookup_funcs(t, TEXT + 4, names, w, 16), 1);
	CHECK_EQ_INT(w[0], 0);
	CHECK_EQ_INT(gopclntab__lookup_funcs(t, TEXT + 0x150, names, w, 16), 1);
	CHECK_EQ_STR(names[0], "main.other");
	CHECK_EQ_INT(w[0], marked);
	if (marked) {
		CHECK_EQ_INT(gopclntab__lookup_funcs(t, TEXT + 0x15, names, w, 16), 2);
		CHECK_EQ_STR(names[0], "main.inner");
		CHECK_EQ_INT(w[0], 1); /* the inlined wrapper */
		CHECK_EQ_INT(w[1], 0);
	}
	/* without the flags, the same names */
	CHECK_EQ_INT(gopclntab__lookup(t, TEXT + 0x150, names, 16), 1);
	CHECK_EQ_STR(names[0], "main.other");
}

TEST(go120_funcid_after_start_line_marks_wrappers)
{
	static struct fake f;
	struct gopclntab *t;

	fake_init(&f);
	t = build_118(&f, 0xfffffff1, 1);
	CHECK(t);
	/* records at pcln 0x200 + 24 and + 24 + 44 + 28; funcID at 40 (after startLine); the
	 * 1.20 inlinedCall starts with it; wrapper is 21 (1.20 - 1.22) */
	put_funcids(&f, 0x200 + 24, 0x200 + 96, 40, 0, 21);
	check_wrappers(t, 1, ret_failed);
	CHECK_EQ_INT(gopclntab__wrapper_funcid(t), 21);
	gopclntab__free(t);
}

TEST(go118_funcid_after_cu_offset_marks_wrappers)
{
	static struct fake f;
	struct gopclntab *t;

	fake_init(&f);
	t = build_118(&f, 0xfffffff0, 0);
	CHECK(t);
	/* funcID at 36 (u32 entryoff + 8 u32); inlinedCall: after the int16 parent */
	put_funcids(&f, 0x200 + 24, 0x200 + 92, 36, 2, 21);
	check_wrappers(t, 1, ret_failed);
	gopclntab__free(t);
}

TEST(go116_funcid_after_pointer_entry_marks_wrappers)
{
	static struct fake f;
	struct gopclntab *t;

	fake_init(&f);
	t = build_116(&f);
	CHECK(t);
	/* funcID at 40 (u64 entry + 8 u32); without runtime.systemstack_switch, 1.16's 22 */
	put_funcids(&f, 0x200 + 48, 0x200 + 48 + 0x60, 40, 2, 22);
	check_wrappers(t, 1, ret_failed);
	CHECK_EQ_INT(gopclntab__wrapper_funcid(t), 22);
	gopclntab__free(t);
}

TEST(wrapper_funcid_follows_systemstack_switch)
{
	static const char anchor[] = "runtime.systemstack_switch";
	static struct fake f;
	const char *names[GOPCLNTAB_MAX_FRAMES];
	uint8_t w[GOPCLNTAB_MAX_FRAMES];
	struct gopclntab *t;

	fake_init(&f);
	t = build_116(&f);
	CHECK(t);
	/* Go 1.17 wrote the 1.16 header with wrapper = 21: outer becomes the anchor (20). */
	memcpy(f.tab.b + 0x40 + 40, anchor, sizeof(anchor));
	put(&f.tab, 0x200 + 48 + 8, 40, 4);
	put_funcids(&f, 0x200 + 48, 0x200 + 48 + 0x60, 40, 2, 21);
	put(&f.tab, 0x200 + 48 + 40, 20, 1);
	CHECK_EQ_INT(gopclntab__wrapper_funcid(t), 21);
	CHECK_EQ_INT(gopclntab__lookup_funcs(t, TEXT + 0x150, names, w, 16), 1);
	CHECK_EQ_INT(w[0], 1);
	CHECK_EQ_INT(gopclntab__lookup_funcs(t, TEXT + 4, names, w, 16), 1);
	CHECK_EQ_STR(names[0], anchor);
	CHECK_EQ_INT(w[0], 0);
	gopclntab__free(t);
}

TEST(go12_funcid_is_not_decoded)
{
	static struct fake f;
	struct gopclntab *t;

	fake_init(&f);
	t = build_12(&f);
	CHECK(t);
	/* where Go 1.11 - 1.15 put funcID (u64 entry + 7 u32): 1.2 - 1.10 had nfuncdata there */
	put_funcids(&f, 0x80, 0xa0, 36, 2, 21);
	check_wrappers(t, 0, ret_failed);
	CHECK_EQ_INT(gopclntab__wrapper_funcid(t), -1);
	gopclntab__free(t);
}

TEST(go120_header_inlined_call_is_its_own_frame)
{
	static struct fake f;
	struct gopclntab *t;

	fake_init(&f);
	t = build_118(&f, 0xfffffff1, 1);
	CHECK(t);
	CHECK_EQ_INT(gopclntab__version(t), GOPCLNTAB_V120);
	CHECK(gopclntab__has_inline(t));
	check_lookups(t, 1, ret_failed);
	gopclntab__free(t);
}

TEST(go118_header_inlined_call_is_its_own_frame)
{
	static struct fake f;
	struct gopclntab *t;

	fake_init(&f);
	t = build_118(&f, 0xfffffff0, 0);
	CHECK(t);
	CHECK_EQ_INT(gopclntab__version(t), GOPCLNTAB_V118);
	check_lookups(t, 1, ret_failed);
	gopclntab__free(t);
}

TEST(go116_header_inline_tree_through_pointer)
{
	static struct fake f;
	struct gopclntab *t;

	fake_init(&f);
	t = build_116(&f);
	CHECK(t);
	CHECK_EQ_INT(gopclntab__version(t), GOPCLNTAB_V116);
	check_lookups(t, 1, ret_failed);
	gopclntab__free(t);
}

TEST(go12_header_names_functions)
{
	static struct fake f;
	struct gopclntab *t;

	fake_init(&f);
	t = build_12(&f);
	CHECK(t);
	CHECK_EQ_INT(gopclntab__version(t), GOPCLNTAB_V12);
	CHECK(!gopclntab__has_inline(t));
	check_lookups(t, 0, ret_failed);
	gopclntab__free(t);
}

TEST(go118_without_gofunc_names_holder_only)
{
	static struct fake f;
	const char *names[4];
	struct gopclntab *t, *u;

	fake_init(&f);
	t = build_118(&f, 0xfffffff0, 0);
	CHECK(t);
	/* The same table, its module data not found: no inline tree, the function still named. */
	u = gopclntab__open(&f.gi, f.tab.b, 0x400, 0x480000, 0);
	gopclntab__free(t);
	CHECK(u);
	CHECK(!gopclntab__has_inline(u));
	CHECK_EQ_INT(gopclntab__lookup(u, TEXT + 0x15, names, 4), 1);
	CHECK_EQ_STR(names[0], "main.outer");
	gopclntab__free(u);
}

TEST(unknown_magic_and_damaged_tables_are_refused)
{
	static struct fake f;
	struct gopclntab *t;

	fake_init(&f);
	t = build_118(&f, 0xfffffff0, 0);
	gopclntab__free(t);
	put(&f.tab, 0, 0xfffffff7, 4); /* no such release */
	errno = 0;
	CHECK(!gopclntab__open(&f.gi, f.tab.b, 0x400, 0, 0));
	CHECK_EQ_INT(errno, ENOENT);
	put(&f.tab, 0, 0xfffffff0, 4);
	put(&f.tab, 8, 1000000, 8); /* nfunc past the table */
	CHECK(!gopclntab__open(&f.gi, f.tab.b, 0x400, 0, 0));
	put(&f.tab, 8, 2, 8);
	put(&f.tab, 64, 0x10000, 8); /* pclnOffset past the end */
	CHECK(!gopclntab__open(&f.gi, f.tab.b, 0x400, 0, 0));
	CHECK(!gopclntab__open(&f.gi, f.tab.b, 8, 0, 0)); /* truncated header */
}

TEST(c_binary_has_no_go_table)
{
	char exe[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct stat st;
	void *map;
	int fd;

	CHECK(n > 0);
	exe[n] = '\0';
	snprintf(path, sizeof(path), "%s/../fixtures/fixture-pie", dirname(exe));
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	CHECK(!fstat(fd, &st));
	map = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	CHECK(map != MAP_FAILED);
	errno = 0;
	CHECK(!gopclntab__open_elf(map, st.st_size));
	CHECK_EQ_INT(errno, ENOENT);
	/* not ELF at all */
	CHECK(!gopclntab__open_elf("hello", 5));
	CHECK_EQ_INT(errno, ENOEXEC);
	munmap(map, st.st_size);
}

/* pcsp of main.outer: 0 on [0, 0x10), 0x20 on [0x10, 0x40), 0 on [0x40, 0x100); main.other's
 * runs past its end (damaged). Zigzag value deltas from -1, then pc deltas. */
static const uint8_t PCSP_OUTER[] = {0x02, 0x10, 0x40, 0x30, 0x3f, 0xc0, 0x01, 0x00};
static const uint8_t PCSP_OTHER[] = {0x02, 0x80, 0x04, 0x00};

struct runs {
	uint64_t lo[8], hi[8];
	int32_t v[8];
	int n;
};

static int keep_run(void *ctx, uint64_t lo, uint64_t hi, int32_t value)
{
	struct runs *r = ctx;

	if (r->n < 8) {
		r->lo[r->n] = lo;
		r->hi[r->n] = hi;
		r->v[r->n] = value;
	}
	r->n++;
	return 0;
}

/* The tables at pctab + off and + off + 8 (1.2: pctab is the table's start), the records' pcsp
 * field (after entry, nameoff, args, deferreturn) pointing at them. */
static void check_pcsp(struct fake *f, struct gopclntab *t, size_t rec0, size_t rec1,
		       size_t entry_size, size_t pctab, size_t off, int *ret_failed)
{
	struct gopclntab_func outer, other;
	struct runs r = {0};

	CHECK(t);
	memcpy(f->tab.b + pctab + off, PCSP_OUTER, sizeof(PCSP_OUTER));
	memcpy(f->tab.b + pctab + off + 8, PCSP_OTHER, sizeof(PCSP_OTHER));
	put(&f->tab, rec0 + entry_size + 12, off, 4);
	put(&f->tab, rec1 + entry_size + 12, off + 8, 4);
	CHECK_EQ_INT(gopclntab__func(t, 0, &outer), 0);
	CHECK_EQ_INT(gopclntab__func(t, 1, &other), 0);
	CHECK_EQ_INT(outer.entry, TEXT);
	CHECK_EQ_INT(outer.end, TEXT + 0x100);
	CHECK_EQ_INT(other.end, TEXT + 0x200);
	CHECK_EQ_INT(gopclntab__pcsp_runs(t, &outer, keep_run, &r), 0);
	CHECK_EQ_INT(r.n, 3);
	CHECK(r.lo[0] == TEXT && r.hi[0] == TEXT + 0x10 && r.v[0] == 0);
	CHECK(r.lo[1] == TEXT + 0x10 && r.hi[1] == TEXT + 0x40 && r.v[1] == 0x20);
	CHECK(r.lo[2] == TEXT + 0x40 && r.hi[2] == TEXT + 0x100 && r.v[2] == 0);
	CHECK_EQ_INT(gopclntab__pcsp_runs(t, &other, keep_run, &r), -EINVAL);
	gopclntab__free(t);
}

TEST(pcsp_runs_decoded_in_every_format)
{
	struct fake f;

	fake_init(&f);
	check_pcsp(&f, build_118(&f, 0xfffffff1, 1), 0x200 + 3 * 8, 0x200 + 3 * 8 + 44 + 28, 4,
		   0x100, 0x20, ret_failed);
	fake_init(&f);
	check_pcsp(&f, build_118(&f, 0xfffffff0, 0), 0x200 + 3 * 8, 0x200 + 3 * 8 + 40 + 28, 4,
		   0x100, 0x20, ret_failed);
	fake_init(&f);
	check_pcsp(&f, build_116(&f), 0x200 + 3 * 16, 0x200 + 3 * 16 + 0x60, 8, 0x100, 0x20,
		   ret_failed);
	fake_init(&f);
	check_pcsp(&f, build_12(&f), 0x80, 0xa0, 8, 0, 0x180, ret_failed);
}

/* funcFlag follows funcID (1.17+): TOPFRAME on a record reads back. */
TEST(go118_func_flags_follow_funcid)
{
	struct fake f;
	struct gopclntab *t;
	struct gopclntab_func fn;

	fake_init(&f);
	t = build_118(&f, 0xfffffff0, 0);
	CHECK(t);
	put(&f.tab, 0x200 + 3 * 8 + 40 + 28 + 37, GOPCLNTAB_FLAG_TOPFRAME, 1);
	CHECK_EQ_INT(gopclntab__func(t, 1, &fn), 0);
	CHECK_EQ_INT(fn.flags, GOPCLNTAB_FLAG_TOPFRAME);
	CHECK_EQ_INT(gopclntab__func(t, 0, &fn), 0);
	CHECK_EQ_INT(fn.flags, 0);
	gopclntab__free(t);
}

TEST_MAIN("gopclntab", T(pcsp_runs_decoded_in_every_format), T(go118_func_flags_follow_funcid),
	  T(go120_header_inlined_call_is_its_own_frame),
	  T(go118_header_inlined_call_is_its_own_frame),
	  T(go116_header_inline_tree_through_pointer), T(go12_header_names_functions),
	  T(go118_without_gofunc_names_holder_only),
	  T(unknown_magic_and_damaged_tables_are_refused), T(c_binary_has_no_go_table),
	  T(go120_funcid_after_start_line_marks_wrappers),
	  T(go118_funcid_after_cu_offset_marks_wrappers),
	  T(go116_funcid_after_pointer_entry_marks_wrappers),
	  T(wrapper_funcid_follows_systemstack_switch), T(go12_funcid_is_not_decoded))
