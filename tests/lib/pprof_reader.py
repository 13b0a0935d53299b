# SPDX-License-Identifier: Apache-2.0
# Old name of the pprof reader, kept for the tests that still import it: everything lives in
# pprof_py (one writer and one reader); new code imports pprof_py.
from pprof_py import Profile, Sample, parse, parse_file  # noqa: F401
