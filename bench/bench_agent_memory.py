# SPDX-License-Identifier: Apache-2.0
# The daemon's RSS as test_agent_hardening's hostile-config case sees it: `roottrace-agent run`
# at 200 Hz against a stub config server, one busy `sh`, machine-wide; several agent binaries
# side by side (same host load), VmHWM / RssAnon / RssFile sampled every 0.25 s.
# usage: ROOTTRACE_BUILD=build python3 bench/bench_agent_memory.py [SECONDS] LABEL=BINARY ...
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tests", "lib"),
                os.path.join(HERE, "..", "tests", "integration")]
import test_agent_daemon  # noqa: E402
from test_agent_daemon import Agent, enabled_config  # noqa: E402
from test_agent_hardening import HostileServer  # noqa: E402

SPAWN = threading.Lock()  # Agent() reads test_agent_daemon.AGENT: one spawn at a time
KEYS = ("VmRSS", "VmHWM", "RssAnon", "RssFile")


def status(pid):
    with open("/proc/%d/status" % pid) as f:
        text = f.read()
    return {k: int(re.search(r"%s:\s+(\d+)" % k, text).group(1)) for k in KEYS}


def anon_mappings(pid):
    """(anonymous kB, name) of the mappings holding >= 256 kB of anonymous memory."""
    rows, cur = [], None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                parts = line.split(None, 5)
                cur = [0, parts[5].strip() if len(parts) > 5 else "(anonymous)"]
                rows.append(cur)
            elif line.startswith("Anonymous:"):
                cur[0] = int(line.split()[1])
    return sorted((r for r in rows if r[0] >= 256), reverse=True)


def run_one(label, binary, seconds, out):
    srv = HostileServer()
    srv.mode = ("json", enabled_config(sample_rate_hz=200, poll_interval_s=2))
    busy = subprocess.Popen(["sh", "-c", "while :; do :; done"])
    tmp = tempfile.mkdtemp(prefix="rt-bench-agentmem-")
    with SPAWN:
        test_agent_daemon.AGENT = binary
        agent = Agent(tmp, srv.url(), "rtc_stub")
    samples = []
    try:
        end = time.time() + seconds
        while time.time() < end and agent.proc.poll() is None:
            samples.append(status(agent.pid))
            time.sleep(0.25)
        out[label] = (samples, anon_mappings(agent.pid))
    finally:
        agent.stop()
        busy.kill()
        busy.wait()
        srv.close()


def main():
    args = sys.argv[1:]
    seconds = float(args.pop(0)) if args and args[0].isdigit() else 60
    out, threads = {}, []
    for spec in args:
        label, binary = spec.split("=", 1)
        t = threading.Thread(target=run_one, args=(label, os.path.abspath(binary), seconds, out))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    mb = lambda kb: kb / 1024.0
    for label in (s.split("=", 1)[0] for s in args):
        samples, maps = out[label]
        last = samples[-8:]
        print("%-10s peak %5.1f MB  max RssAnon %5.1f  max RssFile %5.1f | last 2 s: RSS %5.1f "
              "RssAnon %5.1f RssFile %5.1f MB" % (
                  label, mb(samples[-1]["VmHWM"]), mb(max(s["RssAnon"] for s in samples)),
                  mb(max(s["RssFile"] for s in samples)),
                  mb(sum(s["VmRSS"] for s in last) / len(last)),
                  mb(sum(s["RssAnon"] for s in last) / len(last)),
                  mb(sum(s["RssFile"] for s in last) / len(last))))
        print("           " + ", ".join("%s %.1f MB" % (n, mb(kb)) for kb, n in maps))


if __name__ == "__main__":
    main()
