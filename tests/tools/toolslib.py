# SPDX-License-Identifier: MIT
"""Helpers shared by the tools tests: where things are, how to run a tool,
and oracles (numpy's own header reader, a RawArray reader written the way
the reference Python reader works).

Environment (set by tests/tools/meson.build):
  ARRAYINFO_BIN, ARRAYCONV_BIN, ARRAYFS_BIN  the built programs
  AF_FIXTURES    build-dir/tests/fixtures (this suite uses AF_FIXTURES/tools)
  AF_REFERENCE   tests/data/rawarray-reference
  AF_BUILD_ROOT, AF_SOURCE_ROOT
"""
import os
import struct
import subprocess

import numpy as np

ARRAYINFO = os.environ.get("ARRAYINFO_BIN", "arrayinfo")
ARRAYCONV = os.environ.get("ARRAYCONV_BIN", "arrayconv")
ARRAYFS = os.environ.get("ARRAYFS_BIN", "arrayfs")
FIXTURES = os.path.join(os.environ.get("AF_FIXTURES", "."), "tools")
REFERENCE = os.environ.get("AF_REFERENCE", ".")
BUILD_ROOT = os.environ.get("AF_BUILD_ROOT", ".")
SOURCE_ROOT = os.environ.get("AF_SOURCE_ROOT", ".")

RA_MAGIC = 0x7961727261776172


def fixture(*parts):
    """Path of a file written by scripts/fixtures/gen_tools.py."""
    return os.path.join(FIXTURES, *parts)


def run(args, **kw):
    """Run a command, capture bytes stdout/stderr, never raise on status.

    usage: run([ARRAYINFO, "--json", path]) -> CompletedProcess
    A 120 s timeout turns a hang into a failure instead of a stuck suite."""
    kw.setdefault("timeout", 120)
    return subprocess.run(args, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, **kw)


def npy_header(path):
    """numpy's own reading of a .npy header:
    (version, shape, fortran_order, dtype, data_offset)."""
    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        return version, shape, fortran, dtype, f.tell()


def ra_header(data):
    """The RawArray header fields of bytes `data`:
    dict(flags, eltype, elbyte, size, dims, data_offset)."""
    magic, flags, eltype, elbyte, size, ndims = struct.unpack_from("<6Q", data)
    assert magic == RA_MAGIC, "not a RawArray file"
    dims = list(struct.unpack_from(f"<{ndims}Q", data, 48))
    return dict(flags=flags, eltype=eltype, elbyte=elbyte, size=size,
                dims=dims, data_offset=48 + 8 * ndims)


_RA_CODE = {1: "i", 2: "u", 3: "f", 4: "c"}


def ra_read(data):
    """Read an uncompressed RawArray the way the reference Python reader
    does: numpy shape = dims, Fortran order, dtype from eltype/elbyte."""
    h = ra_header(data)
    if h["eltype"] == 0:
        dt = np.dtype(f"V{h['elbyte']}")
    else:
        dt = np.dtype(_RA_CODE[h["eltype"]] + str(h["elbyte"]))
    if h["flags"] & 1:
        dt = dt.newbyteorder(">")
    off = h["data_offset"]
    count = int(np.prod(h["dims"], dtype=np.uint64)) if h["dims"] else 1
    arr = np.frombuffer(data, dtype=dt, count=count, offset=off)
    return arr.reshape(h["dims"], order="F")


def npy_bytes_of(path):
    with open(path, "rb") as f:
        return f.read()
