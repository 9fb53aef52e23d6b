#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Sharing a mount over HTTP: nginx, run from examples/nginx.conf (sendfile,
autoindex) on 127.0.0.1 and a free port, serves an arrayfs mount (-o
allow_other). curl's byte ranges come back 206 with the bytes expect.py's
model gives, for data, B.npy and B.ra of several arrays; directory listings
list the array folders; fsspec's HTTP filesystem reads random ranges of every
view; numpy.load of B.npy fetched over HTTP equals the source; only GET and
HEAD are allowed. Without allow_other nginx's workers are refused. nginx is
stopped before the mount is unmounted."""
import hashlib
import io
import os
import random
import re
import subprocess
import sys
import tempfile
import unittest
import zipfile

import fsspec
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import expect  # noqa: E402
import mountlib  # noqa: E402
import sharecorpus  # noqa: E402
from httpserver import HttpServer  # noqa: E402
from mountlib import check_all  # noqa: E402

HREF = re.compile(r'<a href="([^"]+)">')
RANGES_PER_FILE = 6


def curl(url, *args):
    """(HTTP status, headers text, body bytes) of `curl ARGS URL`."""
    return curl_each(url, [args])[0]


def curl_each(url, arg_lists):
    """[(HTTP status, headers text, body bytes)]: one transfer of URL for
    each list of curl arguments in ARG_LISTS, all in one curl run (--next)."""
    with tempfile.TemporaryDirectory(prefix="arrayfs-curl-") as d:
        argv = ["curl"]
        for i, args in enumerate(arg_lists):
            argv += (["--next"] if i else []) + ["-s", "-S", "-o", "%s/b%d" % (d, i),
                                                 "-D", "%s/h%d" % (d, i), "-w", "%{http_code}\\n"]
            argv += list(args) + [url]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise AssertionError("%s: %s" % (" ".join(argv), r.stderr))
        return [(int(code), mountlib.read("%s/h%d" % (d, i)).decode("latin-1"),
                 mountlib.read("%s/b%d" % (d, i)) if os.path.exists("%s/b%d" % (d, i)) else b"")
                for i, code in enumerate(r.stdout.split())]


def sample_ranges(size, rng):
    """[(start, end)] (end exclusive) over a file of SIZE bytes: its start,
    its end, one byte, and random spans."""
    spans = [(0, min(size, 100)), (max(0, size - 37), size), (size // 2, size // 2 + 1)]
    while len(spans) < RANGES_PER_FILE:
        a = rng.randrange(size)
        spans.append((a, min(size, a + rng.randrange(1, 70000))))
    return [(a, b) for a, b in spans if a < b]


def array_dir_views(rel):
    """The data, B.npy and B.ra file paths of array folder REL."""
    base = rel.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return [rel + "/data", rel + "/" + base + ".npy", rel + "/" + base + ".ra"]


class HttpShareTest(sharecorpus.ServedCorpusCase):
    make_server = HttpServer

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.files = {f.rel: f for f in cls.files}
        cls.fs = fsspec.filesystem("http", skip_instance_cache=True)
        cls.whole = {}

    def expected(self, rel):
        """The bytes file REL must have: the model's, or, where the model
        only checks (a .ra's header and B.npy), the whole file fetched over
        HTTP once it passes the model's checks."""
        f = self.files[rel]
        if f.exact is not None:
            return f.exact
        if rel not in self.whole:
            status, _, body = curl(self.server.url(rel))
            self.assertEqual(status, 200, rel)
            f.check(body)
            self.whole[rel] = body
        return self.whole[rel]

    def test_listens_on_loopback_only(self):
        self.assertEqual(self.server.listening(), ["127.0.0.1:%d" % self.server.port])

    def test_byte_ranges_are_206_with_the_right_bytes(self):
        rels = [v for a in sharecorpus.RANGE_ARRAYS for v in array_dir_views(a)]
        self.assertIn("be_i4.npy/be_i4.ra", rels)
        self.assertIn("deflated.npz/big.npy/data", rels)
        rng = random.Random(12)

        def check(rel):
            want = self.expected(rel)
            ranges = sample_ranges(len(want), rng)
            got = curl_each(self.server.url(rel), [("-r", "%d-%d" % (a, b - 1)) for a, b in ranges]
                            + [("-r", "-10")])  # a suffix range: the last bytes
            ranges.append((max(0, len(want) - 10), len(want)))
            for (a, b), (status, head, body) in zip(ranges, got):
                self.assertEqual(status, 206, "%s %d-%d" % (rel, a, b - 1))
                self.assertIn("Content-Range: bytes %d-%d/%d" % (a, b - 1, len(want)), head)
                expect.assert_bytes(body, want[a:b], "%s bytes %d-%d" % (rel, a, b - 1))
        check_all(self, rels, check)

    def test_whole_files_and_head(self):
        def check(rel):
            (status, _, body), (hstatus, head, _) = curl_each(self.server.url(rel), [(), ("-I",)])
            self.assertEqual((status, hstatus), (200, 200), rel)
            self.files[rel].check(body)
            self.assertIn("Content-Length: %d\r\n" % len(body), head)
            self.assertIn("Accept-Ranges: bytes", head)
        check_all(self, sorted(self.files), check)

    def listing(self, rel):
        """The hrefs of the autoindex page of folder REL, without '../'."""
        status, head, body = curl(self.server.url(rel + "/" if rel else ""))
        self.assertEqual(status, 200, rel)
        return sorted(h for h in HREF.findall(body.decode()) if h != "../")

    def test_listings_list_the_array_folders(self):
        tree = sharecorpus.served_tree(self.src.path)
        folders = [""] + sorted(rel for rel, kind in tree.items() if kind == "dir")

        def check(folder):
            prefix = folder + "/" if folder else ""
            # nginx's autoindex leaves out dot files (B.zarr/'s .zarray, .zattrs)
            want = sorted(rel[len(prefix):] + ("/" if kind == "dir" else "")
                          for rel, kind in tree.items()
                          if rel.startswith(prefix) and "/" not in rel[len(prefix):]
                          and not rel[len(prefix):].startswith("."))
            self.assertEqual(self.listing(folder), want, folder)
        check_all(self, folders, check)
        self.assertIn("c_f4.npy/", self.listing(""))
        self.assertIn("big.npy/", self.listing("deflated.npz"))

    def test_fsspec_reads_random_ranges_of_every_view(self):
        rng = random.Random(34)

        def check(rel):
            want = self.expected(rel)
            url = self.server.url(rel)
            self.assertEqual(self.fs.info(url)["size"], len(want))
            for a, b in sample_ranges(len(want), rng):
                got = self.fs.cat_file(url, start=a, end=b)
                expect.assert_bytes(got, want[a:b], "%s cat_file %d-%d" % (rel, a, b))
            # a file object with small blocks: reads cross block bounds
            with self.fs.open(url, "rb", block_size=4096) as f:
                for a, b in sample_ranges(len(want), rng):
                    f.seek(a)
                    expect.assert_bytes(f.read(b - a), want[a:b],
                                        "%s open/seek %d-%d" % (rel, a, b))
        check_all(self, sorted(self.files), check)

    def source_array(self, folder):
        """numpy's array for array folder FOLDER, from the source file."""
        parts = folder.split("/")
        for i, p in enumerate(parts):
            if p.endswith(".npz"):
                with zipfile.ZipFile(self.src.join(*parts[:i + 1])) as z:
                    return np.load(io.BytesIO(z.read("/".join(parts[i + 1:]))))
        path = self.src.join(*parts)
        if path.endswith(".ra"):
            return expect.ra_reference_read(mountlib.read(path))
        return np.load(path)

    def test_numpy_load_of_npy_fetched_over_http_is_the_source(self):
        folders = sorted({rel.rsplit("/", 1)[0] for rel in self.files if rel.endswith("/data")})
        self.assertGreater(len(folders), 8)

        def check(folder):
            npy = array_dir_views(folder)[1]
            want = self.source_array(folder)
            _, _, body = curl(self.server.url(npy))
            for got in (np.load(io.BytesIO(body)), np.load(self.fs.open(self.server.url(npy)))):
                self.assertEqual((got.dtype, got.shape), (want.dtype, want.shape), folder)
                self.assertEqual(got.tobytes(), want.tobytes(), folder)
        check_all(self, folders, check)

    def test_only_get_and_head_are_allowed(self):
        before = hashlib.sha256(mountlib.read(self.src.join("readme.txt"))).digest()
        for method in ("PUT", "POST", "DELETE", "PATCH", "MKCOL"):
            status, _, _ = curl(self.server.url("readme.txt"), "-X", method, "--data-binary", "x")
            self.assertEqual(status, 403, method)
        self.assertEqual(hashlib.sha256(mountlib.read(self.src.join("readme.txt"))).digest(),
                         before)


class WithoutAllowOtherTest(unittest.TestCase):
    """What allow_other is for: nginx's workers read as www-data, and the
    kernel lets no one but the mounting user into a mount without it."""

    def test_workers_are_refused_without_allow_other(self):
        web = sharecorpus.serve_corpus(self, HttpServer)
        status, _, _ = curl(web.url("readme.txt"))
        self.assertEqual(status, 403)
        web.check_alive()


if __name__ == "__main__":
    mountlib.main()
