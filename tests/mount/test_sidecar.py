#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The sidecar headers (CONTRACT.md): programs that read raw bytes open
`data` through them and get numpy's values. GDAL (gdalinfo, gdal_translate)
through `data.hdr` (ENVI) for 1-3 dims of every ENVI type, C and Fortran
order, both byte orders; teem's unu and VTK's vtkNrrdReader through
`B.nhdr` (NRRD, detached)."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import expect  # noqa: E402
import mountlib  # noqa: E402
import numpy as np  # noqa: E402
from mountlib import MountCase, TempDir, check_all, read  # noqa: E402

TOOL_DEADLINE = 60
# the ENVI types (CONTRACT) and the NRRD ones; GDAL 3.6 refuses ENVI 14 and
# 15 (i8, u8): their data.hdr is only checked as text
ENVI_TYPES = ["u1", "b1", "i2", "i4", "f4", "f8", "c8", "c16", "u2", "u4", "i8", "u8"]
GDAL_REFUSES = {"i8", "u8"}
NRRD_TYPES = ENVI_TYPES + ["i1"]
GDAL_NAMES = {"u1": "Byte", "b1": "Byte", "i2": "Int16", "i4": "Int32", "f4": "Float32",
              "f8": "Float64", "c8": "CFloat32", "c16": "CFloat64", "u2": "UInt16",
              "u4": "UInt32"}
ENVI_NUMPY = {1: "u1", 2: "i2", 3: "i4", 4: "f4", 5: "f8", 6: "c8", 9: "c16", 12: "u2",
              13: "u4"}
SHAPES = {1: (13,), 2: (5, 13), 3: (3, 5, 13)}  # the fastest dim >= 10 (VTK)


def values(code, shape, rng):
    dt = np.dtype(code)
    n = int(np.prod(shape))
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True).reshape(shape)
    if dt.kind == "c":
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt).reshape(shape)
    return (rng.standard_normal(n) * 1000).astype(dt).reshape(shape)


def sources():
    """{file name: (array, fortran)}: every type, 1-3 dims, both orders and
    (for numbers of more than one byte) both byte orders."""
    rng = np.random.default_rng(2026)
    out = {}
    for code in NRRD_TYPES:
        orders = "<>" if np.dtype(code).itemsize > 1 else "|"
        for ndim, shape in SHAPES.items():
            for bo in orders:
                for fortran in (False, True):
                    dims = shape[::-1] if fortran else shape  # fastest dim first for F
                    a = values(code, dims, rng).astype(np.dtype(code).newbyteorder(bo))
                    name = "%s_%dd_%s_%s.npy" % (code, ndim, "F" if fortran else "C",
                                                {"<": "le", ">": "be", "|": "x"}[bo])
                    out[name] = (np.asfortranarray(a) if fortran else a, fortran)
    return out


def fastest_first(a, fortran):
    """The elements in the order of `data` (the fastest dim first), and the
    dims fastest first."""
    return a.ravel(order="F" if fortran else "C"), list(a.shape if fortran else a.shape[::-1])


def run(argv):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=TOOL_DEADLINE,
                       env=dict(os.environ, GDAL_PAM_ENABLED="NO"))
    if r.returncode != 0:
        raise AssertionError("%s: exit %d: %s" % (" ".join(argv[:2]), r.returncode,
                                                   r.stderr.strip()[-300:]))
    return r.stdout


def header_fields(text):
    """{key: value} of an ENVI or NRRD header (`k = v` or `k: v` lines)."""
    out = {}
    for line in text.splitlines():
        for sep in (" = ", ": "):
            if sep in line:
                k, v = line.split(sep, 1)
                out[k.strip()] = v.strip()
                break
    return out


