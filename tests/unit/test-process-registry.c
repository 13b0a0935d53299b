// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the process registry (agent/process/) on fake /proc trees (no root): exec
 * keeps the old image until the window ends, exit and eviction free records and consumers'
 * state, pid reuse is a new process, misses re-read maps rate-limited, binaries are shared. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "process/build_id.h"
#include "process/process_registry.h"
#include "fixture_files.h"
#include "test.h"

#define PID_A 4242
#define PID_B 4243
#define PID_C 4244

/* Writes pid's maps and comm under the fake proc root (an exec or a new process). */
static int fake_pid(const char *dir, pid_t pid, const char *maps, const char *comm)
{
	char sub[PATH_MAX];
	int err;

	snprintf(sub, sizeof(sub), "%s/%d", dir, (int)pid);
	if (mkdir(sub, 0755) && errno != EEXIST)
		return -errno;
	err = write_file(sub, "maps", maps);
	return err ? err : write_file(sub, "comm", comm);
}

/* A maps line mapping the whole of file at start, with its real device and inode. */
static void file_line(char *buf, size_t len, uint64_t start, const char *file)
{
	struct stat st;

	if (stat(file, &st)) {
		buf[0] = '\0';
		return;
	}
	snprintf(buf, len, "%08llx-%08llx r-xp 00000000 %02x:%02x %lu %s\n",
		 (unsigned long long)start, (unsigned long long)start + 0x1000, major(st.st_dev),
		 minor(st.st_dev), (unsigned long)st.st_ino, file);
}

static struct process_registry *new_registry(const char *dir, size_t max_processes,
					     size_t max_binaries)
{
	struct process_registry_options o = {
	    .proc_root = dir, .max_processes = max_processes, .max_binaries = max_binaries};

	return process_registry__new(&o);
}

/* A consumer's per-record state: counts how many were freed. */
static int states_freed;

static void count_free(void *state, void *ctx)
{
	states_freed++;
	free(state);
}

static void attach(struct process *p, int slot)
{
	process__set_slot(p, slot, malloc(1));
}

static struct process_registry_stats stats_of(const struct process_registry *reg)
{
	struct process_registry_stats st;

	process_registry__stats(reg, &st);
	return st;
}

#define ANON_CODE "00400000-00401000 r-xp 00000000 00:00 0 \n"

/* A fake proc root in dir (a template, rewritten) with PID_A mapping anonymous code under
 * comm, a registry on it, and a counting process slot (*ret_slot). NULL on failure. */
static struct process_registry *one_process(char *dir, const char *comm, int *ret_slot)
{
	struct process_registry *reg;

	if (!mkdtemp(dir) || fake_pid(dir, PID_A, ANON_CODE, comm))
		return NULL;
	reg = new_registry(dir, 0, 0);
	states_freed = 0;
	*ret_slot = reg ? process_registry__add_process_slot(reg, count_free, NULL) : -1;
	return reg;
}

TEST(exec_replaces_the_image_and_keeps_the_old_one_until_the_window_ends)
{
	char dir[] = "/tmp/rt-registry-XXXXXX";
	struct process_registry *reg;
	struct process *old, *cur;
	int slot;

	reg = one_process(dir, "sh\n", &slot);
	CHECK(reg && slot >= 0);
	CHECK_EQ_INT(process_registry__capture_image(reg, PID_A, 1), 0);
	attach(process_registry__peek(reg, PID_A), slot);
	CHECK_EQ_INT(fake_pid(dir, PID_A, "00500000-00501000 r-xp 00000000 00:00 0 \n", "app\n"),
		     0);
	CHECK_EQ_INT(process_registry__capture_image(reg, PID_A, 2), 0);
	old = process_registry__image(reg, PID_A, 1);
	cur = process_registry__image(reg, PID_A, 2);
	CHECK(old && cur && old != cur);
	CHECK_EQ_STR(old->comm, "sh");
	CHECK_EQ_INT(old->mappings[0].start, 0x400000);
	CHECK_EQ_STR(cur->comm, "app");
	CHECK_EQ_INT(cur->mappings[0].start, 0x500000);
	CHECK(process_registry__peek(reg, PID_A) == cur);
	CHECK_EQ_INT(states_freed, 0); /* the old image's samples are not named yet */
	process_registry__end_window(reg);
	CHECK(process_registry__image(reg, PID_A, 1) == NULL);
	CHECK(process_registry__image(reg, PID_A, 2) == cur);
	CHECK_EQ_INT(states_freed, 1);
	CHECK_EQ_INT(stats_of(reg).images_replaced, 1);
	CHECK_EQ_INT(stats_of(reg).processes_forgotten, 1);
	process_registry__free(reg);
	rm_tree(dir);
}

