# SPDX-License-Identifier: Apache-2.0
# The opt-in java_perfmap config key end to end (`roottrace-agent run`, real BPF, a real
# collector on 127.0.0.1, a real JDK 17): a JVM whose structures the agent cannot read (a copy
# of the JDK whose libjvm.so exports its VMStructs with one constant renamed, as a JDK that
# changed it would) keeps native frames; with the key on, the agent asks it for its perf map
# (jcmd Compiler.perfmap through the attach mechanism) and its methods are named from
# /tmp/perf-PID.map; with the key off it is not touched (no perf map, no attach socket).
import os
import shutil
import subprocess
import unittest

import harness
from cleanup_case import CleanupTestCase
from collector_fixture import Collector
from jvm_classes import JAVAC, hot_classes
from test_agent_daemon import POLL_S, Agent, wait_for

JAVA = shutil.which("java") or "/usr/bin/java"
# An x86 interpreter constant the walk needs; the JVM itself never reads the table's names
RENAMED = (b"frame::interpreter_frame_sender_sp_offset\0",
           b"frame::interpreter_frame_sender_sp_offsex\0")


def java_home():
    return os.path.dirname(os.path.dirname(os.path.realpath(JAVA)))


def unreadable_jdk(dst):
    """A JDK at dst whose launcher and libjvm.so are copies, every other file a link: the
    launcher finds its libjvm.so from its own path. Its bin/java."""
    src = java_home()
    os.makedirs(os.path.join(dst, "bin"))
    os.makedirs(os.path.join(dst, "lib", "server"))
    for top, skip in (("", ("bin", "lib")), ("lib", ("server",)), ("lib/server", ("libjvm.so",))):
        for e in os.listdir(os.path.join(src, top)):
            if e not in skip:
                os.symlink(os.path.join(src, top, e), os.path.join(dst, top, e))
    shutil.copy2(os.path.join(src, "bin", "java"), os.path.join(dst, "bin", "java"))
    with open(os.path.join(src, "lib", "server", "libjvm.so"), "rb") as f:
        data = f.read()
    if data.count(RENAMED[0]) != 1:
        raise unittest.SkipTest("this libjvm.so does not name %r once" % RENAMED[0])
    with open(os.path.join(dst, "lib", "server", "libjvm.so"), "wb") as f:
        f.write(data.replace(*RENAMED))
    os.chmod(os.path.join(dst, "lib", "server", "libjvm.so"), 0o755)
    return os.path.join(dst, "bin", "java")


@unittest.skipUnless(os.geteuid() == 0, "needs root (BPF, perf events)")
@unittest.skipUnless(os.access(JAVAC, os.X_OK), JAVAC + " not installed")
class JavaPerfmapKey(CleanupTestCase):
    tmp_prefix = "rt-agent-jvm-perfmap-"

    def setUp(self):
        super().setUp()
        self.java = unreadable_jdk(os.path.join(self.tmp, "jdk"))
        self.c = Collector()
        self.cleanups.append(self.c.close)
        self.tok = self.c.create_token("collector")
        eng = self.c.create_token("user", role="engineer")
        self.viewer = self.c.create_token("user", role="viewer")
        status, resp = self.c.put_json("/api/apm/config", eng, {
            "environment": "production", "service": None, "enabled": True,
            "poll_interval_s": POLL_S, "upload_interval_s": 10})
        self.assertEqual(status, 200, resp)

    def spin(self):
        """The unreadable JVM spinning hotLoop, C2-compiled before the agent starts."""
        java = subprocess.Popen([self.java, "-cp", hot_classes(), "Hot", "hot", "600"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.cleanups.append(lambda: (java.kill(), java.wait()))
        for path in ("/tmp/perf-%d.map" % java.pid, "/tmp/.java_pid%d" % java.pid):
            self.cleanups.append(lambda p=path: os.path.exists(p) and os.unlink(p))
        self.assertTrue(java.stdout.readline().startswith("ready"))
        java.stdin.write("go\n")
        java.stdin.flush()
        wait_for(lambda: False, 3, step=1)  # hotLoop through C1 to C2
        return java

    def record(self, service, perfmap):
        java = self.spin()
        config = {"java_perfmap": perfmap,
                  "rules": [{"match": {"exe": self.java}, "service": service}]}
        agent = Agent(self.tmp, self.c.url(""), self.tok, config=config)
        self.cleanups.append(agent.stop)
        ok = wait_for(lambda: self.c.stored_total(service, "cpu") > 3e9, 90, step=1)
        self.assertTrue(ok, agent.log())
        self.assertEqual(agent.stop(), 0)
        params = {"service": service, "profile_type": "cpu", "time_range": "1h"}
        status, top = self.c.get_json("/api/apm/profiles/top", self.viewer, params=params)
        self.assertEqual(status, 200, top)
        return java, agent.log(), {f["name"]: f["total_share"] for f in top["functions"]}

    def test_off_the_unreadable_jvm_is_not_touched(self):
        java, log, totals = self.record("rt-test-perfmap-off-%d" % os.getpid(), False)
        self.assertIn("its VMStructs lack what Java frames need", log)
        self.assertNotIn("java_perfmap", log)
        self.assertFalse(os.path.exists("/tmp/perf-%d.map" % java.pid))
        self.assertFalse(os.path.exists("/tmp/.java_pid%d" % java.pid))  # no attach listener
        self.assertNotIn("Hot.hotLoop", totals, totals)

    def test_on_the_unreadable_jvm_is_named_from_its_perf_map(self):
        java, log, totals = self.record("rt-test-perfmap-on-%d" % os.getpid(), True)
        self.assertIn("asked for its perf map (java_perfmap): written", log)
        self.assertTrue(os.path.exists("/tmp/perf-%d.map" % java.pid))
        # samples before the map was loaded stay [unknown]: most are after. The leaf only:
        # without the VM's structures C2 frames (no frame pointer) are not stepped over
        self.assertGreaterEqual(totals.get("Hot.hotLoop", 0), 50, totals)


if __name__ == "__main__":
    harness.main()
