#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A sequential reader of an LZ4 .ra's `data` and `B.npy` (the path
`dd bs=1M` takes): every byte equal to numpy's, and the decoded bytes
handed to the kernel in one writev (ops.c, reply_pieces), never written
into a splice pipe first - libfuse's -d log marks a spliced reply
"(splice)"; with all of a read's pieces in memory none may be."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import numpy as np  # noqa: E402

import expect  # noqa: E402
import mountlib  # noqa: E402

# float64 sine with 2 decimals, as the bench's LZ4 file: short sequences
N = (24 << 20) // 8 + 777


class Lz4SequentialTest(mountlib.FreshMountCase):
    mount_args = ("-d",)

    def populate(self):
        self.a = np.round(np.sin(np.arange(N) * 0.001) * 100, 2)
        self.src.write({"s.ra": expect.lz4_ra(self.a)})

    def read_all(self, path, step):
        parts = []
        with open(path, "rb") as f:
            while True:
                b = f.read(step)
                if not b:
                    break
                parts.append(b)
        return b"".join(parts)

    def test_sequential_reads_right_without_splice(self):
        want = self.a.tobytes()
        self.assertEqual(self.read_all(self.m.path("s.ra", "data"), 1 << 20),
                         want)
        got = np.load(self.m.path("s.ra", "s.npy"))
        self.assertTrue(np.array_equal(got, self.a))
        log = self.m.log()
        replies = re.findall(r"unique: \d+, success, outsize: (\d+)(.*)", log)
        big = [r for r in replies if int(r[0]) >= 64 << 10]
        # the kernel read the decoded bytes in large reads ...
        self.assertGreater(sum(int(r[0]) for r in big), len(want) // 2,
                           log[-2000:])
        # ... each written to it straight from memory
        spliced = [r for r in big if "splice" in r[1]]
        self.assertEqual(spliced, [], log[-2000:])


if __name__ == "__main__":
    mountlib.main()
