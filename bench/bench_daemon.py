# SPDX-License-Identifier: Apache-2.0
# Agent daemon overhead: `roottrace-agent run` at 99 Hz on a saturated machine, 200 CPU-bound
# processes in 20 cgroups (20 services), uploading every 10 s to a real collector on
# 127.0.0.1. Measures over BENCH_SECONDS: agent CPU (user+sys, /proc/PID/stat), BPF run time
# (fdinfo run_time_ns of the agent's programs), RSS (VmRSS, VmHWM) and bytes uploaded/minute
# (collector /metrics), uploads and services per upload interval. Prints a Markdown table row set
# on stdout. Env: BENCH_PER_CGROUP (10 processes per cgroup), BENCH_NICE (5), BENCH_FALLBACK
# (the agent's "fallback" key; unset: its default, one "host" service for stray processes).
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from collector_fixture import Collector

BUILD = os.environ["ROOTTRACE_BUILD"]
SECONDS = int(os.environ.get("BENCH_SECONDS", "60"))
N_CGROUPS, PER_CGROUP = 20, int(os.environ.get("BENCH_PER_CGROUP", "10"))
NICE = os.environ.get("BENCH_NICE", "5")
FALLBACK = os.environ.get("BENCH_FALLBACK")
INTERVAL_S = 10
CG_ROOT = "/sys/fs/cgroup/cpu/rt-bench-daemon"
TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def status_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"%s:\s+(\d+) kB" % key, f.read()).group(1))


def bpf_run_ns(pid):
    total = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)) != "anon_inode:bpf-prog":
                continue
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                m = re.search(r"run_time_ns:\s+(\d+)", f.read())
            total += int(m.group(1)) if m else 0
        except OSError:
            pass
    return total


def services_uploaded(c, viewer):
    """Services the collector lists (all from this agent: a private collector)."""
    status, doc = c.get_json("/api/apm/services", viewer, params={"time_range": "1h"})
    assert status == 200, doc
    services = doc["services"]
    return len(services.values() if isinstance(services, dict) else services)


def main():
    tmp = tempfile.mkdtemp(prefix="rt-bench-daemon-")
    procs, dirs, agent = [], [], None
    c = Collector()
    try:
        tok = c.create_token("collector")
        eng = c.create_token("user", role="engineer")
        viewer = c.create_token("user", role="viewer")
        st, body = c.put_json("/api/apm/config", eng, {
            "environment": "production", "service": None, "enabled": True,
            "sample_rate_hz": 99, "upload_interval_s": INTERVAL_S, "poll_interval_s": 10})
        assert st == 200, body
        os.makedirs(CG_ROOT, exist_ok=True)
        for i in range(N_CGROUPS):
            d = os.path.join(CG_ROOT, "bench-svc-%02d.service" % i)
            os.makedirs(d, exist_ok=True)
            dirs.append(d)
            for _ in range(PER_CGROUP):
                p = subprocess.Popen(["nice", "-n", NICE, "sh", "-c", "while :; do :; done"])
                with open(os.path.join(d, "cgroup.procs"), "w") as f:
                    f.write(str(p.pid))
                procs.append(p)
        token_file = os.path.join(tmp, "token")
        with open(token_file, "w") as f:
            f.write(tok)
        log = open(os.path.join(tmp, "agent.log"), "w")
        args = [os.path.join(BUILD, "roottrace-agent"), "run", "--collector", c.url(""),
                "--token-file", token_file, "--node-name", "bench"]
        if FALLBACK:
            cfg = os.path.join(tmp, "agent.json")
            with open(cfg, "w") as f:
                json.dump({"fallback": FALLBACK}, f)
            args += ["--config", cfg]
        agent = subprocess.Popen(args, stdout=log, stderr=log)
        # warm up: first window uploaded, caches filled
        deadline = time.time() + 60
        while time.time() < deadline and c.metrics().get("roottrace_uploads_accepted_total", 0) < 20:
            time.sleep(1)
        m0 = c.metrics()
        cpu0, bpf0, t0 = cpu_s(agent.pid), bpf_run_ns(agent.pid), time.time()
        time.sleep(SECONDS)
        m1 = c.metrics()
        cpu1, bpf1, t1 = cpu_s(agent.pid), bpf_run_ns(agent.pid), time.time()
        rss, hwm = status_kb(agent.pid, "VmRSS"), status_kb(agent.pid, "VmHWM")
        wall = t1 - t0
        up_bytes = m1["roottrace_upload_bytes_accepted_total"] - m0["roottrace_upload_bytes_accepted_total"]
        uploads = m1["roottrace_uploads_accepted_total"] - m0["roottrace_uploads_accepted_total"]
        agent_pct = (cpu1 - cpu0) / wall * 100
        bpf_pct = (bpf1 - bpf0) / 1e9 / wall * 100
        print("| window | %.0f s, 99 Hz, %d processes in %d cgroups, %d CPUs saturated |"
              % (wall, N_CGROUPS * PER_CGROUP, N_CGROUPS, os.cpu_count()))
        print("| agent CPU (user+sys) | %.3f s = %.3f%% of one core |" % (cpu1 - cpu0, agent_pct))
        print("| BPF in-kernel run time | %.3f s = %.3f%% of one core |"
              % ((bpf1 - bpf0) / 1e9, bpf_pct))
        print("| agent CPU + BPF | **%.3f%% of one core** (target <= 0.5%%) |" % (agent_pct + bpf_pct))
        print("| RSS now / peak | %.1f MB / **%.1f MB** (target <= 40 MB) |" % (rss / 1024, hwm / 1024))
        print("| uploads | %d in the window (%.1f/min, %.1f per %d s interval) |"
              % (uploads, uploads / wall * 60, uploads / wall * INTERVAL_S, INTERVAL_S))
        print("| services | %d uploaded since the agent started (fallback %s) |"
              % (services_uploaded(c, viewer), FALLBACK or "default"))
        print("| bytes uploaded | %.1f KB/min (gzipped pprof bodies) |" % (up_bytes / wall * 60 / 1024))
        sys.stdout.flush()
    finally:
        if agent:
            agent.terminate()
            agent.wait(timeout=30)
        for p in procs:
            p.kill()
            p.wait()
        for d in dirs:
            try:
                os.rmdir(d)
            except OSError:
                pass
        try:
            os.rmdir(CG_ROOT)
        except OSError:
            pass
        c.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
