// SPDX-License-Identifier: Apache-2.0
/* BPF sampler lifecycle: open -> configure (rodata) -> load -> attach per CPU -> poll/drain ->
 * detach. Everything libbpf-specific stays here; callers see plain structs from profile.h. */
#include <errno.h>
#include <linux/capability.h>
#include <linux/membarrier.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "profile.skel.h"
#include "sampling/sampler.h"
#include "hashtab.h"

#define CAP_PERFMON_BIT 38
#define CAP_BPF_BIT 39
#define CAP_SYS_ADMIN_BIT 21
#define DRAIN_BATCH 1024 /* counts entries per lookup-and-delete syscall */
#define SWEEP_EVERY 8	 /* drains between full sweeps of a stack map */
#define STACK_BATCH 256	 /* stacks per lookup-batch syscall (a hash bucket must fit) */

/* One stack read during a drain: its ips in the pool. */
struct stack_slot {
	__u64 hash;
	__u32 off, n;
	__u32 flags; /* PROFILE_STACK_* */
};

struct unwind_row_pair { /* as in the BPF object: an array element holds two rows */
	struct unwind_row rows[2];
};

struct sampler {
	struct profile_bpf *skel;
	struct ring_buffer *events;
	struct bpf_link **links; /* one per CPU; each owns its perf event fd */
	int n_links;
	struct bpf_link *exec_link;
	int exec_link_err; /* -errno when the exec hook did not attach, else 0 */
	bool attached;
	struct bpf_link *offcpu_link; /* sched_switch */
	bool offcpu_loaded;	      /* the off-CPU programs are in the kernel */
	char offcpu_error[256];	      /* why they are not, when asked for; "" */
	__u64 offcpu_stale;	      /* block records dropped at attach (offcpu_stats.stale) */
	int stats_fd; /* keeps BPF run-time statistics on while open; -1 if unavailable */
	int n_possible_cpus;
	struct sampler_options opts;

	/* drain state, reused across drains */
	bool no_batch; /* the kernel lacks batch map operations */
	struct profile_key *keys;
	struct profile_value *values;
	size_t counts_cap;
	struct profile_batched *batched; /* the count batches' slots, PROFILE_BATCH_SLOTS x CPUs */
	__u32 *batch_slot_keys;		 /* their slot numbers as the batch lookup returns them */
	struct hashtab taken_by_hash;	 /* key hash -> 1-based taken entry, while merging */
	struct hashtab slot_of_stack;	 /* stack hash -> 1-based slot of this drain */
	struct hashtab pending_stacks;	 /* stacks of blocks not charged yet: kept by the drain */
	struct stack_slot *slots;
	size_t n_slots, slots_cap;
	struct profile_stack stack_buf; /* one stack as read from the map */
	__u64 *stack_keys;		/* STACK_BATCH stacks read in one syscall */
	struct profile_stack *stack_vals;
	bool stacks_read; /* this drain read the whole stack map: every stack has a slot */
	__u64 *ips;	  /* pool of the stacks read */
	size_t n_ips, ips_cap;
	unsigned int drains;

	/* unwind tables */
	size_t rows_cap, rows_map_bytes; /* 0 when off */
	uint64_t load_ns;
};

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (!getenv("ROOTTRACE_DEBUG"))
		return 0;
	return vfprintf(stderr, fmt, args);
}

static bool cap_effective(const struct __user_cap_data_struct *data, int cap)
{
	return data[cap / 32].effective & (1u << (cap % 32));
}

/* One line naming what is missing, before libbpf produces a less helpful error. */
static int check_privileges(char *err, size_t err_len)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2] = {};
	bool admin, bpf, perfmon;

	if (syscall(SYS_capget, &hdr, data))
		return 0; /* cannot tell: let the load report it */
	admin = cap_effective(data, CAP_SYS_ADMIN_BIT);
	bpf = admin || cap_effective(data, CAP_BPF_BIT);
	perfmon = admin || cap_effective(data, CAP_PERFMON_BIT);
	if (!bpf || !perfmon) {
		snprintf(err, err_len, "missing %s%s%s: run as root or grant them",
			 bpf ? "" : "CAP_BPF", !bpf && !perfmon ? " and " : "",
			 perfmon ? "" : "CAP_PERFMON");
		return -EPERM;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		snprintf(
		    err, err_len,
		    "kernel BTF missing (/sys/kernel/btf/vmlinux): needs CONFIG_DEBUG_INFO_BTF");
		return -ENOTSUP;
	}
	return 0;
}

static void describe_load_error(int ret, char *err, size_t err_len)
{
	if (ret == -EPERM || ret == -EACCES)
		snprintf(err, err_len,
			 "loading the BPF program was refused (%s): missing CAP_BPF, "
			 "or kernel.unprivileged_bpf_disabled",
			 strerror(-ret));
	else if (ret == -ENOSYS)
		snprintf(err, err_len, "kernel has no BPF support (bpf(2): %s)", strerror(-ret));
	else
		snprintf(err, err_len, "loading the BPF program failed: %s", strerror(-ret));
}

static int handle_event(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;

	if (size < sizeof(struct profile_event))
		return 0;
	if (s->opts.on_event)
		s->opts.on_event(data, s->opts.ctx);
	return 0;
}

static int handle_python_code(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;

	if (size >= sizeof(struct python_code_event) && s->opts.on_python_code)
		s->opts.on_python_code(data, s->opts.ctx);
	return 0;
}

/* Tables on: rows map sized from the options. Off: the unwinder's maps shrink to nothing. */
static int size_unwind_maps(struct sampler *s)
{
	struct profile_bpf *skel = s->skel;
	__u32 rows = s->opts.unwind_max_rows ? s->opts.unwind_max_rows : UNWIND_DEFAULT_ROWS;
	int ret = 0;

	skel->rodata->unwind_tables = s->opts.unwind_tables;
	if (s->opts.unwind_tables)
		return bpf_map__set_max_entries(skel->maps.unwind_rows, (rows + 1) / 2);
	ret |= bpf_map__set_max_entries(skel->maps.unwind_rows, 1);
	ret |= bpf_map__set_max_entries(skel->maps.unwind_procs, 1);
	ret |= bpf_map__set_max_entries(skel->maps.unwind_tables_info, 1);
	return ret ? -EINVAL : 0;
}

static int load_timed(struct sampler *s)
{
	struct timespec a, b;
	int ret;

	clock_gettime(CLOCK_MONOTONIC, &a);
	ret = profile_bpf__load(s->skel);
	clock_gettime(CLOCK_MONOTONIC, &b);
	s->load_ns = (b.tv_sec - a.tv_sec) * 1000000000ULL + b.tv_nsec - a.tv_nsec;
	return ret;
}

