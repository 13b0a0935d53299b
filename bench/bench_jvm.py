# SPDX-License-Identifier: Apache-2.0
# Two figures for Java frames (docs/performance.md):
# 1. BPF time per sample of a JVM stack 30 Java frames deep (tests/fixtures/jvm/Deep.java, its
#    frames found in the code cache from HotSpot's own structures) against a native stack 30
#    frames deep (tests/fixtures/unwind/edge.c "deep", with frame pointers and without:
#    .eh_frame tables), each recorded with `record --pid`, alternating for several rounds; the
#    cost of the program's runs for other processes (measured on a sleeping target) is taken
#    out, as bench_unwind.py does.
# 2. The whole machine at 99 Hz while a JVM (tests/fixtures/jvm/Hot.java) and a node process
#    spin: the agent's own CPU (all threads, schedstat), its BPF programs' run time and its RSS.
#    --steady daemon (the default) measures what a node runs: `roottrace-agent run` against a
#    real collector on 127.0.0.1 serving the production upload interval (60 s; one drain a
#    window). The warm-up lasts until a whole window built no unwind table (the agent has seen
#    the machine's processes); how long that took and what it cost (the first sight) are
#    reported apart, then --windows windows of the agent's own, each one drain, each reported
#    with the median. --steady record is the older figure: a whole-machine `record` (a drain
#    every 5-20 s) measured over --window seconds after a fixed 15 s warm-up.
# bench/bench_jvm.py --build DIR [--rounds 3] [--seconds 5] [--steady daemon|record|both]
#   [--windows 3] [--window 60] [--max-warmup 600]. Needs root.
import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pprof_py  # noqa: E402
import bench_unwind  # noqa: E402
import bench_steady_overhead as steady  # noqa: E402
from collector_fixture import Collector  # noqa: E402

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(SRC, "tests", "fixtures", "jvm")
DEPTH = 30


def classes(build):
    out = os.path.join(build, "bench", "jvm")
    os.makedirs(out, exist_ok=True)
    subprocess.run(["javac", "-d", out, os.path.join(FIXTURES, "Deep.java"),
                    os.path.join(FIXTURES, "Hot.java")], check=True)
    return out


