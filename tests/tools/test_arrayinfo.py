#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""arrayinfo against numpy and the RawArray reference samples."""
import ast
import glob
import io
import json
import os
import re
import sys
import tempfile
import unittest
import zipfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from toolslib import (ARRAYINFO, REFERENCE, fixture, npy_header,  # noqa: E402
                      ra_header, run)

BYTEORDER = {"<": "little", ">": "big", "|": "none",
             "=": "little" if sys.byteorder == "little" else "big"}


def info_json(*paths):
    r = run([ARRAYINFO, "--json", *paths])
    return r, json.loads(r.stdout.decode("utf-8"))


def ra_descr(h):
    code = {1: "i", 2: "u", 3: "f", 4: "c", 0: "V"}
    if h["eltype"] == 5:
        return "bfloat16"
    order = ">" if h["flags"] & 1 else "<"
    if h["elbyte"] == 1 or h["eltype"] == 0:
        order = "|"
    return f"{order}{code[h['eltype']]}{h['elbyte']}"


def raw_descr(fobj_bytes, data_offset, header_start):
    """The descr exactly as written in a .npy header's dict text."""
    text = fobj_bytes[header_start:data_offset].decode("latin1")
    return ast.literal_eval(text.strip())["descr"]


class NpyOracle:
    """What numpy says about a .npy held in bytes."""

    def __init__(self, data):
        f = io.BytesIO(data)
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        self.version = version
        self.shape = list(shape)
        self.fortran = fortran
        self.dtype = dtype
        self.offset = f.tell()
        start = 10 if version == (1, 0) else 12
        self.descr = raw_descr(data, self.offset, start)
        self.count = int(np.prod(shape, dtype=np.uint64)) if shape else 1


class ArrayinfoChecks(unittest.TestCase):
    def check_npy(self, a, o):
        self.assertEqual(a["format"], "npy")
        self.assertEqual(a["version"], "%d.%d" % o.version)
        self.assertEqual(a["shape"], o.shape)
        self.assertEqual(a["order"], "F" if o.fortran else "C")
        if isinstance(o.descr, str):
            self.assertEqual(a["dtype"], o.descr)
            self.assertEqual(a["byteorder"], BYTEORDER[o.dtype.byteorder])
        else:
            self.assertTrue(a["dtype"].startswith("["), a["dtype"])
        self.assertEqual(a["itemsize"], o.dtype.itemsize)
        self.assertEqual(a["count"], o.count)
        self.assertEqual(a["data_offset"], o.offset)
        self.assertEqual(a["stored_size"], a["data_size"])
        if not o.dtype.hasobject:  # a pickle: see test_object_array_says_pickle
            self.assertEqual(a["data_size"], o.count * o.dtype.itemsize)
        self.assertEqual(a["compression"], "none")
        self.assertEqual(a["has_object"], o.dtype.hasobject)


class TestNumpyFiles(ArrayinfoChecks):
    def test_every_numpy_written_npy_matches_numpy_header(self):
        paths = sorted(glob.glob(fixture("good", "*.npy")))
        self.assertGreater(len(paths), 10)
        r, doc = info_json(*paths)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, b"")
        self.assertEqual([d["file"] for d in doc], paths)
        for path, d in zip(paths, doc):
            with self.subTest(file=os.path.basename(path)):
                self.assertEqual(d["format"], "npy")
                self.assertEqual(d["warnings"], [])
                with open(path, "rb") as f:
                    self.check_npy(d["array"], NpyOracle(f.read()))

    def test_numpy_header_read_for_offsets_and_version(self):
        version, shape, fortran, dtype, offset = npy_header(fixture("good", "v2.npy"))
        r, doc = info_json(fixture("good", "v2.npy"))
        self.assertEqual(doc[0]["array"]["version"], "2.0")
        self.assertEqual(doc[0]["array"]["data_offset"], offset)
        self.assertEqual(doc[0]["array"]["shape"], list(shape))

    def test_object_array_says_pickle(self):
        r, doc = info_json(fixture("good", "object.npy"))
        self.assertEqual(r.returncode, 0)
        self.assertTrue(doc[0]["array"]["has_object"])
        self.assertEqual(doc[0]["array"]["dtype"], "|O")
        # The data is a pickle of its own length: the rest of the file.
        path = fixture("good", "object.npy")
        self.assertEqual(doc[0]["array"]["data_size"],
                         os.path.getsize(path) - npy_header(path)[4])

    def test_text_output_lists_the_fields(self):
        path = fixture("good", "c_order.npy")
        r = run([ARRAYINFO, path])
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout.decode()
        self.assertTrue(out.startswith(path + ":\n"), out)
        o = NpyOracle(open(path, "rb").read())
        for line in ["format:      npy 1.0", "shape:       3 4 5",
                     "dtype:       <f8 (float64, little-endian)", "order:       C",
                     "byte order:  little", "count:       60",
                     "itemsize:    8", f"data offset: {o.offset}",
                     "data size:   480", "compression: none"]:
            self.assertIn("  " + line + "\n", out)

    def test_text_output_zero_d_shape(self):
        r = run([ARRAYINFO, fixture("good", "scalar.npy")])
        self.assertIn("  shape:       ()\n", r.stdout.decode())


