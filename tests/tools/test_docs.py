#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The user documents stay usable: README.md is short enough to read
(measurements live in docs/BENCHMARKS.md), keeps the two commands users
start from, and every relative link in README.md and docs/*.md names a
file that exists and, for a Markdown file, a heading it has (GitHub's
anchors). The checker is tested on made-up documents first, so a checker
that finds nothing cannot pass."""
import glob
import os
import re
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from toolslib import SOURCE_ROOT  # noqa: E402

README_MAX_LINES = 350
README_COMMANDS = ("./scripts/run [SOURCE] [MOUNTPOINT]", "./scripts/test")

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"`+[^`]*`+")
INLINE_LINK = re.compile(r"\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def prose_lines(text):
    """The lines of Markdown @p text that are not code: fenced blocks and
    indented blocks (four spaces after a blank line) are left out.
    Yields (line number, line)."""
    in_fence = False
    in_indented = False
    prev_blank = True
    for number, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            in_fence = not in_fence
            prev_blank = False
            continue
        if in_fence:
            continue
        blank = not line.strip()
        indented = line.startswith("    ") or line.startswith("\t")
        if indented and (prev_blank or in_indented):
            in_indented = True
        elif not blank:
            in_indented = False
        if not in_indented and not blank:
            yield number, line
        prev_blank = blank


def github_slug(heading):
    """The anchor GitHub gives a heading: lower case, code marks and
    punctuation dropped (letters, digits, '_', '-' and spaces stay), each
    space a '-'."""
    text = heading.lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text):
    """Every heading anchor of Markdown @p text; a repeated one gets -1,
    -2, ... as on GitHub."""
    seen = {}
    out = set()
    for _, line in prose_lines(text):
        m = HEADING.match(line)
        if not m:
            continue
        slug = github_slug(m.group(2))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else "%s-%d" % (slug, n))
    return out


def links(text):
    """The link targets of Markdown @p text outside code: (line, target)."""
    for number, line in prose_lines(text):
        m = REFERENCE_LINK.match(line)
        if m:
            yield number, m.group(1)
            continue
        for m in INLINE_LINK.finditer(INLINE_CODE.sub("", line)):
            yield number, m.group(1)


def broken_links(path):
    """The relative links of the Markdown file @p path whose file, or
    whose #anchor in a Markdown file, does not exist: a list of
    "path:line: target (reason)" strings."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    problems = []
    for number, target in links(text):
        if SCHEME.match(target) or target.startswith("/"):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                if file_part else path)
        where = "%s:%d: %s" % (path, number, target)
        if not os.path.exists(dest):
            problems.append(where + " (no such file)")
            continue
        if not anchor or not dest.endswith(".md"):
            continue
        with open(dest, encoding="utf-8") as f:
            if anchor not in anchors(f.read()):
                problems.append(where + " (no such heading)")
    return problems


def readme_problems(path):
    """What is wrong with the README at @p path as a user's first page:
    too long, or one of the two commands missing."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    problems = []
    lines = text.count("\n")
    if lines > README_MAX_LINES:
        problems.append("%s: %d lines, more than %d" % (path, lines, README_MAX_LINES))
    for command in README_COMMANDS:
        if command not in text:
            problems.append("%s: no %s" % (path, command))
    return problems


def documents(root):
    return [os.path.join(root, "README.md")] + sorted(
        glob.glob(os.path.join(root, "docs", "*.md")))


class CheckerTest(unittest.TestCase):
    """The checker on made-up documents."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        os.mkdir(os.path.join(self.root, "docs"))
        self.write("docs/A.md",
                   "# A title\n\n## Sharing: SMB, NFS, HTTP\n\n## `B.zarr/`\n\n"
                   "## History\n\n## History\n")

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, text):
        with open(os.path.join(self.root, name), "w", encoding="utf-8") as f:
            f.write(text)

    def check(self, text):
        self.write("README.md", text)
        return broken_links(os.path.join(self.root, "README.md"))

    def test_slugs_follow_github(self):
        self.assertEqual(github_slug("A folder as one array: `.stack/`"),
                         "a-folder-as-one-array-stack")
        self.assertEqual(github_slug("Tests, sanitizers, fuzzing"),
                         "tests-sanitizers-fuzzing")
        with open(os.path.join(self.root, "docs/A.md"), encoding="utf-8") as f:
            self.assertEqual(anchors(f.read()),
                             {"a-title", "sharing-smb-nfs-http", "bzarr",
                              "history", "history-1"})

    def test_good_links_pass(self):
        self.assertEqual(self.check(
            "[a](docs/A.md) [b](docs/A.md#bzarr) [c](#top) [d](docs)\n"
            "[e](https://example.org/x#y) [f](docs/A.md#history-1)\n\n# Top\n"), [])

    def test_missing_file_is_found(self):
        self.assertEqual(len(self.check("see [x](docs/MISSING.md)\n")), 1)

    def test_missing_anchor_is_found(self):
        found = self.check("[x](docs/A.md#nothing) [y](#nowhere)\n[z]: docs/A.md#gone\n")
        self.assertEqual(len(found), 3, found)

    def test_code_is_not_a_link(self):
        self.assertEqual(self.check(
            "`[x](docs/MISSING.md)`\n\n```\n[y](MISSING)\n```\n\n"
            "    z = a[0](MISSING)\n"), [])

    def test_long_readme_is_found(self):
        readme = os.path.join(self.root, "README.md")
        commands = " ".join(README_COMMANDS)
        self.write("README.md", commands + "\n" * README_MAX_LINES)
        self.assertEqual(readme_problems(readme), [])
        self.write("README.md", commands + "\n" * (README_MAX_LINES + 1))
        self.assertEqual(len(readme_problems(readme)), 1)

    def test_missing_command_is_found(self):
        self.write("README.md", "./scripts/test\n")
        self.assertEqual(len(readme_problems(os.path.join(self.root, "README.md"))), 1)


class DocumentsTest(unittest.TestCase):
    """The repository's own documents."""

    def test_readme_is_short_and_has_the_commands(self):
        self.assertEqual(readme_problems(os.path.join(SOURCE_ROOT, "README.md")), [])

    def test_relative_links_resolve(self):
        docs = documents(SOURCE_ROOT)
        self.assertGreater(len(docs), 3)
        problems = [p for d in docs for p in broken_links(d)]
        self.assertEqual(problems, [], "\n".join(problems))


if __name__ == "__main__":
    unittest.main(verbosity=2)
