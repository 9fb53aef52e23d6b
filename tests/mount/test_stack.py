#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`.stack/`: a folder's (or an npz folder's) arrays as one array. numpy is
the judge: numpy.load of .stack/stack.npy equals numpy.stack of the members
in natural name order (the new axis last for Fortran order); names, shape,
dtype, stack.ra, stack.zarr/ and the sidecars agree; folders whose arrays
disagree have no .stack and log one line; a source named .stack wins;
readdir never lists it; a change to a member gives a new stack at the next
lookup while a reader of the old one gets its bytes or EIO, never a mix."""
import errno
import io
import json
import os
import re
import struct
import subprocess
import sys
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import lz4.block  # noqa: E402
import numpy as np  # noqa: E402
import zarr  # noqa: E402

import expect  # noqa: E402
import mountlib  # noqa: E402
from mountlib import TempDir, wait_for  # noqa: E402

DEADLINE = 10.0  # seconds a change may take to show


def npy_bytes(arr):
    f = io.BytesIO()
    np.save(f, arr)
    return f.getvalue()


def ra_bytes(arr, lz4_block=False):
    """A RawArray file of C-order ARR (dims fastest first), LZ4 if asked;
    a big-endian ARR keeps its bytes and sets flags bit 0."""
    arr = np.ascontiguousarray(arr)
    eltype, elbyte = expect.ra_type_of(arr.dtype)
    raw = arr.tobytes()
    data = lz4.block.compress(raw, mode="default", store_size=False) \
        if lz4_block else raw
    flags = (2 if lz4_block else 0) | (1 if arr.dtype.byteorder == ">" else 0)
    dims = list(arr.shape)[::-1]
    head = struct.pack("<6Q", expect.RA_MAGIC, flags, eltype, elbyte, len(data),
                       len(dims))
    return head + struct.pack("<%dQ" % len(dims), *dims) + data


def npz_bytes(members, deflate):
    f = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
    with zipfile.ZipFile(f, "w", method) as z:
        for name, arr in members.items():
            z.writestr(name, npy_bytes(arr))
    return f.getvalue()


NAMES = ["img1", "img2", "img3", "img10", "img11", "img20"]
MANY = 400
ODD_NAMES = {"a": np.zeros(3, "<f4"), "b": np.ones(3, "<f4")}


def members(make):
    """{name: array} for NAMES, each made by MAKE(k)."""
    return {n: make(k) for k, n in enumerate(NAMES)}


# name -> (file suffix, {member: array}, how to write one, axis of the stack)
C_F4 = members(lambda k: np.arange(6, dtype="<f4").reshape(2, 3) + 10 * k)
FORTRAN = members(lambda k: np.asfortranarray(
    np.arange(12, dtype="<i2").reshape(3, 4) * (k + 1)))
BIG = members(lambda k: np.arange(5, dtype=">i4") * 1000 + k)
ZERO_D = members(lambda k: np.array(k * 1.5, dtype="<f8"))
ONE_D = members(lambda k: np.arange(7, dtype="|u1") + k)
RA = members(lambda k: np.arange(8, dtype="<u2").reshape(2, 4) + k)
# 100 KiB members: their bytes are spliced from the files, not copied
LARGE = members(lambda k: np.random.default_rng(k).integers(
    0, 256, size=(320, 320), dtype=np.uint8))
STRUCT = members(lambda k: np.array([(k, k / 2)] * 3,
                                    dtype=[("a", "<i4"), ("b", "<f4")]))


def populate(src):
    def folder(name, arrays, write=lambda a: npy_bytes(a), suffix=".npy"):
        os.mkdir(src.join(name))
        for n, a in arrays.items():
            with open(src.join(name, n + suffix), "wb") as f:
                f.write(write(a))
    folder("c_f4", C_F4)
    # not members: a text file, a folder, an .npz
    with open(src.join("c_f4", "notes.txt"), "w") as f:
        f.write("not an array\n")
    os.mkdir(src.join("c_f4", "sub"))
    with open(src.join("c_f4", "pair.npz"), "wb") as f:
        f.write(npz_bytes({"x.npy": np.zeros(2)}, False))
    folder("fortran", FORTRAN)
    folder("big", BIG)
    folder("zero_d", ZERO_D)
    folder("one_d", ONE_D)
    folder("structured", STRUCT)
    folder("large", LARGE)
    with open(src.join("large_stored.npz"), "wb") as f:
        f.write(npz_bytes({n + ".npy": a for n, a in LARGE.items()}, False))
    os.mkdir(src.join("ra"))
    for k, (n, a) in enumerate(RA.items()):
        with open(src.join("ra", n + ".ra"), "wb") as f:
            f.write(ra_bytes(a, lz4_block=k % 2 == 1))
    npz = {n + ".npy": a for n, a in C_F4.items()}
    with open(src.join("stored.npz"), "wb") as f:
        f.write(npz_bytes(npz, False))
    with open(src.join("deflated.npz"), "wb") as f:
        f.write(npz_bytes(npz, True))
    # each folder of an archive has its own stack
    with open(src.join("nested.npz"), "wb") as f:
        f.write(npz_bytes({"a1.npy": np.zeros(3), "a2.npy": np.ones(3),
                           "sub/b1.npy": np.zeros((2, 2), "<i2"),
                           "sub/b2.npy": np.ones((2, 2), "<i2")}, True))
    # folders that do not stack, each for one reason
    bad = {
        "bad_dtype": {"a": np.zeros(3, "<f4"), "b": np.zeros(3, "<f8")},
        "bad_shape": {"a": np.zeros(3, "<f4"), "b": np.zeros(4, "<f4")},
        "bad_order": {"a": np.zeros((2, 3), "<f4"),
                      "b": np.asfortranarray(np.zeros((2, 3), "<f4"))},
        "single": {"a": np.zeros(3, "<f4")},
    }
    for name, arrays in bad.items():
        folder(name, arrays)
    folder("bad_broken", {"a": np.zeros(3, "<f4"), "b": np.zeros(3, "<f4")})
    with open(src.join("bad_broken", "c.npy"), "wb") as f:
        f.write(b"\x93NUMPY not really")
    # enough members for the parallel header read (stackscan.h), one of
    # them (in the middle) of another shape in the second folder
    for name, odd in (("many", None), ("many_bad", 257)):
        os.mkdir(src.join(name))
        for k in range(MANY):
            a = np.full(2 if k == odd else 3, k, "<u2")
            with open(src.join(name, "p%d.npy" % k), "wb") as f:
                f.write(npy_bytes(a))
    # names the member rule leaves out, each an array of another shape
    # that would break the stack: a line break (`names` is one name a
    # line), just ".npy" (no B), "e.NPY"; in the npz also a .ra member
    folder("odd_names", ODD_NAMES)
    odd = {"c\nd.npy": np.zeros(4, "<f4"), ".npy": np.zeros(5, "<f4"),
           "e.NPY": np.zeros(6, "<f4")}
    for n, a in odd.items():
        with open(src.join("odd_names", n), "wb") as f:
            f.write(npy_bytes(a))
    odd["f.ra"] = np.zeros(7, "<f4")
    with open(src.join("odd_names.npz"), "wb") as f:
        f.write(npz_bytes(dict(odd, **{n + ".npy": a
                                       for n, a in ODD_NAMES.items()}), False))
    # a source entry named .stack wins
    folder("own", {"a": np.zeros(3, "<f4"), "b": np.zeros(3, "<f4")})
    with open(src.join("own", ".stack"), "w") as f:
        f.write("mine\n")


def make_source():
    src = TempDir()
    populate(src)
    return src


class StackCase(mountlib.MountCase):
    make_source = staticmethod(make_source)

    def expected(self, arrays):
        ordered = [arrays[n] for n in NAMES]
        fortran = ordered[0].ndim > 1 and np.isfortran(ordered[0])
        return np.stack(ordered, axis=-1 if fortran else 0)

    def check_stack(self, folder, arrays, suffix=".npy"):
        want = self.expected(arrays)
        got = np.load(self.mp(folder, ".stack", "stack.npy"))
        self.assertEqual(got.dtype, want.dtype)
        self.assertEqual(got.shape, want.shape)
        np.testing.assert_array_equal(got, want)
        self.assertEqual(np.isfortran(got),
                         want.ndim > 1 and np.isfortran(arrays[NAMES[0]]))
        with open(self.mp(folder, ".stack", "names")) as f:
            self.assertEqual(f.read(), "".join(n + suffix + "\n" for n in NAMES))
        with open(self.mp(folder, ".stack", "shape"), "rb") as f:
            self.assertEqual(f.read(), expect.shape_text(want.shape))
        with open(self.mp(folder, ".stack", "dtype")) as f, \
                open(self.mp(folder, NAMES[0] + suffix, "dtype")) as g:
            self.assertEqual(f.read(), g.read())
        with open(self.mp(folder, ".stack", "data"), "rb") as f:
            data = f.read()
        self.assertEqual(data, b"".join(
            np.asarray(arrays[n]).tobytes(order="A") for n in NAMES))
        return want, data

    def test_c_order_in_natural_order(self):
        self.check_stack("c_f4", C_F4)

    def test_fortran_order_stacks_on_the_last_axis(self):
        want, _ = self.check_stack("fortran", FORTRAN)
        self.assertEqual(want.shape, (3, 4, len(NAMES)))

    def test_big_endian_and_its_ra_view_swapped(self):
        want, data = self.check_stack("big", BIG)
        with open(self.mp("big", ".stack", "stack.ra"), "rb") as f:
            ra = f.read()
        h = expect.ra_header(ra)
        self.assertEqual(ra[-h["size"]:], want.astype("<i4").tobytes())

    def test_zero_d_and_one_d_members(self):
        want, _ = self.check_stack("zero_d", ZERO_D)
        self.assertEqual(want.shape, (len(NAMES),))
        self.check_stack("one_d", ONE_D)

    def test_large_members_spliced_at_any_offset(self):
        want, data = self.check_stack("large", LARGE)
        got = np.load(self.mp("large_stored.npz", ".stack", "stack.npy"))
        np.testing.assert_array_equal(got, want)
        # reads that start and end inside members, across several
        fd = os.open(self.mp("large", ".stack", "data"), os.O_RDONLY)
        try:
            for off, n in ((1, 5), (102399, 2), (50000, 300000),
                           (len(data) - 7, 100), (0, len(data))):
                self.assertEqual(os.pread(fd, n, off), data[off:off + n],
                                 "[%d, +%d)" % (off, n))
        finally:
            os.close(fd)

    def test_structured_members(self):
        self.check_stack("structured", STRUCT)

    def test_ra_members_lz4_and_not(self):
        # each member as the mount shows it (dims fastest first: Fortran)
        views = {n: np.load(self.mp("ra", n + ".ra", n + ".npy")) for n in NAMES}
        want = self.expected(views)
        got = np.load(self.mp("ra", ".stack", "stack.npy"))
        self.assertEqual(got.shape, want.shape)
        np.testing.assert_array_equal(got, want)
        with open(self.mp("ra", ".stack", "names")) as f:
            self.assertEqual(f.read(), "".join(n + ".ra\n" for n in NAMES))
        # its own .ra view: the members' header fields, N added
        with open(self.mp("ra", ".stack", "stack.ra"), "rb") as f:
            ra = f.read()
        h = expect.ra_header(ra)
        self.assertEqual(h["flags"], 0)
        self.assertEqual(ra[-h["size"]:], b"".join(
            views[n].tobytes(order="A") for n in NAMES))

    def test_npz_stored_and_deflated(self):
        for npz in ("stored.npz", "deflated.npz"):
            got = np.load(self.mp(npz, ".stack", "stack.npy"))
            np.testing.assert_array_equal(got, self.expected(C_F4), npz)
            with open(self.mp(npz, ".stack", "names")) as f:
                self.assertEqual(f.read(), "".join(n + ".npy\n" for n in NAMES))

    def test_npz_folders_each_have_their_own(self):
        top = np.load(self.mp("nested.npz", ".stack", "stack.npy"))
        np.testing.assert_array_equal(top, np.stack([np.zeros(3), np.ones(3)]))
        sub = np.load(self.mp("nested.npz", "sub", ".stack", "stack.npy"))
        np.testing.assert_array_equal(
            sub, np.stack([np.zeros((2, 2), "<i2"), np.ones((2, 2), "<i2")]))

    def test_zarr_reads_the_stack(self):
        for folder, arrays in (("c_f4", C_F4), ("fortran", FORTRAN),
                               ("big", BIG), ("deflated.npz", C_F4)):
            z = zarr.open(self.mp(folder, ".stack", "stack.zarr"), mode="r")
            np.testing.assert_array_equal(z[...], self.expected(arrays), folder)

    def test_sidecars_where_the_member_type_allows(self):
        for folder, first in (("c_f4", "img1.npy"), ("big", "img1.npy"),
                              ("structured", "img1.npy")):
            for side, own in (("data.hdr", "data.hdr"),
                              ("stack.nhdr", "img1.nhdr")):
                self.assertEqual(
                    os.path.exists(self.mp(folder, ".stack", side)),
                    os.path.exists(self.mp(folder, first, own)),
                    "%s/.stack/%s" % (folder, side))
        self.assertTrue(os.path.exists(self.mp("c_f4", ".stack", "data.hdr")))
        with open(self.mp("c_f4", ".stack", "stack.nhdr")) as f:
            self.assertIn("sizes: 3 2 %d" % len(NAMES), f.read())

    def test_array_directory_listing(self):
        names = set(os.listdir(self.mp("c_f4", ".stack")))
        for e in ("data", "shape", "dtype", "header", "names", "stack.npy",
                  "stack.ra", "stack.zarr"):
            self.assertIn(e, names)

    def test_readdir_does_not_list_it(self):
        for folder in ("", "c_f4", "stored.npz"):
            self.assertNotIn(".stack", os.listdir(self.mp(folder)), folder)

    def test_folders_that_disagree_have_none_and_say_why_once(self):
        why = {"bad_dtype": ("b.npy", "dtype"), "bad_shape": ("b.npy", "shape"),
               "bad_order": ("b.npy", "order"), "bad_broken": ("c.npy", ""),
               "single": ("", "1 array")}
        for folder, (member, word) in why.items():
            for _ in range(3):
                with self.assertRaises(FileNotFoundError, msg=folder):
                    os.stat(self.mp(folder, ".stack"))
                with self.assertRaises(FileNotFoundError, msg=folder):
                    open(self.mp(folder, ".stack", "data"), "rb")
            lines = [ln for ln in self.m.log().splitlines()
                     if "%s/.stack" % folder in ln]
            self.assertEqual(len(lines), 1, "%s: %r" % (folder, lines))
            self.assertIn(member, lines[0])
            self.assertIn(word, lines[0])

    def test_many_members_read_ahead_in_parallel(self):
        got = np.load(self.mp("many", ".stack", "stack.npy"))
        np.testing.assert_array_equal(
            got, np.stack([np.full(3, k, "<u2") for k in range(MANY)]))
        with self.assertRaises(FileNotFoundError):
            os.stat(self.mp("many_bad", ".stack"))
        lines = [ln for ln in self.m.log().splitlines()
                 if "many_bad/.stack" in ln]
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("p257.npy: shape 2, not 3", lines[0])

    def test_arrayinfo_stack_says_what_the_mount_shows(self):
        """Both ask the codec's member rule: names with a line break, or
        that are no array names, are left out of either."""
        for folder in ("odd_names", "odd_names.npz"):
            with open(self.mp(folder, ".stack", "names")) as f:
                names = f.read().splitlines()
            self.assertEqual(names, ["a.npy", "b.npy"], folder)
            r = subprocess.run([mountlib.arrayinfo_bin(), "--json", "--stack",
                                self.src.join(folder)],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, folder + ": " + r.stderr)
            info = json.loads(r.stdout)[0]
            self.assertEqual((info["members"], info["first"], info["last"]),
                             (len(names), names[0], names[-1]), folder)
            with open(self.mp(folder, ".stack", "shape")) as f:
                self.assertEqual(info["array"]["shape"],
                                 [int(x) for x in f.read().split()], folder)

    def test_a_source_named_stack_wins(self):
        with open(self.mp("own", ".stack")) as f:
            self.assertEqual(f.read(), "mine\n")
        self.assertIn(".stack", os.listdir(self.mp("own")))


class StackDecodedCase(mountlib.FreshMountCase):
    """Stacks over members the codec decodes (the deflated members of an
    npz, a folder of LZ4 .ra files), read sequentially in the kernel's
    128 KiB reads: each member is decoded about once, not again from its
    first byte at every read (counted by the -d lines: a deflated member
    logs the bytes it inflated when it closes, an LZ4 index says when it
    is opened)."""
    mount_args = ("-d", "-o", "no_index")
    N = 3
    SIDE = 1024   # 4 MiB float32 members

    def member(self, k):
        rng = np.random.default_rng(k)
        return rng.integers(0, 16, size=(self.SIDE, self.SIDE)).astype("<f4")

    def populate(self):
        with open(self.src.join("big.npz"), "wb") as f:
            f.write(npz_bytes({"m%d.npy" % k: self.member(k)
                               for k in range(self.N)}, True))
        os.mkdir(self.src.join("lz4"))
        for k in range(self.N):
            with open(self.src.join("lz4", "m%d.ra" % k), "wb") as f:
                f.write(ra_bytes(self.member(k), lz4_block=True))

    def read_stack(self, *parts):
        """The stack's data, read front to back 128 KiB at a time."""
        fd = os.open(self.mp(*parts, ".stack", "data"), os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
            chunks = []
            while True:
                b = os.read(fd, 128 << 10)
                if not b:
                    break
                chunks.append(b)
        finally:
            os.close(fd)
        want = b"".join(self.member(k).tobytes() for k in range(self.N))
        self.assertEqual(b"".join(chunks), want)
        self.m.umount()   # members still kept log when they close
        return len(want), self.m.log()

    def test_each_deflated_member_inflated_about_once(self):
        size, log = self.read_stack("big.npz")
        inflated = [int(n) for n in re.findall(
            r"big\.npz: member \d+ closed: (\d+) bytes inflated", log)]
        self.assertTrue(inflated, log[-2000:])
        # each member is inflated once, and its header once more at most
        self.assertLess(sum(inflated), size * 1.2, inflated)

    def test_each_lz4_member_indexed_once(self):
        size, log = self.read_stack("lz4")
        opened = re.findall(r"lz4/(m\d\.ra): LZ4 index opened", log)
        self.assertEqual(sorted(opened),
                         ["m%d.ra" % k for k in range(self.N)], log[-2000:])

    def tearDown(self):
        pass   # unmounted by the test; cleanups remove the rest


class StackChangeCase(mountlib.FreshMountCase):
    """A folder of eight 64 KiB members, changed while a reader holds the
    old stack's data open."""
    N = 8
    SHAPE = (128, 128)

    def setUp(self):
        self.fds = []
        super().setUp()

    def tearDown(self):
        for fd in self.fds:
            os.close(fd)
        super().tearDown()

    def member(self, k, bump=0):
        return np.full(self.SHAPE, k + bump, dtype="<f4")

    def populate(self):
        os.mkdir(self.src.join("d"))
        for k in range(self.N):
            self.write(k)

    def write(self, k, bump=0, name=None):
        with open(self.src.join("d", name or "m%d.npy" % k), "wb") as f:
            np.save(f, self.member(k, bump))

    def old_reader(self):
        fd = os.open(self.mp("d", ".stack", "data"), os.O_RDONLY)
        self.fds.append(fd)
        first = os.pread(fd, 4096, 0)
        self.assertEqual(first, self.member(0).tobytes()[:4096])
        return fd

    def check_old(self, fd, n, changed=()):
        """The old reader: every member it still reads is the old one's bytes,
        or the read fails with EIO (never new bytes)."""
        size = self.member(0).nbytes
        for k in range(1, n):
            try:
                got = os.pread(fd, size, k * size)
            except OSError as e:
                self.assertEqual(e.errno, errno.EIO)
                continue
            self.assertEqual(got, self.member(k).tobytes(), "member %d" % k)

    def new_shape(self):
        with open(self.mp("d", ".stack", "shape")) as f:
            return f.read()

    def wait_shape(self, n):
        want = expect.shape_text((n,) + self.SHAPE).decode()
        wait_for(lambda: self.new_shape() == want, DEADLINE,
                 what=".stack of %d members" % n)

    def test_add_a_member(self):
        fd = self.old_reader()
        self.write(self.N)
        self.wait_shape(self.N + 1)
        self.check_old(fd, self.N)
        got = np.load(self.mp("d", ".stack", "stack.npy"))
        np.testing.assert_array_equal(got[self.N], self.member(self.N))

    def test_remove_a_member(self):
        fd = self.old_reader()
        os.unlink(self.src.join("d", "m5.npy"))
        self.wait_shape(self.N - 1)
        self.check_old(fd, self.N)
        with open(self.mp("d", ".stack", "names")) as f:
            self.assertNotIn("m5.npy", f.read())

    def test_rename_a_member(self):
        fd = self.old_reader()
        os.rename(self.src.join("d", "m1.npy"), self.src.join("d", "m9.npy"))
        wait_for(lambda: open(self.mp("d", ".stack", "names")).read().split()[-1]
                 == "m9.npy", DEADLINE, what="renamed member last")
        self.check_old(fd, self.N)

    def test_rewrite_a_member_in_place(self):
        fd = self.old_reader()
        with open(self.src.join("d", "m3.npy"), "r+b") as f:
            f.seek(-4, os.SEEK_END)
            f.write(b"\0\0\0\0")
        size = self.member(0).nbytes
        try:
            got = os.pread(fd, size, 3 * size)
            self.assertEqual(got, self.member(3).tobytes())
        except OSError as e:
            self.assertEqual(e.errno, errno.EIO)
        self.check_old(fd, self.N)

        def new_last_bytes():
            with open(self.mp("d", ".stack", "data"), "rb") as f:
                f.seek(4 * size - 4)
                return f.read(4)
        wait_for(lambda: new_last_bytes() == b"\0\0\0\0", DEADLINE,
                 what="the rewritten member in a new .stack")


if __name__ == "__main__":
    import unittest
    unittest.main(verbosity=2)
