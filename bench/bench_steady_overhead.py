#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Steady-state overhead of a whole-machine `record` at 99 Hz, --unwind auto against fp, while
# bench-agent's spin workload keeps both cores busy: CPU of all the record's threads
# (schedstat) and its BPF programs' run time, between second WARMUP and WARMUP + WINDOW, so
# the start-up (BPF load, the tables of every process on the machine) is reported apart.
# --workload runtimes spins a stripped Go binary, python3.11, ruby, php and node instead
# (named from .gopclntab and the interpreters' own frames), --unwind auto only.
# --workload interpreters,native alternates a python3.11, a ruby and a php process spinning
# with three native processes spinning (edge-nofp, 10 frames deep), --unwind auto, rounds
# alternating in order: the interpreter walks' cost against native-only on the same machine.
# bench/bench-steady-overhead.sh --build DIR [--rounds N] [--window S] [--workload W]. Root.
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

WARMUP_S = 15


def cpu_ns(pid):
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total


def prog_ids(pid):
    ids = set()
    for fd in os.listdir("/proc/%d/fdinfo" % pid):
        try:
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                ids.update(int(line.split()[1]) for line in f if line.startswith("prog_id:"))
        except OSError:
            pass
    return ids


def bpf_run(pid):
    """(run_time_ns of all pid's programs, run_cnt of its perf_event ones)."""
    ids = prog_ids(pid)
    out = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True,
                         text=True).stdout
    progs = [p for p in json.loads(out or "[]") if p.get("id") in ids]
    return (sum(p.get("run_time_ns", 0) for p in progs),
            sum(p.get("run_cnt", 0) for p in progs if p.get("type") == "perf_event"))


SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPIN_PY = "def hot(n):\n    s = 0\n    for i in range(n): s += i * i\n    return s\n" \
          "def caller():\n    while True: hot(10000)\ncaller()\n"
SPIN_RB = "def hot(n); s = 0; n.times { |i| s += i * i }; s; end\n" \
          "def caller; loop { hot(10000) }; end\ncaller\n"
SPIN_PHP = "function hot($n) { $s = 0; for ($i = 0; $i < $n; $i++) $s += $i * $i; return $s; }\n" \
           "function caller() { while (true) hot(10000); }\ncaller();\n"
SPIN_JS = "function hot(n) { let s = 0; for (let i = 0; i < n; i++) s = (s + i * i) % 1000003;" \
          " return s; }\nfunction caller() { for (;;) hot(10000); }\ncaller();\n"


def stripped_go(build):
    """tests/helpers/gohot built with -ldflags='-s -w' (no symbol table), once."""
    exe = os.path.join(build, "bench", "agent", "gohot-stripped")
    if not os.path.exists(exe):
        env = dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off", GOTOOLCHAIN="local",
                   GOCACHE=os.path.join(build, "gocache"), CGO_ENABLED="0")
        subprocess.run(["go", "build", "-ldflags=-s -w", "-o", exe, "."],
                       cwd=os.path.join(SRC, "tests", "helpers", "gohot"), env=env, check=True,
                       capture_output=True, timeout=600)
    return exe


def start_workload(build, kind, seconds):
    if kind == "spin":
        return [subprocess.Popen([os.path.join(build, "bench", "agent", "spin"), str(seconds)],
                                 stdout=subprocess.DEVNULL)]
    if kind == "native":
        return [subprocess.Popen([os.path.join(build, "unwind", "edge-nofp"), "deep",
                                  str(seconds), "10"], stdout=subprocess.DEVNULL)
                for _ in range(3)]
    cmds = [["python3.11", "-c", SPIN_PY], ["ruby", "-e", SPIN_RB], ["php", "-r", SPIN_PHP]]
    if kind == "runtimes":
        cmds = [[stripped_go(build), str(seconds)]] + cmds + [["node", "-e", SPIN_JS]]
    procs = []
    for cmd in cmds:
        if subprocess.run(["which", cmd[0]], capture_output=True).returncode and \
                not os.path.exists(cmd[0]):
            print("bench-steady-overhead: %s not installed, left out" % cmd[0], file=sys.stderr)
            continue
        procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stdin=subprocess.PIPE))
    return procs


