# SPDX-License-Identifier: Apache-2.0
# Off-CPU cost (docs/performance.md): a ping-pong pair of threads on two pipes at ~10k and
# ~50k context switches per second, recorded by `roottrace-agent record --pid` with CPU
# sampling alone, with off-CPU time (every block; 1 in 8, 64 or 1024 kept, blocks of 10 us and
# more; offcpu-1in64-cap50, the daemon's defaults: 1 in 64, at most 50 kept a second per CPU),
# and by libbpf-tools' offcputime (Debian libbpf-tools) on the same
# workload. bcc's offcputime (bpfcc-tools) is tried too: it compiles its program against the
# kernel's headers, and says so when it has none (a kernel without /lib/modules/*/build or
# CONFIG_IKHEADERS, as this test machine's).
# For each: the tool's own CPU (user + system), its BPF programs' run time, both per second of
# workload and as a share of one core, BPF ns per context switch, and the off-CPU maps' memory.
# python3 bench/bench_offcpu.py --build DIR [--seconds 8] [--against OLD_DIR --rounds 3]
# [--targets 50000] [--tools cpu,offcpu-1in64]. Needs root. --against compares two builds on a
# shared machine: each cell runs both builds in turn (order alternating by round) and prints the
# median of the rounds for each. --targets and --tools run some cells only.
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from bench_unwind_peers import enable_bpf_stats  # noqa: E402

BCC = "/usr/sbin/offcputime-bpfcc"
LIBBPF_TOOLS = "/usr/sbin/offcputime"


def ctxt():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("ctxt "):
                return int(line.split()[1])
    return 0


def cpu_s(pid):
    """utime + stime of pid and its reaped children, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return sum(int(x) for x in fields[11:15]) / tick


def bpf_of(pid):
    """({prog_id: run_time_ns}, memlock bytes of maps named offcpu_*) of the process's fds."""
    progs, mem = {}, 0
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return progs, mem
    for fd in fds:
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                info = f.read()
        except OSError:
            continue
        if target == "anon_inode:bpf-prog":
            m = re.search(r"prog_id:\s+(\d+)", info)
            if m:
                progs[int(m.group(1))] = 0
        elif target == "anon_inode:bpf-map":
            m = re.search(r"memlock:\s+(\d+)", info)
            i = re.search(r"map_id:\s+(\d+)", info)
            if m and i and map_name(int(i.group(1))).startswith("offcpu_"):
                mem += int(m.group(1))
    for prog_id in list(progs):
        out = subprocess.run(["bpftool", "-j", "prog", "show", "id", str(prog_id)],
                             capture_output=True, text=True).stdout
        progs[prog_id] = json.loads(out).get("run_time_ns", 0) if out else 0
    return progs, mem


_names = {}


def map_name(map_id):
    if map_id not in _names:
        out = subprocess.run(["bpftool", "-j", "map", "show", "id", str(map_id)],
                             capture_output=True, text=True).stdout
        _names[map_id] = json.loads(out).get("name", "") if out else ""
    return _names[map_id]


