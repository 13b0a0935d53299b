// SPDX-License-Identifier: Apache-2.0
/* Unit tests for HotSpot: the VMStructs reader over tables laid out as libjvm lays them (a
 * table missing an entry keeps the JVM's frames native; tables not set yet mean "starting"),
 * the java_perfmap config key (off by default), and the attach mechanism against a real JVM
 * (jcmd Compiler.perfmap writes /tmp/perf-PID.map). */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "control/config_file.h"
#include "runtimes/hotspot/hotspot_attach.h"
#include "runtimes/hotspot/hotspot_vmstructs.h"
#include "test.h"

/* The tables live in this process: the reader copies from our own addresses through the
 * kernel, as it reads a JVM's (a read past a string's end, which the reader makes for short
 * names, is then no memory error of this test's own). */
static int read_self(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};

	(void)ctx;
	if (!addr)
		return -EFAULT;
	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

/* libjvm's entry layouts (vmStructs.hpp), as the *Offset variables describe them */
struct struct_entry {
	const char *type, *field, *type_string;
	int32_t is_static;
	uint64_t offset;
	void *address;
};

struct type_entry {
	const char *type, *superclass;
	int32_t is_oop, is_integer, is_unsigned;
	uint64_t size;
};

struct int_entry {
	const char *name;
	int32_t value;
};

static uint64_t fake_heaps, fake_release;
static const char release[] = "17.0.99+1-test";

static struct struct_entry structs[] = {
    {"CodeCache", "_heaps", "GrowableArray<CodeHeap*>*", 1, 0, &fake_heaps},
    {"Abstract_VM_Version", "_s_vm_release", "const char*", 1, 0, &fake_release},
    {"GrowableArrayBase", "_len", "int", 0, 0, NULL},
    {"GrowableArray<int>", "_data", "int*", 0, 8, NULL},
    {"CodeHeap", "_memory", "VirtualSpace", 0, 8, NULL},
    {"CodeHeap", "_segmap", "VirtualSpace", 0, 0x78, NULL},
    {"CodeHeap", "_log2_segment_size", "int", 0, 0x100, NULL},
    {"VirtualSpace", "_low_boundary", "char*", 0, 0, NULL},
    {"VirtualSpace", "_high_boundary", "char*", 0, 8, NULL},
    {"CodeBlob", "_name", "const char*", 0, 0x60, NULL},
    {"CodeBlob", "_frame_size", "int", 0, 0x1c, NULL},
    {"CodeBlob", "_frame_complete_offset", "int", 0, 0x14, NULL},
    {"CodeBlob", "_code_begin", "address", 0, 0x20, NULL},
    {"CodeBlob", "_code_end", "address", 0, 0x28, NULL},
    {"CompiledMethod", "_method", "Method*", 0, 0x70, NULL},
    {"Method", "_constMethod", "ConstMethod*", 0, 8, NULL},
    {"ConstMethod", "_constants", "ConstantPool*", 0, 8, NULL},
    {"ConstMethod", "_name_index", "u2", 0, 0x22, NULL},
    {"ConstantPool", "_pool_holder", "InstanceKlass*", 0, 0x18, NULL},
    {"Klass", "_name", "Symbol*", 0, 0x18, NULL},
    {"Symbol", "_length", "u2", 0, 4, NULL},
    {"Symbol", "_body", NULL, 0, 6, NULL},
    /* what names inlined calls (optional: without them compiled frames are their root's) */
    {"CodeBlob", "_size", "int", 0, 0x8, NULL},
    {"CompiledMethod", "_scopes_data_begin", "address", 0, 0x78, NULL},
    {"nmethod", "_metadata_offset", "int", 0, 0x100, NULL},
    {"nmethod", "_scopes_pcs_offset", "int", 0, 0x104, NULL},
    {"nmethod", "_dependencies_offset", "int", 0, 0x108, NULL},
    {"PcDesc", "_pc_offset", "int", 0, 0, NULL},
    {"PcDesc", "_scope_decode_offset", "int", 0, 4, NULL},
    {NULL},
};

static struct type_entry types[] = {
    {"HeapBlock", NULL, 0, 0, 0, 16},
    {"ConstantPool", "Metadata", 0, 0, 0, 72},
    {"PcDesc", NULL, 0, 0, 0, 16},
    {NULL},
};

static struct int_entry ints[] = {
    {"frame::interpreter_frame_sender_sp_offset", -1},
    {"frame::interpreter_frame_last_sp_offset", -2},
    {NULL},
};