class TestTypeNames(unittest.TestCase):
    """The words beside the type string: numpy's name, the byte order where
    it matters, and what the bytes hold."""
    NAMES = [
        ("<c8", "complex64, little-endian"),
        (">f8", "float64, big-endian"),
        ("<i2", "int16, little-endian"),
        ("u1", "uint8"),
        ("?", "bool"),
        ("<M8[ns]", "datetime64[ns]"),
        ("<m8[s]", "timedelta64[s]"),
        ("S10", "bytes, 10 characters"),
        ("<U5", "unicode, 5 characters"),
        ("V16", "void, 16 bytes"),
        ([("x", "<i4"), ("y", ">f8")], "struct of 2 fields"),
        (object, "object (pickled Python objects)"),
    ]

    def test_json_type_name_and_text_beside_the_dtype(self):
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for i, (dt, _) in enumerate(self.NAMES):
                p = os.path.join(tmp, "t%02d.npy" % i)
                np.save(p, np.zeros(3, dtype=dt), allow_pickle=True)
                paths.append(p)
            r, doc = info_json(*paths)
            self.assertEqual(r.returncode, 0, r.stderr)
            text = run([ARRAYINFO, *paths]).stdout.decode()
        for (dt, name), d in zip(self.NAMES, doc):
            with self.subTest(dtype=str(dt)):
                self.assertEqual(d["array"]["type_name"], name)
                self.assertIn("  dtype:       %s (%s)\n" % (d["array"]["dtype"], name), text)

    def test_bfloat16_ra(self):
        import struct
        with tempfile.NamedTemporaryFile(suffix=".ra") as t:
            t.write(struct.pack("<7Q", 0x7961727261776172, 0, 5, 2, 4, 1, 2)
                    + b"\x80\x3f\x00\x40")
            t.flush()
            r, doc = info_json(t.name)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(doc[0]["array"]["type_name"], "bfloat16")

    def test_npz_members_have_type_names(self):
        r, doc = info_json(fixture("good", "deflated.npz"))
        for m in doc[0]["members"]:
            if m["array"]:
                self.assertIsInstance(m["array"]["type_name"], str)
                self.assertNotEqual(m["array"]["type_name"], "")


class TestArchives(ArrayinfoChecks):
    def check_npz(self, path, method):
        r, doc = info_json(path)
        self.assertEqual(r.returncode, 0, r.stderr)
        d = doc[0]
        self.assertEqual(d["format"], "npz")
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
            self.assertEqual([m["name"] for m in d["members"]],
                             [i.filename for i in infos])
            for m, i in zip(d["members"], infos):
                with self.subTest(member=i.filename):
                    self.assertEqual(m["method"], method)
                    self.assertEqual(m["compressed_size"], i.compress_size)
                    self.assertEqual(m["uncompressed_size"], i.file_size)
                    self.assertEqual(m["crc32"], i.CRC)
                    self.check_npy(m["array"], NpyOracle(z.read(i)))

    def test_stored_npz_members(self):
        self.check_npz(fixture("good", "stored.npz"), "stored")

    def test_deflated_npz_members(self):
        self.check_npz(fixture("good", "deflated.npz"), "deflated")

    def test_nested_key_member_name(self):
        r, doc = info_json(fixture("good", "stored.npz"))
        self.assertIn("nested/z.npy", [m["name"] for m in doc[0]["members"]])

    def test_text_output_of_npz(self):
        path = fixture("good", "deflated.npz")
        r = run([ARRAYINFO, path])
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout.decode()
        self.assertTrue(out.startswith(f"{path}: npz, 2 members\n"), out)
        self.assertRegex(out, r"\n  x\.npy: deflated, \d+ bytes stored, "
                         r"\d+ bytes\n")
        self.assertIn("    shape:       10 100\n", out)