TEST(exit_forgets_the_process_and_frees_consumers_state)
{
	char dir[] = "/tmp/rt-registry-XXXXXX";
	struct process_registry *reg;
	int slot;

	reg = one_process(dir, "a\n", &slot);
	CHECK(reg && slot >= 0);
	CHECK_EQ_INT(process_registry__capture(reg, PID_A), 0);
	attach(process_registry__peek(reg, PID_A), slot);
	/* Exited, not reaped yet: maps read empty. What was captured is kept, marked gone. */
	CHECK_EQ_INT(fake_pid(dir, PID_A, "", "a\n"), 0);
	CHECK_EQ_INT(process_registry__refresh(reg, process_registry__peek(reg, PID_A)), -ESRCH);
	CHECK(process_registry__peek(reg, PID_A)->gone);
	CHECK_EQ_INT(process_registry__peek(reg, PID_A)->n_mappings, 1);
	process_registry__forget(reg, PID_A);
	CHECK(process_registry__peek(reg, PID_A) == NULL);
	CHECK_EQ_INT(states_freed, 1);
	CHECK_EQ_INT(stats_of(reg).processes_forgotten, 1);
	CHECK_EQ_INT(stats_of(reg).processes_cached, 0);
	process_registry__free(reg);
	rm_tree(dir);
}

TEST(reused_pid_is_a_new_process_not_the_old_one_updated)
{
	char dir[] = "/tmp/rt-registry-XXXXXX";
	struct process_registry *reg;
	struct process *first, *second;
	int slot;

	reg = one_process(dir, "old\n", &slot);
	CHECK(reg && slot >= 0);
	CHECK_EQ_INT(process_registry__capture_image(reg, PID_A, 7), 0);
	first = process_registry__peek(reg, PID_A);
	attach(first, slot);
	/* The pid went to another process: BPF announces it with a new image number. */
	CHECK_EQ_INT(fake_pid(dir, PID_A, "00600000-00601000 r-xp 00000000 00:00 0 \n", "new\n"),
		     0);
	CHECK_EQ_INT(process_registry__capture_image(reg, PID_A, 8), 0);
	second = process_registry__peek(reg, PID_A);
	CHECK(second != first);
	CHECK_EQ_STR(second->comm, "new");
	CHECK(process__slot(second, slot) == NULL); /* nothing of the old process carries over */
	CHECK_EQ_INT(second->mappings[0].start, 0x600000);
	/* A lost announcement: a sample of a newer image captures it. */
	CHECK(process_registry__image(reg, PID_A, 9) != NULL);
	CHECK_EQ_INT(process_registry__peek(reg, PID_A)->image, 9);
	CHECK_EQ_INT(stats_of(reg).processes_captured, 3);
	process_registry__free(reg);
	rm_tree(dir);
}

