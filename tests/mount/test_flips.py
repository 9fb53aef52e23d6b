#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Seeded bit flips in the headers of valid .npy and .ra files, mounted.
Each flipped file is either refused (a plain file with its exact bytes, or
an array directory whose `data` reads fail with EIO) or shown as exactly
the array the oracle sees in it: numpy for .npy, the reference RawArray
reader for .ra (tests/mount/lib/expect.py). Nothing else: a flip that
still parses must give the oracle's answer, not a guess."""
import errno
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import numpy as np  # noqa: E402

import expect  # noqa: E402
import mountlib  # noqa: E402
from mountlib import TempDir, npy_bytes, read  # noqa: E402

FLIPS_PER_FILE = 24
SEED = 20261124


def originals():
    """{name: bytes} of the valid files whose headers are flipped."""
    files = {
        "c_f8.npy": npy_bytes(np.arange(24, dtype="<f8").reshape(4, 6)),
        "fortran_be_i2.npy": npy_bytes(np.asfortranarray(
            np.arange(15, dtype=">i2").reshape(3, 5))),
        "struct.npy": npy_bytes(np.zeros(4, dtype=[("a", "<i4"), ("b", "<f2")])),
        "text_u3.npy": npy_bytes(np.array(["ab", "cde"], dtype="<U3")),
        "scalar_c16.npy": npy_bytes(np.array(1 + 2j, dtype="<c16")),
    }
    for name in ("test.ra", "mnist_8_z.ra", "randf16.ra", "rand100.ra"):
        files[name] = read(mountlib.reference(name))
    return files


def header_end(name, buf):
    if name.endswith(".npy"):
        return expect.Npy(buf).data_offset
    return expect.ra_header(buf)["data_offset"]


def flipped():
    """{name: bytes}: FLIPS_PER_FILE copies of each original, each with one
    bit flipped in its header (a few in the first data bytes)."""
    rng = random.Random(SEED)
    out = {}
    for name, buf in sorted(originals().items()):
        base, ext = name.rsplit(".", 1)
        end = header_end(name, buf)
        for k in range(FLIPS_PER_FILE):
            at = rng.randrange(min(end + 16, len(buf)) if k % 6 == 0 else end)
            b = bytearray(buf)
            b[at] ^= 1 << rng.randrange(8)
            out["%s-%02d-at%d.%s" % (base, k, at, ext)] = bytes(b)
    return out


class HeaderFlipsTest(mountlib.MountCase):
    @classmethod
    def make_source(cls):
        cls.tmp = TempDir()
        cls.files = flipped()
        cls.tmp.write(cls.files)
        return cls.tmp  # MountCase mounts it and removes it at the end

    def judge(self, name):
        """'refused', 'eio' or 'served'; AssertionError for anything else."""
        buf, p = self.files[name], self.mp(name)
        kind = expect.classify_bytes(buf, name)
        if os.path.isfile(p):
            expect.assert_bytes(read(p), buf, name + " (refused)")
            return "refused"
        if not os.path.isdir(p):
            raise AssertionError("%s is neither a plain file nor a folder" % name)
        if kind == "file":  # the oracle refuses it: the mount may only fail reads
            try:
                read(os.path.join(p, "data"))
            except OSError as e:
                if e.errno == errno.EIO:
                    return "eio"
                raise
            raise AssertionError("%s: shown as an array that %s refuses" % (
                name, "numpy" if name.endswith(".npy") else "the reference reader"))
        base = name.rsplit(".", 1)[0]
        arr = (expect.ArrayDir.of_npy if kind == "npy" else expect.ArrayDir.of_ra)(
            buf, base, name)
        self.assertEqual(set(os.listdir(p)), arr.names, name)
        for file in arr.files:
            try:
                got = read(os.path.join(p, file))
            except OSError as e:
                bytes_of_data = ("data", base + ".npy", base + ".ra")
                if e.errno == errno.EIO and (file in bytes_of_data or
                                             expect.is_zarr_chunk(file)):
                    return "eio"  # refused at read time: never wrong bytes
                raise
            with np.errstate(all="ignore"):  # NaNs in flipped floats
                for check in arr.checks[file]:
                    check(got)
        return "served"

    def test_each_flip_is_refused_or_the_oracles_array(self):
        outcomes = {}

        def check(name):
            outcomes[name] = self.judge(name)
        mountlib.check_all(self, sorted(self.files), check)
        counts = {o: list(outcomes.values()).count(o) for o in ("refused", "eio", "served")}
        print("\n%d flipped headers: %s" % (len(self.files), counts), file=sys.stderr)
        # both sides are reached, or the flips test nothing
        self.assertGreater(counts["refused"] + counts["eio"], 0)
        self.assertGreater(counts["served"], 0)


if __name__ == "__main__":
    mountlib.main()