class TestReference(unittest.TestCase):
    def test_every_reference_sample(self):
        paths = sorted(glob.glob(os.path.join(REFERENCE, "*.ra")))
        self.assertGreater(len(paths), 10)
        r, doc = info_json(*paths)
        self.assertEqual(r.returncode, 0, r.stderr)
        for path, d in zip(paths, doc):
            with self.subTest(file=os.path.basename(path)):
                with open(path, "rb") as f:
                    data = f.read()
                h = ra_header(data)
                a = d["array"]
                count = int(np.prod(h["dims"], dtype=np.uint64))
                self.assertEqual(d["format"], "ra")
                self.assertEqual(a["format"], "ra")
                self.assertIsNone(a["version"])
                self.assertEqual(a["shape"], h["dims"])
                self.assertEqual(a["dtype"], ra_descr(h))
                self.assertEqual(a["order"], "F")
                self.assertEqual(a["count"], count)
                self.assertEqual(a["itemsize"], h["elbyte"])
                self.assertEqual(a["data_offset"], h["data_offset"])
                self.assertEqual(a["data_size"], count * h["elbyte"])
                self.assertEqual(a["stored_size"], h["size"])
                self.assertEqual(a["compression"],
                                 "lz4" if h["flags"] & 2 else "none")
                self.assertEqual(a["ra_flags"], h["flags"])
                self.assertEqual(a["ra_eltype"], h["eltype"])
                self.assertEqual(a["ra_elbyte"], h["elbyte"])

    def test_reference_complex_sample_text(self):
        r = run([ARRAYINFO, os.path.join(REFERENCE, "test.ra")])
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout.decode()
        self.assertIn("  shape:       3 4\n", out)
        self.assertIn("  dtype:       <c8 (complex64, little-endian)\n", out)
        self.assertIn("  order:       F\n", out)
        self.assertIn("  data offset: 64\n", out)


