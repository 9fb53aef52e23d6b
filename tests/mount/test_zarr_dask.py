#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""dask over B.zarr/ (slow): `dask.array.from_zarr` of a 512 MiB array
through the mount, computed on a dask.distributed cluster of 2 worker
processes on 127.0.0.1, sums and averages to numpy's values exactly
(int32 elements whose partial sums are all exact in float64)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import mountlib  # noqa: E402
import numpy as np  # noqa: E402
from mountlib import MountCase, TempDir  # noqa: E402

import dask.array as da  # noqa: E402

SHAPE = (8192, 16384)  # int32: 512 MiB


class DaskOverZarrTest(MountCase):
    @staticmethod
    def make_source():
        src = TempDir()
        a = np.lib.format.open_memmap(src.join("big.npy"), mode="w+", dtype="<i4", shape=SHAPE)
        for i in range(0, SHAPE[0], 1024):  # a slab at a time: little memory
            rows = np.arange(i, i + 1024, dtype=np.int64)[:, None] * SHAPE[1]
            a[i:i + 1024] = (rows + np.arange(SHAPE[1])) * 7919 % 1000
        a.flush()
        del a
        return src

    def test_sum_and_mean_on_two_worker_processes_equal_numpys(self):
        want = np.load(self.src.join("big.npy"), mmap_mode="r")
        want_sum, want_mean = int(want.sum(dtype=np.int64)), float(want.mean())
        del want
        client = mountlib.dask_cluster(self, "2GiB")
        x = da.from_zarr(self.mp("big.npy", "big.zarr"))
        self.assertEqual((x.shape, x.dtype), (SHAPE, np.dtype("<i4")))
        self.assertGreater(x.npartitions, 32)  # 8 MiB chunks: 64 tasks
        got_sum, got_mean = client.compute([x.sum(dtype=np.int64), x.mean()], sync=True)
        self.assertEqual(int(got_sum), want_sum)
        self.assertEqual(float(got_mean), want_mean)


if __name__ == "__main__":
    mountlib.main()