/* What libjvm exports: pointers to the tables, the entries' offsets and strides. */
static void *p_structs = structs, *p_types = types, *p_ints = ints;
static uint64_t s_type = offsetof(struct struct_entry, type),
		s_field = offsetof(struct struct_entry, field),
		s_static = offsetof(struct struct_entry, is_static),
		s_offset = offsetof(struct struct_entry, offset),
		s_address = offsetof(struct struct_entry, address),
		s_stride = sizeof(struct struct_entry), t_type = offsetof(struct type_entry, type),
		t_size = offsetof(struct type_entry, size), t_stride = sizeof(struct type_entry),
		i_name = offsetof(struct int_entry, name),
		i_value = offsetof(struct int_entry, value), i_stride = sizeof(struct int_entry);

static struct hotspot_symbols symbols(void)
{
	struct hotspot_symbols s = {
#define A(v) ((uint64_t)(uintptr_t) & (v))
	    .structs = A(p_structs),
	    .types = A(p_types),
	    .int_constants = A(p_ints),
	    .struct_type_name = A(s_type),
	    .struct_field_name = A(s_field),
	    .struct_is_static = A(s_static),
	    .struct_offset = A(s_offset),
	    .struct_address = A(s_address),
	    .struct_stride = A(s_stride),
	    .type_type_name = A(t_type),
	    .type_size = A(t_size),
	    .type_stride = A(t_stride),
	    .int_name = A(i_name),
	    .int_value = A(i_value),
	    .int_stride = A(i_stride),
#undef A
	};
	return s;
}

TEST(tables_read_as_libjvm_lays_them_out)
{
	struct hotspot_reader r = {.read = read_self};
	struct hotspot_symbols sym = symbols();
	struct hotspot_layout l;

	fake_release = (uint64_t)(uintptr_t)release;
	CHECK_EQ_INT(hotspot_layout__read(&r, &sym, &l), 0);
	CHECK_EQ_STR(l.version, release);
	CHECK(l.heaps_var == (uint64_t)(uintptr_t)&fake_heaps);
	CHECK_EQ_INT(l.walk.blob_frame_size, 0x1c);
	CHECK_EQ_INT(l.walk.nmethod_method, 0x70);
	CHECK_EQ_INT(l.walk.heap_block, 16);
	CHECK_EQ_INT(l.pool_size, 72);
	CHECK_EQ_INT(l.heap_segmap, 0x78);
	CHECK_EQ_INT(l.symbol_body, 6);
	/* x86-64: the Method* slot right below last_sp's, the sender's sp at fp - 8 */
	CHECK_EQ_INT(l.walk.interp_method, -24);
	CHECK_EQ_INT(l.walk.interp_sender_sp, -8);
	/* the code cache is not set up yet: a JVM caught starting */
	fake_heaps = 0;
	CHECK_EQ_INT(hotspot_layout__heaps(&r, &l), -EAGAIN);
}

TEST(a_table_without_an_entry_keeps_native_frames)
{
	struct hotspot_reader r = {.read = read_self};
	struct hotspot_symbols sym = symbols();
	struct hotspot_layout l;
	struct struct_entry saved = structs[14]; /* CompiledMethod::_method */

	structs[14].field = "_renamed";
	CHECK_EQ_INT(hotspot_layout__read(&r, &sym, &l), -EPROTONOSUPPORT);
	CHECK_EQ_STR(l.version, release); /* for the note */
	structs[14] = saved;
	/* JDK 21+: the field on nmethod itself */
	structs[14].type = "nmethod";
	CHECK_EQ_INT(hotspot_layout__read(&r, &sym, &l), 0);
	structs[14] = saved;
	/* the strides not set yet (libjvm's initialisers have not run) */
	s_stride = 0;
	CHECK_EQ_INT(hotspot_layout__read(&r, &sym, &l), -ENOENT);
	s_stride = sizeof(struct struct_entry);
}

TEST(java_perfmap_is_off_unless_configured)
{
	struct agent_file_config cfg;
	const char *on = "{\"java_perfmap\": true}", *bad = "{\"java_perfmap\": 1}";
	char err[256] = "";

	CHECK(agent_file_config__defaults(&cfg) >= 0);
	CHECK(!cfg.java_perfmap);
	CHECK_EQ_INT(agent_file_config__parse(on, strlen(on), &cfg, err, sizeof(err)), 0);
	CHECK(cfg.java_perfmap);
	agent_file_config__clear(&cfg);
	CHECK(agent_file_config__defaults(&cfg) >= 0);
	CHECK(agent_file_config__parse(bad, strlen(bad), &cfg, err, sizeof(err)) < 0);
	CHECK(strstr(err, "java_perfmap") != NULL);
	agent_file_config__clear(&cfg);
}

/* A JVM spinning Hot (tests/fixtures/jvm), compiled into dir; its pid once it printed
 * "ready", or -1. */