static void size_unwind_rows(struct sampler *s)
{
	const struct bpf_map *map = s->skel->maps.unwind_rows;

	if (!s->opts.unwind_tables)
		return;
	s->rows_cap = (size_t)bpf_map__max_entries(map) * 2;
	s->rows_map_bytes = (size_t)bpf_map__max_entries(map) * sizeof(struct unwind_row_pair);
}

/* Off-CPU off: its programs are not loaded and its maps shrink to nothing. A test can name
 * another attach target (ROOTTRACE_OFFCPU_TRACEPOINT) to see a kernel without one. */
static int configure_offcpu(struct sampler *s, bool offcpu)
{
	struct profile_bpf *skel = s->skel;
	const char *tp = getenv("ROOTTRACE_OFFCPU_TRACEPOINT");
	int ret = 0;

	bpf_program__set_autoload(skel->progs.offcpu_switch, offcpu);
	/* task-local storage needs Linux 5.11: not created when off-CPU is off */
	bpf_map__set_autocreate(skel->maps.offcpu_tasks, offcpu);
	if (offcpu && tp && *tp)
		return bpf_program__set_attach_target(skel->progs.offcpu_switch, 0, tp);
	if (offcpu)
		return 0;
	ret |= bpf_map__set_max_entries(skel->maps.offcpu_counts0, 1);
	ret |= bpf_map__set_max_entries(skel->maps.offcpu_counts1, 1);
	ret |= bpf_map__set_max_entries(skel->maps.offcpu_starts, 1);
	ret |= bpf_map__set_max_entries(skel->maps.offcpu_tgids, 1);
	return ret ? -EINVAL : 0;
}

static void describe_offcpu_error(int ret, char *err, size_t err_len)
{
	snprintf(err, err_len,
		 "the scheduler hooks (tp_btf/sched_switch) did not load: %s; "
		 "needs kernel BTF, BPF trampolines and task storage (Linux 5.11+)",
		 strerror(-ret));
}

static int open_and_load(struct sampler *s, bool offcpu)
{
	int ret;

	s->skel = profile_bpf__open();
	if (!s->skel)
		return -errno;
	s->skel->rodata->targ_pid = s->opts.pid;
	ret = size_unwind_maps(s);
	if (!ret)
		ret = configure_offcpu(s, offcpu);
	if (!ret)
		ret = load_timed(s);
	s->offcpu_loaded = !ret && offcpu;
	return ret;
}

struct sampler *sampler__open(const struct sampler_options *opts, char *err, size_t err_len)
{
	struct sampler *s;
	int ret;

	libbpf_set_print(libbpf_print);
	ret = check_privileges(err, err_len);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, err_len, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	s->opts = *opts;
	s->stats_fd = -1;
	s->n_possible_cpus = libbpf_num_possible_cpus();
	if (s->n_possible_cpus <= 0) {
		ret = s->n_possible_cpus ? s->n_possible_cpus : -EINVAL;
		snprintf(err, err_len, "cannot count possible CPUs: %s", strerror(-ret));
		goto fail;
	}
	ret = open_and_load(s, opts->offcpu);
	if (ret && opts->offcpu) {
		/* CPU sampling does not depend on the scheduler hooks: load without them */
		describe_offcpu_error(ret, s->offcpu_error, sizeof(s->offcpu_error));
		profile_bpf__destroy(s->skel);
		s->skel = NULL;
		ret = open_and_load(s, false);
	}
	if (ret) {
		describe_load_error(ret, err, err_len);
		goto fail;
	}
	size_unwind_rows(s);
	s->events = ring_buffer__new(bpf_map__fd(s->skel->maps.events), handle_event, s, NULL);
	if (!s->events || ring_buffer__add(s->events, bpf_map__fd(s->skel->maps.python_events),
					   handle_python_code, s)) {
		ret = -errno;
		snprintf(err, err_len, "creating the BPF ring buffer failed: %s", strerror(-ret));
		goto fail;
	}
	/* Needs CAP_SYS_ADMIN; without it run times read as 0 and are reported as unavailable. */
	s->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	return s;
fail:
	sampler__free(s);
	errno = -ret;
	return NULL;
}

void sampler__free(struct sampler *s)
{
	if (!s)
		return;
	sampler__detach(s);
	ring_buffer__free(s->events);
	profile_bpf__destroy(s->skel);
	if (s->stats_fd >= 0)
		close(s->stats_fd);
	free(s->keys);
	free(s->values);
	free(s->batched);
	free(s->batch_slot_keys);
	hashtab__free(&s->taken_by_hash);
	hashtab__free(&s->slot_of_stack);
	hashtab__free(&s->pending_stacks);
	free(s->slots);
	free(s->ips);
	free(s->stack_keys);
	free(s->stack_vals);
	free(s);
}

static int perf_event_open(struct perf_event_attr *attr, int cpu)
{
	return syscall(SYS_perf_event_open, attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static void describe_perf_error(int ret, char *err, size_t err_len)
{
	if (ret == -EACCES || ret == -EPERM)
		snprintf(err, err_len,
			 "perf_event_open refused (%s): missing CAP_PERFMON, "
			 "or kernel.perf_event_paranoid too high",
			 strerror(-ret));
	else if (ret == -ENOENT || ret == -EOPNOTSUPP || ret == -ENOSYS)
		snprintf(err, err_len,
			 "kernel has no cpu-clock perf event (CONFIG_PERF_EVENTS): %s",
			 strerror(-ret));
	else
		snprintf(err, err_len, "perf_event_open(cpu-clock) failed: %s", strerror(-ret));
}

/* Opens one CPU's cpu-clock event in frequency mode and attaches the program to it. 0,
 * -ENODEV for an offline CPU, or -errno. */
static int attach_cpu(struct sampler *s, int cpu, int frequency_hz, char *err, size_t err_len)
{
	struct perf_event_attr attr = {
	    .type = PERF_TYPE_SOFTWARE,
	    .config = PERF_COUNT_SW_CPU_CLOCK,
	    .size = sizeof(attr),
	    .freq = 1,
	    .sample_freq = frequency_hz,
	};
	struct bpf_link *link;
	int fd, ret;

	fd = perf_event_open(&attr, cpu);
	if (fd < 0) {
		ret = -errno;
		if (ret != -ENODEV)
			describe_perf_error(ret, err, err_len);
		return ret;
	}
	link = bpf_program__attach_perf_event(s->skel->progs.do_sample, fd);
	if (!link) {
		ret = -errno;
		close(fd);
		snprintf(err, err_len, "attaching the BPF program to CPU %d failed: %s", cpu,
			 strerror(-ret));
		return ret;
	}
	s->links[s->n_links++] = link;
	return 0;
}

int sampler__attach(struct sampler *s, int frequency_hz, char *err, size_t err_len)
{
	int cpu, ret;

	if (s->attached)
		sampler__detach(s);
	s->links = calloc(s->n_possible_cpus, sizeof(*s->links));
	if (!s->links) {
		snprintf(err, err_len, "out of memory");
		return -ENOMEM;
	}
	for (cpu = 0; cpu < s->n_possible_cpus; cpu++) {
		ret = attach_cpu(s, cpu, frequency_hz, err, err_len);
		if (ret == -ENODEV) /* offline CPU */
			continue;
		if (ret)
			goto fail;
	}
	if (!s->n_links) {
		snprintf(err, err_len, "no online CPU accepted a cpu-clock perf event");
		ret = -ENODEV;
		goto fail;
	}
	/* Without the exec hook an exec'd pid keeps its old symbols and cgroup until they are
	 * re-read: degrade, don't fail (the caller warns through sampler__exec_hook_error()). */
	s->exec_link = bpf_program__attach(s->skel->progs.handle_exec);
	s->exec_link_err = s->exec_link ? 0 : -errno;
	s->attached = true;
	return 0;
fail:
	s->attached = true;
	sampler__detach(s);
	return ret;
}

/* Waits until every program run that started before now has finished. Perf-event programs
 * run in interrupt context under rcu_read_lock(); MEMBARRIER_CMD_GLOBAL is synchronize_rcu()
 * in the kernel, so it returns only after all of them completed. Where it is unavailable
 * (nohz_full), sleep: a program run takes microseconds. */
static void wait_for_inflight_runs(void)
{
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0))
		usleep(20 * 1000);
}

