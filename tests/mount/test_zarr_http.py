#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""B.zarr/ over HTTP, as remote and browser-side readers use it: nginx
(examples/nginx.conf, httpserver.py) serves a mount on 127.0.0.1;
zarr-python through fsspec's HTTP store and zarrita.js's FetchStore read
every array of the sharing corpus as numpy does, and `curl -r` ranges of
`data` and of chunk files come back 206 with the right bytes."""
import os
import subprocess
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import expect  # noqa: E402
import mountlib  # noqa: E402
import numpy as np  # noqa: E402
import sharecorpus  # noqa: E402
import zarrita  # noqa: E402
from httpserver import HttpServer  # noqa: E402
from mountlib import check_all, read  # noqa: E402
from test_zarr import assert_same_array, numpys_array, store_of  # noqa: E402

import fsspec  # noqa: E402
import zarr  # noqa: E402

CURL_DEADLINE = 60
CHUNK = 4096  # small chunks: the deflated member alone has 128


class ZarrHttpTest(sharecorpus.ServedCorpusCase):
    make_server = HttpServer
    mount_args = ("-o", "allow_other", "-o", "zarr_chunk=%d" % CHUNK)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tree = expect.expected_tree(cls.src.path, CHUNK)
        cls.stores = [(rel, arr) for rel, arr in expect.arrays(cls.tree)
                      if store_of(rel) in arr.names]

    def want(self, rel, arr):
        return numpys_array(rel, arr, self.src.path)

    def url(self, rel, *parts):
        return self.server.url("/".join((rel,) + parts))

    def test_zarr_python_reads_every_array_through_fsspec_http(self):
        self.assertGreater(len(self.stores), 10)

        def check(item):
            rel, arr = item
            store = zarr.storage.FSStore(self.url(rel, store_of(rel)), mode="r")
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    got = zarr.open(store, mode="r")[...]
            except Exception as e:
                raise AssertionError("zarr over HTTP: %s: %s" % (type(e).__name__, e))
            assert_same_array(got, self.want(rel, arr), rel)
        check_all(self, self.stores, check, label=lambda t: t[0])

    def test_zarrita_fetch_store_reads_v3_and_v2_of_every_core_type_array(self):
        todo = [(rel, version, self.want(rel, arr)) for rel, arr in self.stores
                for version in ("v2", "v3")
                if zarrita.readable(self.want(rel, arr).dtype, self.want(rel, arr).shape)
                and (version == "v2" or os.path.exists(self.m.path(rel, store_of(rel),
                                                                   "zarr.json")))]
        self.assertGreater(len(todo), 10)
        got = {v: zarrita.read_all([self.url(r, store_of(r)) for r, vv, _ in todo if vv == v],
                                   v, fetch=True) for v in ("v2", "v3")}

        def check(item):
            rel, version, want = item
            zarrita.assert_same(got[version][self.url(rel, store_of(rel))], want, rel)
        check_all(self, todo, check, label=lambda t: "%s (%s)" % (t[0], t[1]))

    def test_curl_ranges_of_data_and_chunks_are_206_with_the_bytes(self):
        todo = []
        for rel, arr in self.stores:
            chunks = [n for n in arr.files if expect.is_zarr_chunk(n)]
            for name in ["data"] + chunks[-2:]:
                size = os.stat(self.m.path(rel, name)).st_size
                if size > 3:
                    todo.append((rel, name, size))
        self.assertGreater(len(todo), 20)

        def check(item):
            rel, name, size = item
            first, last = size // 3, size - 2
            r = subprocess.run(["curl", "-sS", "-o", "-", "-w", "\n%{http_code}",
                                "-r", "%d-%d" % (first, last), self.url(rel, name)],
                               capture_output=True, timeout=CURL_DEADLINE)
            body, _, code = r.stdout.rpartition(b"\n")
            self.assertEqual(code, b"206", r.stderr)
            want = read(self.m.path(rel, name))[first:last + 1]
            expect.assert_bytes(body, want, rel + "/" + name)
            self.arr_check(rel, name, want, first)
        check_all(self, todo, check, label=lambda t: t[0] + "/" + t[1])

    def arr_check(self, rel, name, part, first):
        """PART (bytes from FIRST) of REL/NAME read through the mount is the
        model's, so a 206 of it is right."""
        arr = self.tree[rel].array
        whole = read(self.m.path(rel, name))
        for c in arr.checks[name]:
            c(whole)
        self.assertEqual(whole[first:first + len(part)], part)

    def test_fsspec_lists_a_store_through_nginxs_index(self):
        rel, arr = next((r, a) for r, a in self.stores if r == "deflated.npz/big.npy")
        fs = fsspec.filesystem("http")
        listed = {u.rstrip("/").rsplit("/", 1)[-1] for u in fs.ls(self.url(rel, store_of(rel)),
                                                                  detail=False)}
        want = {n.split("/", 1)[1] for n in arr.files if n.startswith(store_of(rel) + "/")}
        self.assertGreater(len(want), 100)
        # nginx's autoindex leaves out dot files
        self.assertEqual(listed - {".zarray", ".zattrs"}, want - {".zarray", ".zattrs"})


if __name__ == "__main__":
    mountlib.main()