def run_jvm(build, cp, seconds, freq, early_ns):
    """One recording of a JVM at DEPTH Java frames: ns per sample, mean Java frames per
    sample at the bottom of the recursion."""
    out = tempfile.mktemp(prefix="rt-bench-jvm-", suffix=".pb.gz")
    java = subprocess.Popen(["java", "-XX:CompileCommand=quiet",
                             "-XX:CompileCommand=dontinline,Deep::*", "-cp", cp, "Deep",
                             str(seconds + 60), str(DEPTH)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        if not java.stdout.readline().startswith("ready"):
            raise SystemExit("java did not start Deep")
        java.stdin.write("go\n")
        java.stdin.flush()
        time.sleep(2)  # compiled by C2 before the recording: the steady state is measured
        agent = subprocess.Popen([os.path.join(build, "roottrace-agent"), "record", "--pid",
                                  str(java.pid), "--duration", "%ds" % seconds, "--frequency",
                                  str(freq), "--output", out], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
        err = agent.stderr.read()
        if agent.wait() != 0:
            raise SystemExit("record failed: " + err)
    finally:
        java.kill()
        java.wait()
    prof = pprof_py.parse_file(out)
    os.unlink(out)
    m = re.search(r"BPF run time: ([\d.]+) ms over (\d+) runs", err)
    run_ns, runs = (float(m.group(1)) * 1e6, int(m.group(2))) if m else (0, 0)
    samples = sum(s.values[0] for s in prof.samples)
    deep = [s for s in prof.samples if "Deep.leaf" in s.stack]
    java_frames = sum(s.values[0] * sum(1 for m in s.modules if m == "[jit:jvm]") for s in deep)
    user = sum(s.values[0] * sum(1 for m in s.modules if m != "[kernel]") for s in deep)
    n_deep = sum(s.values[0] for s in deep)
    return {
        "ns_per_sample": (run_ns - (runs - samples) * early_ns) / samples if samples else 0,
        "java_frames": java_frames / n_deep if n_deep else 0,
        "user_frames": user / n_deep if n_deep else 0,
        "deep_share": n_deep / samples if samples else 0,
    }


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def sample_shares(path, names):
    """Where the recording's samples landed: the share of the spinning JVM's and node's, of the
    agent's own threads and of everything else on the machine (the per-sample BPF figure is an
    average over all of them)."""
    shares = {}
    prof = pprof_py.parse_file(path)
    total = sum(s.values[0] for s in prof.samples) or 1
    for s in prof.samples:
        pid = s.labels.get("pid")
        who = names.get(pid) or ("agent" if s.labels.get("comm") == "roottrace-agent" else "other")
        shares[who] = shares.get(who, 0) + s.values[0] / total
    return shares


def steady_run(build, cp, window, jvm=True):
    """A whole-machine record at 99 Hz with a JVM (unless not jvm) and node spinning."""
    spin = [subprocess.Popen(["node", "-e", steady.SPIN_JS], stdout=subprocess.DEVNULL)]
    if jvm:
        spin.append(subprocess.Popen(["java", "-cp", cp, "Hot", "threads",
                                      str(steady.WARMUP_S + window + 30), "1"],
                                     stdout=subprocess.DEVNULL))
    time.sleep(1)
    rec = subprocess.Popen([os.path.join(build, "roottrace-agent"), "record", "--duration",
                            "%ds" % (steady.WARMUP_S + window + 5), "--frequency", "99",
                            "--output", os.path.join(build, "bench", "jvm", "steady.pb.gz")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(steady.WARMUP_S)
    c0, (b0, n0), t0 = steady.cpu_ns(rec.pid), steady.bpf_run(rec.pid), time.monotonic()
    time.sleep(window)
    c1, (b1, n1), t1 = steady.cpu_ns(rec.pid), steady.bpf_run(rec.pid), time.monotonic()
    rss = rss_kib(rec.pid)
    err = rec.stderr.read()
    rec.wait()
    steady.stop_workload(spin)
    w = t1 - t0
    names = re.search(r"^hotspot: .*names: (\d+) read, (\d+) cached", err, re.M)
    return {"shares": sample_shares(os.path.join(build, "bench", "jvm", "steady.pb.gz"),
                                    {s.pid: n for s, n in zip(spin, ("node", "java"))}),
            "cpu": 100 * (c1 - c0) / 1e9 / w, "bpf": 100 * (b1 - b0) / 1e9 / w,
            "per_sample_us": (b1 - b0) / 1e3 / max(n1 - n0, 1), "rss_mib": rss / 1024,
            "java_names": int(names.group(1)) if names else -1}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def agent_metrics(port):
    """The daemon's /metrics (read once a window: each read costs the agent a render)."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        body = r.read().decode()
    out = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def start_daemon(build, c, interval_s, tmp):
    tok = c.create_token("collector")
    eng = c.create_token("user", role="engineer")
    st, body = c.put_json("/api/apm/config", eng, {
        "environment": "production", "service": None, "enabled": True, "sample_rate_hz": 99,
        "upload_interval_s": interval_s, "poll_interval_s": 60})
    assert st == 200, body
    token_file = os.path.join(tmp, "token")
    with open(token_file, "w") as f:
        f.write(tok)
    port = free_port()
    agent = subprocess.Popen([os.path.join(build, "roottrace-agent"), "run", "--collector",
                              c.url(""), "--token-file", token_file, "--node-name", "bench-jvm",
                              "--listen", "127.0.0.1:%d" % port],
                             stdout=subprocess.DEVNULL,
                             stderr=open(os.path.join(tmp, "agent.log"), "w"))
    return agent, port


def main_thread_switches(pid):
    """The agent's main thread's voluntary context switches: its loop's wake-ups, about."""
    with open("/proc/%d/task/%d/status" % (pid, pid)) as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    return 0


def window_end(c, agent, port, last_windows, timeout_s):
    """Waits for the agent's next window (an upload reaches the collector, which is polled, not
    the agent); returns (monotonic time, own CPU ns, BPF ns, its metrics)."""
    deadline = time.monotonic() + timeout_s
    uploads = c.metrics().get("roottrace_uploads_accepted_total", 0)
    while time.monotonic() < deadline and agent.poll() is None:
        time.sleep(0.25)
        if c.metrics().get("roottrace_uploads_accepted_total", 0) == uploads:
            continue
        t, cpu, (bpf, _) = time.monotonic(), steady.cpu_ns(agent.pid), steady.bpf_run(agent.pid)
        m = agent_metrics(port)
        m["main_thread_switches"] = main_thread_switches(agent.pid)
        if m.get("roottrace_agent_windows_total", 0) > last_windows:
            return t, cpu, bpf, m
        uploads = c.metrics().get("roottrace_uploads_accepted_total", 0)
    raise SystemExit("the daemon closed no window in %d s" % timeout_s)


def steady_daemon(build, cp, interval_s, windows, max_warmup_s, jvm=True):
    """The node daemon at 99 Hz with a JVM (unless not jvm) and node spinning: warm-up until a
    window built no unwind table, then `windows` windows (one drain each)."""
    spin = [subprocess.Popen(["node", "-e", steady.SPIN_JS], stdout=subprocess.DEVNULL)]
    if jvm:
        spin.append(subprocess.Popen(["java", "-cp", cp, "Hot", "threads",
                                      str(max_warmup_s + (windows + 2) * interval_s + 60), "1"],
                                     stdout=subprocess.DEVNULL))
    time.sleep(1)
    tmp = tempfile.mkdtemp(prefix="rt-bench-jvm-")
    c = agent = None
    try:
        os.environ["ROOTTRACE_BUILD"] = build  # the collector of this build
        c = Collector()
        agent, port = start_daemon(build, c, interval_s, tmp)
        t_start = time.monotonic()
        t, cpu, bpf, m = window_end(c, agent, port, 0, interval_s + 60)
        first = {"windows": 1, "s": t - t_start, "cpu_s": cpu / 1e9, "bpf_s": bpf / 1e9,
                 "tables": m.get("roottrace_agent_unwind_tables_built_total", 0)}
        settled = False
        while t - t_start < max_warmup_s:  # the first window holds the start (BPF load)
            last = m
            t, cpu, bpf, m = window_end(c, agent, port, last["roottrace_agent_windows_total"],
                                        interval_s + 60)
            built = m.get("roottrace_agent_unwind_tables_built_total", 0)
            first.update(windows=first["windows"] + 1, s=t - t_start, cpu_s=cpu / 1e9,
                         bpf_s=bpf / 1e9, tables=built)
            if built == last.get("roottrace_agent_unwind_tables_built_total", 0):
                settled = True
                break
        first["settled"] = settled
        results = []
        for _ in range(windows):
            t0, c0, b0, m0 = t, cpu, bpf, m
            t, cpu, bpf, m = window_end(c, agent, port, m0["roottrace_agent_windows_total"],
                                        interval_s + 60)
            w = t - t0
            results.append({
                # The agent holds BPF_ENABLE_STATS open (sampler.c) whatever the sysctl says:
                # no run time counted means it could not (no CAP_SYS_ADMIN).
                "bpf_on": bpf > b0,
                "s": w, "cpu": 100 * (cpu - c0) / 1e9 / w, "bpf": 100 * (bpf - b0) / 1e9 / w,
                "tables": m.get("roottrace_agent_unwind_tables_built_total", 0) -
                m0.get("roottrace_agent_unwind_tables_built_total", 0),
                "samples": m.get("roottrace_agent_samples_total", 0) -
                m0.get("roottrace_agent_samples_total", 0),
                # absent before the agent exported it: -1
                "drain_ms": 1000 * (m["roottrace_agent_drain_cpu_seconds_total"] -
                                    m0["roottrace_agent_drain_cpu_seconds_total"])
                if "roottrace_agent_drain_cpu_seconds_total" in m else -1,
                "wakeups": m["main_thread_switches"] - m0["main_thread_switches"]})
        rss = rss_kib(agent.pid)
    finally:
        if agent:
            agent.terminate()
            agent.wait(timeout=60)
        if c:
            c.close()
        shutil.rmtree(tmp, ignore_errors=True)
        steady.stop_workload(spin)
    return first, results, rss / 1024


def report_daemon(first, results, rss_mib, interval_s, jvm):
    what = "a JVM and node" if jvm else "node alone"
    print("daemon (`run`, %d s upload interval: one drain a window) at 99 Hz, whole machine, %s "
          "spinning:" % (interval_s, what))
    print("  warm-up (first sight of the machine's processes): %s after %.0f s (%d windows), "
          "%d unwind tables built; own CPU %.2f s (BPF load included), BPF %.2f s" % (
              "settled (a window built none)" if first["settled"] else "NOT settled",
              first["s"], first["windows"], first["tables"], first["cpu_s"], first["bpf_s"]))
    for i, r in enumerate(results):
        print("  window %d (%.0f s): own CPU %.3f%%, BPF %.3f%%%s, CPU + BPF %.3f%% of a core; "
              "%d tables built, %d samples; drain %s; main thread woke %d times" % (
                  i + 1, r["s"], r["cpu"], r["bpf"],
                  "" if r["bpf_on"] else " (no BPF run time counted: the agent could not enable the kernel's statistics)",
                  r["cpu"] + r["bpf"], r["tables"], r["samples"],
                  "%.1f ms of CPU" % r["drain_ms"] if r["drain_ms"] >= 0 else "not reported",
                  r["wakeups"]))
    quiet = [r["cpu"] for r in results if not r["tables"]]
    if quiet and len(quiet) < len(results):
        print("  own CPU of the %d windows that built no table: median %.3f%% (the others hold "
              "a first sight: a process of new binaries)" % (len(quiet), statistics.median(quiet)))
    med = {k: statistics.median(r[k] for r in results) for k in ("cpu", "bpf")}
    print("  median of %d windows: own CPU %.3f%%, BPF %.3f%%, CPU + BPF %.3f%% of a core "
          "(medians taken apart); CPU + BPF per window median %.3f%%; RSS %.1f MiB" % (
              len(results), med["cpu"], med["bpf"], med["cpu"] + med["bpf"],
              statistics.median(r["cpu"] + r["bpf"] for r in results), rss_mib))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--frequency", type=int, default=99)
    ap.add_argument("--window", type=int, default=60,
                    help="record: the measured window; daemon: the upload interval (60 s is "
                    "the collector's default)")
    ap.add_argument("--windows", type=int, default=3, help="daemon: windows measured")
    ap.add_argument("--max-warmup", type=int, default=600, help="daemon: seconds at most")
    ap.add_argument("--steady", choices=("daemon", "record", "both"), default="daemon")
    ap.add_argument("--skip-node-alone", action="store_true",
                    help="the JVM + node whole-machine figure only")
    ap.add_argument("--skip-unwind", action="store_true",
                    help="only the whole-machine figures (no JVM/native rounds)")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    cp = classes(build)
    results = {"java": [], "fp": [], "nofp": []}
    for r in range(0 if a.skip_unwind else a.rounds):
        early = bench_unwind.run_once(build, None, "auto", 3, a.frequency)["ns_per_run"]
        for cell in (("java", "fp", "nofp") if r % 2 == 0 else ("nofp", "fp", "java")):
            if cell == "java":
                res = run_jvm(build, cp, a.seconds, a.frequency, early)
                print("round %d JVM x%d      %8.0f ns/sample (%.1f Java frames of %.1f, %.0f%% "
                      "of samples at the bottom)" % (r + 1, DEPTH, res["ns_per_sample"],
                                                     res["java_frames"], res["user_frames"],
                                                     100 * res["deep_share"]),
                      file=sys.stderr)
            else:
                exe = os.path.join(build, "unwind", "edge-" + cell)
                res = bench_unwind.run_once(build, exe, "auto", a.seconds, a.frequency, early)
                print("round %d native %-4s x%d %8.0f ns/sample" %
                      (r + 1, cell, DEPTH, res["ns_per_sample"]), file=sys.stderr)
            results[cell].append(res)
    if not a.skip_unwind:
        report_unwind(a, results)
    for jvm in (True,) if a.skip_node_alone else (True, False):
        if a.steady in ("daemon", "both"):
            report_daemon(*steady_daemon(build, cp, a.window, a.windows, a.max_warmup, jvm),
                          a.window, jvm)
        if a.steady in ("record", "both"):
            report_record(build, cp, a.window, jvm)


def report_unwind(a, results):
    med = {k: statistics.median(x["ns_per_sample"] for x in v) for k, v in results.items()}
    frames = statistics.median(x["user_frames"] for x in results["java"])
    native_frames = DEPTH + 4  # main, __libc_start_call_main, __libc_start_main, _start
    print("BPF ns per sample, --unwind=auto (median of %d rounds): JVM %.0f (%.1f Java frames "
          "of %.1f), native %d deep with frame pointers %.0f, with tables %.0f (JVM / native "
          "tables = %.2f); per frame: JVM %.0f, native fp %.0f, native tables %.0f (JVM / "
          "native tables = %.2f)" % (
              a.rounds, med["java"], statistics.median(x["java_frames"] for x in results["java"]),
              frames, DEPTH, med["fp"], med["nofp"],
              med["java"] / med["nofp"] if med["nofp"] else 0, med["java"] / frames,
              med["fp"] / native_frames, med["nofp"] / native_frames,
              (med["java"] / frames) / (med["nofp"] / native_frames) if med["nofp"] else 0))


def report_record(build, cp, window, jvm):
    """record at 99 Hz over one window after a fixed warm-up (node alone beside the pair: the
    JVM's share is the difference, the machine's other processes cost the same in both)."""
    res = steady_run(build, cp, window, jvm)
    print("record at 99 Hz, whole machine, %s spinning (%d s after a %d s warm-up): own "
          "CPU %.2f%%, BPF %.2f%%, CPU + BPF %.2f%% of a core, %.1f µs BPF per sample, RSS "
          "%.1f MiB, %d Java names read; samples: %s" % (
              "a JVM and node" if jvm else "node alone", window, steady.WARMUP_S,
              res["cpu"], res["bpf"], res["cpu"] + res["bpf"], res["per_sample_us"],
              res["rss_mib"], res["java_names"],
              ", ".join("%s %.0f%%" % (k, 100 * v) for k, v in sorted(res["shares"].items()))))


if __name__ == "__main__":
    main()