void sampler__detach(struct sampler *s)
{
	if (s)
		sampler__offcpu_detach(s);
	if (!s || !s->attached)
		return;
	for (int i = 0; i < s->n_links; i++)
		bpf_link__destroy(s->links[i]);
	bpf_link__destroy(s->exec_link);
	free(s->links);
	s->links = NULL;
	s->n_links = 0;
	s->exec_link = NULL;
	s->attached = false;
	wait_for_inflight_runs();
}

int sampler__exec_hook_error(const struct sampler *s)
{
	return s && s->attached ? s->exec_link_err : 0;
}

bool sampler__attached(const struct sampler *s)
{
	return s && s->attached;
}

int sampler__poll(struct sampler *s, int timeout_ms)
{
	int ret = ring_buffer__poll(s->events, timeout_ms);

	return ret < 0 ? ret : 0;
}

/* All keys of a map, collected before any deletion so iteration stays well defined. */
static int collect_keys(int map_fd, size_t key_size, void **ret_keys, size_t *ret_n)
{
	size_t n = 0, cap = 256;
	char *keys = malloc(cap * key_size), *tmp;
	void *prev = NULL;

	if (!keys)
		return -ENOMEM;
	for (;;) {
		if (n == cap) {
			tmp = realloc(keys, 2 * cap * key_size);
			if (!tmp) {
				free(keys);
				return -ENOMEM;
			}
			keys = tmp;
			cap *= 2;
		}
		if (bpf_map_get_next_key(map_fd, prev, keys + n * key_size))
			break;
		prev = keys + n * key_size;
		n++;
	}
	if (errno != ENOENT) {
		int ret = -errno;

		free(keys);
		return ret;
	}
	*ret_keys = keys;
	*ret_n = n;
	return 0;
}

static int clear_map(int map_fd, size_t key_size)
{
	size_t n;
	void *keys;
	int ret;

	ret = collect_keys(map_fd, key_size, &keys, &n);
	if (ret)
		return ret;
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(map_fd, (char *)keys + i * key_size);
	free(keys);
	return 0;
}

static int grow_counts(struct sampler *s, size_t want)
{
	size_t cap = s->counts_cap ? s->counts_cap : DRAIN_BATCH;
	struct profile_key *keys;
	struct profile_value *values;

	while (cap < want)
		cap *= 2;
	if (cap == s->counts_cap)
		return 0;
	keys = realloc(s->keys, cap * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	s->keys = keys;
	values = realloc(s->values, cap * sizeof(*values));
	if (!values)
		return -ENOMEM;
	s->values = values;
	s->counts_cap = cap;
	return 0;
}

/* One syscall per key and two more per entry: kernels without batch operations. */
static int take_counts_by_key(struct sampler *s, int counts_fd, size_t *ret_n)
{
	struct profile_key *keys;
	size_t n, kept = 0;
	int ret;

	*ret_n = 0;
	ret = collect_keys(counts_fd, sizeof(*keys), (void **)&keys, &n);
	if (ret)
		return ret;
	ret = grow_counts(s, n);
	for (size_t i = 0; !ret && i < n; i++) {
		if (bpf_map_lookup_elem(counts_fd, &keys[i], &s->values[kept]))
			continue;
		s->keys[kept++] = keys[i];
	}
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(counts_fd, &keys[i]);
	free(keys);
	*ret_n = kept;
	return ret;
}

/* Takes every entry out of a counts map that is no longer written (the generation was
 * flipped): lookup-and-delete in batches, one syscall per DRAIN_BATCH entries. */
static int take_counts(struct sampler *s, int counts_fd, size_t *ret_n)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u32 in = 0, out = 0, count;
	bool first = true;
	size_t n = 0;
	int ret;

	if (s->no_batch)
		return take_counts_by_key(s, counts_fd, ret_n);
	for (;;) {
		ret = grow_counts(s, n + DRAIN_BATCH);
		if (ret)
			break;
		count = s->counts_cap - n;
		ret = bpf_map_lookup_and_delete_batch(counts_fd, first ? NULL : &in, &out,
						      s->keys + n, s->values + n, &count, &opts);
		if (first && (ret == -EINVAL || ret == -ENOTSUP || ret == -EOPNOTSUPP)) {
			s->no_batch = true; /* nothing taken: the old way from now on */
			return take_counts_by_key(s, counts_fd, ret_n);
		}
		n += count;
		if (ret == -ENOENT) { /* that was the last batch */
			ret = 0;
			break;
		}
		if (ret)
			break;
		first = false;
		in = out;
	}
	*ret_n = n;
	return ret;
}

