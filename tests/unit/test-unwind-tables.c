// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the unwind-table cache (agent/unwind/unwind_tables.c) with an in-memory sink
 * instead of BPF maps: this process's mappings get tables, libc is built once for two
 * processes, a full rows map evicts the least recently sampled table, and pcs map to rows. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/types.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process/process_registry.h"
#include "bpf_row_search.h"
#include "unwind/cfi_compile.h"
#include "unwind/unwind_tables.h"
#include "test.h"

#define MAX_PIDS 8

static struct unwind_row *sink_rows;	  /* the current test's rows "map" */
static struct process_registry *registry; /* the current test's processes */

static int write_rows(void *ctx, uint32_t first, const struct unwind_row *rows, size_t n)
{
	if (first % 2)
		return -EINVAL;
	memcpy(sink_rows + first, rows, n * sizeof(*rows));
	return 0;
}

struct fake_sink {
	struct unwind_table_info tables[UNWIND_MAX_TABLES];
	pid_t pids[MAX_PIDS];
	struct unwind_process procs[MAX_PIDS];
	int syncs;
};

static int set_table(void *ctx, const struct unwind_table_info *info)
{
	struct fake_sink *f = ctx;

	f->tables[info->id % UNWIND_MAX_TABLES] = *info;
	return 0;
}

static int set_process(void *ctx, pid_t pid, const struct unwind_process *proc)
{
	struct fake_sink *f = ctx;

	for (int i = 0; i < MAX_PIDS; i++) {
		if (f->pids[i] == pid || !f->pids[i]) {
			f->pids[i] = pid;
			f->procs[i] = *proc;
			return 0;
		}
	}
	return -ENOSPC;
}

static void forget_process(void *ctx, pid_t pid)
{
	struct fake_sink *f = ctx;

	for (int i = 0; i < MAX_PIDS; i++)
		if (f->pids[i] == pid)
			f->pids[i] = -1;
}

static void sync_runs(void *ctx)
{
	((struct fake_sink *)ctx)->syncs++;
}

static struct unwind_tables *new_tables(struct fake_sink *f, struct unwind_row *rows, size_t cap)
{
	struct unwind_sink sink = {
	    .capacity = cap,
	    .write_rows = write_rows,
	    .set_table = set_table,
	    .set_process = set_process,
	    .forget_process = forget_process,
	    .sync = sync_runs,
	    .ctx = f,
	};

	memset(f, 0, sizeof(*f));
	sink_rows = rows;
	registry = process_registry__new(NULL);
	return registry ? unwind_tables__new(&sink, registry) : NULL;
}

static void free_tables(struct unwind_tables *ut)
{
	unwind_tables__free(ut);
	process_registry__free(registry);
	registry = NULL;
}

static const struct unwind_process *proc_of(const struct fake_sink *f, pid_t pid)
{
	for (int i = 0; i < MAX_PIDS; i++)
		if (f->pids[i] == pid)
			return &f->procs[i];
	return NULL;
}

/* What row_for returns when the indexed search and a scan of the table disagree. */
static const struct unwind_row search_mismatch = {.cfa_type = 0xff};

/* The row the BPF unwinder would use for pc in pid, as it would find it. */
static const struct unwind_row *row_for(const struct fake_sink *f, const struct unwind_row *rows,
					pid_t pid, uint64_t pc)
{
	const struct unwind_process *p = proc_of(f, pid);
	const struct unwind_row *best = NULL;

	for (uint32_t i = 0; p && i < p->n_mappings; i++) {
		const struct unwind_mapping *m = &p->mappings[i];
		const struct unwind_table_info *t = &f->tables[m->table_id % UNWIND_MAX_TABLES];

		uint32_t tpc = (uint32_t)(pc - m->bias);
		long found, scanned;
		int steps;

		if (pc < m->start || pc >= m->end || !m->table_id || t->id != m->table_id)
			continue;
		/* through the table's index, as BPF searches; checked against a scan */
		found = bpf_row_search(t, rows + t->first_row, rows + t->index_row, tpc, &steps);
		scanned = scan_row(rows + t->first_row, t->n_rows, tpc);
		if (found != scanned)
			return &search_mismatch;
		if (found >= 0)
			best = &rows[t->first_row + found];
	}
	return best;
}

