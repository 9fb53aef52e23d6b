#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`.zarr/` (CONTRACT.md, "A folder or npz as a Zarr group"): every mirrored
folder and npz folder is a hidden Zarr group. zarr.open_group and
zarr.open_consolidated (zarr 2.13) list exactly the children written by
hand below and by `arrayinfo --zarr-group` of the source, every array
equals numpy's element for element, its chunk files are its B.zarr/'s,
xarray opens an npz as a Dataset, dask sums equal numpy's; a source changed
under a reader, a hostile header, and a folder past the 10,000 arrays of
`.zmetadata`, whose model reads a header at its key's lookup."""
import errno
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dask.array  # noqa: E402
import expect  # noqa: E402
import mountlib  # noqa: E402
import numpy as np  # noqa: E402
import xarray  # noqa: E402
from dirents import DT_DIR, DT_UNKNOWN, listing_types  # noqa: E402
from mountlib import FreshMountCase, MountCase, TempDir, npy_bytes, read  # noqa: E402
from test_stack import npz_bytes, ra_bytes  # noqa: E402

import zarr  # noqa: E402

RUN = {"time": np.arange(6, dtype="<f8") / 4,
       "signal": np.arange(12, dtype="<f4").reshape(3, 4),
       "labels": np.array([3, 1, 2], dtype="<i8")}
NESTED = {"a": np.arange(5, dtype="<u2"),
          "sub/b": np.arange(6, dtype=">i4").reshape(2, 3),
          "sub/deeper/c": np.ones((2, 2), dtype="<c8")}
# (file, array): what each array file of the source holds
FILES = {
    "temperature.npy": np.arange(20, dtype="<f8").reshape(4, 5) - 3.5,
    "big_endian.npy": np.arange(7, dtype=">i4") * -3,
    "fortran.npy": np.asfortranarray(np.arange(12, dtype="<i2").reshape(3, 4)),
    "x.npy": np.arange(3, dtype="<u1"),
    "x.ra": np.arange(4, dtype="<f4"),
    "flat.ra": np.arange(10, dtype="<i8").reshape(2, 5),
    "lz4.ra": np.arange(64, dtype="<u2").reshape(8, 8),
    "big.ra": np.arange(-6, 6, dtype=">i4").reshape(3, 4),
    "sub/y.npy": np.array([[1.5, 2.5]], dtype="<f8"),
}
HIDDEN = {"__private.npy": np.zeros(2), ".dot.npy": np.zeros(2)}
# the group's children: key -> (source path in the mount, member) or a group
ROOT_ARRAYS = {"temperature", "big_endian", "fortran", "x.npy", "x.ra", "flat",
               "lz4", "big"}
ROOT_GROUPS = {"run", "run.npz", "nested", "sub"}


