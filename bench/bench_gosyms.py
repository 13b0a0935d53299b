#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Stripped Go names: a generated program of N functions (60k by default) built here, stripped;
# the agent's name table for it (build time, memory, lookup time per frame, bench-gosyms)
# against `go tool addr2line` (the same stripped file) and `go tool nm` (its unstripped copy:
# nm needs a symbol table), in the same run; its unwind table from .gopclntab and those of the
# toolchain's own go and compile (bench-go-rows: build time, rows); then the agent's steady CPU
# at 99 Hz while two stripped Go processes spin.
# bench/bench-gosyms.sh --build DIR [--functions N]. Needs root.
import argparse
import os
import random
import shutil
import subprocess
import sys
import time

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
WARMUP_S = 10


def go_env(build):
    return dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off", GOTOOLCHAIN="local",
                GOCACHE=os.path.join(os.path.abspath(build), "gocache"), CGO_ENABLED="0")


def generate(dirname, n):
    os.makedirs(dirname, exist_ok=True)
    with open(os.path.join(dirname, "go.mod"), "w") as f:
        f.write("module big\n\ngo 1.19\n")
    with open(os.path.join(dirname, "main.go"), "w") as f:
        f.write("package main\n\nimport \"os\"\n\n")
        for i in range(n):
            f.write("//go:noinline\nfunc f%d(x int) int { return x*%d + %d }\n" % (i, i + 3, i))
        f.write("var table = [...]func(int) int{\n")
        for i in range(n):
            f.write("\tf%d,\n" % i)
        f.write("}\n\nfunc main() {\n\ts := 0\n\tfor i := range table {\n"
                "\t\ts += table[i](len(os.Args))\n\t}\n\tos.Exit(s & 1)\n}\n")


def build_big(build, n):
    d = os.path.join(build, "bench", "gosyms", "big%d" % n)
    full, stripped = os.path.join(d, "big"), os.path.join(d, "big-stripped")
    if not os.path.exists(stripped):
        generate(d, n)
        subprocess.run(["go", "build", "-o", full, "."], cwd=d, env=go_env(build), check=True)
        shutil.copy(full, stripped)
        subprocess.run(["strip", "--strip-all", stripped], check=True)
    return full, stripped


def go_rows(build, stripped, env):
    """bench-go-rows on the generated binary and stripped copies of the toolchain's own."""
    goroot = subprocess.run(["go", "env", "GOROOT"], env=env, capture_output=True, text=True,
                            check=True).stdout.strip()
    paths = [stripped]
    for tool in ("bin/go", "pkg/tool/linux_amd64/compile"):
        copy = os.path.join(build, "bench", "gosyms", os.path.basename(tool) + "-stripped")
        subprocess.run(["strip", "--strip-all", "-o", copy, os.path.join(goroot, tool)],
                       check=True)
        paths.append(copy)
    out = subprocess.run([os.path.join(build, "bench", "bench-go-rows")] + paths,
                         capture_output=True, text=True, check=True).stdout
    lines = []
    for line in out.splitlines():
        f = line.split()
        v = dict(zip(f[1::2], f[2::2]))
        lines.append("%s: %s functions, %s rows (%.0f KiB), built in %s ms (fastest %s ms)" % (
            os.path.basename(f[0]), v["functions"], v["rows"], int(v["row_bytes"]) / 1024,
            v["build_ms"], v["build_ms_min"]))
    return lines


def timed(argv, env, stdin=None):
    t0 = time.monotonic()
    r = subprocess.run(argv, env=env, input=stdin, capture_output=True, text=True, check=True)
    return time.monotonic() - t0, r.stdout


def cpu_ns(pid):
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total


