#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""One LZ4 index per version of an LZ4 .ra (src/daemon/lz4share.h): data
opened twice, B.npy and a chunk file of B.zarr/ read through one index,
made once (the -d line "LZ4 index opened" counted), counted once against
the decoded-data budget (the bound handles' "in all" line), and each file
equals numpy's bytes."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import numpy as np  # noqa: E402

import expect  # noqa: E402
import mountlib  # noqa: E402

SIZE = 12 << 20


class Lz4ShareTest(mountlib.FreshMountCase):
    mount_args = ("-d",)

    def populate(self):
        rng = np.random.default_rng(8)
        self.a = rng.integers(0, 16, SIZE, dtype=np.uint8)
        self.src.write({"z.ra": expect.lz4_ra(self.a)})

    def test_handles_of_one_version_share_one_index(self):
        m = self.m
        want = self.a.tobytes()
        data = m.path("z.ra", "data")
        f1 = open(data, "rb", buffering=0)
        f2 = open(data, "rb", buffering=0)
        fn = open(m.path("z.ra", "z.npy"), "rb")
        try:
            # taking turns: every handle open and reading at once
            self.assertEqual(f1.read(1 << 20), want[:1 << 20])
            f2.seek(SIZE - 4096)
            self.assertEqual(f2.read(), want[-4096:])
            self.assertTrue(np.array_equal(np.load(fn), self.a))
            chunks = sorted(c for c in os.listdir(m.path("z.ra", "z.zarr"))
                            if c not in ("zarr.json", ".zarray", ".zattrs"))
            self.assertTrue(chunks)
            with open(m.path("z.ra", "z.zarr", chunks[0]), "rb") as fc:
                got = fc.read()
            self.assertEqual(got[:1000], want[:1000])
            self.assertEqual(f1.read(), want[1 << 20:])
        finally:
            for f in (f1, f2, fn):
                f.close()
        log = m.log()
        opened = re.findall(r"z\.ra: LZ4 index opened \((\d+) MiB at most\)", log)
        self.assertEqual(len(opened), 1, log[-3000:])
        # kept by several bound handles, counted once (the kernel may
        # open files; then there is no bound handle and no such line)
        for cost, total in re.findall(r"keeping (\d+) MiB of decoded data "
                                      r"for z\.ra/\S+ \((\d+) MiB in all\)", log):
            self.assertEqual(cost, total, log[-3000:])


if __name__ == "__main__":
    mountlib.main()
