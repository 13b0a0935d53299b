#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Overhead of `roottrace-agent record` system-wide at 99 and 199 Hz against perf record,
# bcc's profile and bpftrace, while a fixed CPU-bound workload saturates every core.
# Reports per profiler: own CPU (user+sys) and BPF run time as a share of one core, BPF time
# per sample (BPF run-time statistics), peak RSS, and the workload's throughput loss (medians
# over alternating repetitions, with the baseline's run-to-run noise band).
#   bench/bench-agent.sh [--build DIR]      env: BENCH_REPS (3), BENCH_SECONDS (10)
# Needs root. Installs the comparison tools (linux-perf, bpfcc-tools, bpftrace) if missing.
set -eu
. "$(dirname "$0")/lib.sh"
bench_args "$@"
BUILD="$(cd "$BUILD" && pwd)"
bench_need_root bench-agent BPF
bench_need_built bench-agent roottrace-agent

missing=""
command -v perf >/dev/null || missing="$missing linux-perf"
command -v profile-bpfcc >/dev/null || missing="$missing bpfcc-tools"
command -v bpftrace >/dev/null || missing="$missing bpftrace"
if [ -n "$missing" ]; then
	echo "bench-agent: installing$missing" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

OUT="$BUILD/bench/agent"
mkdir -p "$OUT"

# bcc compiles its program against kernel headers. Kernels without a headers package (this
# machine's) get Debian's: profile.py only uses stable UAPI structs, so a close version works.
if [ ! -d "/lib/modules/$(uname -r)/build" ] && [ -z "${BCC_KERNEL_SOURCE:-}" ]; then
	hdr=$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -1)
	if [ -z "$hdr" ]; then
		echo "bench-agent: installing linux-headers-amd64 for bcc" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			linux-headers-amd64 >/dev/null
		hdr=$(ls -d /usr/src/linux-headers-*-amd64 | sort -V | tail -1)
	fi
	rm -rf "$OUT/ksrc" && mkdir -p "$OUT/ksrc"
	cp -rs "${hdr%-amd64}-common/." "$OUT/ksrc/" 2>/dev/null || true
	cp -rsf --remove-destination "$hdr/." "$OUT/ksrc/"
	export BCC_KERNEL_SOURCE="$OUT/ksrc"
fi
# The fixed workload: one spinning thread per CPU, prints how many iterations it did.
cat >"$OUT/spin.c" <<'C'
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static double end_at;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static void *spin(void *arg)
{
	uint64_t n = 0, x = 1;
	while (now() < end_at) {
		for (int i = 0; i < 100000; i++) { x = x * 6364136223846793005ULL + 1; __asm__ volatile("" : "+r"(x)); }
		n++;
	}
	*(uint64_t *)arg = n;
	return NULL;
}
int main(int argc, char **argv)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	pthread_t t[256];
	uint64_t n[256] = {0}, total = 0;
	end_at = now() + atof(argv[1]);
	for (long i = 0; i < cpus && i < 256; i++) pthread_create(&t[i], NULL, spin, &n[i]);
	for (long i = 0; i < cpus && i < 256; i++) { pthread_join(t[i], NULL); total += n[i]; }
	printf("%llu\n", (unsigned long long)total);
	return 0;
}
C
gcc -O2 -pthread "$OUT/spin.c" -o "$OUT/spin"

old_stats=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -qw kernel.bpf_stats_enabled=$old_stats' EXIT
sysctl -qw kernel.bpf_stats_enabled=1

AGENT="$BUILD/roottrace-agent" OUT="$OUT" python3 - <<'PY'
import json, os, signal, statistics, subprocess, sys, time

AGENT, OUT = os.environ["AGENT"], os.environ["OUT"]
REPS = int(os.environ.get("BENCH_REPS", "3"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "10"))
SPIN = os.path.join(OUT, "spin")

CONFIGS = [
    ("none", None),
    ("roottrace 99 Hz", [AGENT, "record", "--duration", "1h", "--frequency", "99",
                         "--output", os.path.join(OUT, "ours99.pb.gz")]),
    ("roottrace 199 Hz", [AGENT, "record", "--duration", "1h", "--frequency", "199",
                          "--output", os.path.join(OUT, "ours199.pb.gz")]),
    ("perf record 99 Hz", ["perf", "record", "-F", "99", "-a", "-g", "-e", "cpu-clock", "-q",
                           "-o", os.path.join(OUT, "perf.data")]),
    ("bcc profile 99 Hz", ["profile-bpfcc", "-F", "99", "-f"]),
    ("bpftrace 99 Hz", ["bpftrace", "-e", "profile:hz:99 { @[kstack, ustack, pid] = count(); }"]),
]


