# SPDX-License-Identifier: Apache-2.0
# Keeps the map for newcomers honest: every repository path written in the maps
# (docs/architecture.md, tests/README.md, HACKING.md) exists in the tree, and every relative
# markdown link and every `docs/X.md, "Section"` reference in the docs resolves.
import os
import re
import subprocess
import unittest

import harness

SRC = os.environ.get("ROOTTRACE_SRC") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))

# The maps whose every path must exist (HACKING.md once it is written).
MAPS = ["docs/architecture.md", "tests/README.md", "HACKING.md"]

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# `docs/operations.md, "Fleet mode"`, `docs/api.md, *Sending from Pyroscope SDKs*`,
# `docs/performance.md ("Web UI")`: a section named after a file, as the repo writes them.
SECTION_REF = re.compile(
    r"((?:\.\./)*(?:[\w.-]+/)*[\w.-]+\.md)[`]?(?:,|:)?\s*\(?\s*(?:\"|\*|\u201c)([^\"*\u201d]{3,120})(?:\"|\*|\u201d)")
# Characters that make a token a pattern or a placeholder, not a path.
PLACEHOLDER = re.compile(r"[<>*{}$\[\]|=]|\.\.\.|\bPID\b|\bN\b|XXX")


def tracked():
    """Paths git knows (files, and every folder holding one); the filesystem without git."""
    try:
        out = subprocess.run(["git", "-C", SRC, "ls-files", "-z"], capture_output=True,
                             check=True, timeout=60).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        out = ""
    files = [f for f in out.split("\0") if f]
    if not files:
        for root, dirs, names in os.walk(SRC):
            dirs[:] = [d for d in dirs if d not in (".git", "build")]
            rel = os.path.relpath(root, SRC)
            files += [os.path.normpath(os.path.join(rel, n)) for n in names]
    paths = set(files)
    for f in files:
        parts = f.split("/")
        for i in range(1, len(parts)):
            paths.add("/".join(parts[:i]))
    return paths


TRACKED = tracked()
TOP = {p for p in TRACKED if "/" not in p}


def read(rel):
    with open(os.path.join(SRC, rel), encoding="utf-8") as f:
        return f.read()


def prose_and_code(text):
    """(prose lines with their numbers, code lines with theirs): fenced blocks are code."""
    prose, code, fenced = [], [], False
    for n, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        (code if fenced else prose).append((n, line))
    return prose, code


def paragraphs(prose):
    """[(first line number, text)]: consecutive prose lines joined, so that a link whose text
    wraps onto the next line is seen whole."""
    out, cur = [], None
    for n, line in prose:
        if not line.strip() or line.lstrip().startswith(("|", "#")):
            if cur:
                out.append(cur)
            cur = None
            if line.strip():
                out.append((n, line))
            continue
        cur = (cur[0], cur[1] + " " + line.strip()) if cur else (n, line.strip())
    if cur:
        out.append(cur)
    return out


def path_candidates(text):
    """[(line, token)] of tokens that name a repository path: in code spans, link targets
    and fenced blocks, starting with a top-level entry of the tree."""
    prose, code = prose_and_code(text)
    out = []
    for n, line in paragraphs(prose):
        for m in CODE_SPAN.finditer(line):
            out += [(n, t) for t in m.group(2).split()]
        out += [(n, m.group(1)) for m in LINK.finditer(CODE_SPAN.sub("", line))]
    for n, line in code:
        out += [(n, t) for t in line.split()]
    return [(n, t) for n, t in (clean(n, t) for n, t in out) if t]


def clean(n, token):
    token = token.strip("`'\"(),;")
    token = re.sub(r":[0-9]+$", "", token.split("#")[0])
    if not token or PLACEHOLDER.search(token) or "://" in token:
        return n, None
    if token.startswith("./"):
        token = token[2:]
    first = token.split("/")[0]
    if first not in TOP:
        return n, None
    if "/" not in token and "." not in token and token != "Makefile":
        return n, None  # a bare word such as "tests" or "agent"
    return n, token.rstrip(".:")


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|__", "", heading).strip().lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def headings(text):
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else HEADING.match(line)
        if m:
            out.append(m.group(2))
    return out


def anchors(text):
    seen, out = {}, set()
    for h in headings(text):
        s = slug(h)
        k = seen.get(s, 0)
        out.add(s if k == 0 else "%s-%d" % (s, k))
        seen[s] = k + 1
    return out


def markdown_files():
    docs = sorted("docs/" + f for f in os.listdir(os.path.join(SRC, "docs")) if f.endswith(".md"))
    extra = [f for f in ("README.md", "tests/README.md", "HACKING.md")
             if os.path.exists(os.path.join(SRC, f))]
    return docs + extra


def normalise(heading):
    return re.sub(r"\s+", " ", re.sub(r"[`*]", "", heading)).strip().lower()


class MapPaths(unittest.TestCase):
    def check_map(self, rel):
        if not os.path.exists(os.path.join(SRC, rel)):
            self.skipTest("%s is not written yet" % rel)
        bad = ["%s:%d: %s" % (rel, n, t) for n, t in path_candidates(read(rel))
               if t.rstrip("/") not in TRACKED]
        self.assertEqual(bad, [], "paths that are not in the tree:\n" + "\n".join(bad))

    def test_architecture_paths_exist(self):
        self.check_map("docs/architecture.md")

    def test_tests_readme_paths_exist(self):
        self.check_map("tests/README.md")

    def test_hacking_paths_exist(self):
        self.check_map("HACKING.md")

    def test_the_check_sees_a_missing_path(self):
        found = [t for _, t in path_candidates(
            "see `collector/no_such_file.c` and [x](agent/nope/)\n```\nlib/nothing.h\n```\n")]
        self.assertEqual(found, ["collector/no_such_file.c", "agent/nope/", "lib/nothing.h"])
        self.assertFalse(any(t.rstrip("/") in TRACKED for t in found))

    def test_placeholders_and_outside_paths_are_not_paths(self):
        found = [t for _, t in path_candidates(
            "`tests/unit/test-<module>.c` `/proc/PID/maps` `build/tests/test-lru` `agent/*.c`")]
        self.assertEqual(found, [])


