#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The mirrored tree: folders, names, array directories, plain files, links."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import expect  # noqa: E402
import mountlib  # noqa: E402
from mountlib import MountCase, fixtures, read  # noqa: E402

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "example")


def tree_diff(actual, expected):
    """A readable list of what differs between two {rel: kind} maps."""
    lines = []
    for rel in sorted(set(expected) - set(actual)):
        lines.append("missing: %r (%s)" % (rel, expected[rel]))
    for rel in sorted(set(actual) - set(expected)):
        lines.append("extra:   %r (%s)" % (rel, actual[rel]))
    for rel in sorted(set(actual) & set(expected)):
        if actual[rel] != expected[rel]:
            lines.append("kind:    %r is %s, expected %s" % (rel, actual[rel], expected[rel]))
    if len(lines) > 60:
        lines = lines[:60] + ["... and %d more differences" % (len(lines) - 60)]
    return "\n".join(lines)


class CorpusTreeTest(MountCase):
    source = staticmethod(lambda: fixtures("corpus"))

    @classmethod
    def setUpClass(cls):
        cls.tree = expect.expected_tree(fixtures("corpus"))
        super().setUpClass()

    def kinds(self, kind):
        return sorted(rel for rel, e in self.tree.items() if e.kind == kind)

    def test_whole_tree_has_exactly_the_expected_entries_and_kinds(self):
        diff = tree_diff(mountlib.walk(self.m.mountpoint), expect.flatten(self.tree))
        if diff:
            self.fail("the tree differs:\n" + diff)

    def test_subfolders_stay_folders_with_their_names(self):
        for rel in ("sub", "sub/deeper", "empty-folder", "dtypes", "ra"):
            with self.subTest(rel=rel):
                self.assertTrue(os.path.isdir(self.mp(rel)))
                self.assertFalse(os.path.islink(self.mp(rel)))
        self.assertEqual(os.listdir(self.mp("empty-folder")), [])
        self.assertEqual(sorted(os.listdir(self.mp("sub/deeper"))), ["inner.npy", "leaf.bin"])

    def test_valid_array_files_are_directories(self):
        def check(rel):
            self.assertTrue(os.path.isdir(self.mp(rel)), "not a directory")
        mountlib.check_all(self, self.kinds("array"), check)

    def test_array_dir_holds_exactly_data_shape_dtype_header_and_both_views(self):
        def check(item):
            rel, arr = item
            self.assertEqual(sorted(os.listdir(self.mp(rel))), sorted(arr.names))
            for name in arr.files:
                self.assertTrue(os.path.isfile(self.mp(rel, name)), name + " is not a file")
            for name in arr.dirs:
                self.assertTrue(os.path.isdir(self.mp(rel, name)), name + " is not a folder")
        mountlib.check_all(self, expect.arrays(self.tree), check, label=lambda i: i[0])

    def test_view_names_use_the_base_name_without_extension(self):
        self.assertIn("f8_le.npy", os.listdir(self.mp("dtypes/f8_le.npy")))
        self.assertIn("f8_le.ra", os.listdir(self.mp("dtypes/f8_le.npy")))
        self.assertIn("test.npy", os.listdir(self.mp("ra/test.ra")))

    def test_object_array_dir_holds_only_shape_dtype_header_and_npy(self):
        for rel in ("dtypes/object.npy", "dtypes/object_field.npy", "npz/stored.npz/obj.npy"):
            with self.subTest(rel=rel):
                npy = os.path.basename(rel)
                self.assertEqual(sorted(os.listdir(self.mp(rel))),
                                 sorted([npy, "dtype", "header", "shape"]))

    def test_broken_array_files_are_plain_files_byte_identical_to_source(self):
        broken = ["broken/truncated-data.npy", "broken/truncated-data.ra",
                  "broken/bad-magic.npy", "npz/not-a-zip.npz"]
        for rel in broken:
            with self.subTest(rel=rel):
                self.assertTrue(os.path.isfile(self.mp(rel)), rel + " is not a plain file")
                self.assertEqual(read(self.mp(rel)), read(fixtures("corpus", rel)))

    def test_other_files_are_byte_identical_to_source(self):
        def check(rel):
            expect.assert_bytes(read(self.mp(rel)), self.tree[rel].data, rel)
        mountlib.check_all(self, self.kinds("file"), check)

    def test_symlinks_are_symlinks_with_the_same_target(self):
        for rel in ("link-to-f8.npy", "dangling-link", "link-to-folder", "absolute-link.npy"):
            with self.subTest(rel=rel):
                self.assertTrue(os.path.islink(self.mp(rel)))
                self.assertEqual(os.readlink(self.mp(rel)), os.readlink(fixtures("corpus", rel)))

    def test_symlink_to_array_file_leads_to_its_array_directory(self):
        self.assertEqual(sorted(os.listdir(self.mp("link-to-f8.npy"))),
                         sorted(os.listdir(self.mp("dtypes/f8_le.npy"))))

    def test_odd_file_names_are_kept(self):
        names = sorted(os.listdir(self.mp("names")))
        self.assertEqual(names, sorted(["with space.npy", "ünïcødé 数组.npy", ".hidden.npy",
                                        "double.npy.npy", "npy-without-extension"]))
        self.assertIn("with space.ra", os.listdir(self.mp("names", "with space.npy")))
        self.assertIn("ünïcødé 数组.npy", os.listdir(self.mp("names", "ünïcødé 数组.npy")))
        self.assertIn(".hidden.ra", os.listdir(self.mp("names", ".hidden.npy")))
        self.assertEqual(sorted(os.listdir(self.mp("names", "double.npy.npy"))),
                         sorted(["data", "shape", "dtype", "header", "double.npy.npy",
                                 "double.npy.ra", "double.npy.zarr", "data.hdr",
                                 "double.npy.nhdr"]))
        self.assertTrue(os.path.isfile(self.mp("names", "npy-without-extension")))

    def test_npz_is_a_directory_of_its_members(self):
        names = sorted(os.listdir(self.mp("npz/stored.npz")))
        self.assertEqual(names, sorted(["plain.npy", "a", "données.npy", "数组", "obj.npy",
                                        "arr_0.npy"]))

    def test_npz_slash_in_key_makes_subfolders(self):
        for npz in ("stored.npz", "deflated.npz"):
            with self.subTest(npz=npz):
                base = self.mp("npz", npz)
                self.assertEqual(sorted(os.listdir(os.path.join(base, "a"))), ["b", "top.npy"])
                self.assertEqual(sorted(os.listdir(os.path.join(base, "a/b"))),
                                 ["c.npy", "d.npy"])
                self.assertTrue(os.path.isdir(os.path.join(base, "a/b/c.npy")))
                self.assertIn("c.ra", os.listdir(os.path.join(base, "a/b/c.npy")))

    def test_npz_utf8_keys_keep_their_names(self):
        for npz in ("stored.npz", "deflated.npz"):
            with self.subTest(npz=npz):
                self.assertTrue(os.path.isdir(self.mp("npz", npz, "données.npy")))
                self.assertTrue(os.path.isdir(self.mp("npz", npz, "数组", "标量.npy")))
                self.assertIn("标量.ra", os.listdir(self.mp("npz", npz, "数组", "标量.npy")))

    def test_npz_non_npy_members_are_plain_files_with_the_member_bytes(self):
        for rel in ("npz/mixed.npz/notes.txt", "npz/mixed.npz/meta/info.json"):
            with self.subTest(rel=rel):
                self.assertTrue(os.path.isfile(self.mp(rel)))
                self.assertEqual(read(self.mp(rel)), self.tree[rel].data)

    def test_missing_name_is_enoent(self):
        for rel in ("no-such-file", "dtypes/f8_le.npy/no-such-view", "npz/stored.npz/nope.npy"):
            with self.subTest(rel=rel):
                with self.assertRaises(FileNotFoundError):
                    os.stat(self.mp(rel))


