# SPDX-License-Identifier: MIT
"""A folder for arrayrefs tests, the arrays numpy says it holds, and a
reader of a reference file (fsspec's ReferenceFileSystem, zarr 2.13).

    want = write_corpus(folder)   # {key path: numpy array} of the .zarr/ group
    got = read_refs(refs_path)    # {key path: numpy array} zarr reads
    LEFT_OUT                      # keys arrayrefs leaves out without --mount-url

The corpus: C and Fortran .npy, big-endian, 0-d, empty, extents that are
prime (short last chunks: run on, inline, or a grid of their own), .ra
plain, big-endian and LZ4, npz stored (nested keys, a member followed by
others) and deflated, an object array, a key collision, names that need
percent-encoding. Small: arrayrefs runs with --chunk 1000 or 4096.
"""
import io
import os
import struct
import zipfile

import numpy as np

import expect

# decoded (deflated, LZ4) or never in the group (object)
LEFT_OUT = {"packed/p", "lz", "obj"}
DECODED = {"packed/p", "lz"}
ODD_DIR = "we ird#?%"
ODD_KEY = ODD_DIR + "/\u00e9 x"


def ra_bytes(a, big=False):
    """A plain .ra of A: its dims in shape order, column-major (the mount
    shows it Fortran order with A's shape), big-endian if BIG."""
    a = np.asfortranarray(a)
    eltype, elbyte = expect.ra_type_of(a.dtype)
    data = a.astype(a.dtype.newbyteorder(">" if big else "<")).tobytes(order="F")
    return (struct.pack("<6Q", expect.RA_MAGIC, 1 if big else 0, eltype, elbyte,
                        len(data), a.ndim)
            + struct.pack("<%dQ" % a.ndim, *a.shape) + data)


def npy_bytes(a):
    f = io.BytesIO()
    np.save(f, a, allow_pickle=True)
    return f.getvalue()


def _put(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def write_corpus(folder):
    """Write the corpus into FOLDER; return {key path: array} of every
    array arrayrefs writes (LEFT_OUT not among them)."""
    want = {
        "c2d": np.arange(13 * 7, dtype="<f8").reshape(13, 7),
        "fort": np.asfortranarray(np.arange(11 * 5, dtype="<i4").reshape(11, 5)),
        "prime": np.arange(10007, dtype=">i4"),
        "rows": np.arange(3 * 1009, dtype="<f8").reshape(3, 1009),
        "tenk": np.arange(10000, dtype="<u4"),
        "scalar": np.array(2.5),
        "empty": np.zeros((0, 3), dtype="<i2"),
        "dup.npy": np.arange(4, dtype="u1"),
        ODD_KEY: np.arange(17, dtype="i1"),
    }
    for key, a in want.items():
        name = key if key.endswith(".npy") else key + ".npy"
        _put(os.path.join(folder, name), npy_bytes(a))
    want["dup.ra"] = np.arange(6, dtype="<f4").reshape(2, 3)
    _put(os.path.join(folder, "dup.ra"), ra_bytes(want["dup.ra"]))
    want["plain"] = np.arange(4 * 6, dtype="<f4").reshape(4, 6)
    _put(os.path.join(folder, "plain.ra"), ra_bytes(want["plain"]))
    want["big"] = np.arange(7, dtype=">f8")
    _put(os.path.join(folder, "big.ra"), ra_bytes(want["big"], big=True))
    _put(os.path.join(folder, "lz.ra"), expect.lz4_ra(np.arange(999, dtype="<u2")))
    _put(os.path.join(folder, "obj.npy"),
         npy_bytes(np.array([1, "a"], dtype=object)))
    stored = {"signal": np.arange(1009, dtype="<u2"),
              "after": np.ones((3, 50)),
              "grp/top": np.arange(5, dtype="<i8"),
              "grp/sub/deep": np.arange(12, dtype="<f4").reshape(3, 4)}
    with zipfile.ZipFile(os.path.join(folder, "run.npz"), "w",
                         zipfile.ZIP_STORED) as z:
        for name, a in stored.items():
            z.writestr(name + ".npy", npy_bytes(a))
            want["run/" + name] = a
    with zipfile.ZipFile(os.path.join(folder, "packed.npz"), "w",
                         zipfile.ZIP_DEFLATED) as z:
        z.writestr("p.npy", npy_bytes(np.arange(300, dtype="<i4")))
    return want


def read_refs(refs, **storage):
    """{key path: array} of every array in the hierarchy of reference
    file REFS, read by zarr 2.13 over fsspec's ReferenceFileSystem."""
    import fsspec
    import zarr
    # a new instance each time: fsspec caches one per argument list
    m = fsspec.get_mapper("reference://", fo=refs, skip_instance_cache=True,
                          **storage)
    out = {}

    def walk(g, prefix):
        for k, a in g.arrays():
            out[prefix + k] = a[...]
        for k, sub in g.groups():
            walk(sub, prefix + k + "/")
    walk(zarr.open_group(m, mode="r"), "")
    return out


def mismatches(want, got):
    """Lines naming each key missing, extra, or with other values."""
    bad = ["missing: " + k for k in sorted(set(want) - set(got))]
    bad += ["extra: " + k for k in sorted(set(got) - set(want))]
    for k in sorted(set(want) & set(got)):
        w, g = want[k], got[k]
        if w.shape != g.shape or w.dtype != g.dtype or not np.array_equal(w, g):
            bad.append("differs: %s: %r %s vs %r %s" % (k, w.shape, w.dtype,
                                                      g.shape, g.dtype))
    return bad
