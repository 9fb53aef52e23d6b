#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""An LZ4-compressed .ra that decodes to more than the old 1 GiB cap (and
five times the default decoded-data budget): `data` and `B.npy` read right
at random offsets, backwards and in one sequential pass, judged by numpy,
while the daemon's memory stays within the LZ4 index's bound (access
points and a few decoded blocks, af_lz4.h), far below the decoded size.

The array is a function of the element index (stretches of zeros and of
4-bit noise), so any part of it is computed again alone; liblz4
(python-lz4's lz4.block: the reference RawArray library's call) makes the
block once."""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import lz4.block  # noqa: E402
import numpy as np  # noqa: E402

import expect  # noqa: E402
import mountlib  # noqa: E402
from mountlib import MountCase, TempDir  # noqa: E402
from procinfo import rss_kib, sanitized  # noqa: E402

SIZE = (5 << 28) + 12345        # uint8 elements: 1.25 GiB and a bit
RSS_BOUND_MIB = 96              # af_lz4_index_bound(SIZE) is 27 MiB
READS = 300
STRETCH = 1 << 17               # the array's kind changes every 128 KiB
# 4-bit noise that repeats only every PERIOD bytes, farther than an LZ4
# match reaches (64 KiB): short matches and literals, as in measured data
PERIOD = 1000003
_NOISE = np.random.default_rng(1).integers(0, 16, PERIOD, dtype=np.uint8)
NOISE = np.concatenate([_NOISE, _NOISE[:STRETCH]])  # a stretch never wraps


def values(lo, hi):
    """Elements [lo, hi) of the array: by 128 KiB stretches, zeros, noise,
    and noise plus the stretch's number."""
    out = np.empty(hi - lo, dtype=np.uint8)
    at = lo
    while at < hi:
        s = at // STRETCH
        end = min(hi, (s + 1) * STRETCH)
        part = out[at - lo:end - lo]
        if s % 3 == 0:
            part[:] = 0
        else:
            part[:] = NOISE[at % PERIOD:at % PERIOD + end - at]
            if s % 3 == 2:
                part += np.uint8(s % 256)
        at = end
    return out


def make_source():
    src = TempDir()
    raw = bytearray(SIZE)
    step = 64 << 20
    for lo in range(0, SIZE, step):
        hi = min(SIZE, lo + step)
        raw[lo:hi] = values(lo, hi).tobytes()
    block = lz4.block.compress(raw, mode="default", store_size=False)
    del raw
    head = struct.pack("<7Q", expect.RA_MAGIC, 2, 2, 1, len(block), 1, SIZE)
    with open(src.join("big_z.ra"), "wb") as f:
        f.write(head + block)
    return src


class Lz4BigTest(MountCase):
    make_source = staticmethod(make_source)

    def read_at(self, entry, off, n):
        fd = os.open(self.mp("big_z.ra", entry), os.O_RDONLY)
        try:
            return os.pread(fd, n, off)
        finally:
            os.close(fd)

    def test_data_and_npy_read_right_with_bounded_memory(self):
        pid = self.m.proc.pid
        rss0 = rss_kib(pid)
        self.assertEqual(os.stat(self.mp("big_z.ra", "data")).st_size, SIZE)
        rng = np.random.default_rng(5)
        # the end first (the whole block walked at once), then anywhere
        offs = [SIZE - 1, SIZE - 5000, (1 << 30) + 7] + \
            [int(x) for x in rng.integers(0, SIZE, READS)]
        cases = [(o, int(min(SIZE - o, rng.integers(1, 1 << 16)))) for o in offs]

        def check(case):
            off, n = case
            got = self.read_at("data", off, n)
            self.assertEqual(got, values(off, off + n).tobytes(), "bytes differ")
        mountlib.check_all(self, cases, check, label=lambda c: "data [%d, +%d)" % c)
        after_random = rss_kib(pid)

        # B.npy: numpy's header of the same array, then the same bytes
        with open(self.mp("big_z.ra", "big_z.npy"), "rb") as f:
            self.assertEqual(np.lib.format.read_magic(f), (1, 0))
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            head = f.tell()
        self.assertEqual((shape, dtype), ((SIZE,), np.dtype("u1")))
        self.assertEqual(os.stat(self.mp("big_z.ra", "big_z.npy")).st_size, head + SIZE)
        mountlib.check_all(
            self, cases[:60],
            lambda c: self.assertEqual(self.read_at("big_z.npy", head + c[0], c[1]),
                                       values(c[0], c[0] + c[1]).tobytes()),
            label=lambda c: "B.npy data [%d, +%d)" % c)

        # every byte, in order
        step = 8 << 20
        with open(self.mp("big_z.ra", "data"), "rb") as f:
            for lo in range(0, SIZE, step):
                got = f.read(step)
                if got != values(lo, min(SIZE, lo + step)).tobytes():
                    self.fail("sequential read differs in [%d, +%d)" % (lo, step))
            self.assertEqual(f.read(1), b"")
        grown = (max(after_random, rss_kib(pid)) - rss0) // 1024
        # AddressSanitizer keeps up to 256 MiB of freed memory in
        # quarantine, and shadows what it touches
        bound = RSS_BOUND_MIB + (320 if sanitized(pid) else 0)
        print("\n%.2f GiB LZ4 .ra: %d random reads, B.npy, a sequential pass; "
              "daemon RSS +%d MiB (bound %d)" % (SIZE / (1 << 30), len(cases), grown,
                                                 bound), file=sys.stderr)
        self.assertLess(grown, bound, "the daemon kept more than the LZ4 index's bound")


if __name__ == "__main__":
    mountlib.main()
