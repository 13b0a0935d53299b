# SPDX-License-Identifier: Apache-2.0
# Runs unittest cases and prints one "PASS name" / "FAIL name: why" / "SKIP name: why" line
# per case, the protocol tests/run-tests.sh counts. Use: `harness.main()` in a test module.
import sys
import time
import traceback
import unittest

SLOW_S = 5  # a case that takes longer says so: "PASS name (12s)", for make check's timings


class _LineResult(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.failed = 0
        self.started = time.monotonic()

    def startTest(self, test):
        super().startTest(test)
        self.started = time.monotonic()

    def _took(self):
        took = time.monotonic() - self.started
        return " (%ds)" % took if took >= SLOW_S else ""

    def _name(self, test):
        # setUpClass/tearDownClass errors arrive as an _ErrorHolder with no method name.
        if isinstance(test, unittest.case._SubTest):  # "Class.method[params]"
            return "%s%s" % (self._name(test.test_case), test._subDescription().replace(" ", ""))
        method = getattr(test, "_testMethodName", None)
        if method is None:
            return getattr(test, "description", str(test)).replace(" ", "")
        return "%s.%s" % (type(test).__name__, method)

    def addSuccess(self, test):
        print("PASS %s%s" % (self._name(test), self._took()), flush=True)

    def _fail(self, test, err):
        self.failed += 1
        text = "".join(traceback.format_exception(*err))
        for line in text.rstrip().splitlines():
            print("  " + line)
        print("FAIL %s: %s" % (self._name(test), str(err[1]).splitlines()[0] if str(err[1]) else err[0].__name__), flush=True)

    def addFailure(self, test, err):
        self._fail(test, err)

    def addError(self, test, err):
        self._fail(test, err)

    def addSubTest(self, test, subtest, err):
        # unittest's own addSubTest only files a failed subtest away: without this a case whose
        # subtests fail prints neither PASS nor FAIL and the program exits 0.
        if err is not None:
            self._fail(subtest, err)

    def addSkip(self, test, reason):
        print("SKIP %s: %s" % (self._name(test), reason), flush=True)


def main(module="__main__"):
    names = sys.argv[1:]
    loader = unittest.TestLoader()
    if names:
        suite = loader.loadTestsFromNames(names, sys.modules[module])
    else:
        suite = loader.loadTestsFromModule(sys.modules[module])
    result = _LineResult()
    suite.run(result)
    sys.exit(1 if result.failed else 0)
