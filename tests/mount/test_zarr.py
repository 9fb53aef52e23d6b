#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""B.zarr/ (CONTRACT.md): every array of the numpy-written corpus read back
by zarr-python and zarrita.js equals numpy's, file for file as expect.py's
model says; chunk files are ordinary files of the mount (listing, lookups,
inode numbers, xattrs, EROFS, freshness); -o zarr_chunk; zarr-python's
reads of the chunk files cost the requests a plain file's do (counted in
the daemon's -d log); hostile shapes and dtypes get no store or a correct
one."""
import errno
import json
import os
import re
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import expect  # noqa: E402
import mountlib  # noqa: E402
import numpy as np  # noqa: E402
import zarrita  # noqa: E402
from mountlib import (FreshMountCase, MountCase, TempDir, check_all, fixtures,  # noqa: E402
                      npy_bytes, read, wait_for)

import zarr  # noqa: E402

DEADLINE = 10.0
XATTRS = ("user.array.shape", "user.array.dtype", "user.array.order", "user.array.offset")


def store_of(rel):
    """The B.zarr/ folder name of array directory REL."""
    return rel.rsplit("/", 1)[-1].rsplit(".", 1)[0] + ".zarr"


def zarr_unspellable(dtype):
    """Why zarr cannot give back numpy's dtype exactly, or None. Zarr's list
    form of a structured type has no field titles and no offsets: titles are
    left out, and padding becomes named void fields (zarr's f0, f1 ...)."""
    if dtype.fields is None:
        return None
    if any(len(f) > 2 for f in dtype.fields.values()):
        return "field titles"
    if dtype.itemsize != sum(f[0].itemsize for f in dtype.fields.values()):
        return "padding between or after fields"
    return None


def numpys_array(rel, arr, corpus):
    """numpy's answer for corpus array REL: numpy.load of the .npy or npz
    member, or the reference RawArray reader's array of a .ra."""
    if hasattr(arr, "npy"):
        return arr.npy.array
    return expect.ra_reference_read(read(os.path.join(corpus, rel)))


def assert_same_array(got, want, what):
    """GOT (a reader's array) equals WANT value for value and dtype for
    dtype; where zarr cannot spell WANT's dtype, field for field."""
    why = zarr_unspellable(want.dtype)
    if got.shape != want.shape:
        raise AssertionError("%s: shape %s, numpy %s" % (what, got.shape, want.shape))
    if why is None:
        if got.dtype != want.dtype:
            raise AssertionError("%s: dtype %s, numpy %s" % (what, got.dtype, want.dtype))
        expect.assert_bytes(got.tobytes(order="C"), want.tobytes(order="C"), what)
        return
    for name in want.dtype.names:  # zarr cannot say the dtype: the fields
        expect.assert_bytes(np.ascontiguousarray(got[name]).tobytes(),
                            np.ascontiguousarray(want[name]).tobytes(),
                            "%s field %r (%s)" % (what, name, why))


def zarr_read(store):
    """zarr-python's whole array of the store at STORE (any failure is an
    AssertionError, so check_all lists it)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return zarr.open(store, mode="r")[...]
    except Exception as e:
        raise AssertionError("zarr.open(%s)[...]: %s: %s" % (store, type(e).__name__, e))


class CorpusCase(MountCase):
    """The corpus, its model and numpy's arrays, mounted with mount_args."""
    source = staticmethod(lambda: fixtures("corpus"))
    zarr_chunk = expect.ZARR_CHUNK

    @classmethod
    def setUpClass(cls):
        cls.tree = expect.expected_tree(fixtures("corpus"), cls.zarr_chunk)
        cls.all = expect.arrays(cls.tree)
        cls.stores = [(rel, arr) for rel, arr in cls.all if store_of(rel) in arr.names]
        super().setUpClass()

    def check_model_files(self, which):
        """Every file of the model for which WHICH(array rel, file name) holds."""
        todo = [(rel, arr, name) for rel, arr in self.all for name in arr.files
                if which(rel, name)]
        self.assertGreater(len(todo), 0)

        def check(item):
            rel, arr, name = item
            got = read(self.mp(rel, name))
            for c in arr.checks[name]:
                c(got)
        check_all(self, todo, check, label=lambda t: t[0] + "/" + t[2])

    def check_zarr_python(self):
        def check(item):
            rel, arr = item
            got = zarr_read(self.mp(rel, store_of(rel)))
            assert_same_array(got, numpys_array(rel, arr, fixtures("corpus")), rel)
        self.assertGreater(len(self.stores), 100)
        check_all(self, self.stores, check, label=lambda t: t[0])


class ZarrCorpusTest(CorpusCase):
    def test_zarr_python_reads_every_array_as_numpy_does(self):
        self.check_zarr_python()

    def test_every_store_file_and_sidecar_is_the_models(self):
        self.check_model_files(lambda rel, name: ".zarr/" in name or "hdr" in name)

    def test_zarrita_reads_v3_and_v2_of_every_core_type_array(self):
        todo = []
        for rel, arr in self.stores:
            want = numpys_array(rel, arr, fixtures("corpus"))
            if not zarrita.readable(want.dtype, want.shape):
                continue
            for version, meta in (("v3", "zarr.json"), ("v2", ".zarray")):
                # which stores have zarr.json: test_v3_metadata_only_for_core_types
                if os.path.exists(self.mp(rel, store_of(rel), meta)):
                    todo.append((rel, version, want))
        self.assertGreater(len(todo), 100)
        got = {}
        for version in ("v2", "v3"):
            stores = [self.mp(rel, store_of(rel)) for rel, v, _ in todo if v == version]
            got[version] = zarrita.read_all(stores, version)

        def check(item):
            rel, version, want = item
            zarrita.assert_same(got[version][self.mp(rel, store_of(rel))], want, rel)
        check_all(self, todo, check, label=lambda t: "%s (%s)" % (t[0], t[1]))

    def test_v3_metadata_only_for_core_types(self):
        def check(item):
            rel, arr = item
            dt = numpys_array(rel, arr, fixtures("corpus")).dtype
            core = dt.fields is None and dt.kind in "biufc" and \
                (dt.kind != "f" or dt.itemsize <= 8) and (dt.kind != "c" or dt.itemsize <= 16)
            bf16 = hasattr(arr, "ra") and arr.ra["eltype"] == 5
            self.assertEqual(os.path.exists(self.mp(rel, store_of(rel), "zarr.json")),
                             core and not bf16)
        check_all(self, self.stores, check, label=lambda t: t[0])

    def test_object_arrays_have_no_store_and_no_sidecars(self):
        for rel in ("dtypes/object.npy", "dtypes/object_field.npy", "npz/stored.npz/obj.npy"):
            with self.subTest(rel=rel):
                names = os.listdir(self.mp(rel))
                self.assertFalse([n for n in names if n.endswith((".zarr", "hdr"))], names)
                with self.assertRaises(FileNotFoundError):
                    os.stat(self.mp(rel, store_of(rel)))

    def test_chunk_files_have_the_xattrs_of_data(self):
        def check(item):
            rel, arr = item
            store = self.mp(rel, store_of(rel))
            chunks = [n for n in sorted(os.listdir(store)) if expect.is_zarr_chunk(store + "/" + n)]
            for name in chunks[:2]:
                path = os.path.join(store, name)
                self.assertEqual(sorted(os.listxattr(path)), sorted(XATTRS))
                for x in XATTRS:
                    self.assertEqual(os.getxattr(path, x), os.getxattr(self.mp(rel, "data"), x))
            for meta in (".zarray", ".zattrs"):
                self.assertEqual(os.listxattr(os.path.join(store, meta)), [])
        check_all(self, self.stores[::7], check, label=lambda t: t[0])

    def test_writes_are_refused_with_erofs(self):
        store = self.mp("dtypes", "f8_le.npy", "f8_le.zarr")
        attempts = {
            "open a chunk for writing": lambda: os.open(os.path.join(store, "0.0"), os.O_WRONLY),
            "truncate .zarray": lambda: os.truncate(os.path.join(store, ".zarray"), 0),
            "create a chunk": lambda: os.open(os.path.join(store, "9.9"),
                                              os.O_WRONLY | os.O_CREAT, 0o644),
            "remove a chunk": lambda: os.unlink(os.path.join(store, "0.0")),
            "make a folder": lambda: os.mkdir(os.path.join(store, "x")),
            "remove the store": lambda: os.rmdir(store),
            "rename a chunk": lambda: os.rename(os.path.join(store, "0.0"),
                                                os.path.join(store, "1.0")),
            "set an xattr": lambda: os.setxattr(os.path.join(store, "0.0"), "user.x", b"1"),
        }
        for what, call in attempts.items():
            with self.subTest(what=what):
                with self.assertRaises(OSError) as cm:
                    call()
                self.assertEqual(cm.exception.errno, errno.EROFS, what)
        self.assertEqual(read(os.path.join(store, "0.0")), read(self.mp("dtypes", "f8_le.npy", "data")))


class SmallChunksTest(CorpusCase):
    """-o zarr_chunk=40: most arrays are cut into many chunks, the last of
    each run padded with zeros, some single elements larger than a chunk."""
    zarr_chunk = 40
    mount_args = ("-o", "zarr_chunk=40")

    def test_zarr_python_reads_every_array_as_numpy_does(self):
        self.check_zarr_python()

    def test_every_store_file_is_the_models(self):
        self.check_model_files(lambda rel, name: ".zarr/" in name)

    def test_listing_is_the_models_in_index_order(self):
        """Metadata first, then the chunks in index order, as readdir
        offsets walk them (many chunks: several getdents calls)."""
        def check(item):
            rel, arr = item
            store = store_of(rel)
            files = [n.split("/", 1)[1] for n in arr.files if n.startswith(store + "/")]
            metas = [m for m in (".zarray", ".zattrs", "zarr.json") if m in files]
            meta = json.loads(read(self.mp(rel, store_of(rel), ".zarray")))
            chunks = expect.zarr_chunk_names(meta["shape"], meta["chunks"],
                                             meta["order"] == "F")
            with os.scandir(self.mp(rel, store)) as it:
                got = [e.name for e in it]
            self.assertEqual(got, metas + chunks)
            self.assertEqual(sorted(got), sorted(files))
        check_all(self, self.stores, check, label=lambda t: t[0])

    def test_inode_numbers_are_distinct_stable_and_the_listings(self):
        rel = "ra/shepplogan.ra"
        store = self.mp(rel, store_of(rel))
        with os.scandir(store) as it:
            listed = {e.name: e.inode() for e in it}
        self.assertGreater(len(listed), 10)
        stats = {n: os.lstat(os.path.join(store, n)).st_ino for n in listed}
        self.assertEqual(stats, listed)
        self.assertEqual(len(set(stats.values())), len(stats), "inode numbers repeat")
        others = {os.lstat(self.mp(rel, n)).st_ino for n in os.listdir(self.mp(rel))}
        self.assertFalse(others & set(stats.values()))
        mountlib.walk(self.m.mountpoint)  # many other lookups in between
        self.assertEqual({n: os.lstat(os.path.join(store, n)).st_ino for n in listed}, stats)

    def test_chunk_names_are_parsed_strictly(self):
        rel = "shapes/c_2x3x4_i4.npy"  # chunks (1, 2, 4): a grid of (2, 2, 1)
        store = self.mp(rel, store_of(rel))
        names = set(os.listdir(store))
        self.assertEqual(names, {".zarray", ".zattrs", "zarr.json",
                                 "0.0.0", "0.1.0", "1.0.0", "1.1.0"})
        for bad in ("00.0.0", "0.0", "0.0.0.0", "-0.0.0", "+0.0.0", "0.0.0.", ".0.0.0",
                    "0..0.0", "0.0. 0", "0x0.0.0", "2.0.0", "0.2.0", "0.0.1", "01.0.0",
                    "18446744073709551616.0.0", "0.0.0\n", "0", "c/0/0/0", "0/0/0",
                    ".zgroup", ".zmetadata", "zarr.json.bak", "ZARR.JSON", "data"):
            with self.subTest(name=bad):
                self.assertNotIn(bad, names)
                with self.assertRaises(FileNotFoundError):
                    os.lstat(os.path.join(store, bad))


class ManyChunksTest(MountCase):
    """100,000 chunk files are listed from their indices alone."""
    N = 100000

    @classmethod
    def make_source(cls):
        src = TempDir()
        np.save(src.join("a.npy"), np.arange(cls.N, dtype="<f8"))
        return src
    mount_args = ("-o", "zarr_chunk=8")

    def test_listing_and_lookups_of_100000_chunks(self):
        store = self.mp("a.npy", "a.zarr")
        with os.scandir(store) as it:
            entries = [(e.name, e.inode()) for e in it]
        names = [n for n, _ in entries]
        self.assertEqual(names, [".zarray", ".zattrs", "zarr.json"] +
                         [str(i) for i in range(self.N)])
        self.assertEqual(len({i for _, i in entries}), len(entries))
        for i in (0, 1, 99999, 54321):
            with self.subTest(chunk=i):
                self.assertEqual(read(os.path.join(store, str(i))),
                                 np.array([i], dtype="<f8").tobytes())
                self.assertEqual(os.lstat(os.path.join(store, str(i))).st_ino,
                                 dict(entries)[str(i)])
        with self.assertRaises(FileNotFoundError):
            os.lstat(os.path.join(store, str(self.N)))


class ZarrChunkOptionTest(mountlib.unittest.TestCase):
    def test_bad_zarr_chunk_values_exit_1_before_mounting(self):
        src = TempDir()
        self.addCleanup(src.close)
        for value in ("0", "-1", "x", "", "18446744073709551615"):
            with self.subTest(value=value):
                m = mountlib.Mount(src.path, None, ("-o", "zarr_chunk=" + value))
                self.addCleanup(m.cleanup)
                with self.assertRaises(mountlib.MountError):
                    m.start()
                self.assertEqual(m.proc.wait(timeout=DEADLINE), 1)
                self.assertFalse(mountlib.is_mounted(m.mountpoint))

    def test_help_names_the_option(self):
        r = mountlib.subprocess.run([mountlib.arrayfs_bin(), "--help"], capture_output=True,
                                    text=True, timeout=DEADLINE)
        self.assertEqual(r.returncode, 0)
        self.assertIn("zarr_chunk=BYTES", r.stdout)


class ZarrFreshnessTest(FreshMountCase):
    def populate(self):
        np.save(self.src.join("a.npy"), np.arange(12, dtype="<i4").reshape(3, 4))

    def test_a_changed_shape_gives_new_metadata_and_chunks_at_the_next_lookup(self):
        store = self.m.path("a.npy", "a.zarr")
        self.assertIn(b'"shape": [\n        3,\n        4\n    ]',
                      read(os.path.join(store, ".zarray")))
        fd = os.open(os.path.join(store, "0.0"), os.O_RDONLY)
        try:
            self.assertEqual(os.pread(fd, 4, 0), np.int32(0).tobytes())
            new = (np.arange(30).reshape(5, 6) + 0.5).astype(">f8")
            tmp = self.src.join("a.npy.tmp")
            with open(tmp, "wb") as f:
                f.write(npy_bytes(new))
            os.rename(tmp, self.src.join("a.npy"))
            wait_for(lambda: b'">f8"' in read(os.path.join(store, ".zarray")), DEADLINE,
                     what="the new .zarray")
            assert_same_array(zarr_read(store), new, "a.npy after the change")
            self.assertEqual(os.listdir(store), [".zarray", ".zattrs", "zarr.json", "0.0"])
            # the old file: its own version's bytes, or EIO, never the new ones
            try:
                self.assertEqual(os.pread(fd, 48, 0), np.arange(12, dtype="<i4").tobytes())
            except OSError as e:
                self.assertEqual(e.errno, errno.EIO)
        finally:
            os.close(fd)

    def test_a_store_disappears_with_its_array(self):
        store = self.m.path("a.npy", "a.zarr")
        self.assertTrue(os.path.isdir(store))
        with open(self.src.join("a.npy"), "wb") as f:
            f.write(b"not an array any more")
        wait_for(lambda: os.path.isfile(self.m.path("a.npy")), DEADLINE, what="a plain file")
        self.assertFalse(os.path.exists(store))


class ChunkRequestsTest(FreshMountCase):
    """What keeps zarr over the mount near FUSE's own ceiling (the bench's
    zarr section), counted in the daemon's -d log: chunk files are read in
    READs of the readahead window (512 KiB when root: -o readahead_kb),
    not the kernel's 128 KiB, and a second zarr read of the array is
    served from the page cache with no READ and no OPEN."""
    mount_args = ("-d", "-o", "zarr_chunk=%d" % (1 << 20))
    ROWS, COLS = 1024, 1024  # int32: four chunk files of 1 MiB

    def populate(self):
        self.arr = (np.arange(self.ROWS * self.COLS, dtype="<i4") % 977).reshape(self.ROWS,
                                                                                self.COLS)
        np.save(self.src.join("a.npy"), self.arr)

    def opcodes(self, name):
        return len(re.findall(r"opcode: %s \(" % name, self.m.log()))

    def test_chunks_are_read_in_readahead_windows_then_from_the_page_cache(self):
        store = self.m.path("a.npy", "a.zarr")
        chunks = [n for n in os.listdir(store) if n[0].isdigit()]
        self.assertEqual(len(chunks), 4, chunks)
        reads0 = self.opcodes("READ")
        assert_same_array(zarr_read(store), self.arr, "first zarr read")
        first = self.opcodes("READ") - reads0
        window = (512 if os.geteuid() == 0 else 128) << 10
        # each 1 MiB chunk in READs of the window (one more where the
        # source's 128-byte header shifts the pages), and zarr's metadata
        most = len(chunks) * ((1 << 20) // window + 1) + 3
        self.assertLessEqual(first, most, "READs smaller than the %d KiB window" % (window >> 10))
        assert_same_array(zarr_read(store), self.arr, "second zarr read")
        self.assertEqual(self.opcodes("READ") - reads0, first,
                         "the second zarr read reached the daemon instead of the page cache")
        self.assertLessEqual(self.opcodes("OPEN"), 1, "the kernel sends an OPEN per chunk file")


if __name__ == "__main__":
    mountlib.main()
