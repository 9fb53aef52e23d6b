#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Everyday tools on the mount: cat, od, dd, cp, tail, mmap; exact stat."""
import mmap
import os
import shutil
import stat
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import numpy as np  # noqa: E402

import expect  # noqa: E402
import mountlib  # noqa: E402
from mountlib import MountCase, TempDir, fixtures, read  # noqa: E402

# Source files of the temp source folder: (name, copied from, mode, mtime ns)
FILES = [
    ("c_f8.npy", ("big", "c_f8.npy"), 0o640, 1600000000123456789),
    ("fortran_i4_be.npy", ("big", "fortran_i4_be.npy"), 0o644, 1500000000000000001),
    ("deflated.npz", ("big", "deflated.npz"), 0o600, 1400000000987654321),
    ("shepplogan.ra", ("corpus", "ra", "shepplogan.ra"), 0o444, 1300000000000000000),
    ("notes.txt", ("corpus", "readme.txt"), 0o755, 1200000000500000000),
    ("sub/leaf.bin", ("corpus", "sub", "deeper", "leaf.bin"), 0o604, 1100000000000000007),
]
SUB_MODE, SUB_MTIME = 0o750, 1000000000000000042


def make_source():
    src = TempDir()
    os.mkdir(src.join("sub"))
    for name, frm, mode, mtime in FILES:
        shutil.copyfile(fixtures(*frm), src.join(name))
        os.chmod(src.join(name), mode)
        os.utime(src.join(name), ns=(mtime, mtime))
    os.chmod(src.join("sub"), SUB_MODE)
    os.utime(src.join("sub"), ns=(SUB_MTIME, SUB_MTIME))
    return src