TEST(a_miss_rereads_the_maps_rate_limited_backing_off_while_it_misses)
{
	char dir[] = "/tmp/rt-registry-XXXXXX";
	struct process_registry *reg;
	struct process *p;
	int slot;

	reg = one_process(dir, "a\n", &slot);
	CHECK(reg);
	CHECK_EQ_INT(process_registry__capture(reg, PID_A), 0);
	p = process_registry__peek(reg, PID_A);
	CHECK(process_registry__find_mapping(reg, p, 0x400010) != NULL);
	CHECK(process_registry__find_mapping(reg, p, 0x900000) == NULL); /* just read: no re-read */
	CHECK_EQ_INT(stats_of(reg).recaptures, 0);
	usleep(150 * 1000);
	CHECK(process_registry__find_mapping(reg, p, 0x900000) == NULL); /* re-read, missed */
	CHECK_EQ_INT(stats_of(reg).recaptures, 1);
	usleep(250 * 1000); /* past the doubled wait (200 ms) */
	CHECK(process_registry__find_mapping(reg, p, 0x900000) == NULL);
	CHECK_EQ_INT(stats_of(reg).recaptures, 2);
	usleep(250 * 1000); /* not past the wait doubled again (400 ms) */
	CHECK(process_registry__find_mapping(reg, p, 0x900000) == NULL);
	CHECK_EQ_INT(stats_of(reg).recaptures, 2);
	/* dlopen: mapped now, found at the next allowed re-read. */
	CHECK_EQ_INT(
	    fake_pid(dir, PID_A, ANON_CODE "00900000-00901000 r-xp 00000000 00:00 0 \n", "a\n"), 0);
	usleep(200 * 1000);
	CHECK(process_registry__find_mapping(reg, p, 0x900000) != NULL);
	CHECK_EQ_INT(stats_of(reg).recaptures, 3);
	process_registry__free(reg);
	rm_tree(dir);
}

TEST(two_processes_of_one_binary_share_one_binary_record)
{
	char dir[] = "/tmp/rt-registry-XXXXXX", line[PATH_MAX + 128];
	const char *lib = fixture_path("libfixture.so");
	struct process_registry *reg;
	const struct binary *a, *b;
	struct process_registry_stats st;

	CHECK(mkdtemp(dir));
	file_line(line, sizeof(line), 0x10000000, lib);
	CHECK(line[0]);
	CHECK_EQ_INT(fake_pid(dir, PID_A, line, "a\n"), 0);
	CHECK_EQ_INT(fake_pid(dir, PID_B, line, "b\n"), 0);
	reg = new_registry(dir, 0, 0);
	CHECK(reg);
	CHECK_EQ_INT(process_registry__capture(reg, PID_A), 0);
	CHECK_EQ_INT(process_registry__capture(reg, PID_B), 0);
	a = process_registry__peek(reg, PID_A)->mappings[0].bin;
	b = process_registry__peek(reg, PID_B)->mappings[0].bin;
	CHECK(a && a == b);
	CHECK_EQ_INT(a->refs, 3); /* the cache's and one per mapping */
	CHECK_EQ_INT(strlen(a->build_id), 40);
	CHECK_EQ_INT(strncmp(a->key, "b:", 2), 0);
	CHECK_EQ_STR(a->key + 2, a->build_id);
	st = stats_of(reg);
	CHECK_EQ_INT(st.binaries.opened, 1); /* one open, one build-id read, one fd */
	CHECK_EQ_INT(st.binaries.cache_hits, 1);
	process_registry__free(reg);
	rm_tree(dir);
}

/* A maps line of file at start, with its real device and inode, at offset with perms. */
static int line_of(char *buf, size_t len, uint64_t start, const char *perms, uint64_t offset,
		   const char *file)
{
	struct stat st;

	if (stat(file, &st))
		return -errno;
	return snprintf(buf, len, "%08llx-%08llx %s %08llx %02x:%02x %lu %s\n",
			(unsigned long long)start, (unsigned long long)start + 0x1000, perms,
			(unsigned long long)offset, major(st.st_dev), minor(st.st_dev),
			(unsigned long)st.st_ino, file);
}