def steady_overhead(build, window, go):
    """CPU of a whole-machine record at 99 Hz while two stripped Go processes (go=True) or two
    C fixtures (the baseline, in the same run) spin."""
    if go:
        exe = os.path.join(build, "bench", "gosyms", "gohot")
        subprocess.run(["go", "build", "-ldflags=-s -w", "-o", exe, "."],
                       cwd=os.path.join(SRC, "tests", "helpers", "gohot"), env=go_env(build),
                       check=True)
        argv = [exe, str(WARMUP_S + window + 8)]
    else:
        argv = [os.path.join(build, "fixtures", "fixture-stripped"), "spin",
                str(WARMUP_S + window + 8)]
    spin = [subprocess.Popen(argv, stdout=subprocess.DEVNULL) for _ in range(2)]
    rec = subprocess.Popen([os.path.join(build, "roottrace-agent"), "record", "--duration",
                            "%ds" % (WARMUP_S + window + 3), "--frequency", "99", "--output",
                            os.path.join(build, "bench", "gosyms", "steady.pb.gz")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(WARMUP_S)
    c0, t0 = cpu_ns(rec.pid), time.monotonic()
    time.sleep(window)
    c1, t1 = cpu_ns(rec.pid), time.monotonic()
    err = rec.communicate()[1]
    for p in spin:
        p.kill()
        p.wait()
    named = [line for line in err.splitlines() if "main.settleInvoices" in line
             or "main.applyRate" in line]
    return (c1 - c0) / 1e9 / (t1 - t0) * 100, named


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--functions", type=int, default=60000)
    ap.add_argument("--window", type=int, default=20)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    env = go_env(build)
    full, stripped = build_big(build, a.functions)
    nm_s, nm_out = timed(["go", "tool", "nm", full], env)
    addrs = [line.split()[0] for line in nm_out.splitlines()
             if len(line.split()) >= 3 and line.split()[1] in ("T", "t")]
    random.seed(1)
    sample = random.sample(addrs, min(10000, len(addrs)))
    addr_file = os.path.join(build, "bench", "gosyms", "addrs.txt")
    with open(addr_file, "w") as f:
        f.write("\n".join(sample) + "\n")
    out = subprocess.run([os.path.join(build, "bench", "bench-gosyms"), stripped, addr_file],
                         capture_output=True, text=True, check=True).stdout
    ours = dict(line.split(" ", 1) for line in out.splitlines())
    a2l_s, _ = timed(["go", "tool", "addr2line", stripped], env,
                     "\n".join("0x" + x for x in sample) + "\n")
    print("stripped Go binary: %s functions, %.1f MiB" % (
        ours["functions"], os.path.getsize(stripped) / 2**20))
    print("  agent name table: built in %s ms, %s bytes of heap; resident after load: "
          "%s KiB anon, %s KiB file pages; during 1M lookups over 10k functions: peak %s KiB "
          "file pages, after them %s KiB anon, %s KiB file pages; 6 s later: %s KiB file "
          "pages" % (
              ours["table_build_ms"], ours["table_heap_bytes"],
              ours["rss_anon_delta_kib_after_load"], ours["rss_file_delta_kib_after_load"],
              ours["rss_file_peak_kib_during_lookups"],
              ours["rss_anon_delta_kib_after_lookups"], ours["rss_file_delta_kib_after_lookups"],
              ours["rss_file_delta_kib_after_release"]))
    print("  agent first named frame (load + one lookup): %s ms" % ours["first_named_frame_ms"])
    print("  agent lookup: %s ns per frame (%s)" % (ours["lookup_ns"], ours["lookups"]))
    print("  go tool addr2line (same stripped file): %.2f s for %d addresses, %.1f us each "
          "(includes its start)" % (a2l_s, len(sample), a2l_s / len(sample) * 1e6))
    print("  go tool nm (unstripped copy): %.2f s for %d symbols" % (nm_s, len(addrs)))
    print("  unwind tables from .gopclntab (median of 5 compiles, rows streamed as the agent "
          "loads them):")
    for line in go_rows(build, stripped, env):
        print("    " + line)
    if os.geteuid() == 0:
        pct, named = steady_overhead(build, a.window, True)
        base, _ = steady_overhead(build, a.window, False)
        print("  agent steady CPU at 99 Hz (whole machine, window %d s after %d s): %.2f%% of a "
              "core with two stripped Go processes spinning, %.2f%% with two C processes "
              "(same run, same machine load)" % (a.window, WARMUP_S, pct, base))
        for line in named[:2]:
            print("    top: " + line.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
