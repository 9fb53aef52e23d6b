#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The content of every array directory of the corpus, judged by numpy."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import expect  # noqa: E402
import mountlib  # noqa: E402
import numpy as np  # noqa: E402
from mountlib import MountCase, TempDir, fixtures, read  # noqa: E402


class ContentTest(MountCase):
    source = staticmethod(lambda: fixtures("corpus"))

    @classmethod
    def setUpClass(cls):
        cls.tree = expect.expected_tree(fixtures("corpus"))
        cls.all = expect.arrays(cls.tree)
        super().setUpClass()

    def check(self, rel, arr, name):
        data = read(self.mp(rel, name))
        for check in arr.checks[name]:
            check(data)

    def check_each(self, which, name_of):
        """Run the checks of file name_of(rel, arr) of every array for which
        which(rel, arr) holds; one failure lists every wrong array."""
        todo = [(rel, arr, name_of(rel, arr)) for rel, arr in self.all if which(rel, arr)]
        todo = [t for t in todo if t[2] in t[1].checks]
        self.assertGreater(len(todo), 0, "the corpus has no array of this kind")
        mountlib.check_all(self, todo, lambda t: self.check(*t),
                           label=lambda t: t[0] + "/" + t[2])

    @staticmethod
    def base(rel):
        return rel.rsplit("/", 1)[-1].rsplit(".", 1)[0]

    @staticmethod
    def is_npy(rel, arr):
        return hasattr(arr, "npy")

    @staticmethod
    def is_ra(rel, arr):
        return hasattr(arr, "ra")

    def test_data_is_numpys_raw_bytes_in_stored_order(self):
        self.check_each(self.is_npy, lambda rel, arr: "data")

    def test_shape_text_of_npy_arrays(self):
        self.check_each(self.is_npy, lambda rel, arr: "shape")

    def test_dtype_text_is_the_descr_as_written(self):
        self.check_each(self.is_npy, lambda rel, arr: "dtype")

    def test_header_text_is_the_dict_without_padding(self):
        self.check_each(self.is_npy, lambda rel, arr: "header")

    def test_npy_view_is_byte_identical_to_source_or_member(self):
        self.check_each(self.is_npy, lambda rel, arr: self.base(rel) + ".npy")

    def test_ra_view_of_npy_has_contract_header_and_little_endian_data(self):
        self.check_each(self.is_npy, lambda rel, arr: self.base(rel) + ".ra")

    def test_ra_source_data_is_the_decoded_elements(self):
        self.check_each(self.is_ra, lambda rel, arr: "data")

    def test_ra_source_shape_is_the_dims(self):
        self.check_each(self.is_ra, lambda rel, arr: "shape")

    def test_ra_source_dtype_text_from_eltype_elbyte_flags(self):
        self.check_each(self.is_ra, lambda rel, arr: "dtype")

    def test_ra_source_header_text_has_one_line_per_field(self):
        self.check_each(self.is_ra, lambda rel, arr: "header")

    def test_ra_source_ra_view_is_byte_identical(self):
        self.check_each(self.is_ra, lambda rel, arr: self.base(rel) + ".ra")

    def test_ra_source_npy_view_loads_as_the_reference_reader_array(self):
        self.check_each(self.is_ra, lambda rel, arr: self.base(rel) + ".npy")

    def test_compressed_ra_data_equals_uncompressed_twin_data(self):
        for name in ("mnist_8", "cifar_airplane"):
            with self.subTest(name=name):
                z = read(self.mp("ra", name + "_z.ra", "data"))
                plain = read(self.mp("ra", name + ".ra", "data"))
                self.assertEqual(len(z), 28 * 28 * 3 if name == "mnist_8" else 32 * 32 * 3)
                self.assertEqual(z, plain)

    def test_compressed_ra_npy_view_equals_uncompressed_twin_npy_view(self):
        for name in ("mnist_8", "cifar_airplane"):
            with self.subTest(name=name):
                z = read(self.mp("ra", name + "_z.ra", name + "_z.npy"))
                plain = read(self.mp("ra", name + ".ra", name + ".npy"))
                self.assertEqual(z, plain)

    def test_reference_test_ra_elements_are_k_minus_i_over_k(self):
        import numpy as np
        with open(self.mp("ra", "test.ra", "test.npy"), "rb") as f:
            a = np.load(f)
        self.assertEqual(a.shape, (3, 4))
        flat = a.ravel(order="F")
        self.assertEqual(flat[5], np.complex64(5 - 0.2j))
        self.assertTrue(np.isneginf(flat[0].imag))

    def test_every_file_size_equals_its_content_length(self):
        def check(path):
            size, n = os.stat(path).st_size, len(read(path))
            self.assertEqual(size, n, "st_size %d, read %d bytes" % (size, n))
        mountlib.check_all(self, [self.mp(rel, name) for rel, arr in self.all
                                  for name in arr.files], check)