/* Every 3rd byte of m: the pcs at which the indexed search (as BPF searches) and the scan
 * disagree. The scan's cursor moves with the rising pc (its row: the last at or below pc), so
 * the whole mapping costs one pass over the table's rows, not one per pc (under ASan, with
 * libasan's rows, per-pc scans took minutes). */
static uint64_t mapping_search_mismatches(const struct unwind_table_info *t,
					  const struct unwind_row *rows,
					  const struct unwind_mapping *m)
{
	const struct unwind_row *own = rows + t->first_row;
	uint64_t bad = 0;
	uint32_t prev = 0;
	long scanned = -1;
	int steps;

	if (!m->table_id || t->id != m->table_id)
		return 0; /* no table loaded for it: row_for finds nothing, nothing to compare */
	for (uint64_t pc = m->start; pc < m->end; pc += 3) {
		uint32_t tpc = (uint32_t)(pc - m->bias);

		if (tpc < prev) /* wrapped at 2^32: the scan starts again */
			scanned = -1;
		prev = tpc;
		while ((size_t)(scanned + 1) < t->n_rows && own[scanned + 1].pc <= tpc)
			scanned++;
		bad += bpf_row_search(t, own, rows + t->index_row, tpc, &steps) != scanned;
	}
	return bad;
}