/* Room for one more stack in the per-drain pool. 0 or -ENOMEM. */
static int reserve_stack(struct sampler *s)
{
	if (s->n_slots == s->slots_cap) {
		size_t cap = s->slots_cap ? 2 * s->slots_cap : 256;
		struct stack_slot *slots = realloc(s->slots, cap * sizeof(*slots));

		if (!slots)
			return -ENOMEM;
		s->slots = slots;
		s->slots_cap = cap;
	}
	if (s->n_ips + PROFILE_STACK_DEPTH > s->ips_cap) {
		size_t cap = s->ips_cap ? 2 * s->ips_cap : 256 * 32;
		__u64 *ips;

		while (s->n_ips + PROFILE_STACK_DEPTH > cap)
			cap *= 2;
		ips = realloc(s->ips, cap * sizeof(*ips));
		if (!ips)
			return -ENOMEM;
		s->ips = ips;
		s->ips_cap = cap;
	}
	return 0;
}

/* Puts a stack read from the map into the pool: its 1-based slot, 0 when out of memory. */
static __u32 add_slot(struct sampler *s, __u64 hash, struct profile_stack *stack)
{
	struct stack_slot *slot;

	if (reserve_stack(s))
		return 0; /* out of memory: this entry's stack is shown unnamed */
	if (stack->n > PROFILE_STACK_DEPTH)
		stack->n = PROFILE_STACK_DEPTH;
	memcpy(s->ips + s->n_ips, stack->ips, stack->n * sizeof(*stack->ips));
	if (hashtab__put(&s->slot_of_stack, hash, s->n_slots + 1))
		return 0;
	slot = &s->slots[s->n_slots++];
	slot->hash = hash;
	slot->off = s->n_ips;
	slot->n = stack->n;
	slot->flags = stack->flags;
	s->n_ips += stack->n;
	return s->n_slots;
}

/* The whole stack map into the pool, STACK_BATCH stacks a syscall, before the entries are
 * handed over: a drain's stacks cost a few syscalls instead of one each. On a kernel without
 * batch lookups (or any failure) stacks_read stays false and stack_slot reads them one by one. */
static void read_stacks(struct sampler *s, int stacks_fd)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u32 in = 0, out = 0, count;
	bool first = true;
	int ret;

	if (s->no_batch)
		return;
	if (!s->stack_keys) {
		s->stack_keys = calloc(STACK_BATCH, sizeof(*s->stack_keys));
		s->stack_vals = calloc(STACK_BATCH, sizeof(*s->stack_vals));
		if (!s->stack_keys || !s->stack_vals)
			return;
	}
	for (;;) {
		count = STACK_BATCH;
		ret = bpf_map_lookup_batch(stacks_fd, first ? NULL : &in, &out, s->stack_keys,
					   s->stack_vals, &count, &opts);
		if (ret && ret != -ENOENT)
			return; /* the rest one by one */
		for (__u32 i = 0; i < count; i++)
			if (!add_slot(s, s->stack_keys[i], &s->stack_vals[i]))
				return;
		if (ret == -ENOENT)
			break;
		first = false;
		in = out;
	}
	s->stacks_read = true;
}

/* Slot (1-based) of a stack's ips, read once per drain however many entries share it;
 * 0 when the stack is absent or unreadable. */
static __u32 stack_slot(struct sampler *s, int stacks_fd, __u64 hash)
{
	uint64_t known;

	if (!hash)
		return 0;
	if (hashtab__get(&s->slot_of_stack, hash, &known))
		return (__u32)known;
	if (s->stacks_read)
		return 0; /* the whole map was read: not there */
	if (bpf_map_lookup_elem(stacks_fd, &hash, &s->stack_buf))
		return 0;
	return add_slot(s, hash, &s->stack_buf);
}

static size_t slot_ips(const struct sampler *s, __u32 slot, const __u64 **ret_ips)
{
	if (!slot) {
		*ret_ips = NULL;
		return 0;
	}
	*ret_ips = s->ips + s->slots[slot - 1].off;
	return s->slots[slot - 1].n;
}

/* The whole stacks map but the stacks of blocks not charged yet. */
static int sweep_stacks(struct sampler *s, int stacks_fd)
{
	uint64_t unused;
	__u64 *keys;
	size_t n;
	int ret;

	ret = collect_keys(stacks_fd, sizeof(*keys), (void **)&keys, &n);
	if (ret)
		return ret;
	for (size_t i = 0; i < n; i++)
		if (!hashtab__get(&s->pending_stacks, keys[i], &unused))
			bpf_map_delete_elem(stacks_fd, &keys[i]);
	free(keys);
	return 0;
}

/* Deletes keys[0 .. n) in batches, one by one where the kernel has no batch delete; a key
 * already gone is passed over. */
static void delete_keys(struct sampler *s, int fd, __u64 *keys, size_t n)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	size_t i = 0;

	while (i < n && !s->no_batch) {
		__u32 count = n - i > DRAIN_BATCH ? DRAIN_BATCH : (__u32)(n - i);
		int ret = bpf_map_delete_batch(fd, keys + i, &count, &opts);

		if (ret == -EINVAL || ret == -ENOTSUP || ret == -EOPNOTSUPP) {
			if (count)
				i += count; /* only a partial batch: the rest one by one */
			break;
		}
		i += count + (ret ? 1 : 0); /* ret: keys[i + count] failed (gone), pass it */
	}
	for (; i < n; i++)
		bpf_map_delete_elem(fd, &keys[i]);
}

/* Deletes the stacks this drain read (with the whole map read, that is every stack); else every
 * SWEEP_EVERY drains the whole map, so stacks that no count references (the counts map was full)
 * do not stay. The stacks of a block not charged yet stay: BPF copies them to the other
 * generation when the thread runs again. */
static int clear_stacks(struct sampler *s, int stacks_fd)
{
	__u64 *keys = s->n_slots ? malloc(s->n_slots * sizeof(*keys)) : NULL;
	uint64_t unused;
	size_t n = 0;
	int ret = 0;

	for (size_t i = 0; i < s->n_slots; i++) {
		if (hashtab__get(&s->pending_stacks, s->slots[i].hash, &unused))
			continue;
		if (keys)
			keys[n++] = s->slots[i].hash;
		else /* out of memory: one by one */
			bpf_map_delete_elem(stacks_fd, &s->slots[i].hash);
	}
	delete_keys(s, stacks_fd, keys, n);
	free(keys);
	hashtab__clear(&s->slot_of_stack);
	s->n_slots = 0;
	s->n_ips = 0;
	if (!(++s->drains % SWEEP_EVERY) && !s->stacks_read)
		ret = sweep_stacks(s, stacks_fd);
	s->stacks_read = false;
	hashtab__clear(&s->pending_stacks);
	return ret;
}

/* The stacks that blocks recorded in generation gen and not charged yet refer to. Read after
 * the flip: a block charged before this read copied its stacks already (BPF copies, then
 * deletes the record). */
