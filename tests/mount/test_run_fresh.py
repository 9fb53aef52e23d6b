#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""scripts/run in a build dir of its own: set up without the tests (which
need packages only scripts/test installs), it builds the daemon and the
tools, and mounts; the build scripts/test makes there afterwards turns the
tests on. Slow: it builds arrayfs from nothing."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import mountlib  # noqa: E402
from mountlib import TempDir, is_mounted  # noqa: E402
from test_run_script import EXAMPLE, ROOT, RUN  # noqa: E402

BUILD = os.path.join(ROOT, "scripts", "lib", "build.sh")


def tests_option(builddir):
    r = subprocess.run(["meson", "introspect", "--buildoptions", builddir],
                       capture_output=True, text=True, check=True)
    return next(o["value"] for o in json.loads(r.stdout) if o["name"] == "tests")


class RunFreshTest(unittest.TestCase):
    def test_run_then_test_in_one_build_dir(self):
        builddir = tempfile.mkdtemp(prefix="arrayfs-build-", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, builddir, ignore_errors=True)
        os.rmdir(builddir)  # a build dir scripts/run has never seen
        mnt = TempDir("arrayfs-run-")
        self.addCleanup(mnt.close)
        env = dict(os.environ, AF_BUILDDIR=builddir)
        try:
            r = subprocess.run([RUN, EXAMPLE, mnt.path], capture_output=True, text=True,
                               env=env, timeout=900, stdin=subprocess.DEVNULL)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(is_mounted(mnt.path))
        finally:
            subprocess.run(["fusermount3", "-u", mnt.path], capture_output=True)
        self.assertIs(tests_option(builddir), False)
        for tool in ("arrayinfo", "arrayconv"):
            self.assertTrue(os.access(os.path.join(builddir, "src", "tools", tool), os.X_OK))
        self.assertFalse(os.path.exists(os.path.join(builddir, "tests")),
                         "scripts/run built something of the tests")

        r = subprocess.run([BUILD, builddir], capture_output=True, text=True,
                           timeout=1800, stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 0, r.stderr[-4000:])
        self.assertIs(tests_option(builddir), True)
        self.assertTrue(os.access(os.path.join(builddir, "tests", "unit", "test_npy"), os.X_OK))


if __name__ == "__main__":
    mountlib.main()