static pid_t spawn_sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		execlp("sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	usleep(100 * 1000); /* exec'd by now */
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

TEST(own_process_mappings_get_tables_and_rows_cover_functions)
{
	static struct unwind_row rows[1 << 18];
	struct fake_sink f;
	struct unwind_tables *ut = new_tables(&f, rows, 1 << 18);
	struct unwind_tables_stats st;
	const struct unwind_process *p;
	const struct unwind_row *r;
	uint32_t with_table = 0;

	CHECK(ut);
	CHECK_EQ_INT(unwind_tables__capture_process(ut, getpid()), 0);
	p = proc_of(&f, getpid());
	CHECK(p && p->n_mappings >= 3);
	for (uint32_t i = 0; i < p->n_mappings; i++) {
		with_table += p->mappings[i].table_id != UNWIND_NO_TABLE;
		if (i)
			CHECK(p->mappings[i - 1].start < p->mappings[i].start);
	}
	CHECK(with_table >= 3); /* the test binary, libc, the vDSO at least */
	/* Every 3rd byte of every mapping with a table: the indexed search finds the scan's row. */
	for (uint32_t i = 0; i < p->n_mappings; i++) {
		const struct unwind_mapping *m = &p->mappings[i];
		const struct unwind_table_info *t = &f.tables[m->table_id % UNWIND_MAX_TABLES];

		if (m->table_id == UNWIND_NO_TABLE)
			continue;
		if (t->n_rows > 10000) /* libc: big enough for an index */
			CHECK(t->n_buckets > 0 && t->index_row >= t->first_row + t->n_rows);
		CHECK_EQ_INT(mapping_search_mismatches(t, rows, m), 0);
	}
	/* Entry of a libc function: CFA = rsp + 8, return address at CFA - 8. */
	r = row_for(&f, rows, getpid(), (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "qsort"));
	CHECK(r);
	CHECK_EQ_INT(r->cfa_type, UNWIND_CFA_RSP);
	CHECK_EQ_INT(r->cfa_off, 8);
	unwind_tables__stats(ut, &st);
	CHECK(st.tables_built >= 3);
	CHECK(st.rows_loaded > 10000);
	free_tables(ut);
}

TEST(libc_is_built_once_for_two_processes)
{
	/* room for every table of this process: in an ASan build (libasan's rows too) 2^18 left
	 * one waiting for room, built again, and counted again, once its retry fell due before
	 * the sleeper's capture (a make check under load) */
	static struct unwind_row rows[1 << 20];
	struct fake_sink f;
	struct unwind_tables *ut = new_tables(&f, rows, 1 << 20);
	struct unwind_tables_stats a, b;
	pid_t pid;

	CHECK(ut);
	CHECK_EQ_INT(unwind_tables__capture_process(ut, getpid()), 0);
	unwind_tables__stats(ut, &a);
	CHECK_EQ_INT(a.load_failed, 0); /* nothing waits for room, so nothing is built twice */
	pid = spawn_sleeper();
	CHECK_EQ_INT(unwind_tables__capture_process(ut, pid), 0);
	unwind_tables__stats(ut, &b);
	reap(pid);
	/* sleep brings its own executable (and maybe ld.so was already built): libc is shared */
	CHECK(b.tables_built - a.tables_built <= 1);
	CHECK_EQ_INT(b.processes, 2);
	unwind_tables__forget_process(ut, pid);
	unwind_tables__stats(ut, &b);
	CHECK_EQ_INT(b.processes, 1);
	free_tables(ut);
}

/* The pipeline captures ready processes first: a new process of known binaries is not queued
 * behind other processes' table builds. Ready means nothing is left to build. */
TEST(a_process_is_ready_once_each_of_its_binaries_has_a_table)
{
	/* room for every table of this process, with their indexes: an ASan build's (libasan's
	 * rows too) does not fit 2^18, and a table waiting for room is rightly not ready */
	static struct unwind_row rows[1 << 20];
	struct fake_sink f;
	struct unwind_tables *ut = new_tables(&f, rows, 1 << 20);
	struct unwind_tables_stats a, b;
	pid_t pid;

	CHECK(ut);
	CHECK(!unwind_tables__ready(ut, getpid())); /* not in the registry yet */
	CHECK_EQ_INT(process_registry__capture(registry, getpid()), 0);
	CHECK(!unwind_tables__ready(ut, getpid())); /* its binaries have no tables yet */
	CHECK_EQ_INT(unwind_tables__capture_process(ut, getpid()), 0);
	CHECK(unwind_tables__ready(ut, getpid()));
	/* sleep's own executable is new: not ready until captured */
	pid = spawn_sleeper();
	CHECK_EQ_INT(process_registry__capture(registry, pid), 0);
	CHECK(!unwind_tables__ready(ut, pid));
	CHECK_EQ_INT(unwind_tables__capture_process(ut, pid), 0);
	CHECK(unwind_tables__ready(ut, pid));
	/* ready: capturing it again builds nothing */
	unwind_tables__stats(ut, &a);
	CHECK_EQ_INT(unwind_tables__capture_process(ut, pid), 0);
	unwind_tables__stats(ut, &b);
	reap(pid);
	CHECK_EQ_INT(b.tables_built, a.tables_built);
	free_tables(ut);
}

TEST(full_rows_map_evicts_least_recently_sampled_and_touch_reloads)
{
	static struct unwind_row rows[60000];
	struct fake_sink f;
	struct unwind_tables *ut = new_tables(&f, rows, 60000); /* libc alone is ~23k rows */
	struct unwind_tables_stats st;
	pid_t pid;

	CHECK(ut);
	CHECK_EQ_INT(unwind_tables__capture_process(ut, getpid()), 0);
	pid = spawn_sleeper();
	CHECK_EQ_INT(unwind_tables__capture_process(ut, pid), 0);
	unwind_tables__stats(ut, &st);
	CHECK(st.rows_loaded <= 60000);
	/* Sampling the first process again loads what it lost; evictions waited for readers. */
	unwind_tables__touch_process(ut, getpid());
	unwind_tables__stats(ut, &st);
	reap(pid);
	CHECK(st.rows_loaded <= 60000);
	if (st.tables_evicted)
		CHECK(f.syncs > 0);
	free_tables(ut);
}

TEST(gone_process_is_esrch)
{
	static struct unwind_row rows[1024];
	struct fake_sink f;
	struct unwind_tables *ut = new_tables(&f, rows, 1024);
	pid_t pid = spawn_sleeper();
	int ret;

	CHECK(ut);
	reap(pid);
	ret = unwind_tables__capture_process(ut, pid);
	CHECK(ret == -ESRCH || ret == -ENOENT);
	free_tables(ut);
}

static pid_t spawn_node(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl("/usr/bin/node", "node", "-e", "setTimeout(() => {}, 30000)", (char *)NULL);
		_exit(127);
	}
	usleep(500 * 1000); /* mapped by now */
	return pid;
}

