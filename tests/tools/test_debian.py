#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""debian/: `dpkg-buildpackage -b -us -uc` on a copy of the source tree
builds arrayfs, libarrayfs0 and libarrayfs-dev; each .deb holds what it
must (dpkg -c), lintian reports no error, the extracted daemon runs, and a
C program builds through the extracted pkg-config file and runs against
the extracted shared library. Everything happens under one temporary
folder, removed at the end even when a step fails."""
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_abi  # noqa: E402  (the exported and the declared symbols)
import test_install  # noqa: E402  (its PROGRAM, the arrayfs(3) example)
from toolslib import BUILD_ROOT, SOURCE_ROOT, fixture, run  # noqa: E402

PACKAGES = ["arrayfs", "libarrayfs0", "libarrayfs-dev"]


def source_files(root):
    """The files of the source tree as git sees them: tracked, plus
    untracked ones not ignored (work in progress the tree's meson.build may
    already name), minus tracked files deleted from the working tree.
    Falls back to every file but build folders when root is no git tree.

    usage: source_files(SOURCE_ROOT) -> sorted relative paths"""
    r = run(["git", "-C", root, "ls-files", "-z", "--cached", "--others",
             "--exclude-standard"])
    if r.returncode == 0:
        names = set(r.stdout.decode().split("\0")) - {""}
        return sorted(n for n in names
                      if os.path.lexists(os.path.join(root, n)))
    out = []
    for top, dirs, files in os.walk(root):
        rel = os.path.relpath(top, root)
        dirs[:] = [d for d in dirs if not (rel == "." and (
            d.startswith("build") or d.startswith("obj-") or d == ".git"))]
        out += [os.path.normpath(os.path.join(rel, f)) for f in files]
    return sorted(out)


def copy_tree(root, dest, names):
    """Copy the relative paths `names` from root to dest, symlinks as
    symlinks, modes kept."""
    for name in names:
        src = os.path.join(root, name)
        dst = os.path.join(dest, name)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.islink(src):
            os.symlink(os.readlink(src), dst)
        else:
            shutil.copy2(src, dst)


def build_env():
    """A plain environment for the package build: nothing of the test
    run's (sanitizer options, MALLOC_PERTURB_, CFLAGS, DEB_BUILD_OPTIONS)
    leaks into it, so debian/rules' own defaults are what is tested."""
    env = {k: os.environ[k] for k in ("PATH", "HOME", "TMPDIR")
           if k in os.environ}
    env["LC_ALL"] = "C.UTF-8"
    return env


