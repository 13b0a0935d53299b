#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Where a sample's BPF time goes: record --pid at 499 Hz on the 30-deep Python, Ruby, PHP and
# native workloads (and, asked by name, jvm: tests/fixtures/jvm/Deep.java, node:
# tests/fixtures/v8/deep.js, nodespin: bench_steady_overhead.py's hot under caller) with a -DPROFILE_TIMING=2 build, prof_timing read near the end
# (docs/performance.md, "Agent: Python, Ruby and PHP processes against native ones, steady
# state"; kind all: the whole machine, no target, which is where the unwind row cache misses).
# Root. bench/bpf_phases.py BUILD [SECONDS] [HZ] [KINDS...]
import json, os, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_python, bench_ruby, bench_php, bench_jvm, bench_v8, bench_steady_overhead
from bpf_timing_maps import timing_maps_of
build = sys.argv[1]; secs = int(sys.argv[2]) if len(sys.argv) > 2 else 6
freq = sys.argv[3] if len(sys.argv) > 3 else "499"
kinds = sys.argv[4:] or ["python", "ruby", "php", "native"]
NAMES = {0: "do_sample", 1: "walk_start", 2: "bpf_loop", 3: "store_user", 4: "kstack",
         5: "counts", 6: "note_pid+thread", 7: "py_frame", 8: "py_note_lookup", 9: "rb_frame",
         10: "rb_note_lookup", 11: "php_frame", 12: "php_note_lookup", 13: "native_classify",
         14: "native_mapping", 15: "lookup_row", 16: "find_row(miss)", 17: "table_step",
         19: "native_frame_total", 20: "empty(ktime cost)", 21: "note_percpu_hit",
         22: "hotspot_frame", 23: "v8_frame", 24: "hotspot_find_blob", 25: "v8_js_frame",
         26: "stack_tail_join(hit)", 27: "stack_tail_end"}
def script(kind):
    src = {"python": bench_python.DEEP_PY, "ruby": bench_ruby.DEEP_RUBY, "php": bench_php.DEEP_PHP}[kind]
    f = tempfile.NamedTemporaryFile("w", delete=False, suffix="." + kind)
    f.write(src); f.close(); return f.name
class Nothing:
    pid = None
    def kill(self): pass
    def wait(self): pass
def start(kind):
    """The target process, running its deep stack (all: none, the whole machine is recorded)."""
    if kind == "all":
        return Nothing()
    if kind == "nodespin":
        return subprocess.Popen([bench_v8.NODE, "-e", bench_steady_overhead.SPIN_JS],
                                stdout=subprocess.DEVNULL)
    if kind not in ("jvm", "node"):
        return subprocess.Popen(argv(kind), stdout=subprocess.DEVNULL)
    if kind == "jvm":
        cmd = ["java", "-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,Deep::*", "-cp",
               bench_jvm.classes(build), "Deep", str(secs + 60), str(bench_jvm.DEPTH)]
    else:
        cmd = [bench_v8.NODE, bench_v8.DEEP_JS, str(secs + 60), str(bench_v8.DEPTH)]
    t = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if not t.stdout.readline().startswith("ready"):
        raise SystemExit(kind + " did not start")
    t.stdin.write("go\n")
    t.stdin.flush()
    time.sleep(2)  # compiled (C2, TurboFan) and at the bottom of its descent
    return t
def argv(kind):
    if kind == "native":
        return [os.path.join(build, "unwind", "edge-nofp"), "deep", str(secs + 5), "30"]
    return [{"python": bench_python.PYTHON, "ruby": bench_ruby.RUBY, "php": bench_php.PHP}[kind], script(kind)]
for kind in kinds:
    t = start(kind)
    time.sleep(0.5)
    rec = subprocess.Popen([os.path.join(build, "roottrace-agent"), "record"] +
                           (["--pid", str(t.pid)] if t.pid else []) + ["--unwind", "auto", "--duration", "%ds" % secs, "--frequency", freq,
                            "--output", tempfile.mktemp(suffix=".pb.gz")], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    # this record's map: another timing build's may be loaded too (bpftool names both); its
    # program loads seconds late on a busy machine (the verifier), then samples secs
    t0 = time.time()
    while not timing_maps_of(rec.pid) and time.time() - t0 < 60 and rec.poll() is None:
        time.sleep(0.5)
    time.sleep(max(0.5, secs - 1.5))
    ids = sorted(timing_maps_of(rec.pid)) or [None]
    out = subprocess.run(["bpftool", "-j", "map", "dump"] +
                         (["id", str(ids[0])] if ids[0] else ["name", "prof_timing"]),
                         capture_output=True, text=True).stdout
    err = rec.communicate()[1]
    t.kill(); t.wait()
    tot = {}
    for e in json.loads(out or "[]"):
        k = e["key"] if isinstance(e["key"], int) else int(e["key"][0], 0)
        ns = cnt = 0
        for v in e.get("values", []):
            val = v["value"]
            if isinstance(val, list):
                vals = [int(x, 0) for x in val]
                b = bytes(vals); ns += int.from_bytes(b[:8], "little"); cnt += int.from_bytes(b[8:16], "little")
            else:
                ns += val[0] if isinstance(val, list) else 0
        tot[k] = (ns, cnt)
    samples = tot.get(0, (0, 1))[1] or 1
    print("== %s: %d samples  (%s)" % (kind, samples, [l for l in err.splitlines() if "BPF run" in l]))
    for k in sorted(tot):
        ns, cnt = tot[k]
        if cnt:
            print("  %-20s %8.0f ns/sample  %6.1f per sample  %6.0f ns each" % (NAMES.get(k, k), ns / samples, cnt / samples, ns / cnt))