/* The loaded table with the most rows among pid's published mappings, or NULL. */
static const struct unwind_table_info *biggest_table(const struct fake_sink *f, pid_t pid)
{
	const struct unwind_process *p = proc_of(f, pid);
	const struct unwind_table_info *big = NULL;

	for (uint32_t i = 0; p && i < p->n_mappings; i++) {
		const struct unwind_table_info *t =
		    &f->tables[p->mappings[i].table_id % UNWIND_MAX_TABLES];

		if (p->mappings[i].table_id && t->id == p->mappings[i].table_id &&
		    (!big || t->n_rows > big->n_rows))
			big = t;
	}
	return big;
}

/* node has 2.7 MB of CFI (277k rows): the capture publishes its other tables at once and
 * hands node's to the builder thread, returning before it is built; the thread counts it,
 * then streams it in batches into the rows map, which holds exactly the rows of a compile
 * in memory; published from the caller's thread, the next touch gives it to the process. */
TEST(binary_with_megabytes_of_cfi_is_built_by_the_thread_and_streamed_into_the_map)
{
	static struct unwind_row rows[1 << 20];
	struct fake_sink f;
	struct unwind_tables *ut = new_tables(&f, rows, 1 << 20);
	struct unwind_tables_stats st;
	const struct unwind_table_info *big;
	struct cfi_table *whole;
	pid_t pid = spawn_node();
	int fd;

	CHECK(ut);
	CHECK_EQ_INT(unwind_tables__capture_process(ut, pid), 0);
	unwind_tables__stats(ut, &st);
	CHECK_EQ_INT((int)st.tables_building, 1);
	big = biggest_table(&f, pid);
	CHECK(big && big->n_rows < 100000);		   /* libc and the like are there already */
	CHECK_EQ_INT(unwind_tables__publish_built(ut), 0); /* still compiling: ~0.3 s or more */
	CHECK(unwind_tables__wait_built(ut, 60000));
	CHECK_EQ_INT(unwind_tables__publish_built(ut), 0); /* wait_built published it */
	unwind_tables__touch_process(ut, pid);
	big = biggest_table(&f, pid);
	reap(pid);
	unwind_tables__stats(ut, &st);
	CHECK_EQ_INT((int)st.build_too_big, 0);
	CHECK_EQ_INT((int)st.tables_building, 0);
	CHECK_EQ_INT((int)st.tables_loaded, (int)st.tables_built);
	CHECK(big && big->n_rows > 200000);
	CHECK(big && big->n_buckets > 1000); /* node's index went in with its streamed rows */
	/* searched through it, every 61st pc of node's rows finds the scan's row */
	for (uint64_t pc = rows[big->first_row].pc;
	     big && pc < (uint64_t)rows[big->first_row + big->n_rows - 1].pc + 64; pc += 61) {
		const struct unwind_row *t_rows = rows + big->first_row;
		long lo = 0, hi = (long)big->n_rows, got;
		int steps;

		got = bpf_row_search(big, t_rows, rows + big->index_row, (uint32_t)pc, &steps);
		while (lo < hi) { /* the scan, by bisection: 277k rows */
			long mid = lo + (hi - lo) / 2;

			if (t_rows[mid].pc <= (uint32_t)pc)
				lo = mid + 1;
			else
				hi = mid;
		}
		CHECK_EQ_INT(got, lo - 1);
		CHECK(steps <= 12);
	}
	fd = open("/usr/bin/node", O_RDONLY | O_CLOEXEC);
	whole = fd >= 0 ? cfi_compile_fd(fd) : NULL;
	if (fd >= 0)
		close(fd);
	CHECK(whole && big && whole->n_rows == big->n_rows);
	if (whole && big && whole->n_rows == big->n_rows)
		CHECK(!memcmp(rows + big->first_row, whole->rows, whole->n_rows * sizeof(*rows)));
	cfi_table__free(whole);
	free_tables(ut);
}

TEST_MAIN("unwind_tables", T(own_process_mappings_get_tables_and_rows_cover_functions),
	  T(libc_is_built_once_for_two_processes),
	  T(a_process_is_ready_once_each_of_its_binaries_has_a_table),
	  T(full_rows_map_evicts_least_recently_sampled_and_touch_reloads),
	  T(gone_process_is_esrch),
	  T(binary_with_megabytes_of_cfi_is_built_by_the_thread_and_streamed_into_the_map))