def prog_ids(pid):
    """Ids of the BPF programs pid holds (program and link fds name them in fdinfo)."""
    ids = set()
    try:
        fds = os.listdir("/proc/%d/fdinfo" % pid)
    except OSError:
        return ids
    for fd in fds:
        try:
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def bpf_progs(pid):
    """(attached?, run_ns, run_cnt) of pid's perf_event programs, and run_ns of all of them."""
    ids = prog_ids(pid)
    if not ids:
        return False, 0, 0, 0
    out = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True).stdout
    sample_ns = sample_cnt = all_ns = 0
    found = False
    for p in json.loads(out or "[]"):
        if p.get("id") not in ids:
            continue
        all_ns += p.get("run_time_ns", 0)
        if p.get("type") == "perf_event":
            found = True
            sample_ns += p.get("run_time_ns", 0)
            sample_cnt += p.get("run_cnt", 0)
    return found, sample_ns, sample_cnt, all_ns


def task_cpu_ns(pid):
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total


def wait_ready(name, proc):
    deadline = time.time() + 60
    if name.startswith("perf"):
        time.sleep(2)
        return
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("%s exited early" % name)
        if bpf_progs(proc.pid)[0]:
            time.sleep(1)
            return
        time.sleep(0.2)
    raise RuntimeError("%s never attached" % name)


def run_workload():
    res = subprocess.run([SPIN, str(SECONDS)], capture_output=True, text=True, check=True,
                         stdin=subprocess.DEVNULL)
    return int(res.stdout) / SECONDS


def stop(proc):
    """SIGINT (repeated: bpftrace sometimes misses the first one), SIGKILL after 60 s."""
    for attempt in range(13):
        os.kill(proc.pid, signal.SIGINT if attempt < 12 else signal.SIGKILL)
        for _ in range(50 if attempt < 12 else 1000):
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                return status, ru
            time.sleep(0.1)
    raise RuntimeError("profiler %d does not exit" % proc.pid)


def one_run(name, cmd):
    if cmd is None:
        return {"throughput": run_workload()}
    log = open(os.path.join(OUT, name.split()[0] + ".log"), "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    wait_ready(name, proc)
    cpu0, bpf0, t0 = task_cpu_ns(proc.pid), bpf_progs(proc.pid), time.monotonic()
    throughput = run_workload()
    bpf1 = bpf_progs(proc.pid)
    status, ru = stop(proc)
    window_s = time.monotonic() - t0
    proc.returncode = status
    log.close()
    cpu_s = ru.ru_utime + ru.ru_stime - cpu0 / 1e9
    bpf_ns, bpf_cnt, bpf_all = bpf1[1] - bpf0[1], bpf1[2] - bpf0[2], bpf1[3] - bpf0[3]
    return {"throughput": throughput, "cpu_share": cpu_s / window_s,
            "bpf_share": bpf_all / 1e9 / window_s,
            "bpf_per_sample_us": bpf_ns / bpf_cnt / 1e3 if bpf_cnt else float("nan"),
            "rss_mb": ru.ru_maxrss / 1024.0}


results = {name: [] for name, _ in CONFIGS}
for rep in range(REPS):
    order = CONFIGS[rep % len(CONFIGS):] + CONFIGS[:rep % len(CONFIGS)]
    for name, cmd in order:
        r = one_run(name, cmd)
        results[name].append(r)
        print("rep %d %-18s %s" % (rep + 1, name, {k: round(v, 4) for k, v in r.items()}),
              file=sys.stderr, flush=True)

base = [r["throughput"] for r in results["none"]]
base_med = statistics.median(base)
noise = (max(base) - min(base)) / 2 / base_med * 100
med = lambda name, key: statistics.median(r[key] for r in results[name])
lines = [
    "Workload: %d spinning threads (one per CPU) for %gs per run, %d alternating repetitions,"
    " medians; baseline noise band ±%.1f%% (half the min-max spread)." % (
        os.cpu_count(), SECONDS, REPS, noise),
    "",
    "| profiler | own CPU (% of a core) | BPF time (% of a core) | CPU + BPF | BPF per sample |"
    " peak RSS | throughput loss |",
    "|---|---|---|---|---|---|---|",
]
for name, cmd in CONFIGS:
    if cmd is None:
        continue
    loss = (1 - med(name, "throughput") / base_med) * 100
    lines.append("| %s | %.2f%% | %.2f%% | %.2f%% | %.2f µs | %.1f MB | %+.1f%% |" % (
        name, med(name, "cpu_share") * 100, med(name, "bpf_share") * 100,
        (med(name, "cpu_share") + med(name, "bpf_share")) * 100,
        med(name, "bpf_per_sample_us"), med(name, "rss_mb"), loss))
text = "\n".join(lines)
print(text)
with open(os.path.join(OUT, "results.md"), "w") as f:
    f.write(text + "\n")
PY
