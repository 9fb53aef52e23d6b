#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""scripts/bench's dask rows of the arrayrefs section: seconds of
`dask.array.from_zarr(...).sum()` of one array over HTTP, nginx
(tests/mount/lib/httpserver.py, examples/nginx.conf) started on ROOT for
the run and stopped after it. HOW says what nginx serves and what dask
opens:

  refs  ROOT is the source folder; `ARRAYREFS --url <nginx> -o REFS ROOT`
        is written (untimed) and dask opens reference:// of it, the
        chunks range requests of the .npy;
  zarr  ROOT is an arrayfs mount (-o allow_other) or a folder holding a
        Zarr store; dask opens http://<nginx>/STORE.

The same scheduler on every side: dask's threaded one, 2 threads (this
machine's cores), its pool started before the clock. The clock covers
from_zarr (the metadata reads over HTTP, or the reference file's load, and
the first connection) and the sum; the reference file's writing is not
timed. The sum is checked against numpy's int64 sum of NPY afterwards.

usage: bench_refs.py refs ROOT NPY ARRAYREFS REFS
       bench_refs.py zarr ROOT NPY STORE
Prints the seconds of the sum.
"""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "mount", "lib"))
sys.path.insert(0, HERE)
import dask  # noqa: E402
import dask.array as da  # noqa: E402
import numpy as np  # noqa: E402

from bench_share import let_others_in  # noqa: E402
from httpserver import HttpServer  # noqa: E402

THREADS = 2


def write_refs(how, web, root, args):
    """The reference file of ROOT with nginx's URL, for HOW refs."""
    if how == "refs":
        arrayrefs, refs = args
        subprocess.run([arrayrefs, "--url", web.url(""), "-o", refs, root],
                       check=True)


def open_array(how, web, args):
    if how == "refs":
        name = os.path.splitext(os.path.basename(NPY))[0]
        return da.from_zarr("reference://", component=name,
                            storage_options={"fo": args[1], "remote_protocol": "http",
                                             "skip_instance_cache": True})
    return da.from_zarr(web.url(args[0]))


how, root, NPY, *rest = sys.argv[1:]
let_others_in(os.path.join(root, "x"))
web = HttpServer(root)
web.start()
try:
    write_refs(how, web, root, rest)
    with dask.config.set(scheduler="threads", num_workers=THREADS):
        da.ones(1000, chunks=10).sum().compute()  # the pool, untimed
        t0 = time.monotonic()
        total = open_array(how, web, rest).sum(dtype=np.int64).compute()
        t = time.monotonic() - t0
finally:
    web.stop()
want = int(np.load(NPY, mmap_mode="r").sum(dtype=np.int64))
if int(total) != want:
    sys.exit("%s: sum %d, numpy says %d" % (how, int(total), want))
print("%.3f" % t)