class SidecarTest(MountCase):
    @classmethod
    def make_source(cls):
        src = TempDir()
        cls.arrays = sources()
        for name, (a, _) in cls.arrays.items():
            np.save(src.join(name), a)
        return src

    def names(self, which):
        return sorted(n for n in self.arrays if which(n.split("_")[0]))

    def tmp(self):
        d = TempDir("arrayfs-sidecar-")
        self.addCleanup(d.close)
        return d

    def test_headers_are_the_models(self):
        def check(name):
            arr = expect.ArrayDir.of_npy(read(self.src.join(name)), name[:-4], name)
            hdrs = [n for n in arr.files if n.endswith(("hdr"))]
            self.assertEqual(sorted(hdrs), sorted(n for n in os.listdir(self.mp(name))
                                                  if n.endswith("hdr")))
            for n in hdrs:
                for c in arr.checks[n]:
                    c(read(self.mp(name, n)))
        check_all(self, sorted(self.arrays), check)

    def test_gdal_reads_data_through_data_hdr_as_numpy(self):
        out = self.tmp()

        def check(name):
            a, fortran = self.arrays[name]
            code = name.split("_")[0]
            elems, dims = fastest_first(a, fortran)
            s, l, b = (dims + [1, 1])[:3]
            if "_C_" in name and not name.endswith("_be.npy"):  # one per type and dims
                info = json.loads(run(["gdalinfo", "-json", self.mp(name, "data")]))
                self.assertEqual(info["driverShortName"], "ENVI")
                self.assertEqual(info["size"], [s, l])
                self.assertEqual([x["type"] for x in info["bands"]], [GDAL_NAMES[code]] * b)
            dst = out.join(name + ".raw")
            run(["gdal_translate", "-q", "-of", "ENVI", self.mp(name, "data"), dst])
            h = header_fields(read(dst[:-4] + ".hdr").decode())
            self.assertEqual(h.get("interleave", "bsq").lower(), "bsq")
            self.assertEqual([int(h[k]) for k in ("samples", "lines", "bands")], [s, l, b])
            dt = np.dtype(ENVI_NUMPY[int(h["data type"])]).newbyteorder(
                ">" if h.get("byte order") == "1" else "<")
            got = np.fromfile(dst, dtype=dt).reshape(b, l, s)
            want = elems.reshape(b, l, s)
            if code == "b1":
                want = want.astype("u1")
            self.assertTrue(np.array_equal(got, want), "values differ")
        check_all(self, self.names(lambda c: c in GDAL_NAMES), check)

    def test_teem_unu_reads_data_through_the_nhdr_as_numpy(self):
        out = self.tmp()

        def check(name):
            a, fortran = self.arrays[name]
            dst = out.join(name + ".nrrd")
            run(["teem-unu", "save", "-i", self.mp(name, name[:-4] + ".nhdr"), "-f", "nrrd",
                 "-e", "raw", "-en", "little", "-o", dst])
            head, data = read(dst).split(b"\n\n", 1)
            h = header_fields(head.decode())
            elems, dims = fastest_first(a, fortran)
            sizes = ([2] if a.dtype.kind == "c" else []) + dims
            self.assertEqual(h["sizes"], " ".join(map(str, sizes)))
            want = elems.astype(elems.dtype.newbyteorder("<"))
            expect.assert_bytes(data, want.view("u1").tobytes() if a.dtype.kind == "b"
                                else want.tobytes(), name)
        check_all(self, self.names(lambda c: True), check)

    def test_vtk_nrrd_reader_reads_2d_and_3d_arrays_as_numpy(self):
        from vtkmodules.util import numpy_support
        from vtkmodules.vtkIOImage import vtkNrrdReader

        def check(name):
            a, fortran = self.arrays[name]
            r = vtkNrrdReader()
            r.SetFileName(self.mp(name, name[:-4] + ".nhdr"))
            r.Update()
            img = r.GetOutput()
            scalars = img.GetPointData().GetScalars()
            self.assertIsNotNone(scalars, "VTK read no scalars")
            elems, dims = fastest_first(a, fortran)
            self.assertEqual(list(img.GetDimensions()), (dims + [1])[:3])
            got = numpy_support.vtk_to_numpy(scalars)
            if a.dtype.kind == "c":
                self.assertEqual(scalars.GetNumberOfComponents(), 2)
                got = got[:, 0] + 1j * got[:, 1]
            want = elems.astype("u1") if a.dtype.kind == "b" else elems
            self.assertTrue(np.array_equal(got, want), "values differ")
        # VTK 9.1 crashes on a 1-D .nhdr
        check_all(self, [n for n in self.names(lambda c: True) if "_1d_" not in n], check)

    def test_arrays_no_format_can_describe_have_neither_header(self):
        src = TempDir()
        self.addCleanup(src.close)
        np.save(src.join("f2.npy"), np.zeros((3, 4), "<f2"))
        np.save(src.join("d4.npy"), np.zeros((2, 2, 2, 2), "<f4"))
        np.save(src.join("s.npy"), np.zeros((3,), "S4"))
        np.save(src.join("scalar.npy"), np.float64(1.5))
        np.save(src.join("empty.npy"), np.zeros((0, 3), "<i4"))
        with mountlib.mount(src.path) as m:
            for name, has in (("f2.npy", set()), ("d4.npy", {"d4.nhdr"}), ("s.npy", set()),
                              ("scalar.npy", set()), ("empty.npy", set())):
                with self.subTest(name=name):
                    got = {n for n in os.listdir(m.path(name)) if n.endswith("hdr")}
                    self.assertEqual(got, has)


if __name__ == "__main__":
    mountlib.main()