class ExampleDatasetTest(MountCase):
    """The committed example dataset that scripts/run mounts by default."""
    source = staticmethod(lambda: EXAMPLE)

    def test_example_tree_and_every_array_file_are_right(self):
        tree = expect.expected_tree(EXAMPLE)
        diff = tree_diff(mountlib.walk(self.m.mountpoint), expect.flatten(tree))
        if diff:
            self.fail("the tree differs:\n" + diff)
        def check(item):
            rel, name, checks = item
            data = read(self.mp(rel, name))
            for c in checks:
                c(data)
        mountlib.check_all(self, [(rel, name, cs) for rel, arr in expect.arrays(tree)
                                  for name, cs in sorted(arr.checks.items())],
                           check, label=lambda i: i[0] + "/" + i[1])


class SingleFileSourceTest(unittest.TestCase):
    """SOURCE is one file: the mount root is what its directory would hold."""

    def check_root(self, rel):
        src = fixtures("corpus", rel)
        tree = expect.expected_tree(src)
        with mountlib.mount(src) as m:
            diff = tree_diff(mountlib.walk(m.mountpoint), expect.flatten(tree))
            if diff:
                self.fail("the tree differs:\n" + diff)
            for arel, arr in expect.arrays(tree):
                for name, checks in arr.checks.items():
                    data = read(os.path.join(m.mountpoint, arel, name))
                    for check in checks:
                        check(data)
            m.check_alive()

    def test_single_npy_source_mounts_as_its_array_directory(self):
        self.check_root("shapes/c_2x3x4_i4.npy")

    def test_single_npz_source_mounts_as_its_members(self):
        self.check_root("npz/mixed.npz")

    def test_single_ra_source_mounts_as_its_array_directory(self):
        self.check_root("ra/test.ra")


if __name__ == "__main__":
    mountlib.main()
