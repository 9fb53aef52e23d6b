#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""arrayinfo --zarr-group against zarr 2.13's own consolidate_metadata.

A folder of .npy, .ra and .npz files (stored and deflated, Fortran order,
big-endian, nested npz keys, a key collision, an npz in a sub-folder) is
described by arrayinfo; zarr itself builds the group the contract says the
mount shows (same keys, shapes, chunks, dtypes, dimension names) and
consolidates it: the two documents must be equal, as dicts and as text.
"""
import io
import json
import os
import struct
import sys
import tempfile
import unittest
import zipfile

import numpy as np
import zarr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from toolslib import ARRAYINFO, run  # noqa: E402

MAX_CHUNK = 8 << 20  # AF_ZARR_CHUNK_DEFAULT


def chunks_of(shape, itemsize, fortran):
    """The contract's chunk shape (CONTRACT.md, B.zarr/): cut one axis."""
    dims = [max(n, 1) for n in shape]
    if not dims:
        return ()
    order = list(range(len(dims)))
    if fortran:
        order.reverse()  # the fastest axis is the first
    chunk = list(dims)
    inner = itemsize
    for pos in reversed(range(len(order))):  # from the fastest axis
        axis = order[pos]
        if inner * dims[axis] <= MAX_CHUNK:
            inner *= dims[axis]
            continue
        chunk[axis] = max(1, MAX_CHUNK // inner)
        for slower in order[:pos]:
            chunk[slower] = 1
        break
    return tuple(chunk)


def save_ra(path, a):
    """@p a as a plain little-endian float32 RawArray file: column-major,
    its dims in shape order, as the mount reads it (Fortran order)."""
    a = np.asfortranarray(a, dtype="<f4")
    hdr = struct.pack("<QQQQQQ", 0x7961727261776172, 0, 3, 4, a.nbytes,
                      a.ndim) + struct.pack(f"<{a.ndim}Q", *a.shape)
    with open(path, "wb") as f:
        f.write(hdr + a.tobytes(order="F"))
    return a


class ZarrGroupTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = os.path.join(self.tmp.name, "data")
        os.makedirs(os.path.join(self.root, "sub"))

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    def expect_array(self, g, key, a):
        fortran = a.flags.f_contiguous and not a.flags.c_contiguous
        z = g.create(key, shape=a.shape, dtype=a.dtype,
                     chunks=chunks_of(a.shape, a.dtype.itemsize, fortran),
                     compressor=None, fill_value=None,
                     order="F" if fortran else "C", dimension_separator=".")
        leaf = key.rsplit("/", 1)[-1]
        z.attrs["_ARRAY_DIMENSIONS"] = [f"{leaf}_dim_{i}"
                                        for i in range(a.ndim)]

    def expect_group(self, store, g, key):
        sub = g.create_group(key)
        # the mount serves every group's .zattrs ({}), zarr writes none
        store[(sub.path + "/" if sub.path else "") + ".zattrs"] = b"{}"
        return sub

    def arrayinfo(self, path):
        r = run([ARRAYINFO, "--zarr-group", path])
        return r, r.stdout.decode("ascii")

    def test_a_folder_is_the_group_zarr_consolidates(self):
        temp = np.arange(12, dtype="<f8").reshape(3, 4)
        np.save(self.path("temperature.npy"), temp)
        big = np.zeros((3, 1 << 20), dtype="<f8")  # one row a chunk
        np.save(self.path("big.npy"), big)
        x = np.arange(5, dtype=">i4")
        np.save(self.path("x.npy"), x)
        accent = np.arange(3, dtype="<u4")
        np.save(self.path("temp\u00e9rature.npy"), accent)
        rec = np.zeros(4, dtype=[("x", "<i4"), ("y", "<f8", (2,))])
        np.save(self.path("records.npy"), rec)
        words = np.array(["ab", "cde"], dtype="<U3")
        np.save(self.path("a-words.npy"), words)
        xra = save_ra(self.path("x.ra"), np.arange(6, dtype="<f4").reshape(3, 2))
        fort = np.asfortranarray(np.ones((2, 3, 4), dtype="<c8"))
        scalar = np.array(3.5)
        np.savez(self.path("run.npz"), time=np.arange(10.0), signal=fort,
                 scalar=scalar, **{"nested/deep": np.arange(3, dtype="u2")})
        os.makedirs(self.path("run"))  # run/ and run.npz share "run"
        np.save(self.path("run", "inside.npy"), np.zeros((0, 3), dtype="i8"))
        np.savez_compressed(self.path("sub", "c.npz"),
                            a=np.arange(7, dtype="u1"), b=np.eye(3) > 0)
        np.save(self.path("sub", "obj.npy"), np.array([1, "a"], dtype=object),
                allow_pickle=True)
        np.save(self.path(".hidden.npy"), np.zeros(3))
        np.save(self.path("__private.npy"), np.zeros(3))
        with open(self.path("notes.txt"), "w") as f:
            f.write("not an array")
        with open(self.path("hostile.npy"), "wb") as f:
            f.write(b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f8', 'shape': (")
        os.symlink("temperature.npy", self.path("link.npy"))
        with zipfile.ZipFile(self.path("sub", "mixed.npz"), "w") as z:
            ok = io.BytesIO()
            np.save(ok, np.arange(4, dtype="<i8"))
            z.writestr("ok.npy", ok.getvalue())
            z.writestr("bad.npy", b"\x93NUMPY\x01\x00\xff\xffgarbage")
            z.writestr("readme.txt", b"a plain member")

        store = zarr.MemoryStore()
        g = zarr.group(store=store)
        store[".zattrs"] = b"{}"
        self.expect_array(g, "temperature", temp)
        self.expect_array(g, "big", big)
        self.expect_array(g, "temp\u00e9rature", accent)
        self.expect_array(g, "records", rec)
        self.expect_array(g, "a-words", words)
        self.expect_array(g, "x.npy", x)      # x.npy and x.ra share "x"
        self.expect_array(g, "x.ra", xra)
        run_npz = self.expect_group(store, g, "run.npz")  # and run/
        self.expect_array(run_npz, "time", np.arange(10.0))
        self.expect_array(run_npz, "signal", fort)
        self.expect_array(run_npz, "scalar", scalar)
        nested = self.expect_group(store, run_npz, "nested")
        self.expect_array(nested, "deep", np.arange(3, dtype="u2"))
        run_dir = self.expect_group(store, g, "run")
        self.expect_array(run_dir, "inside", np.zeros((0, 3), dtype="i8"))
        sub = self.expect_group(store, g, "sub")
        c = self.expect_group(store, sub, "c")
        self.expect_array(c, "a", np.arange(7, dtype="u1"))
        self.expect_array(c, "b", np.eye(3) > 0)
        mixed = self.expect_group(store, sub, "mixed")
        self.expect_array(mixed, "ok", np.arange(4, dtype="<i8"))
        zarr.consolidate_metadata(store)
        want = store[".zmetadata"].decode("ascii")

        r, got = self.arrayinfo(self.root)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(got), json.loads(want))
        self.assertEqual(got, want + "\n")
        err = r.stderr.decode()
        for name in (".hidden.npy", "__private.npy", "hostile.npy",
                     "sub/mixed.npz/bad.npy"):
            self.assertEqual(err.count(name), 1, err)
        for name in ("obj.npy", "notes.txt", "link.npy", "readme.txt"):
            self.assertNotIn(name, err)

    def test_an_npz_or_one_array_is_a_group(self):
        np.savez(self.path("one.npz"), t=np.arange(4, dtype="<i2"))
        np.save(self.path("alone.npy"), np.arange(3.0))
        for path, key, a in ((self.path("one.npz"), "t",
                              np.arange(4, dtype="<i2")),
                             (self.path("alone.npy"), "alone",
                              np.arange(3.0))):
            store = zarr.MemoryStore()
            g = zarr.group(store=store)
            store[".zattrs"] = b"{}"
            self.expect_array(g, key, a)
            zarr.consolidate_metadata(store)
            r, got = self.arrayinfo(path)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(got, store[".zmetadata"].decode() + "\n")

    def test_past_10000_arrays_there_is_no_document(self):
        a = np.zeros(1, dtype="u1")
        for i in range(10001):
            np.save(self.path("sub", f"a{i}.npy"), a)
        r, got = self.arrayinfo(self.path("sub"))
        self.assertEqual(r.returncode, 1)
        self.assertEqual(got, "")
        self.assertIn(b"too many arrays", r.stderr)
        os.unlink(self.path("sub", "a0.npy"))
        r, got = self.arrayinfo(self.path("sub"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(json.loads(got)["metadata"]), 2 + 2 * 10000)

    def test_what_is_no_group_is_refused(self):
        with open(self.path("notes.txt"), "w") as f:
            f.write("x")
        for path in (self.path("notes.txt"), self.path("missing")):
            r, got = self.arrayinfo(path)
            self.assertEqual(r.returncode, 1)
            self.assertEqual(got, "")
            self.assertIn(b"no .zmetadata", r.stderr)


if __name__ == "__main__":
    unittest.main()
