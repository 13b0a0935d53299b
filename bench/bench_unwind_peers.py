# SPDX-License-Identifier: Apache-2.0
# The unwinder's peers for bench_unwind.py: `perf record --call-graph dwarf` on the no-FP
# workload (own CPU, post-processing CPU, completeness) and bpftrace's profile:hz:99 BPF cost.
import ctypes
import os
import shutil
import signal
import subprocess
import tempfile
import time

SYS_BPF = 321  # x86-64
BPF_ENABLE_STATS = 32
BPFTRACE_PROGRAM = "profile:hz:99 { @[kstack, ustack] = count(); }"


def enable_bpf_stats():
    """An fd that keeps the kernel's BPF run-time statistics on while open (as the agent
    does), or None; the global sysctl is left alone, other agents on the host share it."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.create_string_buffer(16)  # union bpf_attr: enable_stats.type = 0 (run time)
    fd = libc.syscall(SYS_BPF, BPF_ENABLE_STATS, attr, 16)
    return fd if fd >= 0 else None


def run_with_rusage(argv, **kw):
    """Runs argv to its end; returns (exit status, CPU seconds, peak RSS in KiB)."""
    p = subprocess.Popen(argv, **kw)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def perf_available():
    return shutil.which("perf") is not None


def perf_stacks(data_path, pid):
    """([frames of each sample of pid], perf script's CPU seconds): `perf script` does the
    DWARF unwinding after the fact, so its CPU is part of perf's cost."""
    out = tempfile.TemporaryFile(mode="w+")
    rc, cpu_s, _ = run_with_rusage(["perf", "script", "-i", data_path, "-F", "pid,ip,sym"],
                                   stdout=out, stderr=subprocess.DEVNULL)
    if rc:
        raise SystemExit("perf script failed (exit %d)" % rc)
    out.seek(0)
    stacks = []
    for block in out.read().split("\n\n"):
        lines = [x.strip() for x in block.strip().splitlines()]
        if lines and lines[0].split()[0] == str(pid):
            stacks.append([x.split()[-1] for x in lines[1:] if x])
    return stacks, cpu_s


def run_perf(exe, depth, seconds, freq):
    """perf record --call-graph dwarf of the workload for `seconds`."""
    data = tempfile.mktemp(prefix="rt-bench-perf-", suffix=".data")
    work = subprocess.Popen([exe, "deep", str(seconds + 3), str(depth)])
    try:
        time.sleep(0.3)
        start = time.monotonic()
        rc, cpu_s, rss_kib = run_with_rusage(
            ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(freq), "--call-graph",
             "dwarf", "-p", str(work.pid), "-o", data, "--", "sleep", str(seconds)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall_s = time.monotonic() - start
    finally:
        work.kill()
        work.wait()
    if rc:
        raise SystemExit("perf record failed (exit %d)" % rc)
    stacks, script_cpu_s = perf_stacks(data, work.pid)
    data_bytes = os.path.getsize(data)
    os.unlink(data)
    burning = [s for s in stacks if "burn" in s]
    return {
        "samples": len(stacks),
        "record_core_share": cpu_s / wall_s,
        "total_core_share": (cpu_s + script_cpu_s) / wall_s,
        "script_cpu_s": script_cpu_s,
        "cpu_us_per_sample": 1e6 * (cpu_s + script_cpu_s) / len(stacks) if stacks else 0,
        "bytes_per_sample": data_bytes / len(stacks) if stacks else 0,
        "rss_kib": rss_kib,
        "to_main": sum("main" in s for s in burning) / len(burning) if burning else 0,
    }


def bpftrace_available():
    return shutil.which("bpftrace") is not None


def prog_stats(pid):
    """Summed (run_time_ns, run_cnt) of the BPF programs pid holds open, from fdinfo."""
    run_ns = runs = 0
    fd_dir = "/proc/%d/fdinfo" % pid
    for fd in os.listdir(fd_dir):
        try:
            with open(os.path.join(fd_dir, fd)) as f:
                info = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        if "prog_id" in info and "run_time_ns" in info:
            run_ns += int(info["run_time_ns"])
            runs += int(info["run_cnt"])
    return run_ns, runs


def wait_for_prog(pid, timeout_s=30):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(prog_stats(pid)):
            return True
        time.sleep(0.05)
    return False


def stop_bpftrace(proc):
    """SIGINT (it prints the map, symbolising, then exits; repeated, as it sometimes misses
    the first), SIGKILL after a minute. Returns its rusage."""
    for attempt in range(13):
        os.kill(proc.pid, signal.SIGINT if attempt < 12 else signal.SIGKILL)
        for _ in range(50 if attempt < 12 else 1000):
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                proc.returncode = os.waitstatus_to_exitcode(status)
                return ru
            time.sleep(0.1)
    raise SystemExit("bpftrace %d does not exit" % proc.pid)


def run_bpftrace(seconds):
    """bpftrace's profile:hz:99 program, host-wide as written, for `seconds` after attach."""
    out = tempfile.TemporaryFile()
    p = subprocess.Popen(["bpftrace", "-e", BPFTRACE_PROGRAM], stdout=out,
                         stderr=subprocess.STDOUT,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    if not wait_for_prog(p.pid):
        p.kill()
        p.wait()
        raise SystemExit("bpftrace did not attach")
    ns0, runs0 = prog_stats(p.pid)
    time.sleep(seconds)
    ns1, runs1 = prog_stats(p.pid)
    ru = stop_bpftrace(p)
    runs = runs1 - runs0
    return {
        "ns_per_run": (ns1 - ns0) / runs if runs else 0,
        "runs_per_s": runs / seconds,
        "bpf_core_share": (ns1 - ns0) / 1e9 / seconds,
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "rss_kib": ru.ru_maxrss,
    }