static int note_pending_stacks(struct sampler *s, __u32 gen)
{
	int fd = bpf_map__fd(s->skel->maps.offcpu_starts);
	struct offcpu_start start;
	__u32 *tids;
	size_t n;
	int ret;

	if (!s->offcpu_loaded)
		return 0;
	ret = collect_keys(fd, sizeof(*tids), (void **)&tids, &n);
	if (ret)
		return ret;
	for (size_t i = 0; !ret && i < n; i++) {
		if (bpf_map_lookup_elem(fd, &tids[i], &start) || (start.gen & 1) != gen)
			continue;
		if (start.user_stack)
			ret = hashtab__put(&s->pending_stacks, start.user_stack, 1);
		if (!ret && start.kernel_stack)
			ret = hashtab__put(&s->pending_stacks, start.kernel_stack, 1);
	}
	free(tids);
	return ret;
}

/* Hands over n taken entries; offcpu says which kind they are. */
static int hand_over(struct sampler *s, int stacks_fd, size_t n, bool offcpu, sampler_entry_fn fn,
		     void *ctx)
{
	struct sampler_entry e = {.offcpu = offcpu};
	int ret = 0;

	for (size_t i = 0; !ret && i < n; i++) {
		const struct profile_key *k = &s->keys[i];
		__u32 user = stack_slot(s, stacks_fd, k->user_stack);
		__u32 kernel = stack_slot(s, stacks_fd, k->kernel_stack);

		e.key = k;
		e.value = &s->values[i];
		e.user_truncated = user && (s->slots[user - 1].flags & PROFILE_STACK_TRUNCATED);
		e.n_user = slot_ips(s, user, &e.user_ips);
		e.n_kernel = slot_ips(s, kernel, &e.kernel_ips);
		ret = fn(&e, ctx);
	}
	return ret;
}

/* 1-based index of key among the n taken entries, 0 when absent; by_hash indexes them by the
 * key's hash (a second key of the same hash is found by a scan). */
static size_t find_taken(const struct sampler *s, size_t n, const struct profile_key *key,
			 uint64_t h)
{
	uint64_t i;

	if (!hashtab__get(&s->taken_by_hash, h, &i))
		return 0; /* every taken entry's hash is in the index */
	if (!memcmp(&s->keys[i - 1], key, sizeof(*key)))
		return i;
	for (size_t j = 0; j < n; j++) /* another key of the same hash: rare */
		if (!memcmp(&s->keys[j], key, sizeof(*key)))
			return j + 1;
	return 0;
}

/* Adds one batched entry to the n taken ones (its key's or a new entry): in user space, no map
 * update, so a full counts map does not turn it away. */
static int merge_batched(struct sampler *s, size_t *n, const struct profile_batched *b)
{
	uint64_t h = hash_bytes(&b->key, sizeof(b->key));
	size_t i = find_taken(s, *n, &b->key, h);
	int ret;

	if (i) {
		s->values[i - 1].count += b->value.count;
		s->values[i - 1].period_ns += b->value.period_ns;
		return 0;
	}
	ret = grow_counts(s, *n + 1);
	if (ret)
		return ret;
	s->keys[*n] = b->key;
	s->values[(*n)++] = b->value;
	if (!hashtab__get(&s->taken_by_hash, h, &(uint64_t){0}))
		ret = hashtab__put(&s->taken_by_hash, h, *n);
	return ret;
}

/* Every per-CPU slot of a count batch map, in one syscall (PROFILE_BATCH_SLOTS x CPUs values);
 * slot by slot on kernels without batch lookups. */
static int read_batch_slots(struct sampler *s, int fd)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u32 out, count = PROFILE_BATCH_SLOTS;
	int ret = -EOPNOTSUPP;

	if (!s->no_batch) {
		ret = bpf_map_lookup_batch(fd, NULL, &out, s->batch_slot_keys, s->batched, &count,
					   &opts);
		if (ret == -ENOENT && count == PROFILE_BATCH_SLOTS)
			ret = 0; /* all read, and nothing after */
		if (!ret && count != PROFILE_BATCH_SLOTS)
			ret = -EIO;
	}
	if (ret != -EINVAL && ret != -ENOTSUP && ret != -EOPNOTSUPP)
		return ret;
	for (__u32 slot = 0; slot < PROFILE_BATCH_SLOTS; slot++)
		if (bpf_map_lookup_elem(fd, &slot, s->batched + (size_t)slot * s->n_possible_cpus))
			return -errno;
	return 0;
}

/* BPF's per-CPU count batches of generation gen (no longer written), added to the n entries
 * taken from its counts map. */
static int take_batches(struct sampler *s, __u32 gen, size_t *n)
{
	int fd = bpf_map__fd(gen & 1 ? s->skel->maps.counts_batch1 : s->skel->maps.counts_batch0);
	size_t total = (size_t)PROFILE_BATCH_SLOTS * s->n_possible_cpus;
	bool indexed = false;
	int ret = 0;

	if (!s->batched) {
		s->batched = calloc(total, sizeof(*s->batched));
		s->batch_slot_keys = calloc(PROFILE_BATCH_SLOTS, sizeof(*s->batch_slot_keys));
		if (!s->batched || !s->batch_slot_keys)
			return -ENOMEM;
	}
	ret = read_batch_slots(s, fd);
	for (size_t i = 0; !ret && i < total; i++) {
		const struct profile_batched *b = &s->batched[i];

		if (b->generation != gen || !b->value.count)
			continue;
		if (!indexed) { /* the taken entries by key hash, once a batch has something */
			for (size_t j = 0; !ret && j < *n; j++) {
				uint64_t h = hash_bytes(&s->keys[j], sizeof(s->keys[j]));

				if (!hashtab__get(&s->taken_by_hash, h, &(uint64_t){0}))
					ret = hashtab__put(&s->taken_by_hash, h, j + 1);
			}
			indexed = true;
		}
		if (!ret)
			ret = merge_batched(s, n, b);
	}
	hashtab__clear(&s->taken_by_hash);
	return ret;
}