TEST(a_file_mapping_knows_where_its_first_byte_is_mapped)
{
	char dir[] = "/tmp/rt-registry-XXXXXX", maps[4 * PATH_MAX + 512];
	const char *lib = fixture_path("libfixture.so"), *other = "/bin/sh";
	struct process_registry *reg;
	const struct process *p;
	int n = 0;

	CHECK(mkdtemp(dir));
	/* lib: its read-only first page, then its code; other: code alone, from offset 0x2000 */
	n += line_of(maps + n, sizeof(maps) - n, 0x10000000, "r--p", 0, lib);
	n += line_of(maps + n, sizeof(maps) - n, 0x10001000, "r-xp", 0x1000, lib);
	n += line_of(maps + n, sizeof(maps) - n, 0x10002000, "rw-p", 0x2000, lib);
	n += line_of(maps + n, sizeof(maps) - n, 0x20005000, "r-xp", 0x2000, other);
	CHECK(n > 0 && (size_t)n < sizeof(maps));
	CHECK_EQ_INT(fake_pid(dir, PID_A, maps, "a\n"), 0);
	reg = new_registry(dir, 0, 0);
	CHECK(reg);
	CHECK_EQ_INT(process_registry__capture(reg, PID_A), 0);
	p = process_registry__peek(reg, PID_A);
	CHECK(p && p->n_mappings == 2); /* the executable ones */
	CHECK_EQ_INT(p->mappings[0].kind, PROCESS_MAPPING_FILE);
	CHECK_EQ_INT(p->mappings[0].start, 0x10001000);
	CHECK_EQ_INT(p->mappings[0].base, 0x10000000);
	CHECK_EQ_INT(p->mappings[1].kind, PROCESS_MAPPING_FILE);
	CHECK_EQ_INT(p->mappings[1].base, 0x20003000); /* no offset-0 mapping: as if contiguous */
	process_registry__free(reg);
	rm_tree(dir);
}

/* An ELF header and nothing else: an ELF file without a build-id. */
static int write_bare_elf(const char *path)
{
	Elf64_Ehdr eh = {.e_type = ET_DYN, .e_version = EV_CURRENT, .e_ehsize = sizeof(eh)};
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	fwrite(&eh, sizeof(eh), 1, f);
	return fclose(f) ? -errno : 0;
}

