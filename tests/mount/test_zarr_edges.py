#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""B.zarr/ at the edges: hostile shapes and dtypes get no store or a
correct one (never a crash), deflated members and LZ4 .ra files serve
their chunks through the same random access as `data`, and the chunk
files of an LZ4 array share one data view (one LZ4 index and cache)."""
import io
import os
import struct
import sys
import warnings
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scripts", "fixtures"))
import expect  # noqa: E402
import mountlib  # noqa: E402
import numpy as np  # noqa: E402
import procinfo  # noqa: E402
from gen_view import lz4_block  # noqa: E402
from mountlib import MountCase, TempDir, check_all, read  # noqa: E402
from test_zarr import assert_same_array, zarr_read  # noqa: E402

import zarr  # noqa: E402

RA_MAGIC = 0x7961727261776172


def npy_with_header(d, data=b""):
    """A .npy of header dict D (numpy's own header writer, version 2.0 when
    it must) and DATA, nothing checked: shapes numpy would refuse to make."""
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.lib.format._write_array_header(f, d, None)
    return f.getvalue() + data


def ra_bytes(eltype, elbyte, dims, data, flags=0):
    return struct.pack("<6Q", RA_MAGIC, flags, eltype, elbyte, len(data), len(dims)) + \
        struct.pack("<%dQ" % len(dims), *dims) + data


def hostile_sources():
    """{file name: bytes}: shapes and dtypes at the limits, all parseable."""
    rng = np.random.default_rng(11)
    names = np.dtype([('q"b\\s\n\t\x01', "<i2"), ("é€😀", ">u4")])
    nested = np.dtype([("a", [("b", "<u2"), ("c", ">f4", (2, 2))], (3,)), ("d", "|u1")])
    deep = np.dtype("<i4")
    for i in range(12):
        deep = np.dtype([("f%d" % i, deep, (1,))])
    out = {
        "zero_then_huge.npy": npy_with_header(
            {"descr": "<f8", "fortran_order": False, "shape": (0, 2**62)}),
        "huge_then_zero.npy": npy_with_header(
            {"descr": "|u1", "fortran_order": False, "shape": (2**40, 0)}),
        "huge_zero_fortran.npy": npy_with_header(
            {"descr": "<c16", "fortran_order": True, "shape": (2**40, 0, 2**20)}),
        "zeros32.npy": npy_with_header(
            {"descr": "<i2", "fortran_order": False, "shape": (0,) * 32}),
        "ones32.npy": mountlib.npy_bytes(rng.integers(0, 9, (1,) * 32).astype("<i8")),
        "long_last_of_32.npy": mountlib.npy_bytes(np.arange(2**16, dtype="|u1").reshape(
            (1,) * 31 + (2**16,))),
        "big_items.npy": mountlib.npy_bytes(np.frombuffer(
            rng.integers(0, 256, 3 << 20, dtype=np.uint8).tobytes(), dtype="|V1048576")),
        "long_unicode.npy": mountlib.npy_bytes(np.array(["é" * 99999 + "x", "y"], "<U100000")),
        "odd_names.npy": mountlib.npy_bytes(np.zeros((2, 3), names)),
        "nested.npy": mountlib.npy_bytes(np.zeros((2,), nested)),
        "deep.npy": mountlib.npy_bytes(np.zeros((2,), deep)),
        "struct_0d.npy": mountlib.npy_bytes(np.zeros((), [("a", "<f4"), ("b", "S3")])),
        "m8_25s.npy": mountlib.npy_bytes(np.arange(4).astype("<M8[25s]")),
        "m8_be.npy": mountlib.npy_bytes(np.arange(4).astype(">m8[us]")),
        "max_dims.npy": npy_with_header(
            {"descr": "|b1", "fortran_order": True, "shape": (1,) * 63 + (0,)}),
        "ra_64_dims.ra": ra_bytes(2, 1, [1] * 63 + [3], b"abc"),
        "ra_zero_huge.ra": ra_bytes(3, 8, [0, 2**62], b""),
        "ra_big_elements.ra": ra_bytes(0, 1 << 20, [2], bytes(2 << 20)),
    }
    return out


class HostileZarrTest(MountCase):
    """No B.zarr/, or one whose every file is the model's (and zarr-python
    reads it as numpy does where numpy can make the array)."""
    mount_args = ("-o", "zarr_chunk=1000")

    @staticmethod
    def make_source():
        src = TempDir()
        src.write(hostile_sources())
        return src

    def model(self, name):
        buf = read(self.src.join(name))
        base = name.rsplit(".", 1)[0]
        of = expect.ArrayDir.of_ra if name.endswith(".ra") else expect.ArrayDir.of_npy
        try:
            return of(buf, base, name, 1000)
        except ValueError:
            pass
        # numpy will not make the array (more than 32 dims, or a byte count
        # that overflows beside a zero dim): B.zarr/ from the header alone
        if name.endswith(".ra"):
            h = expect.ra_header(buf)
            shape, fortran, dt = tuple(h["dims"]), True, expect.ra_numpy_dtype(h)
            data = buf[h["data_offset"]:]
        else:
            f = io.BytesIO(buf)
            version = np.lib.format.read_magic(f)
            shape, fortran, dt = np.lib.format._read_array_header(f, version)
            data = buf[f.tell():]
        a = expect.ArrayDir(name)
        expect.add_zarr_and_sidecars(a, base, name, shape, data, dt.str, dt.kind,
                                     dt.itemsize, dt.str[0], fortran, 1000)
        # numpy cannot cut its chunks: these have at most one, the data
        chunks = [n for n in a.files if expect.is_zarr_chunk(n)]
        self.assertLessEqual(len(chunks), 1, name)
        for n in chunks:
            a.checks[n] = [expect.equals(data, name + "/" + n)]
        return a

    def test_each_is_an_array_whose_store_is_absent_or_the_models(self):
        names = sorted(hostile_sources())
        shown = {}

        def check(name):
            listing = os.listdir(self.mp(name))  # an array directory
            store = name.rsplit(".", 1)[0] + ".zarr"
            shown[name] = store in listing
            if not shown[name]:
                return
            arr = self.model(name)
            files = sorted(os.listdir(self.mp(name, store)))
            want = sorted(n.split("/", 1)[1] for n in arr.files if n.startswith(store + "/"))
            self.assertEqual(files, want)
            for f in want:
                got = read(self.mp(name, store, f))
                for c in arr.checks[store + "/" + f]:
                    c(got)
        check_all(self, names, check)
        # most are served: the limits are the codec's, not a blanket refusal
        self.assertGreater(sum(shown.values()), len(names) - 3, shown)

    def test_zarr_python_reads_them_as_numpy_does(self):
        def check(name):
            store = self.mp(name, name.rsplit(".", 1)[0] + ".zarr")
            if name.endswith(".ra") or not os.path.isdir(store):
                return
            try:
                want = np.load(self.src.join(name), allow_pickle=False, max_header_size=1 << 30)
            except (ValueError, MemoryError):
                return  # numpy itself cannot make this array
            if want.size == 0:
                # zarr's [...] walks the chunk grid of the other dims (2**62 / k
                # chunks of nothing): its metadata says all there is
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    z = zarr.open(store, mode="r")
                self.assertEqual((z.shape, z.dtype), (want.shape, want.dtype))
                return
            assert_same_array(zarr_read(store), want, name)
        check_all(self, sorted(hostile_sources()), check)


class DecodedChunksTest(MountCase):
    """Chunks of deflated npz members and LZ4 .ra files: the bytes of
    `data` by random access, and one data view of an LZ4 array for all
    of its chunk files."""
    N = 4 << 20  # 16 MiB of <u4 decoded
    mount_args = ("-o", "zarr_chunk=262144")

    @classmethod
    def make_source(cls):
        src = TempDir()
        a = (np.arange(cls.N, dtype=np.uint32) % 1000).astype("<u4")
        cls.lz4_data = a.tobytes()
        with open(src.join("big_z.ra"), "wb") as f:
            f.write(ra_bytes(2, 4, [cls.N], lz4_block(cls.lz4_data), flags=2))
        rng = np.random.default_rng(5)
        np.savez_compressed(src.join("d.npz"), x=rng.integers(0, 50, (300, 1000)).astype("<i8"),
                            y=np.asfortranarray(rng.standard_normal((700, 900)).astype(">f4")))
        return src

    def test_deflated_members_read_through_zarr_as_numpy_does(self):
        with zipfile.ZipFile(self.src.join("d.npz")) as z:
            members = {key: z.read(key + ".npy") for key in ("x", "y")}
        for key, buf in members.items():
            with self.subTest(key=key):
                store = self.mp("d.npz", key + ".npy", key + ".zarr")
                chunks = [n for n in os.listdir(store) if expect.is_zarr_chunk(store + "/" + n)]
                self.assertGreater(len(chunks), 4)
                # the last chunks first: random access, not a stream
                arr = expect.ArrayDir.of_npy(buf, key, key, 262144)
                for name in chunks[::-1]:
                    for c in arr.checks[key + ".zarr/" + name]:
                        c(read(os.path.join(store, name)))
                assert_same_array(zarr_read(store), arr.npy.array, key)

    def test_lz4_chunks_are_datas_bytes_from_one_decoded_copy(self):
        store = self.mp("big_z.ra", "big_z.zarr")
        names = [n for n in os.listdir(store) if not n.startswith(".") and n != "zarr.json"]
        self.assertEqual(len(names), 64)
        pid = self.m.proc.pid
        before = procinfo.rss_kib(pid)
        # every chunk file open at once, then read: each has its own handle
        fds = [os.open(os.path.join(store, n), os.O_RDONLY) for n in names]
        try:
            got = {n: os.pread(fd, 262144, 0) for n, fd in zip(names, fds)}
            grown = procinfo.rss_kib(pid) - before
        finally:
            for fd in fds:
                os.close(fd)
        for n in names:
            i = int(n)
            expect.assert_bytes(got[n], self.lz4_data[i * 262144:(i + 1) * 262144], n)
        # one view's LZ4 index and cache, not one per chunk file (64 of them
        # grew it by 170 MiB)
        limit = (96 if procinfo.sanitized(pid) else 48) << 10
        self.assertLess(grown, limit, "the daemon grew by %d KiB" % grown)


if __name__ == "__main__":
    mountlib.main()