def populate(src):
    for name, arr in FILES.items():
        os.makedirs(os.path.dirname(src.join(name)), exist_ok=True)
        with open(src.join(name), "wb") as f:
            if name.endswith(".ra"):
                f.write(ra_bytes(arr, lz4_block=name == "lz4.ra"))
            else:
                f.write(npy_bytes(arr))
    for name, arr in HIDDEN.items():
        with open(src.join(name), "wb") as f:
            f.write(npy_bytes(arr))
    with open(src.join("run.npz"), "wb") as f:
        f.write(npz_bytes({k + ".npy": a for k, a in RUN.items()}, False))
    os.mkdir(src.join("run"))   # run/ and run.npz: both keep full names
    with open(src.join("run", "r.npy"), "wb") as f:
        f.write(npy_bytes(np.arange(2, dtype="<i4")))
    with open(src.join("nested.npz"), "wb") as f:
        f.write(npz_bytes({k + ".npy": a for k, a in NESTED.items()}, True))
    with open(src.join("sub", "inner.npz"), "wb") as f:
        f.write(npz_bytes({"k.npy": np.arange(3.0)}, True))
    with open(src.join("not-a-zip.npz"), "wb") as f:   # shown as a plain file
        f.write(b"PK but not really an archive")
    with open(src.join("notes.txt"), "w") as f:
        f.write("a plain file\n")
    with open(src.join("objects.npy"), "wb") as f:
        np.save(f, np.array([1, "a"], dtype=object), allow_pickle=True)
    with open(src.join("hostile.npy"), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00\x10\x00{garbage      }\n")
    os.symlink("temperature.npy", src.join("link.npy"))
    # a name that is no UTF-8: JSON could not name its key
    with open(os.path.join(os.fsencode(src.path), b"latin\xe9.npy"), "wb") as f:
        f.write(npy_bytes(np.zeros(2)))


def expected_arrays(src):
    """{key path in the root group: numpy's array} (for a .ra, the
    reference RawArray reader's array of the file in @p src)."""
    out = {}
    for name, arr in FILES.items():
        folder, _, leaf = name.rpartition("/")
        key = leaf if leaf in ("x.npy", "x.ra") else leaf.rsplit(".", 1)[0]
        if name.endswith(".ra"):
            arr = expect.ra_reference_read(read(src.join(name)))
        out[(folder + "/" if folder else "") + key] = arr
    out.update({"run.npz/" + k: a for k, a in RUN.items()})
    out["run/r"] = np.arange(2, dtype="<i4")
    out.update({"nested/" + k: a for k, a in NESTED.items()})
    out["sub/inner/k"] = np.arange(3.0)
    return out


def assert_equal_array(got, want, what):
    assert got.dtype == want.dtype, "%s: dtype %s, numpy %s" % (what, got.dtype, want.dtype)
    assert got.shape == want.shape, "%s: shape %s, numpy %s" % (what, got.shape, want.shape)
    assert np.array_equal(got, want), "%s: values differ" % what


class GroupCorpus(MountCase):
    @staticmethod
    def make_source():
        src = TempDir()
        populate(src)
        return src

    def path(self, *parts):
        return os.path.join(self.m.mountpoint, *parts)

    def test_hidden_but_found(self):
        """`.zarr` is in no listing, but found by name in every folder."""
        for folder in ("", "sub", "run", "run.npz", "nested.npz",
                       "nested.npz/sub", "sub/inner.npz"):
            self.assertNotIn(".zarr", os.listdir(self.path(folder)), folder)
            self.assertTrue(os.path.isdir(self.path(folder, ".zarr")), folder)
            with open(self.path(folder, ".zarr", ".zgroup")) as f:
                self.assertEqual(json.load(f), {"zarr_format": 2})
            with open(self.path(folder, ".zarr", "zarr.json")) as f:
                self.assertEqual(json.load(f), {"zarr_format": 3,
                                                "node_type": "group",
                                                "attributes": {}})

    def test_children_listed_and_consolidated(self):
        """Both openings list exactly the hand-written children."""
        for opener in (lambda p: zarr.open_group(p, mode="r"),
                       zarr.open_consolidated):
            g = opener(self.path(".zarr"))
            self.assertEqual(set(g.array_keys()), ROOT_ARRAYS)
            self.assertEqual(set(g.group_keys()), ROOT_GROUPS)
            self.assertEqual(set(g["nested"].array_keys()), {"a"})
            self.assertEqual(set(g["nested/sub"].array_keys()), {"b"})
            self.assertEqual(set(g["sub"].group_keys()), {"inner"})
            self.assertEqual(set(g["run.npz"].array_keys()), set(RUN))
        self.assertEqual(sorted(os.listdir(self.path(".zarr"))),
                         sorted([".zattrs", ".zgroup", "zarr.json"] +
                                list(ROOT_ARRAYS | ROOT_GROUPS)))

    def test_zmetadata_is_arrayinfos(self):
        """`.zmetadata` of the mount is `arrayinfo --zarr-group` of the source,
        byte for byte, for the folder, a sub-folder and an npz."""
        for folder in ("", "sub", "nested.npz"):
            out = subprocess.run([mountlib.arrayinfo_bin(), "--zarr-group",
                                  self.src.join(folder) if folder else self.src.path],
                                 capture_output=True, check=True).stdout
            self.assertEqual(read(self.path(folder, ".zarr", ".zmetadata")) + b"\n",
                             out, folder)

    def test_every_array_equals_numpy(self):
        g = zarr.open_consolidated(self.path(".zarr"))
        for key, want in expected_arrays(self.src).items():
            assert_equal_array(g[key][...], want, key)
            # and through its own listing, without the consolidated document
            a = zarr.open_array(self.path(".zarr", key), mode="r")
            assert_equal_array(a[...], want, key + " (listed)")

    def test_chunks_are_the_stores(self):
        """A child array's chunk files and .zarray are its B.zarr/'s."""
        for key, store in (("temperature", "temperature.npy/temperature.zarr"),
                           ("lz4", "lz4.ra/lz4.zarr"),
                           ("run.npz/signal", "run.npz/signal.npy/signal.zarr"),
                           ("nested/sub/b", "nested.npz/sub/b.npy/b.zarr")):
            names = sorted(os.listdir(self.path(store)))
            self.assertEqual(sorted(os.listdir(self.path(".zarr", key))), names)
            for n in names:
                if n not in (".zattrs", "zarr.json"):
                    self.assertEqual(read(self.path(".zarr", key, n)),
                                     read(self.path(store, n)), key + "/" + n)
            self.assertNotEqual(os.stat(self.path(".zarr", key, ".zarray")).st_ino,
                                os.stat(self.path(store, ".zarray")).st_ino)

    def test_dimension_names_unique(self):
        with open(self.path(".zarr", "x.npy", ".zattrs")) as f:
            self.assertEqual(json.load(f), {"_ARRAY_DIMENSIONS": ["x.npy_dim_0"]})
        with open(self.path(".zarr", "temperature", "zarr.json")) as f:
            self.assertEqual(json.load(f)["dimension_names"],
                             ["temperature_dim_0", "temperature_dim_1"])

    def test_xarray_dataset_of_an_npz(self):
        ds = xarray.open_zarr(self.path("run.npz", ".zarr"))
        self.assertEqual(set(ds.data_vars), set(RUN))
        for k, want in RUN.items():
            assert_equal_array(ds[k].values, want, k)
        ds = xarray.open_zarr(self.path(".zarr"))
        self.assertEqual(set(ds.data_vars), ROOT_ARRAYS)

    def test_dask_sums(self):
        for key, want in expected_arrays(self.src).items():
            if want.dtype.kind == "c":
                continue
            got = dask.array.from_zarr(self.path(".zarr"), component=key)
            self.assertEqual(got.sum().compute(scheduler="synchronous"),
                             want.sum(), key)

    def test_left_out_and_logged(self):
        """Hostile headers, hidden names and names that are no key are left
        out with one log line; plain files, symlinks and object arrays are
        left out silently."""
        g = zarr.open_group(self.path(".zarr"), mode="r")
        for key in ("hostile", "objects", "notes", "notes.txt", "link",
                    "__private", ".dot", "not-a-zip", "not-a-zip.npz"):
            self.assertNotIn(key, g)
            with self.assertRaises(FileNotFoundError):
                os.stat(self.path(".zarr", key))
        log = self.m.log()
        self.assertEqual(log.count("hostile.npy: not in its folder's .zarr group"), 1, log)
        self.assertEqual(log.count("__private.npy: not in its folder's .zarr group"), 1, log)
        self.assertEqual(log.count(": not in its folder's .zarr group: Zarr cannot take "
                                   "its name as a key"), 1, log)
        self.assertNotIn("objects.npy: not in", log)
        self.assertNotIn("notes.txt: not in", log)

    def test_read_only(self):
        for p in (self.path(".zarr", "new"), self.path(".zarr", "x.npy", "0")):
            with self.assertRaises(OSError) as cm:
                open(p, "wb")
            self.assertIn(cm.exception.errno, (errno.EROFS, errno.EACCES))


class GroupOnDaskCluster(MountCase):
    """dask.array.from_zarr(group, component=...) on a dask.distributed
    cluster of 2 worker processes on 127.0.0.1: sums equal numpy's, with
    chunks small enough (-o zarr_chunk) that each array is many tasks."""
    mount_args = ("-o", "zarr_chunk=4096")
    ARRAYS = {"ramp": np.arange(20000, dtype="<i4") % 977,
              "grid": (np.arange(30000, dtype=">i8") % 1013).reshape(150, 200)}

    @classmethod
    def make_source(cls):
        src = TempDir()
        with open(src.join("stored.npz"), "wb") as f:
            f.write(npz_bytes({k + ".npy": a for k, a in cls.ARRAYS.items()}, False))
        with open(src.join("deflated.npz"), "wb") as f:
            f.write(npz_bytes({k + ".npy": a for k, a in cls.ARRAYS.items()}, True))
        with open(src.join("ramp.npy"), "wb") as f:
            f.write(npy_bytes(cls.ARRAYS["ramp"]))
        return src

    def test_sums_on_two_worker_processes_equal_numpys(self):
        client = mountlib.dask_cluster(self, "1GiB")
        group = self.mp(".zarr")
        for component in ("stored/ramp", "stored/grid", "deflated/ramp",
                          "deflated/grid", "ramp"):
            want = self.ARRAYS[component.rsplit("/", 1)[-1]]
            x = dask.array.from_zarr(group, component=component)
            self.assertGreater(x.npartitions, 3, component)
            got = client.compute(x.sum(dtype=np.int64), sync=True)
            self.assertEqual(int(got), int(want.sum(dtype=np.int64)), component)


class GroupFreshness(FreshMountCase):
    def populate(self):
        with open(self.src.join("a.npy"), "wb") as f:
            f.write(npy_bytes(np.arange(4, dtype="<i4")))

    def test_changed_under_a_reader(self):
        """A child added or changed gives new metadata at the next lookup;
        a reader holding `.zmetadata` open reads the document it opened."""
        mnt = self.m.mountpoint
        zm = os.path.join(mnt, ".zarr", ".zmetadata")
        before = read(zm)
        held = open(zm, "rb")
        with open(self.src.join("b.npy"), "wb") as f:
            f.write(npy_bytes(np.arange(3, dtype="<f8")))
        with open(self.src.join("a.npy"), "wb") as f:
            f.write(npy_bytes(np.arange(9, dtype="<i4")))
        self.assertEqual(held.read(), before)
        held.close()
        mountlib.wait_for(lambda: b'"b/.zarray"' in read(zm), what="b in .zmetadata")
        g = zarr.open_consolidated(os.path.join(mnt, ".zarr"))
        self.assertEqual(set(g.array_keys()), {"a", "b"})
        assert_equal_array(g["a"][...], np.arange(9, dtype="<i4"), "a")
        os.unlink(self.src.join("b.npy"))
        mountlib.wait_for(lambda: not os.path.exists(os.path.join(mnt, ".zarr", "b")),
                          what="b gone from the group")
        mountlib.wait_for(lambda: b'"b/.zarray"' not in read(zm),
                          what="b gone from .zmetadata")

    def test_source_entry_named_zarr_wins(self):
        os.mkdir(self.src.join(".zarr"))
        with open(self.src.join(".zarr", "mine.txt"), "w") as f:
            f.write("mine\n")
        mnt = self.m.mountpoint
        mountlib.wait_for(lambda: os.path.exists(os.path.join(mnt, ".zarr", "mine.txt")),
                          what="the source's .zarr")
        self.assertFalse(os.path.exists(os.path.join(mnt, ".zarr", ".zgroup")))


class GroupPastConsolidation(FreshMountCase):
    N = 10001

    def populate(self):
        one = npy_bytes(np.zeros(1, dtype="u1"))
        for i in range(self.N):
            with open(self.src.join("a%05d.npy" % i), "wb") as f:
                f.write(one)

    def test_no_zmetadata_still_opens(self):
        mnt = self.m.mountpoint
        started = time.monotonic()
        with self.assertRaises(FileNotFoundError):
            os.stat(os.path.join(mnt, ".zarr", ".zmetadata"))
        self.assertIn("no .zmetadata", self.m.log())
        names = os.listdir(os.path.join(mnt, ".zarr"))
        self.assertEqual(len(names), self.N + 3)
        g = zarr.open_group(os.path.join(mnt, ".zarr"), mode="r")
        self.assertEqual(g["a10000"][...].tolist(), [0])
        self.assertEqual(g["a00000"].shape, (1,))
        self.assertLess(time.monotonic() - started, 60)



class GroupOfNamesPastConsolidation(FreshMountCase):
    """Past 10,000 arrays the daemon's model of a folder holds names only
    and reads a child's header at its lookup: listing and lookups agree
    (a key listed is found, or is DT_UNKNOWN and then ENOENT every time),
    collisions and left-outs are as in a small folder, and zarr lists the
    right children."""
    N = 10001
    HOSTILE = b"\x93NUMPY\x01\x00\x10\x00{garbage      }\n"
    ODD_ARRAYS = {"c.npy": np.arange(2.0), "c.ra": np.arange(3, dtype="<i4"),
                  "d": np.arange(4, dtype="<i4")}   # d.ra; d.npy is hostile
    NOT_FOUND = ("hostile", "objects", "__p", "__p.npy", "b\\k", "d.npy", "d.ra")

    def populate(self):
        one = npy_bytes(np.zeros(1, dtype="u1"))
        for i in range(self.N):
            with open(self.src.join("a%05d.npy" % i), "wb") as f:
                f.write(one)
        files = {"c.npy": npy_bytes(self.ODD_ARRAYS["c.npy"]),
                 "c.ra": ra_bytes(self.ODD_ARRAYS["c.ra"]),
                 "d.ra": ra_bytes(self.ODD_ARRAYS["d"]),
                 "d.npy": self.HOSTILE, "hostile.npy": self.HOSTILE,
                 "__p.npy": one, "b\\k.npy": one}
        for name, data in files.items():
            with open(self.src.join(name), "wb") as f:
                f.write(data)
        with open(self.src.join("objects.npy"), "wb") as f:
            np.save(f, np.array([1, "a"], dtype=object), allow_pickle=True)
        os.mkdir(self.src.join("grp"))
        with open(self.src.join("grp", "g.npy"), "wb") as f:
            f.write(one)

    def test_listing_and_lookups_agree(self):
        group = self.mp(".zarr")
        types = listing_types(group)
        keys = set(types) - {".zattrs", ".zgroup", "zarr.json"}
        arrays = {"a%05d" % i for i in range(self.N)} | set(self.ODD_ARRAYS)
        # not read yet, so maybe listed: found absent at their lookup
        self.assertLessEqual(arrays | {"grp"}, keys)
        self.assertLessEqual(keys, arrays | {"grp", "hostile", "objects"})
        self.assertEqual(types["grp"], DT_DIR)
        # the listing read no header: array keys past the first entries
        # (a readdirplus looks the first 64 up) are listed untyped
        self.assertEqual(types["hostile"], DT_UNKNOWN)
        self.assertEqual(types["a%05d" % (self.N - 1)], DT_UNKNOWN)
        for k in sorted(keys)[::500] + sorted(self.ODD_ARRAYS) + ["grp"]:
            self.assertIn(types[k], (DT_DIR, DT_UNKNOWN), k)
            self.assertTrue(os.path.isdir(os.path.join(group, k)), k)
        for _ in range(2):
            for k in self.NOT_FOUND:
                with self.assertRaises(FileNotFoundError, msg=k):
                    os.stat(os.path.join(group, k))
        log = self.m.log()
        for name in ("hostile.npy", "d.npy", "__p.npy", "b\\k.npy"):
            self.assertEqual(log.count(name + ": not in its folder's .zarr group"), 1, log)
        self.assertNotIn("objects.npy: not in", log)
        g = zarr.open_group(group, mode="r")
        self.assertEqual(set(g.array_keys()), arrays)
        self.assertEqual(set(g.group_keys()), {"grp"})
        for k, want in self.ODD_ARRAYS.items():
            assert_equal_array(g[k][...], want, k)


if __name__ == "__main__":
    mountlib.main()