class ToolsTest(MountCase):
    make_source = staticmethod(make_source)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tree = expect.expected_tree(cls.src.path)
        cls.tmp = TempDir("arrayfs-out-")

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls.tmp.close()

    def expected(self, rel):
        arr_rel, name = rel.rsplit("/", 1)
        data = self.tree[arr_rel].array.exact(name)
        self.assertIsNotNone(data, rel)
        return data

    # the files the tools read: npy views are exact (B.npy of a .ra is not)
    TARGETS = ["c_f8.npy/data", "c_f8.npy/c_f8.npy", "c_f8.npy/c_f8.ra",
               "fortran_i4_be.npy/fortran_i4_be.ra", "deflated.npz/big.npy/data",
               "deflated.npz/big.npy/big.ra", "shepplogan.ra/data",
               "shepplogan.ra/shepplogan.ra"]

    def run_tool(self, *cmd):
        r = subprocess.run(cmd, capture_output=True, timeout=120)
        self.assertEqual(r.returncode, 0, "%s: %s" % (cmd, r.stderr))
        return r.stdout

    def test_cat_gives_every_byte(self):
        for rel in self.TARGETS:
            with self.subTest(rel=rel):
                out = self.run_tool("cat", self.mp(rel))
                expect.assert_bytes(out, self.expected(rel), rel)

    def test_od_ranges_match_od_of_expected_bytes(self):
        for rel in ("c_f8.npy/c_f8.ra", "deflated.npz/big.npy/big.npy",
                    "fortran_i4_be.npy/fortran_i4_be.ra"):
            want = self.expected(rel)
            ref = self.tmp.join("ref.bin")
            with open(ref, "wb") as f:
                f.write(want)
            for skip, count in ((0, 200), (40, 64), (100, 5000), (len(want) - 30, 100),
                                (len(want) // 2 + 3, 777)):
                with self.subTest(rel=rel, skip=skip, count=count):
                    args = ["od", "-A", "d", "-t", "x1", "-j", str(skip), "-N", str(count)]
                    self.assertEqual(self.run_tool(*args, self.mp(rel)),
                                     self.run_tool(*args, ref))

    def test_dd_with_skip_count_and_block_size(self):
        rel = "deflated.npz/big.npy/big.ra"
        want = self.expected(rel)
        for bs, skip, count in ((4096, 3, 5), (1, 12345, 777), (65536, 10, 3),
                                (1 << 20, 0, 100), (512, 7, 1)):
            with self.subTest(bs=bs, skip=skip, count=count):
                out = self.run_tool("dd", "if=" + self.mp(rel), "bs=%d" % bs,
                                    "skip=%d" % skip, "count=%d" % count, "status=none")
                expect.assert_bytes(out, want[bs * skip:bs * (skip + count)], rel)

    def test_cp_copies_exact_bytes(self):
        for rel in self.TARGETS:
            with self.subTest(rel=rel):
                dst = self.tmp.join("copy")
                subprocess.run(["cp", self.mp(rel), dst], check=True, timeout=120)
                expect.assert_bytes(read(dst), self.expected(rel), rel)

    def test_cp_r_copies_a_whole_array_directory(self):
        dst = self.tmp.join("tree-copy")
        subprocess.run(["cp", "-r", self.mp("c_f8.npy"), dst], check=True, timeout=120)
        arr = self.tree["c_f8.npy"].array
        self.assertEqual(sorted(os.listdir(dst)), sorted(arr.names))
        for name in arr.files:
            for check in arr.checks[name]:
                check(read(os.path.join(dst, name)))

    def test_tail_c_gives_the_last_bytes(self):
        for rel in self.TARGETS:
            for n in (1, 100, 70000):
                with self.subTest(rel=rel, n=n):
                    out = self.run_tool("tail", "-c", str(n), self.mp(rel))
                    expect.assert_bytes(out, self.expected(rel)[-n:], rel)

    def test_mmap_of_data_whole_and_slice(self):
        for rel in ("c_f8.npy/data", "deflated.npz/big.npy/data", "fortran_i4_be.npy/data"):
            want = self.expected(rel)
            with self.subTest(rel=rel), open(self.mp(rel), "rb") as f:
                with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                    self.assertEqual(len(mm), len(want))
                    expect.assert_bytes(mm[:], want, rel)
                    expect.assert_bytes(mm[5000:70001], want[5000:70001], rel)
                off = 2 * mmap.ALLOCATIONGRANULARITY
                with mmap.mmap(f.fileno(), 10000, access=mmap.ACCESS_READ, offset=off) as mm:
                    expect.assert_bytes(mm[:], want[off:off + 10000], rel)

    def test_numpy_load_with_mmap_mode_of_npy_view(self):
        a = np.load(self.mp("c_f8.npy", "c_f8.npy"), mmap_mode="r")
        b = np.load(fixtures("big", "c_f8.npy"))
        self.assertTrue(np.array_equal(a, b))
        del a

    def test_stat_sizes_are_exact(self):
        for rel, arr in expect.arrays(self.tree):
            for name in arr.files:
                with self.subTest(rel=rel, file=name):
                    path = self.mp(rel, name)
                    self.assertEqual(os.stat(path).st_size, len(read(path)))
        for rel in ("notes.txt", "sub/leaf.bin"):
            self.assertEqual(os.stat(self.mp(rel)).st_size, os.stat(self.src.join(rel)).st_size)

    def test_mtimes_are_the_source_files(self):
        for name, _, _, mtime in FILES:
            with self.subTest(rel=name):
                self.assertEqual(os.lstat(self.mp(name)).st_mtime_ns, mtime)
            if name.endswith((".npy", ".ra")):
                for view in os.listdir(self.mp(name)):
                    with self.subTest(rel=name, file=view):
                        self.assertEqual(os.lstat(self.mp(name, view)).st_mtime_ns, mtime)
        self.assertEqual(os.lstat(self.mp("sub")).st_mtime_ns, SUB_MTIME)

    def test_modes_are_the_sources_with_write_bits_cleared(self):
        for name, _, mode, _ in FILES:
            st = os.lstat(self.mp(name))
            with self.subTest(rel=name):
                self.assertEqual(st.st_mode & 0o222, 0, oct(st.st_mode))
                if name.endswith((".npy", ".ra", ".npz")):
                    self.assertTrue(stat.S_ISDIR(st.st_mode))
                else:
                    self.assertTrue(stat.S_ISREG(st.st_mode))
                    self.assertEqual(stat.S_IMODE(st.st_mode), mode & ~0o222)
            if name.endswith((".npy", ".ra")):
                for view in os.listdir(self.mp(name)):
                    with self.subTest(rel=name, file=view):
                        st = os.lstat(self.mp(name, view))
                        if view.endswith(".zarr"):  # a folder, like the array's
                            self.assertTrue(stat.S_ISDIR(st.st_mode))
                            self.assertEqual(st.st_mode, os.lstat(self.mp(name)).st_mode)
                            continue
                        self.assertTrue(stat.S_ISREG(st.st_mode))
                        self.assertEqual(stat.S_IMODE(st.st_mode), mode & ~0o222)
        st = os.lstat(self.mp("sub"))
        self.assertTrue(stat.S_ISDIR(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), SUB_MODE & ~0o222)

    def test_inode_numbers_are_stable(self):
        rels = ["c_f8.npy", "c_f8.npy/data", "deflated.npz/big.npy/big.ra", "sub/leaf.bin"]
        first = {rel: os.lstat(self.mp(rel)).st_ino for rel in rels}
        mountlib.walk(self.m.mountpoint)
        for rel in rels:
            with self.subTest(rel=rel):
                self.assertEqual(os.lstat(self.mp(rel)).st_ino, first[rel])
        self.assertEqual(len(set(first.values())), len(rels), "inode numbers must differ")


if __name__ == "__main__":
    mountlib.main()