int sampler__drain(struct sampler *s, sampler_entry_fn fn, void *ctx)
{
	__u32 gen = s->skel->bss->generation, old = gen & 1;
	int counts_fd, stacks_fd, ret, ret2;
	size_t n = 0;

	/* counted, not toggled: BPF's per-CPU "stored this generation" stack hashes and count
	 * batches tell generations apart by it */
	s->skel->bss->generation = gen + 1;
	__sync_synchronize();
	wait_for_inflight_runs();

	counts_fd = bpf_map__fd(old ? s->skel->maps.counts1 : s->skel->maps.counts0);
	stacks_fd = bpf_map__fd(old ? s->skel->maps.stacks1 : s->skel->maps.stacks0);
	ret = take_counts(s, counts_fd, &n);
	if (!ret)
		ret = take_batches(s, gen, &n);
	if (!ret)
		read_stacks(s, stacks_fd);
	if (!ret)
		ret = hand_over(s, stacks_fd, n, false, fn, ctx);
	if (!ret && s->offcpu_loaded) {
		counts_fd =
		    bpf_map__fd(old ? s->skel->maps.offcpu_counts1 : s->skel->maps.offcpu_counts0);
		ret = take_counts(s, counts_fd, &n);
		if (!ret)
			ret = hand_over(s, stacks_fd, n, true, fn, ctx);
	}
	if (!ret)
		ret = note_pending_stacks(s, old);
	if (ret) /* some entries were taken out unread: sweep their stacks now */
		s->drains = SWEEP_EVERY - 1;
	ret2 = clear_stacks(s, stacks_fd);
	return ret ? ret : ret2;
}

int sampler__stats(struct sampler *s, struct profile_stats *ret)
{
	struct profile_stats *percpu;
	__u32 zero = 0;
	int err = 0;

	memset(ret, 0, sizeof(*ret));
	percpu = calloc(s->n_possible_cpus, sizeof(*percpu));
	if (!percpu)
		return -ENOMEM;
	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.stats), &zero, percpu)) {
		err = -errno;
		goto out;
	}
	for (int cpu = 0; cpu < s->n_possible_cpus; cpu++) {
		const __u64 *src = (const __u64 *)&percpu[cpu];
		__u64 *dst = (__u64 *)ret;

		for (size_t i = 0; i < sizeof(*ret) / sizeof(__u64); i++)
			dst[i] += src[i];
	}
out:
	free(percpu);
	return err;
}

static int prog_runtime(const struct bpf_program *prog, uint64_t *run_ns, uint64_t *run_cnt)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
		return -errno;
	*run_ns += info.run_time_ns;
	*run_cnt += info.run_cnt;
	return 0;
}

int sampler__bpf_runtime(struct sampler *s, uint64_t *ret_run_ns, uint64_t *ret_run_cnt)
{
	uint64_t ns = 0, cnt = 0;
	int ret;

	ret = prog_runtime(s->skel->progs.do_sample, &ns, &cnt);
	if (!ret)
		ret = prog_runtime(s->skel->progs.handle_exec, &ns, &cnt);
	if (!ret && s->offcpu_loaded)
		ret = prog_runtime(s->skel->progs.offcpu_switch, &ns, &cnt);
	*ret_run_ns = ns;
	*ret_run_cnt = cnt;
	return ret;
}

int sampler__thread_name(struct sampler *s, pid_t tid, char *buf, size_t len)
{
	struct profile_thread_name name;
	__u32 key = tid;

	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.thread_names), &key, &name))
		return -ENOENT;
	snprintf(buf, len, "%.*s", (int)sizeof(name.comm), name.comm);
	return 0;
}

static void sampler__proc_maps_changed(struct sampler *s, pid_t pid);

void sampler__forget_pid(struct sampler *s, pid_t pid)
{
	__u32 key = pid;

	bpf_map_delete_elem(bpf_map__fd(s->skel->maps.seen_pids), &key);
	sampler__proc_maps_changed(s, pid); /* BPF's per-CPU copies of the entry are stale */
}

int sampler__set_excluded_cgroups(struct sampler *s, const uint64_t *ids, size_t n)
{
	int fd = bpf_map__fd(s->skel->maps.excluded_cgroups);
	__u8 one = 1;
	int ret;

	if (n > PROFILE_MAX_EXCLUDED_CGROUPS)
		return -E2BIG;
	s->skel->bss->excluded_cgroups_count = 0; /* stop lookups while the set is rebuilt */
	ret = clear_map(fd, sizeof(__u64));
	if (ret)
		return ret;
	for (size_t i = 0; i < n; i++) {
		__u64 id = ids[i];

		if (bpf_map_update_elem(fd, &id, &one, BPF_ANY))
			return -errno;
	}
	s->skel->bss->excluded_cgroups_count = n;
	return 0;
}

size_t sampler__unwind_rows_capacity(const struct sampler *s)
{
	return s->rows_cap;
}

/* The kernel copies the rows (batch updates): no user-space copy of the map is kept. */
int sampler__unwind_write_rows(struct sampler *s, uint32_t first_row, const struct unwind_row *rows,
			       size_t n)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	int fd = bpf_map__fd(s->skel->maps.unwind_rows);
	struct unwind_row_pair *pairs = NULL;
	__u32 keys[1024];
	size_t done = 0;

	if (!s->rows_cap || first_row % 2 || first_row + n > s->rows_cap)
		return -EINVAL;
	while (done < n) {
		size_t rows_now = n - done > 2 * 1024 ? 2 * 1024 : n - done;
		__u32 count = (rows_now + 1) / 2;
		const void *values = rows + done;

		if (rows_now % 2) { /* the last pair, half empty */
			pairs = calloc(count, sizeof(*pairs));
			if (!pairs)
				return -ENOMEM;
			memcpy(pairs, rows + done, rows_now * sizeof(*rows));
			values = pairs;
		}
		for (__u32 i = 0; i < count; i++)
			keys[i] = (first_row + done) / 2 + i;
		if (bpf_map_update_batch(fd, keys, values, &count, &opts)) {
			int ret = -errno;

			free(pairs);
			return ret;
		}
		free(pairs);
		pairs = NULL;
		done += rows_now;
	}
	return 0;
}

int sampler__unwind_set_table(struct sampler *s, const struct unwind_table_info *info)
{
	__u32 slot = info->id % UNWIND_MAX_TABLES;

	if (!s->rows_cap)
		return -ENOTSUP;
	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.unwind_tables_info), &slot, info,
				BPF_ANY))
		return -errno;
	return 0;
}

/* After pid entered or left a per-process map: BPF's per-CPU answers of which maps hold it
 * (proc_maps) are stale. After the update, so a sample that reads the new value sees it. */
static void sampler__proc_maps_changed(struct sampler *s, pid_t pid)
{
	size_t slots = sizeof(s->skel->bss->proc_maps_seq) / sizeof(s->skel->bss->proc_maps_seq[0]);

	__atomic_fetch_add(&s->skel->bss->proc_maps_seq[(uint32_t)pid % slots], 1,
			   __ATOMIC_SEQ_CST);
}

int sampler__unwind_set_process(struct sampler *s, pid_t pid, const struct unwind_process *proc)
{
	__u32 key = pid;

	if (!s->rows_cap)
		return -ENOTSUP;
	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.unwind_procs), &key, proc, BPF_ANY))
		return -errno;
	sampler__proc_maps_changed(s, pid);
	return 0;
}