class UserDefinedRaViewTest(MountCase):
    """CONTRACT: the .ra view of eltype 0 (bytes, unicode, void, structured)
    keeps the bytes as stored whatever their byte order; numbers are
    little-endian."""

    @staticmethod
    def make_source():
        src = TempDir()
        np.save(src.join("u3_be.npy"), np.array(["ab", "c\u00e9", "xyz", ""], ">U3"))
        be = np.dtype([("x", ">f8"), ("n", ">i4"), ("s", "S2")])
        a = np.zeros((2, 3), be)
        a["x"] = np.arange(6).reshape(2, 3) + 0.5
        a["n"] = -np.arange(6).reshape(2, 3)
        a["s"] = b"hi"
        np.save(src.join("struct_be.npy"), a)
        np.save(src.join("f8_be.npy"), np.arange(5, dtype=">f8"))
        return src

    def ra_data(self, base):
        ra = read(self.mp(base + ".npy", base + ".ra"))
        h = expect.ra_header(ra)
        return h, ra[h["data_offset"]:]

    def test_big_endian_unicode_and_struct_bytes_as_stored(self):
        for base in ("u3_be", "struct_be"):
            with self.subTest(base=base):
                src = expect.Npy(read(self.src.join(base + ".npy")))
                h, data = self.ra_data(base)
                self.assertEqual(h["eltype"], 0)
                self.assertEqual(h["elbyte"], src.dtype.itemsize)
                self.assertEqual(data, src.data())

    def test_big_endian_numbers_still_little_endian(self):
        h, data = self.ra_data("f8_be")
        self.assertEqual(h["eltype"], 3)
        self.assertEqual(data, np.arange(5, dtype="<f8").tobytes())


class ObjectArrayTest(MountCase):
    """CONTRACT: an object array (its data is a pickle) has B.npy,
    byte-identical to the source or the member, so numpy.load(...,
    allow_pickle=True) works; no data, no B.ra; never unpickled."""
    OBJ = np.array([{"k": 1}, "two", None, [3.5, 4]], dtype=object)
    FIELD = np.array([(1, "one"), (2, [2])], dtype=[("n", "<i4"), ("o", "O")])

    @classmethod
    def make_source(cls):
        src = TempDir()
        np.save(src.join("obj.npy"), cls.OBJ, allow_pickle=True)
        np.savez(src.join("stored.npz"), obj=cls.OBJ, field=cls.FIELD)
        np.savez_compressed(src.join("deflated.npz"), obj=cls.OBJ, field=cls.FIELD)
        return src

    def check_dir(self, rel, npy, source_bytes, want):
        self.assertEqual(sorted(os.listdir(self.mp(rel))),
                         sorted([npy, "dtype", "header", "shape"]))
        self.assertFalse(os.path.exists(self.mp(rel, "data")))
        self.assertFalse(os.path.exists(self.mp(rel, npy[:-4] + ".ra")))
        self.assertEqual(read(self.mp(rel, npy)), source_bytes)
        got = np.load(self.mp(rel, npy), allow_pickle=True)
        self.assertEqual(got.dtype, want.dtype)
        self.assertEqual(got.tolist(), want.tolist())

    def test_object_npy_file(self):
        self.check_dir("obj.npy", "obj.npy", read(self.src.join("obj.npy")), self.OBJ)

    def test_object_members_of_stored_and_deflated_npz(self):
        import zipfile
        for npz in ("stored.npz", "deflated.npz"):
            with zipfile.ZipFile(self.src.join(npz)) as z:
                for key, want in (("obj", self.OBJ), ("field", self.FIELD)):
                    with self.subTest(npz=npz, key=key):
                        self.check_dir(npz + "/" + key + ".npy", key + ".npy",
                                       z.read(key + ".npy"), want)


if __name__ == "__main__":
    mountlib.main()
