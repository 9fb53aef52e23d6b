#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A `.stack` of 200,000 tiny arrays: its data read whole (1 MiB reads) is
every member's bytes in natural order, and the daemon stays within its
bounds while it serves it: fewer than 1,000 open descriptors and under
64 MiB resident (more under AddressSanitizer, whose quarantine keeps freed
memory)."""
import io
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import numpy as np  # noqa: E402

import mountlib  # noqa: E402
from mountlib import MountCase, TempDir  # noqa: E402
from procinfo import fd_count, fd_targets, rss_kib, sanitized  # noqa: E402

N = 200_000
SHAPE = (3, 5)          # 15 bytes a member: a 1 MiB read spans ~70,000
FD_BOUND = 1000
RSS_BOUND_MIB = 64
RSS_BOUND_ASAN_MIB = 512


def member(k):
    return ((np.arange(15, dtype=np.uint32) * 7 + k) % 251).astype(np.uint8) \
        .reshape(SHAPE)


def make_source():
    src = TempDir()
    os.mkdir(src.join("many"))
    f = io.BytesIO()
    np.save(f, member(0))
    head = f.getvalue()[:-15]
    for k in range(N):
        with open(src.join("many", "x%d.npy" % k), "wb") as out:
            out.write(head + member(k).tobytes())
    return src


class StackBigTest(MountCase):
    make_source = staticmethod(make_source)

    def test_read_whole_within_bounds(self):
        pid = self.m.proc.pid
        bound = RSS_BOUND_ASAN_MIB if sanitized(pid) else RSS_BOUND_MIB
        with open(self.mp("many", ".stack", "shape")) as f:
            self.assertEqual(f.read(), "%d 3 5\n" % N)
        peak_fds = peak_rss = 0
        parts = []
        with open(self.mp("many", ".stack", "data"), "rb", buffering=0) as f:
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                parts.append(b)
                peak_fds = max(peak_fds, fd_count(pid))
                peak_rss = max(peak_rss, rss_kib(pid))
        data = b"".join(parts)
        self.assertEqual(len(data), N * 15)
        # natural order: x0, x1, ..., x199999
        want = np.stack([member(k) for k in range(N)]).tobytes()
        if data != want:
            at = next(i for i in range(len(want)) if data[i] != want[i])
            self.fail("byte %d differs (member %d)" % (at, at // 15))
        peak_fds = max(peak_fds, fd_count(pid))
        peak_rss = max(peak_rss, rss_kib(pid))
        self.assertLess(peak_fds, FD_BOUND, fd_targets(pid))
        self.assertLess(peak_rss, bound * 1024, "RSS %d KiB" % peak_rss)
        with open(self.mp("many", ".stack", "names")) as f:
            names = f.read().split("\n")
        self.assertEqual(names[:3], ["x0.npy", "x1.npy", "x2.npy"])
        self.assertEqual(names[N - 1], "x%d.npy" % (N - 1))


if __name__ == "__main__":
    import unittest
    unittest.main(verbosity=2)
