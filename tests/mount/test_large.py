#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Offsets past 4 GiB: a sparse 5 GiB big-endian .npy (zeros with a few
marker words) read through data, B.npy and the byte-swapped B.ra."""
import io
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import numpy as np  # noqa: E402

import expect  # noqa: E402
import mountlib  # noqa: E402
from mountlib import MountCase, TempDir, read  # noqa: E402

COUNT = (5 << 30) // 4          # >i4 elements: 5 GiB of data
# element index -> value; each is a distinct 4-byte word, so a wrong offset
# or a missing swap shows
MARKERS = {0: 0x01020304, (1 << 30) - 1: 0x0A0B0C0D, 1 << 30: 0x11223344,
           (1 << 30) + 1027: 0x55667788, COUNT - 1: 0x7F6E5D4C}


def header():
    """The .npy header of big.npy: its length is where the data starts."""
    f = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        f, {"descr": ">i4", "fortran_order": False, "shape": (COUNT,)})
    return f.getvalue()


def make_source():
    src = TempDir()
    head = header()
    with open(src.join("big.npy"), "wb") as f:
        f.write(head)
        for i, v in MARKERS.items():
            f.seek(len(head) + 4 * i)
            f.write(struct.pack(">I", v))
        f.truncate(len(head) + 4 * COUNT)  # the rest is a hole: zeros, no disk
    return src


class LargeSparseTest(MountCase):
    make_source = staticmethod(make_source)
    hlen = len(header())

    def expected(self, view, off, n):
        """Bytes [off, off+n) of VIEW ('data', 'npy' or 'ra') computed from
        the markers, without building 5 GiB."""
        if view == "npy":
            with open(self.src.join("big.npy"), "rb") as f:
                head = f.read(self.hlen)
            return self._compose(off, n, self.hlen, head, ">I")
        if view == "ra":
            head = struct.pack("<7Q", expect.RA_MAGIC, 0, 1, 4, 4 * COUNT, 1, COUNT)
            return self._compose(off, n, len(head), head, "<I")
        return self._compose(off, n, 0, b"", ">I")

    @staticmethod
    def _compose(off, n, hlen, head, fmt):
        total = hlen + 4 * COUNT
        end = min(off + n, total)
        out = bytearray(max(0, end - off))
        for i in range(off, min(end, hlen)):
            out[i - off] = head[i]
        for idx, v in MARKERS.items():
            word = struct.pack(fmt, v)
            for k in range(4):
                pos = hlen + 4 * idx + k
                if off <= pos < end:
                    out[pos - off] = word[k]
        return bytes(out)

    def pread(self, rel, off, n):
        fd = os.open(self.mp(rel), os.O_RDONLY)
        try:
            return os.pread(fd, n, off)
        finally:
            os.close(fd)

    def test_sizes_past_4_gib_are_exact(self):
        self.assertEqual(os.stat(self.mp("big.npy", "data")).st_size, 4 * COUNT)
        self.assertEqual(os.stat(self.mp("big.npy", "big.npy")).st_size,
                         os.stat(self.src.join("big.npy")).st_size)
        self.assertEqual(os.stat(self.mp("big.npy", "big.ra")).st_size, 56 + 4 * COUNT)
        self.assertEqual(read(self.mp("big.npy", "shape")), b"%d\n" % COUNT)

    def test_reads_around_4_gib_hit_the_markers(self):
        for view, rel in (("data", "big.npy/data"), ("npy", "big.npy/big.npy"),
                          ("ra", "big.npy/big.ra")):
            hlen = {"data": 0, "npy": self.hlen, "ra": 56}[view]
            for idx in MARKERS:
                for delta, n in ((-5, 16), (-4096, 8192), (0, 4), (1, 3)):
                    off = max(0, hlen + 4 * idx + delta)
                    with self.subTest(view=view, index=idx, delta=delta):
                        expect.assert_bytes(self.pread(rel, off, n),
                                            self.expected(view, off, n), rel)

    def test_tail_and_dd_past_4_gib(self):
        rel = "big.npy/big.ra"
        size = 56 + 4 * COUNT
        out = subprocess.run(["tail", "-c", "4100", self.mp(rel)], capture_output=True,
                             check=True, timeout=60).stdout
        expect.assert_bytes(out, self.expected("ra", size - 4100, 4100), "tail -c")
        skip = (56 + 4 * ((1 << 30) + 1027)) // 512
        out = subprocess.run(["dd", "if=" + self.mp(rel), "bs=512", "skip=%d" % skip,
                              "count=2", "status=none"], capture_output=True, check=True,
                             timeout=60).stdout
        expect.assert_bytes(out, self.expected("ra", skip * 512, 1024), "dd")

    def test_ra_header_states_the_5_gib_size(self):
        h = expect.ra_header(self.pread("big.npy/big.ra", 0, 56))
        self.assertEqual((h["eltype"], h["elbyte"], h["size"], h["dims"]),
                         (1, 4, 4 * COUNT, [COUNT]))


if __name__ == "__main__":
    mountlib.main()
