#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Saved inflate indexes (-o index_dir): a fresh mount reads a deflated
member at random from its nearest access point (no pass from byte 0,
counted by the -d line a member logs when it closes); a tampered, foreign
or stale index is refused (one line) and the bytes stay numpy's."""
import io
import os
import re
import struct
import subprocess
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
import mountlib  # noqa: E402

SPAN = 3 << 19   # AF_INFLATE_SPAN
CACHE_BLOCK = 64 << 10  # AF_INFLATE_BLOCK: a cursor fills the one it ends in
BLOCK = 128 << 10  # what the kernel may read ahead per read
SIZE = 48 << 20
OFFSETS = [SIZE - 5000, 7 << 20, 40 << 20, 123456, 29 << 20, 17 << 20]


def npz_bytes(seed, names=("x",)):
    rng = np.random.default_rng(seed)
    arrays = {n: rng.integers(0, 16, SIZE, dtype=np.uint8) for n in names}
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue(), arrays


def arrayinfo_index(npz, cache):
    """arrayinfo --index's lines (the tool sits next to the daemon's build)."""
    r = subprocess.run([mountlib.arrayinfo_bin(), "--index", "--index-dir", cache, npz],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise AssertionError("arrayinfo --index failed: " + r.stderr)
    return r.stdout


def piece_bounds(path, offsets, readahead):
    """For each member offset: the output a read there may inflate with
    the index file @p path (format 2): from its nearest access point to
    the end of the piece holding the last byte the kernel may ask for (or
    of the cache block holding it, if later)."""
    with open(path, "rb") as f:
        b = f.read()
    assert struct.unpack_from("<I", b, 8)[0] == 2, "index format changed"
    size = struct.unpack_from("<Q", b, 16 + 9 * 8)[0]
    npoints, piece = struct.unpack_from("<QI", b, 112)
    at, outs = 128, [0]
    for _ in range(npoints):
        outs.append(struct.unpack_from("<Q", b, at + 8)[0])
        wlen, zlen = struct.unpack_from("<II", b, at + 20)
        at += 28 + (zlen or wlen)
    outs.append(size)
    bounds = []
    for off in offsets:
        last = min(off + readahead, size) - 1
        point = max(o for o in outs[:-1] if o <= off)
        end = min(min(o for o in outs if o > last),
                  (last // piece + 1) * piece)
        end = max(end, min((last // CACHE_BLOCK + 1) * CACHE_BLOCK, size))
        bounds.append(end - point)
    return bounds


def npy_header_len(a):
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, np.lib.format.header_data_from_array_1_0(a))
    return buf.tell()


def index_files(d):
    return sorted(f for f in os.listdir(d) if f.endswith(".afi"))


class IndexCase(unittest.TestCase):
    def setUp(self):
        self.src = mountlib.TempDir()
        self.addCleanup(self.src.close)
        self.cache = mountlib.TempDir(prefix="arrayfs-index-")
        self.addCleanup(self.cache.close)

    def write(self, seed, names=("x",)):
        buf, self.arrays = npz_bytes(seed, names)
        self.src.write({"a.npz": buf})

    def mount(self, *extra):
        m = mountlib.Mount(self.src.path, None,
                           ["-o", "index_dir=" + self.cache.path] + list(extra))
        self.addCleanup(m.cleanup)
        return m.start()

    def read_all(self, name="x"):
        with self.mount() as m:
            with open(m.path("a.npz", name + ".npy", "data"), "rb") as f:
                got = f.read()
        self.assertEqual(got, self.arrays[name].tobytes())

    def random_reads(self, name="x"):
        """Read OFFSETS in a fresh -d mount; the member's closing line."""
        with self.mount("-d") as m:
            want = self.arrays[name].tobytes()
            with open(m.path("a.npz", name + ".npy", "data"), "rb") as f:
                for off in OFFSETS:
                    f.seek(off)
                    self.assertEqual(f.read(4096), want[off:off + 4096],
                                     "bytes at %d" % off)
        log = m.log()
        lines = re.findall(r"member \d+ closed: (\d+) bytes inflated, "
                           r"saved index (used|not used)", log)
        self.assertTrue(lines, log[-3000:])
        return int(lines[-1][0]), lines[-1][1] == "used", log

    def test_fresh_mount_reads_from_the_saved_points(self):
        self.write(1)
        npz = self.src.join("a.npz")
        self.assertIn("x.npy: no index", arrayinfo_index(npz, self.cache.path))
        self.read_all()
        self.assertEqual(len(index_files(self.cache.path)), 1)
        self.assertRegex(arrayinfo_index(npz, self.cache.path),
                         r"x\.npy: index \S+\.afi, \d+ bytes, \d\d+ access points")
        # the saved index has points between the pass's (every 1.5 MiB):
        # its windows are sparse, so the budget holds more of them
        (name,) = index_files(self.cache.path)
        with open(os.path.join(self.cache.path, name), "rb") as f:
            npoints = struct.unpack_from("<Q", f.read(120), 112)[0]
        self.assertGreater(npoints, 2 * SIZE // SPAN)
        inflated, used, _ = self.random_reads()
        self.assertTrue(used)
        # each read: its nearest point to the end of the piece holding
        # the last byte of the kernel's read-ahead, not to its span's end;
        # a pass from 0 to the first offset alone is far more
        hdr = npy_header_len(self.arrays["x"])
        bounds = piece_bounds(os.path.join(self.cache.path, name),
                              [hdr + off for off in OFFSETS], 4096 + BLOCK)
        self.assertLessEqual(inflated, sum(bounds))
        self.assertLess(inflated, len(OFFSETS) * (2 * SPAN + 2 * BLOCK))
        self.assertLess(inflated, OFFSETS[0])

    def tampered(self, change):
        self.write(2)
        self.read_all()
        (name,) = index_files(self.cache.path)
        path = os.path.join(self.cache.path, name)
        with open(path, "rb") as f:
            buf = f.read()
        with open(path, "wb") as f:
            f.write(change(buf))
        self.assertIn("x.npy: index %s refused" % name,
                      arrayinfo_index(self.src.join("a.npz"), self.cache.path))
        inflated, used, log = self.random_reads()
        self.assertFalse(used)
        self.assertEqual(log.count("index file refused"), 1, log[-3000:])
        return inflated

    def test_flipped_byte_is_refused(self):
        def flip(b):
            b = bytearray(b)
            b[len(b) // 2] ^= 0x04
            return bytes(b)
        # refused, then rebuilt: the pass from 0 the random reads needed
        self.assertGreater(self.tampered(flip), OFFSETS[0])

    def test_truncated_index_is_refused(self):
        self.tampered(lambda b: b[:len(b) - 1000])

    def test_another_members_index_is_refused(self):
        self.write(3, names=("x", "y"))
        self.read_all("x")
        (x_file,) = index_files(self.cache.path)
        self.read_all("y")
        (y_file,) = set(index_files(self.cache.path)) - {x_file}
        os.replace(os.path.join(self.cache.path, x_file),
                   os.path.join(self.cache.path, y_file))
        _, used, log = self.random_reads("y")
        self.assertFalse(used)
        self.assertIn("stale", log)
        self.assertEqual(log.count("index file refused"), 1)

    def test_rewritten_member_ignores_the_stale_index(self):
        self.write(4)
        self.read_all()
        self.write(5)  # new bytes, a new file version: another key
        _, used, log = self.random_reads()
        self.assertFalse(used)
        self.assertNotIn("index file refused", log)

    def test_no_index_saves_nothing(self):
        self.write(6)
        with self.mount("-o", "no_index") as m:
            with open(m.path("a.npz", "x.npy", "data"), "rb") as f:
                self.assertEqual(f.read(), self.arrays["x"].tobytes())
        self.assertEqual(index_files(self.cache.path), [])


if __name__ == "__main__":
    unittest.main()
