# SPDX-License-Identifier: Apache-2.0
# Docs follow code: every route `roottrace-collector routes` prints is documented in
# docs/api.md under its own "METHOD PATH" heading (or a table row naming it) whose section has
# a curl example calling that path with that method; and no heading documents a route the
# collector does not have.
import os
import re
import subprocess
import unittest

import harness
from collector_fixture import collector_binary

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
ROUTE_HEADING = re.compile(r"^(GET|PUT|POST|DELETE|PATCH|HEAD)\s+(/\S*)$")


def routes():
    """[(method, path, kinds, min_role)] from the binary (tab-separated lines)."""
    out = subprocess.run([collector_binary(), "routes"], capture_output=True, text=True,
                         timeout=30, check=True).stdout
    rows = [line.split("\t") for line in out.splitlines() if line.strip()]
    for row in rows:
        assert len(row) == 4 and row[1].startswith("/"), "unexpected routes line %r" % (row,)
    return [tuple(r) for r in rows]


def sections(text):
    """[(heading title, level, body lines)]; the preamble has title "" and level 0."""
    out = [("", 0, [])]
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced else HEADING.match(line)
        if m:
            out.append((m.group(2), len(m.group(1)), []))
        else:
            out[-1][2].append(line)
    return out


def curl_commands(lines):
    """The curl commands in the section's code blocks, continuation lines joined."""
    cmds, fenced, cur = [], False, None
    for line in lines:
        if line.startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            continue
        text = line.strip()
        if cur is not None:
            cur += " " + text.rstrip("\\")
        elif re.match(r"^(\S+=\S+\s+)*curl\s", text):
            cur = text.rstrip("\\")
        else:
            continue
        if not text.endswith("\\"):
            cmds.append(cur)
            cur = None
    return cmds


def calls(cmd, method, path):
    """Whether one curl command line requests `path` with `method`; a path ending in `*` (a
    prefix route, "/ui/*") is called by any path it prefixes, a {name} segment (GET
    /api/apm/traces/{trace_id}/profile) by any segment."""
    if path.endswith("*"):
        pattern = r"\$C%s[\w.-]+(?![\w/-])" % re.escape(path[:-1])
    else:
        segments = re.sub(r"\\\{\w+\\\}", r"[^/?\"\\s]+", re.escape(path))
        pattern = r"\$C%s(?![\w/-])" % segments
    if not re.search(pattern, cmd):
        return False
    explicit = re.search(r"(?:-X|--request)\s+([A-Z]+)", cmd)
    has_body = re.search(r"\s(?:-d|--data|--data-binary|--data-raw|-F|-T)\s", cmd)
    used = explicit.group(1) if explicit else ("POST" if has_body else "GET")
    return used == method


class ApiDocs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        src = os.environ.get("ROOTTRACE_SRC", os.getcwd())
        with open(os.path.join(src, "docs", "api.md")) as f:
            cls.sections = sections(f.read())
        cls.routes = routes()

    def section_of(self, method, path):
        """The section whose heading is "METHOD PATH", else the first whose table names it."""
        name = "%s %s" % (method, path)
        for title, level, lines in self.sections:
            if title.replace("`", "") == name:
                return title, lines
        cell = re.compile(r"^\|.*`%s`.*\|\s*$" % re.escape(name))
        for title, level, lines in self.sections:
            if any(cell.match(line) for line in lines):
                return title, lines
        return None, None

    def test_routes_listed(self):
        self.assertGreaterEqual(len(self.routes), 10, self.routes)
        self.assertIn(("POST", "/api/apm/profiles"), [(m, p) for m, p, _, _ in self.routes])

    def test_every_route_has_a_section_with_a_curl_example(self):
        missing = []
        for method, path, _, _ in self.routes:
            title, lines = self.section_of(method, path)
            if title is None:
                missing.append("%s %s: no heading or table row" % (method, path))
            elif not any(calls(c, method, path) for c in curl_commands(lines)):
                missing.append("%s %s: section '%s' has no curl example calling it"
                               % (method, path, title))
        self.assertEqual(missing, [])

    def test_no_heading_documents_a_route_that_does_not_exist(self):
        real = {(m, p) for m, p, _, _ in self.routes}
        stale = []
        for title, _, _ in self.sections:
            m = ROUTE_HEADING.match(title.replace("`", ""))
            if m and (m.group(1), m.group(2)) not in real:
                stale.append(title)
        self.assertEqual(stale, [])

    def test_checker_notices_a_missing_example(self):
        # The checks above must be able to fail: a section without curl, a curl of another
        # method or of a longer path does not count.
        lines = ["```sh", "curl -s -X PUT $C/api/apm/config", "```",
                 "```sh", "curl -s \\", "  \"$C/api/apm/profiles/top?service=x\"", "```"]
        cmds = curl_commands(lines)
        self.assertEqual(len(cmds), 2, cmds)
        self.assertFalse(any(calls(c, "GET", "/api/apm/config") for c in cmds))
        self.assertTrue(any(calls(c, "PUT", "/api/apm/config") for c in cmds))
        self.assertFalse(any(calls(c, "GET", "/api/apm/profiles") for c in cmds))
        self.assertTrue(any(calls(c, "GET", "/api/apm/profiles/top") for c in cmds))
        trace = ["```sh", "curl -s \"$C/api/apm/traces/0af7/profile?service=x\"", "```"]
        self.assertTrue(calls(curl_commands(trace)[0], "GET", "/api/apm/traces/{id}/profile"))
        self.assertFalse(calls(curl_commands(trace)[0], "GET", "/api/apm/traces/{id}"))
        self.assertTrue(calls("curl -s $C/ui/app.js", "GET", "/ui/*"))
        self.assertFalse(calls("curl -s $C/ui/", "GET", "/ui/*"))
        self.assertFalse(calls("curl -s $C/", "GET", "/ui/*"))


if __name__ == "__main__":
    harness.main()
