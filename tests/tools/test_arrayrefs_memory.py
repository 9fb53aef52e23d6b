#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""arrayrefs writes the references of a big folder in bounded memory: the
folder's model keeps names, not headers (each is read as its array is
written), and the JSON is streamed. Over 200,000 tiny arrays its peak RSS
(wait4's ru_maxrss) may grow at most BYTES_PER_ARRAY an array past its
RSS over one array.
(Headers kept per array were about 540 bytes an array.)
"""
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from toolslib import run  # noqa: E402

ARRAYREFS = os.environ.get("ARRAYREFS_BIN", "arrayrefs")
PEAK_RSS = os.environ.get("PEAK_RSS_BIN", "peak_rss")
ARRAYS = 200_000
# names in the arena, an entry, a child and the walk's order: about 150
BYTES_PER_ARRAY = 200


def npy_bytes():
    """A one-byte .npy, written by hand: the fastest writer."""
    header = b"{'descr': '|u1', 'fortran_order': False, 'shape': (1,), }"
    header += b" " * (127 - 10 - len(header)) + b"\n"
    return (b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") +
            header + b"\x07")


def fill(folder, n):
    """@p n arrays: one file and hard links to it (a folder of n names in
    a second, and no data pages on tmpfs)."""
    with open(os.path.join(folder, "0.npy"), "wb") as f:
        f.write(npy_bytes())
    fd = os.open(folder, os.O_RDONLY)
    try:
        for i in range(1, n):
            os.link("0.npy", "%x.npy" % i, src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        os.close(fd)


def peak_rss_kib(folder):
    """arrayrefs' exit status and its peak RSS in KiB, measured by
    peak_rss (a child of Python would count Python's pages)."""
    p = run([PEAK_RSS, ARRAYREFS, "-o", os.devnull, folder])
    lines = p.stdout.decode().split()
    return p, int(lines[-1]) if lines else 0


@unittest.skipIf(os.environ.get("AF_SANITIZE", "none") != "none",
                 "a sanitizer's shadow memory is no measure of the tool's")
class TestMemory(unittest.TestCase):
    def setUp(self):
        shm = "/dev/shm"
        where = shm if os.access(shm, os.W_OK) else None
        self.tmp = tempfile.mkdtemp(prefix="arrayrefs-rss-", dir=where)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_peak_rss_grows_by_at_most_a_bound_an_array(self):
        one = os.path.join(self.tmp, "one")
        many = os.path.join(self.tmp, "many")
        os.mkdir(one)
        os.mkdir(many)
        fill(one, 1)
        fill(many, ARRAYS)
        p, base = peak_rss_kib(one)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        p, peak = peak_rss_kib(many)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        per_array = (peak - base) * 1024 / ARRAYS
        self.assertLessEqual(per_array, BYTES_PER_ARRAY,
                             "peak RSS %d KiB over one array's %d KiB: "
                             "%.0f bytes an array" % (peak, base, per_array))
        # and the document names every array
        out = os.path.join(self.tmp, "refs.json")
        p = run([ARRAYREFS, "-o", out, many])
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        with open(out, "rb") as f:
            zarrays = sum(b'/.zarray"' in line for line in f)
        self.assertEqual(zarrays, ARRAYS)


if __name__ == "__main__":
    unittest.main(verbosity=2)
