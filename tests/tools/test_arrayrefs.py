#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""arrayrefs over file://: zarr 2.13 reads every array of the corpus
through fsspec's ReferenceFileSystem, element-exact against numpy; every
chunk reference is a full chunk; URLs, exit statuses and --verify.
(HTTP from nginx: tests/mount/test_refs_http.py.)
"""
import base64
import json
import os
import shutil
import stat
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "mount", "lib"))
import refscorpus  # noqa: E402
from toolslib import run  # noqa: E402

ARRAYREFS = os.environ.get("ARRAYREFS_BIN", "arrayrefs")
# the mount's grid, and one whose short tails are too big to go inline
GRIDS = (["--chunk", "1000"], ["--chunk", "4096", "--inline-max", "1024"])


class RefsCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="arrayrefs-")
        self.src = os.path.join(self.tmp, "src")
        self.want = refscorpus.write_corpus(self.src)
        self.out = os.path.join(self.tmp, "refs.json")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def refs(self, *args, status=3):
        p = run([ARRAYREFS, *args, "-o", self.out, self.src])
        self.assertEqual(p.returncode, status, p.stderr.decode())
        return p

    def load(self):
        with open(self.out) as f:
            return json.load(f)


class TestRead(RefsCase):
    def test_zarr_reads_every_array_element_exact(self):
        for grid in GRIDS:
            with self.subTest(grid=grid):
                p = self.refs(*grid)
                got = refscorpus.read_refs(self.out)
                self.assertEqual(refscorpus.mismatches(self.want, got), [])
                lines = p.stderr.decode().splitlines()
                self.assertEqual(len(lines), len(refscorpus.LEFT_OUT), lines)

    def test_every_chunk_reference_is_a_full_chunk(self):
        for grid in GRIDS:
            self.refs(*grid)
            refs = self.load()["refs"]
            for key, ref in refs.items():
                leaf = key.rsplit("/", 1)[-1]
                if leaf.startswith("."):
                    continue
                meta = json.loads(refs[key.rsplit("/", 1)[0] + "/.zarray"])
                size = np.dtype(meta["dtype"]).itemsize * int(
                    np.prod(meta["chunks"]))
                if isinstance(ref, str):
                    self.assertEqual(len(base64.b64decode(ref[7:])), size, key)
                else:
                    self.assertEqual(ref[2], size, key)

    def test_short_tails_run_on_go_inline_or_get_a_grid(self):
        self.refs("--chunk", "1000")
        refs = self.load()["refs"]
        # a stored member with members after it: the range runs on
        self.assertEqual(refs["run/signal/2"], ["{{u}}/run.npz", 2168, 1000])
        # the end of an .npy: the padded tail inline
        self.assertTrue(refs["prime/40"].startswith("base64:"))
        self.refs("--chunk", "4096", "--inline-max", "1024")
        refs = self.load()["refs"]
        chunks = lambda k: json.loads(refs[k + "/.zarray"])["chunks"]
        self.assertEqual(chunks("tenk"), [1000])     # a divisor of 10000
        self.assertEqual(chunks("prime"), [256])     # 1024 bytes: inline
        self.assertEqual(chunks("rows"), [1, 128])

    def test_single_files_and_an_npz_as_source(self):
        for name, key, want in (("c2d.npy", "c2d", self.want["c2d"]),
                                ("big.ra", "big", self.want["big"]),
                                ("run.npz", "grp/sub/deep",
                                 self.want["run/grp/sub/deep"])):
            p = run([ARRAYREFS, "-o", self.out, os.path.join(self.src, name)])
            self.assertEqual(p.returncode, 0, p.stderr)
            got = refscorpus.read_refs(self.out)
            np.testing.assert_array_equal(got[key], want)

    def test_reference_file_is_small(self):
        os.makedirs(os.path.join(self.tmp, "many"))
        np.save(os.path.join(self.tmp, "many", "long.npy"),
                np.arange(100003, dtype="u1"))
        p = run([ARRAYREFS, "--chunk", "64", "-o", self.out,
                 os.path.join(self.tmp, "many")])
        self.assertEqual(p.returncode, 0, p.stderr)
        nchunks = (100003 + 63) // 64
        self.assertLessEqual(os.path.getsize(self.out), 120 * nchunks)
        got = refscorpus.read_refs(self.out)
        np.testing.assert_array_equal(got["long"], np.arange(100003, dtype="u1"))

    def test_xarray_opens_an_npz(self):
        import xarray
        p = run([ARRAYREFS, "-o", self.out, os.path.join(self.src, "run.npz")])
        self.assertEqual(p.returncode, 0, p.stderr)
        import fsspec
        m = fsspec.get_mapper("reference://", fo=self.out,
                              skip_instance_cache=True)
        ds = xarray.open_zarr(m, consolidated=False)
        np.testing.assert_array_equal(ds["signal"].values,
                                      self.want["run/signal"])
        self.assertEqual(ds["signal"].dims, ("signal_dim_0",))


def raw_refs(path):
    """{key: the value's bytes as written} of a reference file (one
    reference a line)."""
    dec = json.JSONDecoder()
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith('"'):
                continue
            key, end = dec.raw_decode(line)
            out[key] = line[end + 2:].rstrip("\n").rstrip(",")
    return out


class TestMetadataReuse(unittest.TestCase):
    """The metadata texts arrayrefs keeps and reuses are the bytes it
    writes of an array alone (a fresh process: nothing kept), in a folder
    whose arrays take turns among more kinds (shape, dtype, order, ndim)
    than the tool keeps, and keys its templates cannot take."""

    KINDS = [
        lambda: np.arange(3, dtype="<i4"),
        lambda: np.arange(4, dtype="<i4"),
        lambda: np.arange(6, dtype=">i4").reshape(2, 3),
        lambda: np.asfortranarray(np.arange(6, dtype="<f8").reshape(2, 3)),
        lambda: np.arange(6, dtype="<f8").reshape(2, 3),
        lambda: np.array(7, dtype="u1"),
        lambda: np.zeros((2, 3, 4), dtype="<u2"),
        lambda: np.zeros((1, 2, 1, 2), dtype="<c16"),
        lambda: np.zeros((1, 2, 1, 2, 1), dtype="|b1"),
        lambda: np.zeros((2, 1, 1, 1, 1, 2), dtype="<f4"),
        lambda: np.zeros(3, dtype=[("x", "<i4"), ("y", "<f8", (2,))]),
        lambda: np.zeros(5000, dtype="<i8"),   # 5 chunks of 1000 elements
    ]

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="arrayrefs-meta-")
        self.src = os.path.join(self.tmp, "src")
        os.makedirs(self.src)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def refs_of(self, path, out):
        p = run([ARRAYREFS, "--chunk", "8000", "-o", out, path])
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        return raw_refs(out)

    def test_reused_texts_are_the_texts_of_each_array_alone(self):
        names = ["k%02d" % i for i in range(40)] + [
            'q"uote', "sp ace", "caf\u00e9", "t\tab", "k@t"]
        for i, name in enumerate(names):
            kind = self.KINDS[(i * 7) % len(self.KINDS)]
            np.save(os.path.join(self.src, name + ".npy"), kind())
        together = self.refs_of(self.src, os.path.join(self.tmp, "all.json"))
        for name in names:
            alone = self.refs_of(os.path.join(self.src, name + ".npy"),
                                 os.path.join(self.tmp, "one.json"))
            for leaf in (".zarray", ".zattrs"):
                key = name + "/" + leaf
                with self.subTest(key=key):
                    self.assertEqual(together[key], alone[key])


class TestUrls(RefsCase):
    def test_url_prefix_and_percent_encoding(self):
        self.refs("--url", "https://example.org/data/")
        d = self.load()
        self.assertEqual(d["version"], 1)
        self.assertEqual(d["templates"]["u"], "https://example.org/data")
        ref = d["refs"][refscorpus.ODD_KEY + "/0"]
        self.assertEqual(ref[0], "{{u}}/we%20ird%23%3F%25/%C3%A9%20x.npy")

    def test_file_urls_are_paths_fsspec_opens(self):
        self.refs()
        d = self.load()
        self.assertEqual(d["templates"]["u"], "file://" + os.path.realpath(self.src))
        ref = d["refs"][refscorpus.ODD_KEY + "/0"]
        self.assertEqual(ref[0], "{{u}}/" + refscorpus.ODD_KEY + ".npy")

    def test_mount_url_refers_to_the_mounts_chunk_files(self):
        self.refs("--mount-url", "http://host/m/B.zarr", status=3)
        d = self.load()
        self.assertEqual(d["templates"]["m"], "http://host/m/B.zarr")
        self.assertEqual(d["refs"]["lz/0"], ["{{m}}/lz/0"])
        self.assertEqual(d["refs"]["packed/p/0"], ["{{m}}/packed/p/0"])
        self.assertNotIn("obj/.zarray", d["refs"])


class TestStatus(RefsCase):
    def test_exit_statuses(self):
        good = os.path.join(self.src, "c2d.npy")
        self.assertEqual(run([ARRAYREFS, good]).returncode, 0)
        self.assertEqual(run([ARRAYREFS, "-o", self.out]).returncode, 1)
        self.assertEqual(run([ARRAYREFS, os.path.join(self.tmp, "none")]).returncode, 1)
        self.assertEqual(run([ARRAYREFS, "--chunk", "0", good]).returncode, 1)
        self.assertEqual(run([ARRAYREFS, "-o", "/dev/full", good]).returncode, 2)
        # a failed document is removed from a regular file, never a device
        self.assertTrue(stat.S_ISCHR(os.stat("/dev/full").st_mode))
        p = run([ARRAYREFS, "-o", os.path.join(self.tmp, "no", "x"), good])
        self.assertEqual(p.returncode, 2)
        p = run([ARRAYREFS, "-o", self.out, self.src])
        self.assertEqual(p.returncode, 3)

    def test_a_failure_leaves_the_output_as_it_was(self):
        good = os.path.join(self.src, "c2d.npy")
        self.assertEqual(run([ARRAYREFS, "-o", self.out, good]).returncode, 0)
        with open(self.out, "rb") as f:
            before = f.read()
        mask = os.umask(0)
        os.umask(mask)
        self.assertEqual(stat.S_IMODE(os.stat(self.out).st_mode), 0o666 & ~mask)
        text = os.path.join(self.tmp, "notes.txt")
        with open(text, "w") as f:
            f.write("no array")
        self.assertEqual(run([ARRAYREFS, "-o", self.out, text]).returncode, 1)
        with open(self.out, "rb") as f:
            self.assertEqual(f.read(), before)
        self.assertEqual(sorted(os.listdir(self.tmp)),
                         ["notes.txt", "refs.json", "src"])

    def test_stdout_and_a_hostile_header(self):
        with open(os.path.join(self.src, "bad.npy"), "wb") as f:
            f.write(b"\x93NUMPY\x01\x00\xff\xff{'descr': '<f8'")
        p = run([ARRAYREFS, self.src])
        self.assertEqual(p.returncode, 3)
        self.assertIn(b"bad.npy", p.stderr)
        d = json.loads(p.stdout)
        self.assertIn("c2d/0.0", d["refs"])


class TestVerify(RefsCase):
    def verify(self):
        p = run([ARRAYREFS, "--verify", self.out])
        return p.returncode, p.stdout.decode()

    def test_unchanged_then_rewritten_renamed_deleted(self):
        self.refs()
        self.assertEqual(self.verify(), (0, ""))
        np.save(os.path.join(self.src, "c2d.npy"), np.zeros(3))
        os.rename(os.path.join(self.src, "plain.ra"),
                  os.path.join(self.src, "moved.ra"))
        os.unlink(os.path.join(self.src, "run.npz"))
        rc, out = self.verify()
        self.assertEqual(rc, 1)
        src = os.path.realpath(self.src)
        self.assertIn("changed: %s/c2d.npy" % src, out)
        self.assertIn("renamed: %s/plain.ra (now moved.ra)" % src, out)
        self.assertIn("deleted: %s/run.npz" % src, out)
        self.assertEqual(len(out.splitlines()), 3, out)

    def test_file_records_are_the_files_stat(self):
        # a time before 1970 too: the numbers are written without printf
        os.utime(os.path.join(self.src, "c2d.npy"),
                 ns=(0, -1_234_567_891))
        self.refs()
        files = self.load()["arrayrefs"]["files"]
        self.assertIn("c2d.npy", files)
        for name, rec in files.items():
            st = os.stat(os.path.join(self.src, name))
            self.assertEqual(rec, {"size": st.st_size,
                                   "mtime_ns": st.st_mtime_ns,
                                   "ino": st.st_ino}, name)
        self.assertEqual(files["c2d.npy"]["mtime_ns"], -1_234_567_891)
        self.assertEqual(self.verify(), (0, ""))

    def test_not_a_reference_file(self):
        with open(self.out, "w") as f:
            f.write('{"version": 1, "refs": {}}')
        self.assertEqual(self.verify()[0], 1)
        with open(self.out, "w") as f:
            f.write('{"arrayrefs": {"source": "/x", "files": {"a": [')
        self.assertEqual(self.verify()[0], 1)


if __name__ == "__main__":
    unittest.main()