class TestBroken(unittest.TestCase):
    LINE = r"^arrayinfo: {}: [^\n]+ \(at byte (\d+)\)\n"

    def check_broken(self, name):
        path = fixture("broken", name)
        r = run([ARRAYINFO, path])
        self.assertEqual(r.returncode, 1, r.stdout)
        err = r.stderr.decode()
        m = re.match(self.LINE.format(re.escape(path)), err)
        self.assertIsNotNone(m, err)
        self.assertLessEqual(int(m.group(1)), os.path.getsize(path))
        return int(m.group(1))

    def test_truncated_data(self):
        off = self.check_broken("truncated-data.npy")
        # The trouble is in or after the data, not in the header.
        self.assertGreaterEqual(off, npy_header(fixture("broken", "ok.npy"))[4])

    def test_header_length_past_end(self):
        self.check_broken("header-past-end.npy")

    def test_bad_magic(self):
        self.assertLess(self.check_broken("bad-magic.npy"), 8)

    def test_truncated_ra(self):
        self.check_broken("truncated.ra")

    def test_cut_npz(self):
        path = fixture("broken", "cut.npz")
        r = run([ARRAYINFO, path])
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stderr.decode(),
                         r"^arrayinfo: " + re.escape(path) + r": \S")

    def test_broken_member_reported_others_listed(self):
        path = fixture("broken", "bad-member.npz")
        r, doc = info_json(path)
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stderr.decode(), r"^arrayinfo: " +
                         re.escape(path + ":a.npy") + r": .+ \(at byte \d+\)\n")
        members = {m["name"]: m for m in doc[0]["members"]}
        self.assertIsNone(members["a.npy"]["array"])
        self.assertIsInstance(members["a.npy"]["error"]["offset"], int)
        self.assertEqual(members["b.npy"]["array"]["shape"], [100])

    def test_broken_file_does_not_stop_the_others(self):
        good = fixture("good", "u8.npy")
        bad = fixture("broken", "truncated-data.npy")
        r, doc = info_json(good, bad, good)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(len(doc), 3)
        self.assertEqual(doc[0]["array"]["shape"], [16, 16])
        self.assertEqual(doc[2]["array"]["shape"], [16, 16])
        self.assertNotIn("array", doc[1])
        self.assertEqual(doc[1]["error"]["status"], "truncated")
        self.assertIsInstance(doc[1]["error"]["offset"], int)
        self.assertEqual(r.stderr.decode().count("\n"), 1)

    def test_missing_file(self):
        r = run([ARRAYINFO, "/nonexistent/x.npy"])
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.decode(), "arrayinfo: /nonexistent/x.npy: "
                         "cannot open: No such file or directory\n")

    def test_not_an_array_file(self):
        with tempfile.NamedTemporaryFile(suffix=".txt") as t:
            t.write(b"hello\n")
            t.flush()
            r = run([ARRAYINFO, t.name])
        self.assertEqual(r.returncode, 1)
        self.assertIn("not a .npy, .npz or .ra file", r.stderr.decode())

    def test_content_decides_without_extension(self):
        with tempfile.NamedTemporaryFile(suffix=".bin") as t:
            t.write(open(fixture("good", "u8.npy"), "rb").read())
            t.flush()
            r, doc = info_json(t.name)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(doc[0]["format"], "npy")


