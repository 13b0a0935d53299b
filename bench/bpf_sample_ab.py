#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# BPF ns per sample of one target process, builds alternating, from the in-kernel timer of
# -DPROFILE_TIMING=1 builds (the machine's other processes are out of it). Root. Each run
# reads only its own record's prof_timing map (found through /proc/PID/fdinfo: another bench's
# agent may have one too), from when the program is loaded, for SECONDS.
# bench/bpf_sample_ab.py ROUNDS SECONDS HZ KIND[,KIND...] BUILD BUILD... (KIND: python, ruby,
# php (30 deep), pyspin, rbspin, phpspin (hot under caller), nativeN (edge-nofp N deep))
import json, os, statistics, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
import bench_python, bench_ruby, bench_php, bench_steady_overhead as so
rounds, secs, freq = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
kinds = sys.argv[4].split(","); builds = sys.argv[5:]
def script(src, suf):
    f = tempfile.NamedTemporaryFile("w", delete=False, suffix=suf); f.write(src); f.close(); return f.name
ARGV = {"python": [bench_python.PYTHON, script(bench_python.DEEP_PY, ".py")],
        "ruby": [bench_ruby.RUBY, script(bench_ruby.DEEP_RUBY, ".rb")],
        "php": [bench_php.PHP, script(bench_php.DEEP_PHP, ".php")],
        "pyspin": ["python3.11", "-c", so.SPIN_PY], "rbspin": ["ruby", "-e", so.SPIN_RB],
        "phpspin": ["php", "-r", so.SPIN_PHP]}
CUR = {}
def phase0():
    # only the map of this script's record (another bench may run at the same time)
    try: shows = json.loads(subprocess.run(["bpftool", "-j", "map", "show", "name", "prof_timing"], capture_output=True, text=True).stdout or "[]")
    except ValueError: return 0, 0
    owned = set()
    d = "/proc/%d/fdinfo" % CUR.get("pid", 0)
    for fd in (os.listdir(d) if os.path.isdir(d) else []):
        try:
            for line in open(os.path.join(d, fd)):
                if line.startswith("map_id:"): owned.add(int(line.split()[1]))
        except OSError: pass
    ids = [m["id"] for m in (shows if isinstance(shows, list) else [shows]) if m["id"] in owned]
    if not ids: return 0, 0
    out = subprocess.run(["bpftool", "-j", "map", "dump", "id", str(ids[0])], capture_output=True, text=True).stdout
    ns = cnt = 0
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
            argv = ARGV.get(k) or [os.path.join(builds[0], "unwind", "edge-nofp"), "deep", str(secs + 60), k.replace("native", "") or "30"]
            t = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
            time.sleep(0.5)
            rec = subprocess.Popen([os.path.join(b, "roottrace-agent"), "record", "--pid", str(t.pid), "--unwind", "auto",
                                    "--duration", "%ds" % (secs + 60), "--frequency", freq, "--output", tempfile.mktemp(suffix=".pb.gz")],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            CUR["pid"] = rec.pid
            for _ in range(60):  # the verifier may take seconds under load
                time.sleep(0.5); a = phase0()
                if a[1]: break
            time.sleep(1); a = phase0(); time.sleep(secs); z = phase0()
            rec.terminate(); rec.wait(); t.kill(); t.wait()
            n = z[1] - a[1]; v = (z[0] - a[0]) / n if n else 0
            res[(k, b)].append(v)
            print("round %d %-8s %-14s %7.0f ns/sample (%d samples)" % (r, k, b, v, n), file=sys.stderr, flush=True)
for k in kinds:
    base = statistics.median(res[(k, builds[0])])
    print("%-8s " % k + "  ".join("%s %.0f (%.2fx)" % (b, statistics.median(res[(k, b)]), statistics.median(res[(k, b)]) / base) for b in builds), flush=True)