def stop_workload(procs):
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def one(build, mode, window, workload="spin"):
    agent = os.path.join(build, "roottrace-agent")
    os.makedirs(os.path.join(build, "bench", "agent"), exist_ok=True)
    spin = start_workload(build, workload, WARMUP_S + window + 8)
    time.sleep(0.5)
    rec = subprocess.Popen([agent, "record", "--duration", "%ds" % (WARMUP_S + window + 5),
                            "--frequency", "99", "--unwind", mode, "--output",
                            os.path.join(build, "bench", "agent", "steady.pb.gz")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(WARMUP_S)
    c0, (b0, n0), t0 = cpu_ns(rec.pid), bpf_run(rec.pid), time.monotonic()
    time.sleep(window)
    c1, (b1, n1), t1 = cpu_ns(rec.pid), bpf_run(rec.pid), time.monotonic()
    rec.wait()
    stop_workload(spin)
    w = t1 - t0
    return {"startup_s": c0 / 1e9, "cpu": 100 * (c1 - c0) / 1e9 / w,
            "bpf": 100 * (b1 - b0) / 1e9 / w, "per_sample_us": (b1 - b0) / 1e3 / max(n1 - n0, 1)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--window", type=int, default=60)
    ap.add_argument("--workload", default="spin",
                    help="spin, runtimes, or interpreters,native (alternated)")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    if a.workload == "interpreters,native":
        return compare(build, a.rounds, a.window)
    if a.workload not in ("spin", "runtimes"):
        sys.exit("bench-steady-overhead: --workload spin, runtimes or interpreters,native")
    modes = ("auto", "fp") if a.workload == "spin" else ("auto",)
    if a.workload == "spin" and not os.path.exists(os.path.join(build, "bench", "agent",
                                                                "spin")):
        sys.exit("bench-steady-overhead: run bench/bench-agent.sh first (it builds the workload)")
    subprocess.run(["sysctl", "-qw", "kernel.bpf_stats_enabled=1"], check=True)
    runs = {mode: [] for mode in modes}
    for r in range(a.rounds):
        for mode in modes:
            runs[mode].append(one(build, mode, a.window, a.workload))
            print("round %d %-4s %s" % (r + 1, mode, runs[mode][-1]), file=sys.stderr)
    print("| unwind | start-up CPU (first %d s) | own CPU, steady | BPF, steady | CPU + BPF "
          "| BPF per sample |" % WARMUP_S)
    print("|---|---|---|---|---|---|")
    for mode, rs in runs.items():
        med = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        print("| %s | %.2f s | %.2f%% | %.2f%% | %.2f%% | %.1f µs |" % (
            mode, med["startup_s"], med["cpu"], med["bpf"], med["cpu"] + med["bpf"],
            med["per_sample_us"]))


def compare(build, rounds, window):
    """Interpreters against native processes, alternating, --unwind auto: medians."""
    subprocess.run(["sysctl", "-qw", "kernel.bpf_stats_enabled=1"], check=True)
    runs = {"interpreters": [], "native": []}
    for r in range(rounds):
        order = list(runs) if r % 2 == 0 else list(reversed(list(runs)))
        for kind in order:
            runs[kind].append(one(build, "auto", window, kind))
            print("round %d %-12s %s" % (r + 1, kind, runs[kind][-1]), file=sys.stderr)
    print("| workload (3 processes spinning) | own CPU, steady | BPF, steady | CPU + BPF "
          "| BPF per sample |")
    print("|---|---|---|---|---|")
    for kind, rs in runs.items():
        med = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        print("| %s | %.2f%% | %.2f%% | %.2f%% | %.1f µs |" % (
            kind, med["cpu"], med["bpf"], med["cpu"] + med["bpf"], med["per_sample_us"]))


if __name__ == "__main__":
    main()
