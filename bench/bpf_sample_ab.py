#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# BPF ns per sample of one target process, builds alternating, from the in-kernel timer of
# -DPROFILE_TIMING=1 builds (the machine's other processes are out of it). Root.
# bench/bpf_sample_ab.py ROUNDS SECONDS HZ KIND[,KIND...] BUILD BUILD... (KIND: python, ruby,
# php (30 deep), pyspin, rbspin, phpspin (hot under caller), nativeN (edge-nofp N deep), jvm
# (tests/fixtures/jvm/Deep.java, 30 deep), node (tests/fixtures/v8/deep.js, 30 deep),
# nodespin (bench_steady_overhead.py's hot under caller), jvmspin (bench_jvm.steady_run's JVM:
# Hot.java's one spinning worker, issue 28's budget's JVM)). AB_WARM=S: the window starts S s
# after the first sample (default 1; node's and libjvm's big tables take 10-20 s to build on a
# busy machine, and the stack tails under JSEntry and the call stub wait for them).
import json, os, signal, statistics, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
import bench_python, bench_ruby, bench_php, bench_jvm, bench_v8, bench_steady_overhead as so
from bpf_timing_maps import timing_maps_of
rounds, secs, freq = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
kinds = sys.argv[4].split(","); builds = sys.argv[5:]
def script(src, suf):
    f = tempfile.NamedTemporaryFile("w", delete=False, suffix=suf); f.write(src); f.close(); return f.name
ARGV = {"python": [bench_python.PYTHON, script(bench_python.DEEP_PY, ".py")],
        "ruby": [bench_ruby.RUBY, script(bench_ruby.DEEP_RUBY, ".rb")],
        "php": [bench_php.PHP, script(bench_php.DEEP_PHP, ".php")],
        "pyspin": ["python3.11", "-c", so.SPIN_PY], "rbspin": ["ruby", "-e", so.SPIN_RB],
        "phpspin": ["php", "-r", so.SPIN_PHP], "nodespin": [bench_v8.NODE, "-e", so.SPIN_JS],
        "jvm": ["java", "-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,Deep::*", "-cp",
                bench_jvm.classes(builds[0]), "Deep", str(secs + 60), str(bench_jvm.DEPTH)],
        "node": [bench_v8.NODE, bench_v8.DEEP_JS, str(secs + 60), str(bench_v8.DEPTH)],
        "jvmspin": ["java", "-cp", bench_jvm.classes(builds[0]), "Hot", "threads",
                    str(secs + 150), "1"]}
warm = float(os.environ.get("AB_WARM", "1"))
def start(k, argv):
    """The target; jvm and node print ready, descend on a line, are compiled after 2 s."""
    if k not in ("jvm", "node"):
        return subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    t = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if not t.stdout.readline().startswith("ready"):
        raise SystemExit(k + " did not start")
    t.stdin.write("go\n"); t.stdin.flush(); time.sleep(2)
    return t
def phase0(ids):
    """The timer of the record's own map: another engineer's timing build may run beside it."""
    ns = cnt = 0
    out = "[]"
    for i in ids:
        out = subprocess.run(["bpftool", "-j", "map", "dump", "id", str(i)], capture_output=True, text=True).stdout
    for e in json.loads(out or "[]"):
        k = e["key"] if isinstance(e["key"], int) else int(e["key"][0], 0)
        if k != 0: continue
        for v in e.get("values", []):
            b = bytes(int(x, 0) for x in v["value"])
            ns += int.from_bytes(b[:8], "little"); cnt += int.from_bytes(b[8:16], "little")
    return ns, cnt
res = {(k, b): [] for k in kinds for b in builds}
for r in range(rounds):
    for k in kinds:
        for b in (builds if r % 2 == 0 else builds[::-1]):
            argv = ARGV.get(k) or [os.path.join(builds[0], "unwind", "edge-nofp"), "deep", str(secs + 90), k.replace("native", "") or "30"]
            t = start(k, argv)
            time.sleep(0.5)
            rec = subprocess.Popen([os.path.join(b, "roottrace-agent"), "record", "--pid", str(t.pid), "--unwind", "auto",
                                    "--duration", "%ds" % (secs + 60), "--frequency", freq, "--output", tempfile.mktemp(suffix=".pb.gz")],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            # the window starts 1 s after the first sample: the verifier takes 0.5-10 s here
            # (machine load), and a fixed wait measured nothing when it took longer
            ids = set()
            for _ in range(240):
                ids = timing_maps_of(rec.pid)
                if ids and phase0(ids)[1]: break
                time.sleep(0.25)
            time.sleep(warm); a = phase0(ids); time.sleep(secs); z = phase0(ids)
            rec.send_signal(signal.SIGINT)
            try: rec.wait(timeout=30)
            except subprocess.TimeoutExpired: rec.kill(); rec.wait()
            t.kill(); t.wait()
            n = z[1] - a[1]; v = (z[0] - a[0]) / n if n else 0
            res[(k, b)].append(v)
            print("round %d %-8s %-14s %7.0f ns/sample (%d samples, load %.1f)" % (r, k, b, v, n, os.getloadavg()[0]),
                  file=sys.stderr, flush=True)
for k in kinds:
    base = statistics.median(res[(k, builds[0])])
    print("%-8s " % k + "  ".join("%s %.0f (%.2fx)" % (b, statistics.median(res[(k, b)]), statistics.median(res[(k, b)]) / base) for b in builds), flush=True)
