#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Write the small example dataset that scripts/run mounts by default.

usage: scripts/make_example.py [OUTDIR]   (default: tests/data/example)

The files are committed; rerun this only to change them. Deterministic.
"""
import os
import struct
import sys

import numpy as np

README = """\
arrayfs example dataset (written by scripts/make_example.py with numpy)

  temperature.npy     float32, shape (24, 3), C order
  image_fortran.npy   uint8, shape (16, 16, 3), Fortran order
  labels.npy          unicode strings <U8, shape (5,)
  counts_be.npy       big-endian int32 (>i4), shape (10,)
  experiment.npz      compressed npz, keys run1/signal, run1/time,
                      run2/signal, config
  wave.ra             RawArray float64, dims (8, 4) (column-major)
  more/scalar.npy     a 0-d float64 array

Each array file appears as a directory holding data, shape, dtype, header,
and the array converted to .npy and .ra. This file appears as it is.
"""


def write_ra(path, eltype, arr_f):
    dims = arr_f.shape
    data = arr_f.tobytes(order="F")
    hdr = struct.pack("<6Q", 0x7961727261776172, 0, eltype, arr_f.dtype.itemsize,
                      len(data), len(dims))
    with open(path, "wb") as f:
        f.write(hdr + struct.pack("<%dQ" % len(dims), *dims) + data)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "tests", "data",
                                                             "example")
    os.makedirs(os.path.join(out, "more"), exist_ok=True)
    rng = np.random.default_rng(7)
    hours = np.arange(24)
    temp = np.stack([15 + 8 * np.sin((hours - 9) / 24 * 2 * np.pi) + d for d in (0, 2, -3)],
                    axis=1).astype("<f4")
    np.save(os.path.join(out, "temperature.npy"), temp)
    y, x = np.mgrid[0:16, 0:16]
    img = np.stack([x * 16, y * 16, (x + y) * 8], axis=2).astype(np.uint8)
    np.save(os.path.join(out, "image_fortran.npy"), np.asfortranarray(img))
    np.save(os.path.join(out, "labels.npy"),
            np.array(["cat", "dog", "bird", "fish", "hamster"], dtype="<U8"))
    np.save(os.path.join(out, "counts_be.npy"), (np.arange(10) ** 3).astype(">i4"))
    t = np.linspace(0, 1, 200)
    np.savez_compressed(os.path.join(out, "experiment.npz"),
                        **{"run1/signal": np.sin(2 * np.pi * 5 * t) + 0.1 * rng.standard_normal(200),
                           "run1/time": t,
                           "run2/signal": np.cos(2 * np.pi * 3 * t),
                           "config": np.array(["rate=200", "units=V"])})
    wave = np.sin(np.arange(32) / 4).reshape(8, 4, order="F")
    write_ra(os.path.join(out, "wave.ra"), 3, np.asfortranarray(wave))
    np.save(os.path.join(out, "more", "scalar.npy"), np.array(2.718281828))
    with open(os.path.join(out, "README.txt"), "w") as f:
        f.write(README)
    return 0


if __name__ == "__main__":
    sys.exit(main())