void sampler__unwind_forget_process(struct sampler *s, pid_t pid)
{
	__u32 key = pid;

	if (s->rows_cap) {
		bpf_map_delete_elem(bpf_map__fd(s->skel->maps.unwind_procs), &key);
		sampler__proc_maps_changed(s, pid);
	}
}

int sampler__unwind_stats(struct sampler *s, uint64_t *ret)
{
	struct unwind_counters {
		__u64 c[UNWIND_STAT__COUNT];
	} * percpu;
	__u32 zero = 0;
	int err = 0;

	memset(ret, 0, UNWIND_STAT__COUNT * sizeof(*ret));
	percpu = calloc(s->n_possible_cpus, sizeof(*percpu));
	if (!percpu)
		return -ENOMEM;
	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.unwind_stats), &zero, percpu))
		err = -errno;
	for (int cpu = 0; !err && cpu < s->n_possible_cpus; cpu++)
		for (int i = 0; i < UNWIND_STAT__COUNT; i++)
			ret[i] += percpu[cpu].c[i];
	free(percpu);
	return err;
}

void sampler__sync(struct sampler *s)
{
	wait_for_inflight_runs();
}

uint64_t sampler__load_ns(const struct sampler *s)
{
	return s->load_ns;
}

uint64_t sampler__unwind_rows_bytes(const struct sampler *s)
{
	return s->rows_map_bytes;
}

/* --- off-CPU ----------------------------------------------------------------------------- */

bool sampler__offcpu_loaded(const struct sampler *s)
{
	return s && s->offcpu_loaded;
}

const char *sampler__offcpu_error(const struct sampler *s)
{
	return s ? s->offcpu_error : "";
}

/* Records of blocks that began before the hook was detached: their thread's next switch-in
 * after a re-attach would charge the detached time too, from a start of another attach. The
 * hook is detached here: nothing writes the map meanwhile. */
static void offcpu_drop_stale_starts(struct sampler *s)
{
	int fd = bpf_map__fd(s->skel->maps.offcpu_starts);
	__u32 tid;

	while (!bpf_map_get_next_key(fd, NULL, &tid) && !bpf_map_delete_elem(fd, &tid))
		s->offcpu_stale++;
}

int sampler__offcpu_attach(struct sampler *s, char *err, size_t err_len)
{
	struct bpf_program *prog = s->skel->progs.offcpu_switch;
	int ret;

	if (!s->offcpu_loaded) {
		snprintf(err, err_len, "%s",
			 s->offcpu_error[0] ? s->offcpu_error : "off-CPU programs not loaded");
		return -ENOTSUP;
	}
	if (s->offcpu_link)
		return 0;
	offcpu_drop_stale_starts(s);
	s->offcpu_link = bpf_program__attach(prog);
	if (!s->offcpu_link) {
		ret = -errno;
		snprintf(err, err_len, "attaching %s failed: %s", bpf_program__name(prog),
			 strerror(-ret));
		return ret;
	}
	return 0;
}

bool sampler__offcpu_attached(const struct sampler *s)
{
	return s && s->offcpu_link;
}

void sampler__offcpu_detach(struct sampler *s)
{
	if (!s->offcpu_link)
		return;
	bpf_link__destroy(s->offcpu_link);
	s->offcpu_link = NULL;
	wait_for_inflight_runs();
}

void sampler__offcpu_configure(struct sampler *s, const struct sampler_offcpu_settings *set)
{
	__u32 every = set->sample_every ? set->sample_every : 1;
	__u32 below;

	if (every > OFFCPU_MAX_SAMPLE_EVERY)
		every = OFFCPU_MAX_SAMPLE_EVERY;
	below = offcpu_keep_below(every);
	s->skel->bss->offcpu_mode = set->allow_list ? OFFCPU_MODE_ALLOW : OFFCPU_MODE_ALL;
	s->skel->bss->offcpu_self_tgid = getpid();
	s->skel->bss->offcpu_min_ns = set->min_block_ns;
	s->skel->bss->offcpu_max_kept_value = set->max_kept_per_cpu_s > OFFCPU_MAX_KEPT_PER_CPU_S
						  ? OFFCPU_MAX_KEPT_PER_CPU_S
						  : set->max_kept_per_cpu_s;
	/* weight first: a block kept at the new rate must not get the old weight */
	s->skel->data->offcpu_weight_value = offcpu_weight(below);
	__sync_synchronize();
	s->skel->bss->offcpu_keep_below_value = below;
}

int sampler__offcpu_set_tgid(struct sampler *s, pid_t pid, bool allow)
{
	__u32 key = pid, state = allow ? OFFCPU_TGID_ALLOW : OFFCPU_TGID_DENY;

	if (!s->offcpu_loaded)
		return -ENOTSUP;
	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.offcpu_tgids), &key, &state, BPF_ANY))
		return -errno;
	return 0;
}

void sampler__offcpu_forget_tgid(struct sampler *s, pid_t pid)
{
	__u32 key = pid;

	if (s->offcpu_loaded)
		bpf_map_delete_elem(bpf_map__fd(s->skel->maps.offcpu_tgids), &key);
}

int sampler__offcpu_clear_tgids(struct sampler *s)
{
	if (!s->offcpu_loaded)
		return 0;
	return clear_map(bpf_map__fd(s->skel->maps.offcpu_tgids), sizeof(__u32));
}

int sampler__offcpu_stats(struct sampler *s, struct offcpu_stats *ret)
{
	struct offcpu_stats *percpu;
	__u32 zero = 0;
	int err = 0;

	memset(ret, 0, sizeof(*ret));
	if (!s->offcpu_loaded)
		return 0;
	percpu = calloc(s->n_possible_cpus, sizeof(*percpu));
	if (!percpu)
		return -ENOMEM;
	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.offcpu_stats), &zero, percpu))
		err = -errno;
	for (int cpu = 0; !err && cpu < s->n_possible_cpus; cpu++) {
		const __u64 *src = (const __u64 *)&percpu[cpu];
		__u64 *dst = (__u64 *)ret;

		for (size_t i = 0; i < sizeof(*ret) / sizeof(__u64); i++)
			dst[i] += src[i];
	}
	free(percpu);
	ret->stale = s->offcpu_stale;
	return err;
}

int sampler__offcpu_runtime(struct sampler *s, uint64_t *ret_run_ns, uint64_t *ret_run_cnt)
{
	uint64_t ns = 0, cnt = 0;
	int ret = 0;

	if (s->offcpu_loaded) {
		ret = prog_runtime(s->skel->progs.offcpu_switch, &ns, &cnt);
	}
	*ret_run_ns = ns;
	*ret_run_cnt = cnt;
	return ret;
}

