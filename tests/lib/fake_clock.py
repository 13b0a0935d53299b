# SPDX-License-Identifier: Apache-2.0
# libfaketime for tests: processes started inside days_back() see a wall clock days behind,
# inside stopped_at() one standing still. make check installs libfaketime
# (scripts/install-deps.sh): a missing one fails the suite (require()), never skips it.
# Under the sanitizer pass the cases skip instead (require(program)): Debian 12's libfaketime
# (0.9.10) can deadlock a clang AddressSanitizer program (libfaketime issue 365, fixed after
# 0.9.10); CI saw `roottrace-collector init` hang 60 s so. The plain pass runs them.
#
#   fake_clock.require(collector_binary())
#   with fake_clock.days_back(2):
#       c = Collector()
import contextlib
import os
import time
import unittest

LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def require(program=None):
    """Fails when libfaketime is missing; skips when program is AddressSanitizer-built."""
    if not os.path.exists(LIBFAKETIME):
        raise RuntimeError("libfaketime is not installed (scripts/install-deps.sh)")
    if program and _asan_built(program):
        raise unittest.SkipTest("libfaketime 0.9.10 can deadlock an ASan program (libfaketime "
                                "issue 365); the uninstrumented pass runs this case")


def _asan_built(program):
    with open(program, "rb") as f:
        return b"__asan_init" in f.read()


@contextlib.contextmanager
def _environ(env):
    """os.environ with env set inside, as it was after."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def days_back(days):
    """Processes started inside see a clock `days` days behind, the real one when 0."""
    if not days:
        return contextlib.nullcontext()
    return _environ({"LD_PRELOAD": LIBFAKETIME, "FAKETIME": "-%dd" % days})


def stopped_at(t):
    """Processes started inside see the wall clock stand still at unix second t (the monotonic
    clock runs, for timeouts)."""
    return _environ({"LD_PRELOAD": LIBFAKETIME, "TZ": "UTC", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
                     "FAKETIME": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))})
