#!/usr/bin/python3
"""Write the seed corpora of the fuzz targets into tests/fuzz/corpus/.

usage: scripts/make_fuzz_seeds.py [REPO_ROOT]
Small real files written by numpy and CPython's zipfile, plus the RawArray
reference samples; run once by a developer, the output is committed.
"""
import io
import os
import shutil
import struct
import sys
import zipfile
import zlib

import numpy as np


def put(d, name, data):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def npy_bytes(arr, version=None):
    b = io.BytesIO()
    np.lib.format.write_array(b, arr, version=version, allow_pickle=True)
    return b.getvalue()


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    corpus = os.path.join(root, "tests", "fuzz", "corpus")
    shutil.rmtree(corpus, ignore_errors=True)
    rng = np.random.default_rng(7)
    arrays = {
        "f8_c": np.arange(12, dtype="<f8").reshape(3, 4),
        "f4_f": np.asfortranarray(np.arange(6, dtype=">f4").reshape(2, 3)),
        "u1_0d": np.array(7, dtype="u1"),
        "i2_empty": np.zeros((0, 3), dtype="<i2"),
        "c16_be": (np.arange(4) + 1j).astype(">c16"),
        "s5": np.array([b"ab", b"cdefg"], dtype="S5"),
        "u3": np.array(["x", "yz"], dtype="<U3"),
        "m8": np.array([1, 2], dtype="<M8[ns]"),
        "struct": np.zeros(2, dtype=[("a", "<i4"), ("b", ">f8", (2,)), ("c", [("d", "u1")])]),
        "bool": np.array([True, False]),
        "obj": np.array([1, "a"], dtype=object),
    }
    d = os.path.join(corpus, "fuzz_npy")
    for name, arr in arrays.items():
        put(d, name + ".npy", npy_bytes(arr))
    put(d, "v2.npy", npy_bytes(arrays["f8_c"], (2, 0)))
    put(d, "v3.npy", npy_bytes(np.zeros(2, dtype=[("é", "<i4")]), (3, 0)))
    put(d, "hand_L.npy", b"\x93NUMPY\x01\x00" + struct.pack("<H", 70) +
        b"{'shape': (2L, 1L), u'descr': '<i2', 'fortran_order': False # c\n}".ljust(69) + b"\n" + b"\0" * 4)

    d = os.path.join(corpus, "fuzz_dtype")
    for i, text in enumerate([b"\x00<f8", b"\x01'<f8'", b"\x01[('a', '<i4'), ('b', '>f8', (2, 3))]",
                              b"\x01[(('t', 'n'), '|S3'), ('', '|V4'), ('s', [('x', '<u2')], 2)]",
                              b"\x03[('a', '<i4', 2L)]", b"\x00<M8[10ms]", b"\x00|O", b"\x00<U5"]):
        put(d, "seed%d" % i, text)

    d = os.path.join(corpus, "fuzz_ra")
    ref = os.path.join(root, "tests", "data", "rawarray-reference")
    for name in sorted(os.listdir(ref)):
        if name.endswith(".ra") and os.path.getsize(os.path.join(ref, name)) < 8192:
            shutil.copy(os.path.join(ref, name), os.path.join(d if os.makedirs(d, exist_ok=True) is None else d, name))
    hdr = struct.pack("<QQQQQQ", 0x7961727261776172, 1, 3, 4, 0, 0)
    put(d, "be_0d.ra", hdr[:32] + struct.pack("<QQ", 4, 0) + b"\x3f\x80\x00\x00")

    d = os.path.join(corpus, "fuzz_zip")
    for name, kw in (("stored", {}), ("deflated", {"compressed": True})):
        b = io.BytesIO()
        (np.savez_compressed if kw else np.savez)(b, a=arrays["f8_c"], **{"x/y": arrays["u1_0d"]})
        put(d, name + ".npz", b.getvalue())
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("a.npy", npy_bytes(arrays["s5"]))
        z.writestr("notes.txt", b"hello")
        z.writestr("a.npy", npy_bytes(arrays["bool"]))
    put(d, "dup.npz", b.getvalue())

    # fuzz_refs: a kind byte (0 npy, 1 ra, 2 npz; its high bits the grid),
    # then the file
    d = os.path.join(corpus, "fuzz_refs")
    long = np.arange(1009, dtype="<u2")
    for i, (kind, data) in enumerate([
            (0x00, npy_bytes(long)), (0x30, npy_bytes(arrays["f4_f"])),
            (0x10, npy_bytes(np.arange(3 * 101, dtype="<f8").reshape(3, 101))),
            (0x00, npy_bytes(arrays["obj"])), (0x20, npy_bytes(arrays["struct"])),
            (0x01, open(os.path.join(root, "tests", "fuzz", "corpus", "fuzz_ra", "be_0d.ra"),
                        "rb").read()),
            (0x02, open(os.path.join(root, "tests", "fuzz", "corpus", "fuzz_zip", "stored.npz"),
                        "rb").read())]):
        put(d, "seed%d" % i, bytes([kind]) + data)

    d = os.path.join(corpus, "fuzz_inflate")
    for i, plain in enumerate([b"", b"a" * 1000, rng.integers(0, 4, 70000, dtype=np.uint8).tobytes(),
                               np.arange(5000, dtype="<f4").tobytes()]):
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        stream = c.compress(plain) + c.flush()
        put(d, "seed%d" % i, struct.pack("<II", len(plain), zlib.crc32(plain)) + stream)


if __name__ == "__main__":
    main()
