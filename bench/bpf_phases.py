#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Where a sample's BPF time goes: record --pid at 499 Hz on the 30-deep Python, Ruby, PHP and
# native workloads (and, asked by name, jvm: tests/fixtures/jvm/Deep.java, node:
# tests/fixtures/v8/deep.js, nodespin: bench_steady_overhead.py's hot under caller, jvmspin:
# bench_jvm.steady_run's JVM, Hot.java's one worker thread) with a -DPROFILE_TIMING=2 build,
# prof_timing read near the end
# (docs/performance.md, "Agent: Python, Ruby and PHP processes against native ones, steady
# state"; kind all: the whole machine, no target, which is where the unwind row cache misses).
# Root. bench/bpf_phases.py BUILD [SECONDS] [HZ] [KINDS...]. PHASES_WARM=S: the timers are read at
# S s after the program loaded and at the end, and the difference reported (the steady state,
# after node's and libjvm's tables have loaded: the recording runs S + SECONDS).
import json, os, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_python, bench_ruby, bench_php, bench_jvm, bench_v8, bench_steady_overhead
from bpf_timing_maps import timing_maps_of
build = sys.argv[1]; secs = int(sys.argv[2]) if len(sys.argv) > 2 else 6
freq = sys.argv[3] if len(sys.argv) > 3 else "499"
kinds = sys.argv[4:] or ["python", "ruby", "php", "native"]
warm = float(os.environ.get("PHASES_WARM", "0"))
NAMES = {0: "do_sample", 1: "walk_start", 2: "bpf_loop", 3: "store_user", 4: "kstack",
         5: "counts", 6: "note_pid+thread", 7: "py_frame", 8: "py_note_lookup", 9: "rb_frame",
         10: "rb_note_lookup", 11: "php_frame", 12: "php_note_lookup", 13: "native_classify",
         14: "native_mapping", 15: "lookup_row", 16: "find_row(miss)", 17: "table_step",
         19: "native_frame_total", 20: "empty(ktime cost)", 21: "note_percpu_hit",
         22: "hotspot_frame", 23: "v8_frame", 24: "hotspot_find_blob", 25: "v8_js_frame",
         26: "stack_tail_join(hit)", 27: "stack_tail_end", 28: "stack_tail_begin",
         29: "tail_validate_words", 30: "tail_validate_vm", 31: "tail_copy"}
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
    if kind == "jvmspin":  # bench_jvm.steady_run's JVM: one worker thread spinning
        return subprocess.Popen(["java", "-cp", bench_jvm.classes(build), "Hot", "threads",
                                 str(secs + int(warm) + 60), "1"], stdout=subprocess.DEVNULL)
    if kind not in ("jvm", "node"):
        return subprocess.Popen(argv(kind), stdout=subprocess.DEVNULL)
    if kind == "jvm":
        cmd = ["java", "-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,Deep::*", "-cp",
               bench_jvm.classes(build), "Deep", str(secs + int(warm) + 60), str(bench_jvm.DEPTH)]
    else:
        cmd = [bench_v8.NODE, bench_v8.DEEP_JS, str(secs + int(warm) + 60), str(bench_v8.DEPTH)]
    t = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if not t.stdout.readline().startswith("ready"):
        raise SystemExit(kind + " did not start")
    t.stdin.write("go\n")
    t.stdin.flush()
    time.sleep(2)  # compiled (C2, TurboFan) and at the bottom of its descent
    return t
def argv(kind):
    if kind == "native":
        return [os.path.join(build, "unwind", "edge-nofp"), "deep", str(secs + int(warm) + 5), "30"]
    return [{"python": bench_python.PYTHON, "ruby": bench_ruby.RUBY, "php": bench_php.PHP}[kind], script(kind)]
def dump(pid):
    """This record's prof_timing map, as bpftool prints it."""
    ids = sorted(timing_maps_of(pid)) or [None]
    return subprocess.run(["bpftool", "-j", "map", "dump"] +
                          (["id", str(ids[0])] if ids[0] else ["name", "prof_timing"]),
                          capture_output=True, text=True).stdout
def totals(out):
    """phase -> (ns, count), summed over the CPUs."""
    tot = {}
    for e in json.loads(out or "[]"):
        k = e["key"] if isinstance(e["key"], int) else int(e["key"][0], 0)
        ns = cnt = 0
        for v in e.get("values", []):
            if isinstance(v["value"], list):
                b = bytes(int(x, 0) for x in v["value"])
                ns += int.from_bytes(b[:8], "little"); cnt += int.from_bytes(b[8:16], "little")
        tot[k] = (ns, cnt)
    return tot
for kind in kinds:
    t = start(kind)
    time.sleep(0.5)
    rec = subprocess.Popen([os.path.join(build, "roottrace-agent"), "record"] +
                           (["--pid", str(t.pid)] if t.pid else []) + ["--unwind", "auto", "--duration", "%ds" % (secs + int(warm)), "--frequency", freq,
                            "--output", tempfile.mktemp(suffix=".pb.gz")], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    # this record's map: another timing build's may be loaded too (bpftool names both); its
    # program loads seconds late on a busy machine (the verifier), then samples secs
    t0 = time.time()
    while not timing_maps_of(rec.pid) and time.time() - t0 < 60 and rec.poll() is None:
        time.sleep(0.5)
    before = {}
    if warm:
        time.sleep(warm)
        before = totals(dump(rec.pid))
    time.sleep(max(0.5, secs - 1.5))
    out = dump(rec.pid)
    err = rec.communicate()[1]
    t.kill(); t.wait()
    tot = {k: (v[0] - before.get(k, (0, 0))[0], v[1] - before.get(k, (0, 0))[1])
           for k, v in totals(out).items()}
    samples = tot.get(0, (0, 1))[1] or 1
    print("== %s: %d samples  (%s)" % (kind, samples, [l for l in err.splitlines() if "BPF run" in l]))
    for k in sorted(tot):
        ns, cnt = tot[k]
        if cnt:
            print("  %-20s %8.0f ns/sample  %6.1f per sample  %6.0f ns each" % (NAMES.get(k, k), ns / samples, cnt / samples, ns / cnt))