static pid_t start_jvm(const char *dir)
{
	char cmd[512], line[64];
	int fds[2];
	pid_t pid;
	FILE *out;

	snprintf(cmd, sizeof(cmd), "javac -d %s tests/fixtures/jvm/Hot.java", dir);
	if (system(cmd) || pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		execlp("java", "java", "-cp", dir, "Hot", "threads", "30", "1", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	out = fdopen(fds[0], "r");
	if (!out || !fgets(line, sizeof(line), out) || strncmp(line, "ready", 5)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	if (out)
		fclose(out);
	return pid;
}

TEST(a_jvm_writes_its_perf_map_when_asked)
{
	char dir[] = "/tmp/rt-hotspot-XXXXXX", path[64], cmd[128], line[512];
	bool named = false;
	pid_t pid;
	FILE *map;

	if (access("/usr/bin/java", X_OK) || geteuid()) {
		printf("   SKIP (needs java and root: the attach socket of another user's JVM)\n");
		return;
	}
	CHECK(mkdtemp(dir) != NULL);
	pid = start_jvm(dir);
	CHECK(pid > 0);
	if (pid <= 0)
		return;
	usleep(1000 * 1000); /* C1 and C2 compile workerHot */
	CHECK_EQ_INT(hotspot_attach__perfmap("/proc", pid, 5000), 0);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", pid);
	map = fopen(path, "r");
	CHECK(map != NULL);
	while (map && fgets(line, sizeof(line), map))
		named |= strstr(line, "Hot.workerHot(") != NULL;
	CHECK(named);
	if (map)
		fclose(map);
	/* asked again: the listener is up, the socket answers at once */
	CHECK_EQ_INT(hotspot_attach__perfmap("/proc", pid, 5000), 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	unlink(path);
	snprintf(path, sizeof(path), "/tmp/.java_pid%d", pid);
	unlink(path);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK_EQ_INT(system(cmd), 0);
}

TEST(inlining_fields_are_read_when_the_tables_have_them)
{
	struct hotspot_reader r = {.read = read_self};
	struct hotspot_symbols sym = symbols();
	struct hotspot_layout l;
	size_t last = sizeof(structs) / sizeof(structs[0]) - 2; /* PcDesc::_scope_decode_offset */
	struct struct_entry saved = structs[last];

	CHECK_EQ_INT(hotspot_layout__read(&r, &sym, &l), 0);
	CHECK(l.inlining.ok);
	CHECK_EQ_INT(l.inlining.blob_size, 0x8);
	CHECK_EQ_INT(l.inlining.scopes_data, 0x78);
	CHECK_EQ_INT(l.inlining.metadata, 0x100);
	CHECK_EQ_INT(l.inlining.scopes_pcs, 0x104);
	CHECK_EQ_INT(l.inlining.dependencies, 0x108);
	CHECK_EQ_INT(l.inlining.pcdesc_size, 16);
	CHECK_EQ_INT(l.inlining.pcdesc_scope, 4);
	CHECK_EQ_INT(l.inlining.unsigned5_excluded, 0); /* 17: UNSIGNED5 with every byte */
	/* JDK 20 and later leave the byte 0 out of their streams */
	fake_release = (uint64_t)(uintptr_t) "21.0.2+13-LTS";
	CHECK_EQ_INT(hotspot_layout__read(&r, &sym, &l), 0);
	CHECK(l.inlining.ok);
	CHECK_EQ_INT(l.inlining.unsigned5_excluded, 1);
	/* a version that says no release: which encoding is unknown, inlining off */
	fake_release = (uint64_t)(uintptr_t) "unknown";
	CHECK_EQ_INT(hotspot_layout__read(&r, &sym, &l), 0);
	CHECK(!l.inlining.ok);
	fake_release = (uint64_t)(uintptr_t)release;
	/* one missing (a JDK that renamed it): Java frames still, named by their root method */
	structs[last].field = "_renamed";
	CHECK_EQ_INT(hotspot_layout__read(&r, &sym, &l), 0);
	CHECK(!l.inlining.ok);
	structs[last] = saved;
	/* a field past the nmethod header read at once: not used */
	structs[last - 3].offset = HOTSPOT_NMETHOD_READ;
	CHECK_EQ_INT(hotspot_layout__read(&r, &sym, &l), 0);
	CHECK(!l.inlining.ok);
	structs[last - 3].offset = 0x104;
}

TEST_MAIN("hotspot", T(tables_read_as_libjvm_lays_them_out),
	  T(inlining_fields_are_read_when_the_tables_have_them),
	  T(a_table_without_an_entry_keeps_native_frames), T(java_perfmap_is_off_unless_configured),
	  T(a_jvm_writes_its_perf_map_when_asked))
