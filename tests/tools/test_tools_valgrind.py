#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""arrayinfo, arrayconv and arrayrefs under valgrind: no invalid access, no leak, on
good and broken input. valgrind is a dependency of the tests (scripts/lib/deps.sh
test installs it): without it these tests fail, they never skip."""
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from toolslib import ARRAYCONV, ARRAYINFO, REFERENCE, fixture, run  # noqa: E402

ARRAYREFS = os.environ.get("ARRAYREFS_BIN", "arrayrefs")

VALGRIND = shutil.which("valgrind")
ERR = 99  # valgrind's exit status when it found an error


def vg(args):
    return run([VALGRIND, "-q", "--leak-check=full",
                "--errors-for-leak-kinds=definite,indirect,possible",
                f"--error-exitcode={ERR}", *args], timeout=600)


class TestValgrind(unittest.TestCase):
    def setUp(self):
        self.assertIsNotNone(VALGRIND, "valgrind is not installed")

    def test_arrayinfo_good_and_broken(self):
        r = vg([ARRAYINFO, "--json", fixture("good", "c_order.npy"),
                fixture("good", "struct.npy"), fixture("good", "deflated.npz"),
                fixture("broken", "bad-member.npz"),
                fixture("broken", "truncated-data.npy"),
                fixture("broken", "cut.npz"),
                os.path.join(REFERENCE, "mnist_8_z.ra"), "/nonexistent"])
        self.assertEqual(r.returncode, 1, r.stderr.decode())

    def test_arrayinfo_zarr_group(self):
        # the good and broken folders: npz sub-groups, object arrays and
        # broken headers left out; one file; a path that is no group
        for path, status in [(fixture("good"), 0), (fixture("broken"), 0),
                             (fixture("good", "stored.npz"), 0),
                             (fixture("good", "fortran.npy"), 0),
                             ("/nonexistent", 1)]:
            with self.subTest(path=path):
                r = vg([ARRAYINFO, "--zarr-group", path])
                self.assertEqual(r.returncode, status, r.stderr.decode())

    def test_arrayconv_each_direction(self):
        with tempfile.TemporaryDirectory() as tmp:
            for src, out in [(fixture("good", "bigendian.npy"), "a.ra"),
                             (os.path.join(REFERENCE, "mnist_8_z.ra"), "b.npy"),
                             (fixture("good", "deflated.npz") + ":x", "c.ra"),
                             (fixture("good", "stored.npz") + ":y", "d.npy")]:
                with self.subTest(src=src):
                    r = vg([ARRAYCONV, src, os.path.join(tmp, out)])
                    self.assertEqual(r.returncode, 0, r.stderr.decode())
            for src in [fixture("broken", "truncated-data.npy"),
                        fixture("good", "stored.npz") + ":missing"]:
                with self.subTest(src=src):
                    r = vg([ARRAYCONV, src, os.path.join(tmp, "x.ra")])
                    self.assertEqual(r.returncode, 1, r.stderr.decode())

    def test_arrayrefs_writes_and_verifies(self):
        # the broken folder: headers left out (status 3); small chunks and
        # inline bounds, so tails go inline and get grids of their own
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "refs.json")
            for path, status in [(fixture("good"), 3), (fixture("broken"), 3),
                                 (fixture("good", "stored.npz"), 0),
                                 ("/nonexistent", 1)]:
                with self.subTest(path=path):
                    r = vg([ARRAYREFS, "--chunk", "100", "--inline-max", "32",
                            "--mount-url", "http://host/m", "-o", out, path])
                    self.assertEqual(r.returncode, status, r.stderr.decode())
            r = vg([ARRAYREFS, "--verify", out])
            self.assertEqual(r.returncode, 0, r.stderr.decode())


    def test_arrayrefs_headers_read_ahead(self):
        # a folder's headers are read on a second thread: taken in full,
        # and dropped when the walk stops first (a sub-group nests too
        # deep: "a" sorts before the arrays); memcheck, then helgrind
        import numpy as np
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "src")
            os.makedirs(src)
            for i in range(100):
                np.save(os.path.join(src, "b%03d.npy" % i), np.arange(i + 1))
            out = os.path.join(tmp, "refs.json")
            r = vg([ARRAYREFS, "-o", out, src])
            self.assertEqual(r.returncode, 0, r.stderr.decode())
            r = run([VALGRIND, "-q", "--tool=helgrind",
                     f"--error-exitcode={ERR}", ARRAYREFS, "-o", out, src],
                    timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr.decode())
            os.makedirs(os.path.join(src, *["a"] * 66))
            r = vg([ARRAYREFS, "-o", out, src])
            self.assertEqual(r.returncode, 1, r.stderr.decode())
            self.assertIn(b"nest deeper", r.stderr)

if __name__ == "__main__":
    unittest.main(verbosity=2)