class TestDebianPackages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        tmp = tempfile.TemporaryDirectory(prefix="af-deb-")
        cls.addClassCleanup(tmp.cleanup)
        cls.tmp = tmp.name
        cls.src = os.path.join(cls.tmp, "src")
        copy_tree(SOURCE_ROOT, cls.src, source_files(SOURCE_ROOT))
        r = subprocess.run(["dpkg-buildpackage", "-b", "-us", "-uc",
                            "-Jauto"], cwd=cls.src, env=build_env(),
                           timeout=1200, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        cls.build_rc = r.returncode
        cls.build_log = r.stdout.decode(errors="replace")
        r = run(["dpkg-parsechangelog", "-S", "Version"], cwd=cls.src)
        cls.version = r.stdout.decode().strip()
        r = run(["dpkg-architecture", "-q", "DEB_HOST_MULTIARCH"])
        cls.multiarch = r.stdout.decode().strip()
        r = run(["dpkg", "--print-architecture"])
        arch = r.stdout.decode().strip()
        cls.debs = {p: os.path.join(cls.tmp, "%s_%s_%s.deb" % (
            p, cls.version, arch)) for p in PACKAGES}
        cls.changes = os.path.join(cls.tmp, "arrayfs_%s_%s.changes" % (
            cls.version, arch))
        # every package in one root, as installed together
        cls.root = os.path.join(cls.tmp, "root")
        for deb in cls.debs.values():
            if os.path.isfile(deb):
                run(["dpkg", "-x", deb, cls.root])
        cls.libdir = os.path.join(cls.root, "usr", "lib", cls.multiarch)

    def setUp(self):
        self.assertEqual(self.build_rc, 0, self.build_log[-6000:])

    def contents(self, package):
        """Paths in a .deb (dpkg -c) -> the link target, or None."""
        r = run(["dpkg", "-c", self.debs[package]])
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        out = {}
        for line in r.stdout.decode().splitlines():
            name = line.split(None, 5)[5]
            target = None
            if " -> " in name:
                name, target = name.split(" -> ", 1)
            out[name[1:].rstrip("/") or "/"] = target
        return out

    def test_version_is_the_projects(self):
        r = run(["meson", "introspect", "--projectinfo", BUILD_ROOT])
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        self.assertEqual(self.version, json.loads(r.stdout)["version"])

    def test_the_build_runs_no_test_suite(self):
        # debian/rules skips it (it mounts FUSE), so no meson test ran
        self.assertNotIn("meson test", self.build_log)
        self.assertIn("-Dtests=false", self.build_log)

    def test_arrayfs_holds_daemon_tools_man_pages_examples_and_docs(self):
        got = self.contents("arrayfs")
        for prog in ["arrayfs", "arrayinfo", "arrayconv", "arrayrefs"]:
            self.assertIn("/usr/bin/" + prog, got)
            self.assertIn("/usr/share/man/man1/%s.1.gz" % prog, got)
        self.assertIn("/usr/share/doc/arrayfs/examples/mnt-arrays.mount", got)
        # the README links the sharing recipes the server configs go with
        self.assertIn("/usr/share/doc/arrayfs/SHARING.md.gz", got)
        examples = os.path.join(SOURCE_ROOT, "examples")
        for name in (os.listdir(examples) if os.path.isdir(examples) else []):
            self.assertIn("/usr/share/doc/arrayfs/examples/" + name, got)
        self.assertFalse([p for p in got if "/include/" in p or ".so" in p])

    def test_libarrayfs0_holds_the_versioned_shared_library(self):
        got = self.contents("libarrayfs0")
        lib = "/usr/lib/%s/" % self.multiarch
        self.assertIn(lib + "libarrayfs.so.%s" % self.version, got)
        self.assertEqual(got.get(lib + "libarrayfs.so.0"),
                         "libarrayfs.so.%s" % self.version)
        self.assertNotIn(lib + "libarrayfs.so", got)
        r = run(["objdump", "-p", os.path.join(self.libdir, "libarrayfs.so.0")])
        self.assertIn("SONAME               libarrayfs.so.0",
                      r.stdout.decode())

    def test_libarrayfs0_exports_what_the_dev_headers_declare(self):
        declared = test_abi.header_symbols(os.path.join(self.root, "usr"))
        self.assertIn("af_npy_parse", declared)
        exported = test_abi.exported_symbols(
            os.path.join(self.libdir, "libarrayfs.so.0"))
        self.assertEqual(sorted(exported ^ set(declared)), [])

    def test_dev_holds_headers_symlink_static_library_and_pc_file(self):
        got = self.contents("libarrayfs-dev")
        headers = sorted(os.path.basename(p) for p in got
                         if p.startswith("/usr/include/arrayfs/"))
        self.assertEqual(headers, sorted(os.listdir(
            os.path.join(SOURCE_ROOT, "include", "arrayfs"))))
        lib = "/usr/lib/%s/" % self.multiarch
        self.assertEqual(got.get(lib + "libarrayfs.so"), "libarrayfs.so.0")
        self.assertIn(lib + "libarrayfs.a", got)
        self.assertIn(lib + "pkgconfig/arrayfs.pc", got)
        self.assertIn("/usr/share/man/man3/arrayfs.3.gz", got)

    def test_daemon_links_the_shared_library(self):
        r = run(["dpkg-deb", "-f", self.debs["arrayfs"], "Depends"])
        depends = r.stdout.decode()
        self.assertIn("libarrayfs0", depends)
        self.assertIn("fuse3", depends)

    def test_lintian_reports_no_error(self):
        r = run(["lintian", "--tag-display-limit", "0", self.changes],
                timeout=600, env=build_env())
        out = r.stdout.decode() + r.stderr.decode()
        errors = [line for line in out.splitlines() if line.startswith("E:")]
        self.assertEqual(errors, [], out)
        self.assertEqual(r.returncode, 0, out)

    def test_extracted_daemon_runs(self):
        env = dict(build_env(), LD_LIBRARY_PATH=self.libdir)
        for prog in ["arrayfs", "arrayinfo", "arrayconv", "arrayrefs"]:
            with self.subTest(prog=prog):
                r = run([os.path.join(self.root, "usr", "bin", prog),
                         "--version"], env=env)
                self.assertEqual(r.returncode, 0, r.stderr.decode())
                self.assertIn(("%s %s" % (prog, self.version)).encode(),
                              r.stdout)

    def test_man_page_is_compressed_roff(self):
        page = os.path.join(self.root, "usr", "share", "man", "man1",
                            "arrayfs.1.gz")
        with gzip.open(page, "rt") as f:
            self.assertIn(".TH ARRAYFS 1", f.read())

    def test_c_program_builds_through_the_pc_file_and_runs(self):
        pcdir = os.path.join(self.libdir, "pkgconfig")
        env = dict(build_env(), PKG_CONFIG_PATH=pcdir)
        # the .pc file says prefix=/usr: point it at the extracted root
        prefix = "--define-variable=prefix=" + os.path.join(self.root, "usr")
        c = os.path.join(self.tmp, "shape.c")
        with open(c, "w") as f:
            f.write(test_install.PROGRAM)
        for how in ([], ["--static"]):
            with self.subTest(link=how or "shared"):
                r = run(["pkg-config", prefix] + how
                        + ["--cflags", "--libs", "arrayfs"], env=env)
                self.assertEqual(r.returncode, 0, r.stderr.decode())
                flags = r.stdout.decode().split()
                exe = os.path.join(self.tmp, "shape" + "".join(how))
                if how:
                    # the .a, not the .so beside it
                    flags = ["-l:libarrayfs.a" if f == "-larrayfs" else f
                             for f in flags]
                r = run(["cc", "-std=gnu11", "-Wall", "-Werror", "-o", exe,
                         c] + flags)
                self.assertEqual(r.returncode, 0, r.stderr.decode())
                needed = run(["objdump", "-p", exe]).stdout.decode()
                self.assertEqual("libarrayfs.so.0" in needed, not how)
                r = run([exe, fixture("good", "u8.npy")],
                        env=dict(env, LD_LIBRARY_PATH=self.libdir))
                self.assertEqual(r.returncode, 0, r.stderr.decode())
                self.assertEqual(r.stdout.decode().splitlines(),
                                 ["16 16 |u1",
                                  "%s truncated" % self.version])


if __name__ == "__main__":
    unittest.main(verbosity=2)