def run(build, rate, seconds, tool):
    """One workload under one tool: a dict of figures."""
    helper = subprocess.Popen([os.path.join(build, "tests", "helpers", "offcpu_waits"),
                               "pingpong", str(rate), "600"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert helper.stdout.readline().strip() == "ready"
    helper.stdin.write("go\n")
    helper.stdin.flush()
    time.sleep(1)
    proc = None
    agent = os.path.join(build, "roottrace-agent")
    if tool in ("bcc", "libbpf-tools"):
        proc = subprocess.Popen([BCC if tool == "bcc" else LIBBPF_TOOLS, "-p", str(helper.pid),
                                 str(seconds + 20)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ready = lambda: bpf_of(proc.pid)[0]  # noqa: E731
    elif tool != "none":
        args = [agent, "record", "--pid", str(helper.pid), "--duration", "%ds" % (seconds + 20),
                "--output", "/dev/null"]
        if tool.startswith("offcpu-1in"):  # 1 in N blocks kept, the daemon's 10 us minimum
            every, _, cap = tool[10:].partition("-cap")  # -capM: at most M a second per CPU
            args += ["--offcpu", "--offcpu-min", "10us", "--offcpu-sample", every]
            if cap:
                args += ["--offcpu-max-rate", cap]
        elif tool == "offcpu-all":
            args += ["--offcpu"]
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        ready = lambda: bpf_of(proc.pid)[0]  # noqa: E731
    if proc:
        deadline = time.time() + 120  # bcc compiles its program first
        while not ready() and time.time() < deadline:
            time.sleep(0.2)
        time.sleep(2)  # loading, table builds: not the steady state
    c0, t0 = ctxt(), time.time()
    cpu0 = cpu_s(proc.pid) if proc else 0
    bpf0, _ = bpf_of(proc.pid) if proc else ({}, 0)
    time.sleep(seconds)
    c1, t1 = ctxt(), time.time()
    cpu1 = cpu_s(proc.pid) if proc else 0
    bpf1, mem = bpf_of(proc.pid) if proc else ({}, 0)
    if proc:
        proc.send_signal(2)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
    helper.kill()
    helper.wait()
    wall = t1 - t0
    switches = (c1 - c0) / wall
    bpf_ns = sum(bpf1.get(k, 0) - bpf0.get(k, 0) for k in bpf1) / wall
    user_s = (cpu1 - cpu0) / wall
    return {"tool": tool, "switches_per_s": switches, "user_cpu_pct": 100 * user_s,
            "bpf_cpu_pct": 100 * bpf_ns / 1e9,
            "total_pct": 100 * user_s + 100 * bpf_ns / 1e9,
            "bpf_ns_per_switch": bpf_ns / switches if switches else 0,
            "offcpu_map_mib": mem / 1048576.0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--against", help="another build to alternate with --build, cell by cell")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--targets", default="10000,50000",
                    help="switches per second to aim at, comma-separated (10000, 50000)")
    ap.add_argument("--tools", help="only these tools, comma-separated (e.g. cpu,offcpu-1in64)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("bench-offcpu: needs root", file=sys.stderr)
        return 1
    stats_fd = enable_bpf_stats()
    # offcpu-1in64-cap50: the daemon's defaults (1 in 64, at most 50 kept a second per CPU)
    tools = ["none", "cpu", "offcpu-all", "offcpu-1in8", "offcpu-1in64", "offcpu-1in64-cap50",
             "offcpu-1in1024"]
    for tool, path in (("libbpf-tools", LIBBPF_TOOLS), ("bcc", BCC)):
        if not os.path.exists(path):
            print("bench-offcpu: %s not installed: no %s peer" % (path, tool), file=sys.stderr)
        elif tool == "bcc" and subprocess.run([BCC, "-p", "1", "1"], capture_output=True,
                                              timeout=120).returncode:
            print("bench-offcpu: bcc's offcputime cannot compile here (no kernel headers): "
                  "skipped", file=sys.stderr)
        else:
            tools.append(tool)
    if a.tools:
        tools = [t for t in a.tools.split(",") if t in tools or t.startswith("offcpu-1in")]
    print("%-8s %-19s %10s %9s %9s %9s %11s %8s" % (
        "target", "tool", "switch/s", "user %", "BPF %", "total %", "BPF ns/sw", "map MiB"))
    # round trips per second for the target (~2.5-4 context switches each on two CPUs)
    targets = [int(t) for t in a.targets.split(",")]
    for target, trips in ((t, r) for t, r in ((10000, 2500), (50000, 20000)) if t in targets):
        for tool in tools:
            builds = [("", a.build)] if not a.against or tool in ("bcc", "libbpf-tools") else \
                [("@new", a.build), ("@old", a.against)]
            runs = {label: [] for label, _ in builds}
            for i in range(a.rounds):
                for label, build in builds[::-1] if i % 2 else builds:
                    runs[label].append(run(build, trips, a.seconds, tool))
            for label, _ in builds:
                r = {k: statistics.median(x[k] for x in runs[label])
                     for k in runs[label][0] if k != "tool"}
                print("%-8d %-19s %10.0f %9.2f %9.2f %9.2f %11.0f %8.2f" % (
                    target, tool + label, r["switches_per_s"], r["user_cpu_pct"],
                    r["bpf_cpu_pct"], r["total_pct"], r["bpf_ns_per_switch"],
                    r["offcpu_map_mib"]), flush=True)
    if stats_fd is not None:
        os.close(stats_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