class MarkdownLinks(unittest.TestCase):
    def test_relative_links_resolve(self):
        bad = []
        for rel in markdown_files():
            prose, _ = prose_and_code(read(rel))
            for n, line in paragraphs(prose):
                for m in LINK.finditer(CODE_SPAN.sub("", line)):
                    err = self.resolve(rel, m.group(1))
                    if err:
                        bad.append("%s:%d: %s: %s" % (rel, n, m.group(1), err))
        self.assertEqual(bad, [], "broken links:\n" + "\n".join(bad))

    def resolve(self, rel, target):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            return None  # http:, https:, mailto:
        path, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(rel), path)) if path else rel
        if dest.startswith(".."):
            return "points outside the repository"
        if not os.path.exists(os.path.join(SRC, dest)):
            return "no file %s" % dest
        if anchor:
            if not dest.endswith(".md"):
                return "an anchor into a file that is not markdown"
            if anchor not in anchors(read(dest)):
                return "no heading #%s in %s" % (anchor, dest)
        return None

    def test_section_references_resolve(self):
        """`docs/operations.md, "Fleet mode"`: the quoted text starts a heading of that file,
        wherever it is written (docs, units, manifests, comments in the code)."""
        bad = []
        for rel in markdown_files() + text_files():
            text = read(rel)
            if not rel.endswith(".md"):  # comments of code, units and manifests: no leaders
                text = re.sub(r"(?m)^\s*(#|//|/?\*)\s?", "", text)
            text = re.sub(r"\s+", " ", text)
            for m in SECTION_REF.finditer(text):
                if not rel.endswith(".md") and "docs/" not in m.group(1):
                    continue  # outside the docs only "docs/X.md" names a document
                err = self.section(rel, m.group(1), m.group(2))
                if err:
                    bad.append("%s: %s, \"%s\": %s" % (rel, m.group(1), m.group(2), err))
        self.assertEqual(bad, [], "section references that name no section:\n" + "\n".join(bad))

    def section(self, rel, doc, quoted):
        candidates = [os.path.normpath(os.path.join(os.path.dirname(rel), doc)), doc,
                      os.path.join("docs", os.path.basename(doc))]
        dest = next((c for c in candidates if os.path.isfile(os.path.join(SRC, c))), None)
        if dest is None:
            return "no file %s" % doc
        want = normalise(quoted)
        if any(normalise(h).startswith(want) for h in headings(read(dest))):
            return None
        return "no heading of %s starts with it" % dest

    def test_the_check_sees_a_broken_anchor(self):
        self.assertIsNone(self.resolve("docs/api.md", "agent.md"))
        self.assertIsNotNone(self.resolve("docs/api.md", "agent.md#no-such-heading"))
        self.assertIsNotNone(self.resolve("docs/api.md", "no-such-file.md"))
        self.assertIsNotNone(self.section("README.md", "docs/operations.md", "No such section"))

    def test_a_wrapped_link_is_seen_whole(self):
        prose, _ = prose_and_code("see [the\nsection](#x) and\n| [a](b) |\n")
        links = [m.group(1) for _, t in paragraphs(prose) for m in LINK.finditer(t)]
        self.assertEqual(links, ["#x", "b"])

    def test_slugs_follow_github(self):
        self.assertEqual(slug("Fleet mode (PostgreSQL + ClickHouse, several collectors)"),
                         "fleet-mode-postgresql--clickhouse-several-collectors")
        self.assertEqual(slug("Agent unwinder (`--unwind=auto` vs `--unwind=fp`)"),
                         "agent-unwinder---unwindauto-vs---unwindfp")
        self.assertEqual(anchors("# A\n## A\n```\n# not a heading\n```\n"), {"a", "a-1"})


class Contents(unittest.TestCase):
    def test_every_contents_list_names_every_section(self):
        """A doc that opens with "Contents:" links each of its "## " sections there, so the
        list does not fall behind the document."""
        bad = []
        for rel in markdown_files():
            text = read(rel)
            if "\nContents:\n" not in text:
                continue
            listed = set(re.findall(r"\]\(#([^)]+)\)", text.split("\n## ", 1)[0]))
            for h in headings(text):
                if text.count("\n## " + h + "\n") and slug(h) not in listed:
                    bad.append("%s: ## %s" % (rel, h))
        self.assertEqual(bad, [], "sections missing from their doc's contents:\n" + "\n".join(bad))


def text_files():
    """Tracked source, build and packaging files that may name a section of a document
    (this file's own examples, fixtures and corpora left out)."""
    skip = ("vmlinux/", "tests/fixtures/", "tests/fuzz/corpus/", "docs/")
    out = []
    for p in sorted(TRACKED):
        full = os.path.join(SRC, p)
        if (p.startswith(skip) or p.endswith((".md", ".png", ".gz", ".pb"))
                or p == "tests/integration/test_docs_paths.py" or not os.path.isfile(full)):
            continue
        try:
            read(p)
        except UnicodeDecodeError:
            continue
        out.append(p)
    return out


if __name__ == "__main__":
    harness.main()