/* Kernel memory of the off-CPU maps as sized (hash maps preallocate their entries). */
uint64_t sampler__offcpu_map_bytes(const struct sampler *s)
{
	const struct bpf_map *maps[] = {s->skel->maps.offcpu_counts0, s->skel->maps.offcpu_counts1,
					s->skel->maps.offcpu_starts, s->skel->maps.offcpu_tgids};
	uint64_t bytes = 0;

	if (!s->offcpu_loaded)
		return 0;
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
		bytes += (uint64_t)bpf_map__max_entries(maps[i]) *
			 (bpf_map__key_size(maps[i]) + bpf_map__value_size(maps[i]));
	return bytes;
}

/* --- interpreter state (agent/runtimes/) ------------------------------------------------ */

int sampler__python_set_process(struct sampler *s, pid_t pid, const struct python_proc *proc)
{
	__u32 key = pid;

	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.python_procs), &key, proc, BPF_ANY))
		return -errno;
	sampler__proc_maps_changed(s, pid);
	return 0;
}

void sampler__python_forget_process(struct sampler *s, pid_t pid)
{
	__u32 key = pid;

	bpf_map_delete_elem(bpf_map__fd(s->skel->maps.python_procs), &key);
	sampler__proc_maps_changed(s, pid);
}

int sampler__python_stats(struct sampler *s, uint64_t *ret)
{
	struct python_counters {
		__u64 c[PYTHON_STAT__COUNT];
	} * percpu;
	__u32 zero = 0;
	int err = 0;

	memset(ret, 0, PYTHON_STAT__COUNT * sizeof(*ret));
	percpu = calloc(s->n_possible_cpus, sizeof(*percpu));
	if (!percpu)
		return -ENOMEM;
	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.python_stats), &zero, percpu))
		err = -errno;
	for (int cpu = 0; !err && cpu < s->n_possible_cpus; cpu++)
		for (int i = 0; i < PYTHON_STAT__COUNT; i++)
			ret[i] += percpu[cpu].c[i];
	free(percpu);
	return err;
}

int sampler__ruby_set_process(struct sampler *s, pid_t pid, const struct ruby_proc *proc)
{
	__u32 key = pid;

	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.ruby_procs), &key, proc, BPF_ANY))
		return -errno;
	sampler__proc_maps_changed(s, pid);
	return 0;
}

void sampler__ruby_forget_process(struct sampler *s, pid_t pid)
{
	__u32 key = pid;

	bpf_map_delete_elem(bpf_map__fd(s->skel->maps.ruby_procs), &key);
	sampler__proc_maps_changed(s, pid);
}

int sampler__ruby_stats(struct sampler *s, uint64_t *ret)
{
	struct ruby_counters {
		__u64 c[RUBY_STAT__COUNT];
	} * percpu;
	__u32 zero = 0;
	int err = 0;

	memset(ret, 0, RUBY_STAT__COUNT * sizeof(*ret));
	percpu = calloc(s->n_possible_cpus, sizeof(*percpu));
	if (!percpu)
		return -ENOMEM;
	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.ruby_stats), &zero, percpu))
		err = -errno;
	for (int cpu = 0; !err && cpu < s->n_possible_cpus; cpu++)
		for (int i = 0; i < RUBY_STAT__COUNT; i++)
			ret[i] += percpu[cpu].c[i];
	free(percpu);
	return err;
}

int sampler__v8_set_process(struct sampler *s, pid_t pid, const struct v8_proc *proc)
{
	__u32 key = pid;

	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.v8_procs), &key, proc, BPF_ANY))
		return -errno;
	sampler__proc_maps_changed(s, pid);
	return 0;
}

void sampler__v8_forget_process(struct sampler *s, pid_t pid)
{
	__u32 key = pid;

	bpf_map_delete_elem(bpf_map__fd(s->skel->maps.v8_procs), &key);
	sampler__proc_maps_changed(s, pid);
}

int sampler__v8_stats(struct sampler *s, uint64_t *ret)
{
	struct v8_counters {
		__u64 c[V8_STAT__COUNT];
	} * percpu;
	__u32 zero = 0;
	int err = 0;

	memset(ret, 0, V8_STAT__COUNT * sizeof(*ret));
	percpu = calloc(s->n_possible_cpus, sizeof(*percpu));
	if (!percpu)
		return -ENOMEM;
	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.v8_stats), &zero, percpu))
		err = -errno;
	for (int cpu = 0; !err && cpu < s->n_possible_cpus; cpu++)
		for (int i = 0; i < V8_STAT__COUNT; i++)
			ret[i] += percpu[cpu].c[i];
	free(percpu);
	return err;
}

int sampler__hotspot_set_process(struct sampler *s, pid_t pid, const struct hotspot_proc *proc)
{
	__u32 key = pid;

	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.hotspot_procs), &key, proc, BPF_ANY))
		return -errno;
	sampler__proc_maps_changed(s, pid);
	return 0;
}

void sampler__hotspot_forget_process(struct sampler *s, pid_t pid)
{
	__u32 key = pid;

	bpf_map_delete_elem(bpf_map__fd(s->skel->maps.hotspot_procs), &key);
	sampler__proc_maps_changed(s, pid);
}

int sampler__hotspot_stats(struct sampler *s, uint64_t *ret)
{
	struct hotspot_counters {
		__u64 c[HOTSPOT_STAT__COUNT];
	} * percpu;
	__u32 zero = 0;
	int err = 0;

	memset(ret, 0, HOTSPOT_STAT__COUNT * sizeof(*ret));
	percpu = calloc(s->n_possible_cpus, sizeof(*percpu));
	if (!percpu)
		return -ENOMEM;
	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.hotspot_stats), &zero, percpu))
		err = -errno;
	for (int cpu = 0; !err && cpu < s->n_possible_cpus; cpu++)
		for (int i = 0; i < HOTSPOT_STAT__COUNT; i++)
			ret[i] += percpu[cpu].c[i];
	free(percpu);
	return err;
}

int sampler__php_set_process(struct sampler *s, pid_t pid, const struct php_proc *proc)
{
	__u32 key = pid;

	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.php_procs), &key, proc, BPF_ANY))
		return -errno;
	sampler__proc_maps_changed(s, pid);
	return 0;
}

void sampler__php_forget_process(struct sampler *s, pid_t pid)
{
	__u32 key = pid;

	bpf_map_delete_elem(bpf_map__fd(s->skel->maps.php_procs), &key);
	sampler__proc_maps_changed(s, pid);
}
