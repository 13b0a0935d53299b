# SPDX-License-Identifier: Apache-2.0
# The runtime BPF suites' shared parts (tests/bpf/test_python.py, test_ruby.py, test_php.py): a
# case that writes its scripts to a temporary folder, starts interpreters (killed at the end),
# records with the agent and parses the profile; and the helpers that read a sample's stack.
import os
import shutil
import subprocess
import tempfile
import time
import unittest

import pprof_py
from test_record import Recorder, require_root  # tests/bpf/: the suites' own folder

FREQ = 199


def of_pid(profile, pid):
    """The samples of one process."""
    return [s for s in profile.samples if s.labels.get("pid") == pid]


def share(samples, pred):
    """The share of the samples' weight for which pred holds (0.0 without samples)."""
    n = sum(s.values[0] for s in samples)
    return sum(s.values[0] for s in samples if pred(s)) / n if n else 0.0


def parent_of(sample, name):
    """The frame directly above (rootward of) name, or None."""
    st = sample.stack
    if name not in st:
        return None
    i = st.index(name)
    return st[i + 1] if i + 1 < len(st) else None


def function_files(profile, samples, name):
    """The file names (Function.filename) the samples give function name."""
    return {profile.function_files[i] for s in samples for f, i in zip(s.stack, s.function_ids)
            if f == name}


def frames_of(sample, module):
    """The sample's frames of one runtime (their mapping, "[python]"), leaf first."""
    return [f for f, m in zip(sample.stack, sample.modules) if m == module]


class RuntimeCase(unittest.TestCase):
    """Subclasses set BINARY (skipped when it is not installed), SCRIPTS (file name -> text,
    written to cls.tmp) and PREFIX (the temporary folder's)."""

    BINARY = None
    SCRIPTS = {}
    PREFIX = "rt-runtime-"

    @classmethod
    def setUpClass(cls):
        require_root(cls)
        if not os.access(cls.BINARY, os.X_OK):
            raise unittest.SkipTest("%s not installed" % cls.BINARY)
        cls.tmp = tempfile.mkdtemp(prefix=cls.PREFIX)
        os.chmod(cls.tmp, 0o755)  # php-fpm's workers run as another user
        for name, text in cls.SCRIPTS.items():
            with open(os.path.join(cls.tmp, name), "w") as f:
                f.write(text)
        cls.procs = []

    @classmethod
    def tearDownClass(cls):
        for p in cls.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def start(self, *argv):
        p = subprocess.Popen(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(p)
        return p

    def stop(self, p):
        p.kill()
        p.wait()

    def record(self, seconds, extra=()):
        """Starts the agent's record for seconds (all CPUs at FREQ); (recorder, output)."""
        out = os.path.join(self.tmp, "out-%d.pb.gz" % time.monotonic_ns())
        rec = Recorder(["--duration", "%ds" % seconds, "--frequency", str(FREQ)] + list(extra),
                       out)
        rec.wait_started()
        return rec, out

    def finish(self, rec, out):
        """Waits for the record to end; (the parsed profile, the agent's stderr)."""
        try:
            rec.proc.wait(120)  # --duration ends it
        except subprocess.TimeoutExpired:
            pass
        rc = rec.stop(timeout=120)
        self.assertEqual(rc, 0, rec.stderr)
        return pprof_py.parse_file(out), rec.stderr

    def record_alone(self, script, seconds, settle=0.5):
        """Runs BINARY on script (in tmp), waits settle seconds, records it alone (--pid) for
        seconds; (its samples, the profile, the agent's stderr). It must have samples."""
        p = self.start(self.BINARY, os.path.join(self.tmp, script))
        time.sleep(settle)
        rec, out = self.record(seconds, ["--pid", str(p.pid)])
        prof, err = self.finish(rec, out)
        self.stop(p)
        samples = of_pid(prof, p.pid)
        self.assertGreater(len(samples), 0, err)
        return samples, prof, err
