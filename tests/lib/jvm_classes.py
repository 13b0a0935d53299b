# SPDX-License-Identifier: Apache-2.0
# tests/fixtures/jvm/Hot.java compiled once per build directory (javac is a JVM start: ~1-2 s
# a run), recompiled when the source is newer than its class; the suites share the classes.
import os
import shutil
import subprocess
import tempfile

FIXTURES = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "fixtures", "jvm"))
HOT_JAVA = os.path.join(FIXTURES, "Hot.java")
JAVAC = shutil.which("javac") or "/usr/bin/javac"


def _build_dir():
    return os.path.realpath(os.environ.get("ROOTTRACE_BUILD") or os.path.join(
        os.environ.get("ROOTTRACE_SRC", os.getcwd()), "build"))


def hot_classes():
    """The directory holding Hot.class (for java -cp), compiled if missing or stale."""
    out = os.path.join(_build_dir(), "tests", "jvm-classes")
    cls = os.path.join(out, "Hot.class")
    if os.path.exists(cls) and os.path.getmtime(cls) >= os.path.getmtime(HOT_JAVA):
        return out
    os.makedirs(os.path.dirname(out), exist_ok=True)
    # compiled aside and renamed in: a program reading the directory never sees half of it
    tmp = tempfile.mkdtemp(prefix="jvm-classes-", dir=os.path.dirname(out))
    subprocess.run([JAVAC, "-d", tmp, HOT_JAVA], check=True)
    old = out + ".old-%d" % os.getpid()
    if os.path.exists(out):
        os.rename(out, old)
    os.rename(tmp, out)
    shutil.rmtree(old, ignore_errors=True)
    return out
