# SPDX-License-Identifier: Apache-2.0
# tests/lib/fleet_servers.py leaves no server behind when the start fails: a clickhouse-server
# that never answers its ping is stopped with the PostgreSQL started before it, and SIGTERM
# while it starts stops both too. Each case starts the servers in a child Python whose
# ClickHouse ping is made to fail, then looks for processes under the child's server root.
import os
import signal
import subprocess
import sys
import time
import unittest

import fleet_servers
import harness

LIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib")

# The child: prints its servers' root, then starts them with a ClickHouse that never answers
# (the wait for it given up after argv[1] seconds).
CHILD = r"""
import os, sys
sys.path.insert(0, %r)
import fleet_servers
fleet_servers._ClickHouse._ping = lambda self: False
real_wait = fleet_servers._wait
fleet_servers._wait = lambda check, what, log, timeout=60: real_wait(check, what, log,
                                                                    float(sys.argv[1]))
print(os.path.join(fleet_servers.build_dir(), "fleet-servers", str(os.getpid())), flush=True)
try:
    fleet_servers.servers()
except RuntimeError as e:
    print("failed:", str(e).splitlines()[0], flush=True)
    sys.exit(3)
"""


def processes_under(root):
    """{pid: command line} of the processes whose command line names root."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if root + "/" in cmd and int(pid) != os.getpid():
            found[int(pid)] = cmd
    return found


class FailedStart(unittest.TestCase):
    def setUp(self):
        why = fleet_servers.available()
        if why:  # make check installs them: a missing server fails, never skips
            raise RuntimeError(why)
        self.root = None
        self.addCleanup(self.kill_leftovers)

    def kill_leftovers(self):
        """A failing case must not leak what it found itself."""
        for pid in processes_under(self.root) if self.root else ():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def start_child(self, wait_s):
        child = subprocess.Popen([sys.executable, "-c", CHILD % LIB, str(wait_s)],
                                 stdout=subprocess.PIPE, text=True)
        self.root = child.stdout.readline().strip()
        self.assertTrue(self.root.startswith("/"), self.root)
        return child

    def test_a_clickhouse_that_never_answers_is_stopped_with_postgres(self):
        child = self.start_child(3)
        out, _ = child.communicate(timeout=300)
        self.assertEqual(child.returncode, 3, out)
        self.assertIn("clickhouse-server did not start", out)
        self.assertEqual(processes_under(self.root), {})

    def test_sigterm_while_clickhouse_starts_stops_every_server(self):
        child = self.start_child(600)
        deadline = time.monotonic() + 300
        while not any("clickhouse-server" in c for c in processes_under(self.root).values()):
            self.assertIsNone(child.poll(), "the child ended before clickhouse-server ran")
            self.assertLess(time.monotonic(), deadline, "clickhouse-server never ran")
            time.sleep(0.1)
        self.assertTrue(any("postgres" in c for c in processes_under(self.root).values()))
        child.send_signal(signal.SIGTERM)
        child.communicate(timeout=120)
        self.assertEqual(child.returncode, 128 + signal.SIGTERM)
        self.assertEqual(processes_under(self.root), {})


harness.main()