class TestNamesAndJson(unittest.TestCase):
    def test_names_escaped_and_round_trip(self):
        d = os.fsencode(fixture("names"))
        paths = sorted(os.path.join(d, n) for n in os.listdir(d))
        self.assertEqual(len(paths), 4)
        r = run([ARRAYINFO, "--json", *paths])
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout.decode("utf-8"))  # strict: no raw bytes
        for p, d in zip(paths, doc):
            try:
                want = p.decode("utf-8")
            except UnicodeDecodeError:
                want = p.decode("latin1")
            self.assertEqual(d["file"], want)

    def test_no_control_characters_in_json(self):
        p = os.path.join(fixture("names"), "tab\there.npy")
        r = run([ARRAYINFO, "--json", p])
        self.assertNotIn(b"\t", r.stdout)

    def test_v3_utf8_field_name(self):
        r, doc = info_json(fixture("good", "v3.npy"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("\u00e9t\u00e9", doc[0]["array"]["dtype"])
        self.assertEqual(doc[0]["array"]["version"], "3.0")


class TestHeadersOnly(unittest.TestCase):
    def test_sparse_100_gib_npy_and_ra(self):
        n = 100 << 27  # 100 GiB of <f8
        with tempfile.TemporaryDirectory() as tmp:
            npy = os.path.join(tmp, "huge.npy")
            with open(npy, "wb") as f:
                np.lib.format.write_array_header_1_0(
                    f, {"descr": "<f8", "fortran_order": False,
                        "shape": (n,)})
                off = f.tell()
                f.truncate(off + 8 * n)
            ra = os.path.join(tmp, "huge.ra")
            with open(ra, "wb") as f:
                import struct
                f.write(struct.pack("<7Q", 0x7961727261776172, 0, 3, 8,
                                    8 * n, 1, n))
                f.truncate(56 + 8 * n)
            r, doc = info_json(npy, ra)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(doc[0]["array"]["data_size"], 100 << 30)
        self.assertEqual(doc[0]["array"]["data_offset"], off)
        self.assertEqual(doc[1]["array"]["count"], n)


class TestStack(unittest.TestCase):
    """--stack FOLDER|NPZ: the .stack the mount would show, or why none."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="arrayinfo-stack-")
        self.addCleanup(self.tmp.cleanup)

    def folder(self, name, arrays, fortran=False):
        path = os.path.join(self.tmp.name, name)
        os.mkdir(path)
        for fname, a in arrays.items():
            np.save(os.path.join(path, fname), np.asfortranarray(a) if fortran else a)
        return path

    def stack_of(self, path):
        r, out = info_json("--stack", path)
        return r, out[0]

    def test_a_folder_stacks_in_natural_order(self):
        arrays = {"img%d.npy" % i: np.full((4, 5), i, "<i2") for i in (0, 1, 2, 9, 10, 11)}
        path = self.folder("mnist", arrays)
        with open(os.path.join(path, "notes.txt"), "w") as f:
            f.write("not an array\n")
        r, out = self.stack_of(path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(out["members"], 6)
        self.assertEqual(out["first"], "img0.npy")
        self.assertEqual(out["last"], "img11.npy")
        self.assertEqual(out["array"]["shape"], [6, 4, 5])
        self.assertEqual(out["array"]["dtype"], "<i2")
        self.assertEqual(out["array"]["data_size"], 6 * 40)
        text = run([ARRAYINFO, "--stack", path]).stdout.decode()
        self.assertIn(".stack of 6 arrays", text)
        self.assertIn("last:        img11.npy", text)

    def test_fortran_members_stack_on_the_last_axis(self):
        path = self.folder("f", {"a%d.npy" % i: np.ones((2, 3)) for i in range(3)}, fortran=True)
        r, out = self.stack_of(path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(out["array"]["shape"], [2, 3, 3])
        self.assertEqual(out["array"]["order"], "F")

    def test_ra_members_and_npz_members(self):
        path = os.path.join(self.tmp.name, "ra")
        os.mkdir(path)
        sample = os.path.join(REFERENCE, "mnist_8.ra")
        for i in range(3):
            with open(sample, "rb") as src, open(os.path.join(path, "s%d.ra" % i), "wb") as dst:
                dst.write(src.read())
        r, out = self.stack_of(path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(out["array"]["shape"], [28, 28, 3, 3])
        npz = os.path.join(self.tmp.name, "c.npz")
        np.savez_compressed(npz, **{"m%d" % i: np.arange(4) * i for i in range(12)})
        r, out = self.stack_of(npz)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual((out["first"], out["last"], out["array"]["shape"]),
                         ("m0.npy", "m11.npy", [12, 4]))

    def test_a_folder_whose_arrays_disagree_has_none(self):
        cases = [
            ({"a.npy": np.zeros(3, "<f4"), "b.npy": np.zeros(3, "<f8")}, "b.npy",
             "dtype <f8, not <f4"),
            ({"a.npy": np.zeros((2, 3)), "b.npy": np.zeros((3, 2))}, "b.npy",
             "shape 3 2, not 2 3"),
            ({"a.npy": np.zeros(3)}, None, "1 array (a stack needs at least 2)"),
        ]
        for k, (arrays, culprit, reason) in enumerate(cases):
            path = self.folder("d%d" % k, arrays)
            r, out = self.stack_of(path)
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertEqual(out["member"], culprit)
            self.assertEqual(out["error"]["message"], reason)
            self.assertIn("no stack", r.stderr.decode())

    def test_a_broken_member_is_named(self):
        path = self.folder("broken", {"a.npy": np.zeros(3), "b.npy": np.zeros(3)})
        with open(os.path.join(path, "c.npy"), "wb") as f:
            f.write(b"\x93NUMPY\x01\x00")
        r, out = self.stack_of(path)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(out["member"], "c.npy")


class TestUsage(unittest.TestCase):
    def test_no_file_is_usage_error(self):
        r = run([ARRAYINFO])
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"usage:", r.stderr)

    def test_unknown_option_is_usage_error(self):
        self.assertEqual(run([ARRAYINFO, "--bogus", "x.npy"]).returncode, 2)

    def test_help(self):
        r = run([ARRAYINFO, "--help"])
        self.assertEqual(r.returncode, 0)
        self.assertTrue(r.stdout.startswith(b"usage: arrayinfo"))

    def test_version(self):
        r = run([ARRAYINFO, "--version"])
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout.decode(), r"^arrayinfo \d+\.\d+\.\d+\n$")


if __name__ == "__main__":
    unittest.main(verbosity=2)
