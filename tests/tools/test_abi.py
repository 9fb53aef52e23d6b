#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The shared library exports exactly the functions and variables that
include/arrayfs/*.h declare: nothing private leaks into the ABI (issue 26)
and nothing public is left hidden by src/codec/libarrayfs.map.

Environment (set by tests/tools/meson.build):
  AF_ABI_LIB   a libarrayfs shared object built with the export list
  AF_NM        nm(1)
  AF_SOURCE_ROOT
"""
import glob
import os
import re
import subprocess
import sys
import unittest

SOURCE_ROOT = os.environ.get("AF_SOURCE_ROOT", ".")
LIB = os.environ.get("AF_ABI_LIB", "")
NM = os.environ.get("AF_NM", "nm")

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def strip_preprocessor(text):
    """Drop directives (with their continuation lines) and whatever only a
    C++ compiler sees (the extern "C" braces)."""
    out, cplusplus, depth = [], False, 0
    lines = iter(text.replace("\\\n", " ").split("\n"))
    for line in lines:
        s = line.strip()
        if s.startswith("#"):
            directive = s[1:].strip()
            if cplusplus:
                if directive.startswith("if"):
                    depth += 1
                elif directive.startswith("endif"):
                    if depth == 0:
                        cplusplus = False
                    else:
                        depth -= 1
            elif re.match(r"ifdef\s+__cplusplus\b", directive):
                cplusplus, depth = True, 0
            continue
        if not cplusplus:
            out.append(line)
    return "\n".join(out)


def strip_attributes(text):
    """Remove __attribute__((...)) with its balanced parentheses."""
    while True:
        m = re.search(r"__attribute__\s*\(", text)
        if not m:
            return text
        i, depth = m.end() - 1, 0
        while i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
            if depth == 0:
                break
        text = text[:m.start()] + " " + text[i:]


def top_level_statements(text):
    """Split at ';' outside braces; a function body ends its statement."""
    stmts, cur, depth = [], [], 0
    for ch in text:
        cur.append(ch)
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                s = "".join(cur)
                head = s[:s.find("{")].rstrip()
                if head.endswith(")"):   # an inline definition
                    stmts.append(s)
                    cur = []
        elif ch == ";" and depth == 0:
            stmts.append("".join(cur[:-1]))
            cur = []
    return [s.strip() for s in stmts if s.strip()]


def declared_name(stmt):
    """The name an exported symbol would have, or None (a type, a macro
    user, a static or inline definition)."""
    words = IDENT.findall(stmt)
    if not words or words[0] in ("typedef", "static"):
        return None
    if re.fullmatch(r"(struct|union|enum)\s+\w+", stmt):
        return None     # a forward declaration
    if "{" in stmt:
        return None     # a struct/enum/union or an inline function body
    paren = stmt.find("(")
    if paren >= 0:
        m = re.match(r"\(\s*\*\s*(" + IDENT.pattern + r")", stmt[paren:])
        if m:
            return m.group(1)             # a function pointer variable
        name = IDENT.findall(stmt[:paren])
        return name[-1] if name else None
    decl = re.split(r"[\[=]", stmt)[0]
    names = IDENT.findall(decl)
    return names[-1] if names else None


def header_symbols(root):
    names = {}
    for path in sorted(glob.glob(os.path.join(root, "include", "arrayfs",
                                              "*.h"))):
        with open(path, encoding="utf-8") as f:
            text = strip_attributes(strip_preprocessor(
                strip_comments(f.read())))
        for stmt in top_level_statements(text):
            name = declared_name(stmt)
            if name:
                names[name] = os.path.basename(path)
    return names


def exported_symbols(lib):
    r = subprocess.run([NM, "-D", "--defined-only", lib],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       check=True, timeout=60)
    names = set()
    for line in r.stdout.decode().splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[1] == "A":   # "A": a version node name
            continue
        names.add(parts[2].split("@")[0])
    return names


class TestAbi(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.declared = header_symbols(SOURCE_ROOT)
        cls.exported = exported_symbols(LIB)

    def test_parser_sees_the_headers(self):
        # a parser that finds nothing would let every check below pass
        for name in ("af_npy_parse", "af_status_str", "af_zarr_text",
                     "af_sidecar_text", "af_error_set"):
            self.assertIn(name, self.declared)

    def test_nothing_private_is_exported(self):
        extra = sorted(self.exported - set(self.declared))
        self.assertEqual(extra, [],
                         "exported by %s but declared in no public header"
                         % os.path.basename(LIB))

    def test_everything_declared_is_exported(self):
        missing = sorted("%s (%s)" % (n, self.declared[n])
                         for n in set(self.declared) - self.exported)
        self.assertEqual(missing, [],
                         "declared in include/arrayfs but not exported: "
                         "add to src/codec/libarrayfs.map")


if __name__ == "__main__":
    if not LIB:
        sys.exit("AF_ABI_LIB is not set")
    unittest.main()
