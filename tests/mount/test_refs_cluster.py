#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""dask.array.from_zarr over arrayrefs' HTTP references (nginx serving the
SOURCE folder, no mount) sums a 512 MiB int32 .npy on a dask.distributed
cluster of 2 worker processes (mountlib.dask_cluster); the sum equals an
int64 sum worked out from the block the file repeats, so numpy never sums
the whole and no float rounding is involved."""
import os
import sys
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))
import mountlib  # noqa: E402
from refsserve import Served, access_log  # noqa: E402

# 512 MiB of int32: a block of BLOCK elements written REPEAT times
BLOCK = 1 << 20
REPEAT = 128


def write_big_npy(path):
    """Write the 512 MiB .npy; return its exact sum."""
    block = ((np.arange(BLOCK, dtype=np.int64) * 7919) % 1000003
             - 500000).astype("<i4")
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<i4", "fortran_order": False,
                "shape": (BLOCK * REPEAT,)})
        raw = block.tobytes()
        for _ in range(REPEAT):
            f.write(raw)
    return int(block.sum(dtype=np.int64)) * REPEAT


class BigSumOnClusterTest(unittest.TestCase):
    def test_dask_sums_512_mib_over_http_references(self):
        import dask.array
        s = Served(self)
        want = write_big_npy(os.path.join(s.src, "big.npy"))
        web = s.serve(s.src)
        refs, _ = s.refs("--url", web.url(""))
        client = mountlib.dask_cluster(self, "1GiB")
        x = dask.array.from_zarr("reference://", component="big",
                                 storage_options={"fo": refs,
                                                  "remote_protocol": "http"})
        self.assertEqual(x.shape, (BLOCK * REPEAT,))
        self.assertEqual(x.dtype, np.dtype("<i4"))
        # 8 MiB chunks (the default grid): the work is spread over both workers
        self.assertGreaterEqual(x.npartitions, 64)
        got = client.compute(x.sum(dtype=np.int64), sync=True)
        self.assertEqual(int(got), want)
        self.assertIn("GET /big.npy HTTP/1.1\" 206", access_log(web))


if __name__ == "__main__":
    mountlib.main()
