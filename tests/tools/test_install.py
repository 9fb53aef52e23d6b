#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`meson install` into a DESTDIR: every file lands, a C program builds
against the installed headers through pkg-config and runs, and every man
page renders without a groff warning."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from toolslib import BUILD_ROOT, SOURCE_ROOT, fixture, run  # noqa: E402

# The arrayfs(3) EXAMPLES program, kept in step with the man page.
PROGRAM = r"""
#include <arrayfs/arrayfs.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

int main(int argc, char **argv)
{
    struct stat st;
    af_source src;
    af_array a;
    af_error err;
    int fd = open(argv[1], O_RDONLY);

    if (argc < 2 || fd < 0 || fstat(fd, &st) != 0)
        return 1;
    af_source_init_fd(&src, fd, 0, st.st_size);
    if (af_npy_parse(&src, &a, &err) != AF_OK) {
        fprintf(stderr, "%s (at byte %llu)\n", err.msg,
                (unsigned long long)err.offset);
        return 1;
    }
    for (unsigned i = 0; i < a.ndim; i++)
        printf("%llu ", (unsigned long long)a.shape[i]);
    printf("%s\n", a.descr);
    af_array_free(&a);
    printf("%s %s\n", ARRAYFS_VERSION, af_status_str(AF_E_TRUNCATED));
    return 0;
}
"""

MAN_PAGES = ["man1/arrayfs.1", "man1/arrayinfo.1", "man1/arrayconv.1",
             "man1/arrayrefs.1",
             "man3/arrayfs.3"]


class TestInstall(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory()
        cls.dest = os.path.join(cls._tmp.name, "dest")
        r = run(["meson", "install", "-C", BUILD_ROOT, "--no-rebuild",
                 "--destdir", cls.dest], timeout=300)
        cls.install_log = r.stdout.decode() + r.stderr.decode()
        cls.install_rc = r.returncode
        r = run(["meson", "introspect", BUILD_ROOT, "--buildoptions"])
        opts = {o["name"]: o["value"] for o in json.loads(r.stdout)}
        prefix = opts["prefix"]

        def under(key):
            # Relative option values are relative to the prefix.
            return os.path.join(cls.dest + prefix, opts[key]) \
                if not os.path.isabs(opts[key]) else cls.dest + opts[key]
        cls.bindir = under("bindir")
        cls.libdir = under("libdir")
        cls.includedir = under("includedir")
        cls.mandir = under("mandir")
        cls.datadir = under("datadir")

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def test_install_succeeds(self):
        self.assertEqual(self.install_rc, 0, self.install_log)

    def test_binaries(self):
        for prog in ["arrayfs", "arrayinfo", "arrayconv", "arrayrefs"]:
            with self.subTest(prog=prog):
                path = os.path.join(self.bindir, prog)
                self.assertTrue(os.access(path, os.X_OK), path)
                r = run([path, "--version"], env=dict(
                    os.environ, LD_LIBRARY_PATH=self.libdir))
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn(prog.encode(), r.stdout)

    def test_every_public_header(self):
        src = sorted(os.path.basename(p) for p in glob.glob(
            os.path.join(SOURCE_ROOT, "include", "arrayfs", "*.h")))
        self.assertIn("arrayfs.h", src)
        got = sorted(os.listdir(os.path.join(self.includedir, "arrayfs")))
        self.assertEqual(got, src)

    def test_library_and_pkg_config_file(self):
        libs = glob.glob(os.path.join(self.libdir, "libarrayfs.*"))
        self.assertTrue(libs, os.listdir(self.libdir))
        self.assertTrue(os.path.isfile(
            os.path.join(self.libdir, "pkgconfig", "arrayfs.pc")))

    def test_man_pages_and_unit_example(self):
        for page in MAN_PAGES:
            self.assertTrue(os.path.isfile(os.path.join(self.mandir, page)),
                            page)
        unit = os.path.join(self.datadir, "doc", "arrayfs", "examples",
                            "mnt-arrays.mount")
        self.assertTrue(os.path.isfile(unit))

    def test_c_program_builds_with_pkg_config_and_runs(self):
        env = dict(os.environ,
                   PKG_CONFIG_PATH=os.path.join(self.libdir, "pkgconfig"),
                   PKG_CONFIG_SYSROOT_DIR=self.dest)
        r = run(["pkg-config", "--static", "--cflags", "--libs", "arrayfs"],
                env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        flags = r.stdout.decode().split()
        self.assertIn("-I" + self.includedir, flags)
        tmp = self._tmp.name
        c = os.path.join(tmp, "shape.c")
        exe = os.path.join(tmp, "shape")
        with open(c, "w") as f:
            f.write(PROGRAM)
        # a sanitized build installs a sanitized library: link its runtime
        san = os.environ.get("AF_SANITIZE", "none")
        san_flags = [] if san in ("", "none") else ["-fsanitize=" + san]
        r = run(["cc", "-std=gnu11", "-Wall", "-Werror", "-o", exe, c]
                + san_flags + flags)
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        r = run([exe, fixture("good", "u8.npy")],
                env=dict(os.environ, LD_LIBRARY_PATH=self.libdir))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.decode().splitlines(),
                         ["16 16 |u1", "0.1.0 truncated"])

    def test_man_pages_render_without_warnings(self):
        env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8")
        for page in MAN_PAGES:
            with self.subTest(page=page):
                r = run(["man", "--warnings", "-l",
                         os.path.join(self.mandir, page)], env=env)
                self.assertEqual(r.returncode, 0)
                self.assertEqual(r.stderr.decode(), "")
                out = r.stdout.decode()
                for section in ["NAME", "SYNOPSIS", "DESCRIPTION",
                                "SEE ALSO"]:
                    self.assertIn("\n" + section + "\n", out)
                if page.startswith("man1"):
                    for section in ["OPTIONS", "EXIT STATUS", "EXAMPLES"]:
                        self.assertIn("\n" + section + "\n", out)

    def test_systemd_unit_verifies(self):
        tool = shutil.which("systemd-analyze")
        if tool is None:
            self.skipTest("systemd-analyze is not installed")
        unit = os.path.join(SOURCE_ROOT, "src", "systemd", "mnt-arrays.mount")
        r = run([tool, "verify", "--man=no", unit])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr.decode(), "")


if __name__ == "__main__":
    unittest.main(verbosity=2)