TEST(binary_without_build_id_is_named_by_device_inode_size_and_mtime)
{
	char dir[] = "/tmp/rt-registry-XXXXXX", path[PATH_MAX], line[PATH_MAX + 128];
	char want[BINARY_KEY_MAX], id[BUILD_ID_HEX_MAX];
	struct process_registry *reg;
	const struct binary *bin;
	struct stat st;
	int fd;

	CHECK(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/bare.so", dir);
	CHECK_EQ_INT(write_bare_elf(path), 0);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	CHECK_EQ_INT(build_id__read_fd(fd, id, sizeof(id)), 0);
	close(fd);
	CHECK_EQ_STR(id, "");
	CHECK_EQ_INT(stat(path, &st), 0);
	snprintf(want, sizeof(want), "i:%llu:%llu:%llu:%lld.%09ld", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino, (unsigned long long)st.st_size,
		 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	file_line(line, sizeof(line), 0x10000000, path);
	CHECK_EQ_INT(fake_pid(dir, PID_A, line, "a\n"), 0);
	reg = new_registry(dir, 0, 0);
	CHECK(reg);
	CHECK_EQ_INT(process_registry__capture(reg, PID_A), 0);
	bin = process_registry__peek(reg, PID_A)->mappings[0].bin;
	CHECK(bin);
	CHECK_EQ_STR(bin->key, want);
	process_registry__free(reg);
	rm_tree(dir);
}

TEST(not_elf_is_unreadable)
{
	char dir[] = "/tmp/rt-registry-XXXXXX", path[PATH_MAX], line[PATH_MAX + 128];
	struct process_registry *reg;
	const struct process_mapping *m;

	CHECK(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/script", dir);
	CHECK_EQ_INT(write_file(dir, "script", "#!/bin/sh\necho hello\n"), 0);
	file_line(line, sizeof(line), 0x10000000, path);
	CHECK_EQ_INT(fake_pid(dir, PID_A, line, "a\n"), 0);
	reg = new_registry(dir, 0, 0);
	CHECK(reg);
	CHECK_EQ_INT(process_registry__capture(reg, PID_A), 0);
	m = &process_registry__peek(reg, PID_A)->mappings[0];
	CHECK_EQ_INT(m->kind, PROCESS_MAPPING_UNREADABLE);
	CHECK(m->bin == NULL);
	process_registry__free(reg);
	rm_tree(dir);
}

TEST(eviction_frees_the_least_recent_process_and_unmapped_binaries)
{
	char dir[] = "/tmp/rt-registry-XXXXXX", line[2 * PATH_MAX + 256];
	char lib_line[PATH_MAX + 128], exe_line[PATH_MAX + 128];
	struct process_registry *reg;
	int pslot, bslot;

	CHECK(mkdtemp(dir));
	file_line(lib_line, sizeof(lib_line), 0x10000000, fixture_path("libfixture.so"));
	file_line(exe_line, sizeof(exe_line), 0x20000000, fixture_path("fixture-pie"));
	snprintf(line, sizeof(line), "%s%s", lib_line, exe_line);
	CHECK_EQ_INT(fake_pid(dir, PID_A, line, "a\n"), 0);
	CHECK_EQ_INT(fake_pid(dir, PID_B, ANON_CODE, "b\n"), 0);
	CHECK_EQ_INT(fake_pid(dir, PID_C, ANON_CODE, "c\n"), 0);
	reg = new_registry(dir, 2, 1);
	CHECK(reg);
	states_freed = 0;
	pslot = process_registry__add_process_slot(reg, count_free, NULL);
	bslot = process_registry__add_binary_slot(reg, count_free, NULL);
	CHECK_EQ_INT(process_registry__capture(reg, PID_A), 0);
	/* Two binaries, one cache place: the first left the cache, its mapping keeps it. */
	CHECK_EQ_INT(stats_of(reg).binaries.evicted, 1);
	for (size_t i = 0; i < 2; i++)
		binary__set_slot(process_registry__peek(reg, PID_A)->mappings[i].bin, bslot,
				 malloc(1));
	attach(process_registry__peek(reg, PID_A), pslot);
	CHECK_EQ_INT(process_registry__capture(reg, PID_B), 0);
	CHECK_EQ_INT(process_registry__capture(reg, PID_C), 0); /* over max_processes: A goes */
	CHECK(process_registry__peek(reg, PID_A) == NULL);
	CHECK_EQ_INT(stats_of(reg).processes_evicted, 1);
	/* A's record, and the binary that was only A's: the cached one stays. */
	CHECK_EQ_INT(states_freed, 2);
	process_registry__free(reg);
	CHECK_EQ_INT(states_freed, 3);
	rm_tree(dir);
}

TEST(a_consumer_removing_its_slot_frees_every_state_it_hung)
{
	char dir[] = "/tmp/rt-registry-XXXXXX";
	struct process_registry *reg;
	int slot;

	reg = one_process(dir, "a\n", &slot);
	CHECK(reg && slot >= 0);
	CHECK_EQ_INT(process_registry__capture_image(reg, PID_A, 1), 0);
	attach(process_registry__peek(reg, PID_A), slot);
	CHECK_EQ_INT(process_registry__capture_image(reg, PID_A, 2), 0);
	attach(process_registry__peek(reg, PID_A), slot);
	process_registry__remove_process_slot(reg, slot);
	CHECK_EQ_INT(states_freed, 2); /* the current image's and the replaced one's */
	process_registry__free(reg);
	CHECK_EQ_INT(states_freed, 2);
	rm_tree(dir);
}

/* pid's exe link (NULL: none, as a kernel thread's) and stat line. */
static int fake_exe(const char *dir, pid_t pid, const char *target, const char *stat)
{
	char sub[PATH_MAX], link[PATH_MAX + 8];

	snprintf(sub, sizeof(sub), "%s/%d", dir, (int)pid);
	snprintf(link, sizeof(link), "%s/exe", sub);
	unlink(link);
	if (target && symlink(target, link))
		return -errno;
	return write_file(sub, "stat", stat);
}

#define NGINX_STAT "42 (nginx) S 1 42 42 0 -1 4194560 0 0 0 0 0\n"

TEST(the_executable_is_kept_per_image_and_without_deleted)
{
	char dir[] = "/tmp/rt-registry-XXXXXX";
	struct process_registry *reg;

	CHECK(mkdtemp(dir));
	CHECK_EQ_INT(fake_pid(dir, PID_A, ANON_CODE, "nginx\n"), 0);
	/* upgraded under it: a rule on the path still matches */
	CHECK_EQ_INT(fake_exe(dir, PID_A, "/usr/sbin/nginx (deleted)", NGINX_STAT), 0);
	reg = new_registry(dir, 0, 0);
	CHECK(reg);
	CHECK_EQ_INT(process_registry__capture_image(reg, PID_A, 0), 0);
	CHECK_EQ_STR(process_registry__peek(reg, PID_A)->exe, "/usr/sbin/nginx");
	CHECK(!process_registry__peek(reg, PID_A)->kernel_thread);
	/* it exec'd another program: image 1 has its own executable, image 0 keeps its own */
	CHECK_EQ_INT(fake_exe(dir, PID_A, "/usr/bin/python3.11", NGINX_STAT), 0);
	CHECK_EQ_INT(process_registry__capture_image(reg, PID_A, 1), 0);
	CHECK_EQ_STR(process_registry__image(reg, PID_A, 1)->exe, "/usr/bin/python3.11");
	CHECK_EQ_STR(process_registry__image(reg, PID_A, 0)->exe, "/usr/sbin/nginx");
	/* gone: what was captured stays */
	rm_tree(dir);
	CHECK_EQ_STR(process_registry__image(reg, PID_A, 1)->exe, "/usr/bin/python3.11");
	process_registry__free(reg);
}

TEST(a_kernel_thread_has_no_executable)
{
	char dir[] = "/tmp/rt-registry-XXXXXX";
	struct process_registry *reg;
	const struct process *p;

	CHECK(mkdtemp(dir));
	CHECK_EQ_INT(fake_pid(dir, PID_A, "", "kworker/0:1\n"), 0);
	/* a kernel thread's exe link reads ENOENT; PF_KTHREAD in its flags */
	CHECK_EQ_INT(
	    fake_exe(dir, PID_A, NULL, "42 (kworker/0:1-events) I 2 0 0 0 -1 69238880 0 0 0 0 0\n"),
	    0);
	reg = new_registry(dir, 0, 0);
	CHECK(reg);
	CHECK_EQ_INT(process_registry__capture(reg, PID_A), 0);
	p = process_registry__peek(reg, PID_A);
	CHECK(p->kernel_thread);
	CHECK(!p->exe);
	CHECK_EQ_INT(p->n_mappings, 0);
	process_registry__free(reg);
	rm_tree(dir);
}

TEST_MAIN("process_registry",
	  T(exec_replaces_the_image_and_keeps_the_old_one_until_the_window_ends),
	  T(exit_forgets_the_process_and_frees_consumers_state),
	  T(reused_pid_is_a_new_process_not_the_old_one_updated),
	  T(a_miss_rereads_the_maps_rate_limited_backing_off_while_it_misses),
	  T(two_processes_of_one_binary_share_one_binary_record),
	  T(a_file_mapping_knows_where_its_first_byte_is_mapped),
	  T(binary_without_build_id_is_named_by_device_inode_size_and_mtime),
	  T(not_elf_is_unreadable),
	  T(eviction_frees_the_least_recent_process_and_unmapped_binaries),
	  T(a_consumer_removing_its_slot_frees_every_state_it_hung),
	  T(the_executable_is_kept_per_image_and_without_deleted),
	  T(a_kernel_thread_has_no_executable))
