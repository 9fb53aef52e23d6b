#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Sources that change while mounted: the new content shows from the next
lookup on (polled with a deadline); a reader holding a file open gets old
bytes, new bytes or EIO, never a silent mix; the daemon stays alive."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import numpy as np  # noqa: E402

import expect  # noqa: E402
import mountlib  # noqa: E402
from mountlib import read, read_fd_to_end, wait_for  # noqa: E402

DEADLINE = 10.0  # seconds a change may take to show


def save(path, arr):
    with open(path, "wb") as f:  # rewritten in place: same inode
        np.save(f, arr)


def save_by_rename(path, arr):
    tmp = path + ".tmp-new"
    with open(tmp, "wb") as f:
        np.save(f, arr)
    os.replace(tmp, path)


def npy_bytes(arr):
    import io
    f = io.BytesIO()
    np.save(f, arr)
    return f.getvalue()


class ChangeCase(mountlib.FreshMountCase):
    """Each test gets its own source folder and mount, holding a.npy,
    notes.txt and sub/b.npy before populate() adds more."""

    def setUp(self):
        self.old = np.arange(12, dtype="<i4").reshape(3, 4)
        super().setUp()
        # the initial state must be visible before anything changes
        self.assertEqual(read(self.m.path("a.npy", "shape")), b"3 4\n")

    def populate(self):
        save(self.src.join("a.npy"), self.old)
        with open(self.src.join("notes.txt"), "wb") as f:
            f.write(b"first version\n")
        os.mkdir(self.src.join("sub"))
        save(self.src.join("sub", "b.npy"), np.ones(5, "<f8"))
        self.populate_more()

    def populate_more(self):
        """Hook: add source files before the mount."""

    def wait_content(self, rel, want, what):
        """Poll until the mount's file REL holds WANT."""
        wait_for(lambda: read(self.mp(rel)) == want, DEADLINE, what=what)

    def assert_array_dir(self, rel, arr):
        base = rel.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        checks = expect.ArrayDir.of_npy(npy_bytes(arr), base, rel).checks
        for name, cs in checks.items():
            data = read(self.mp(rel, name))
            for c in cs:
                c(data)


class SourceChangesTest(ChangeCase):
    def test_rewrite_in_place_with_new_shape_shows_new_shape_and_data(self):
        new = np.arange(6, dtype=">f8").reshape(2, 3)
        save(self.src.join("a.npy"), new)
        self.wait_content("a.npy/shape", b"2 3\n", "the new shape")
        self.assert_array_dir("a.npy", new)

    def test_npy_grown_shows_all_new_elements(self):
        new = np.arange(5000, dtype="<i4").reshape(50, 100)
        save(self.src.join("a.npy"), new)
        self.wait_content("a.npy/shape", b"50 100\n", "the grown shape")
        self.assertEqual(os.stat(self.mp("a.npy", "data")).st_size, new.nbytes)
        self.assert_array_dir("a.npy", new)

    def test_plain_file_grown_shows_new_size_and_bytes(self):
        with open(self.src.join("notes.txt"), "ab") as f:
            f.write(b"second line, appended\n" * 100)
        want = read(self.src.join("notes.txt"))
        wait_for(lambda: os.stat(self.mp("notes.txt")).st_size == len(want), DEADLINE,
                 what="the grown size")
        self.assertEqual(read(self.mp("notes.txt")), want)

    def test_npy_truncated_becomes_a_plain_file_with_the_short_bytes(self):
        os.truncate(self.src.join("a.npy"), 100)
        want = read(self.src.join("a.npy"))
        wait_for(lambda: os.path.isfile(self.mp("a.npy")), DEADLINE,
                 what="a.npy to become a plain file")
        self.assertEqual(read(self.mp("a.npy")), want)

    def test_deleted_file_disappears(self):
        os.unlink(self.src.join("a.npy"))
        os.unlink(self.src.join("sub", "b.npy"))
        wait_for(lambda: not os.path.lexists(self.mp("a.npy")), DEADLINE,
                 what="a.npy to vanish")
        wait_for(lambda: not os.path.lexists(self.mp("sub", "b.npy")), DEADLINE,
                 what="sub/b.npy to vanish")
        self.assertNotIn("a.npy", os.listdir(self.m.mountpoint))
        self.assertEqual(os.listdir(self.mp("sub")), [])

    def test_replaced_by_rename_shows_the_new_file(self):
        new = np.array([[1.5, 2.5]], dtype="<f4")
        save_by_rename(self.src.join("a.npy"), new)
        self.wait_content("a.npy/shape", b"1 2\n", "the replacement's shape")
        self.assert_array_dir("a.npy", new)

    def test_new_file_appears(self):
        new = np.arange(7, dtype="<u2")
        save(self.src.join("sub", "new.npy"), new)
        wait_for(lambda: "new.npy" in os.listdir(self.mp("sub")), DEADLINE,
                 what="sub/new.npy in the listing")
        self.assertTrue(os.path.isdir(self.mp("sub", "new.npy")))
        self.assert_array_dir("sub/new.npy", new)

    def test_npz_rewritten_with_other_keys_shows_the_new_members(self):
        np.savez(self.src.join("z.npz"), keep=self.old, gone=self.old)
        wait_for(lambda: sorted(os.listdir(self.mp("z.npz"))) == ["gone.npy", "keep.npy"],
                 DEADLINE, what="the first members")
        new = np.arange(3, dtype="<u8")
        np.savez_compressed(self.src.join("z.npz"), keep=new, **{"added/deep": self.old})
        wait_for(lambda: sorted(os.listdir(self.mp("z.npz"))) == ["added", "keep.npy"],
                 DEADLINE, what="the new members")
        self.assert_array_dir("z.npz/keep.npy", new)
        self.assert_array_dir("z.npz/added/deep.npy", self.old)

    def test_ra_rewritten_shows_new_dims_and_data(self):
        ref = read(mountlib.reference("test.ra"))
        with open(self.src.join("r.ra"), "wb") as f:
            f.write(ref)
        self.wait_content("r.ra/r.ra", ref, "the first .ra")
        other = read(mountlib.reference("randf64.ra"))
        with open(self.src.join("r.ra"), "r+b") as f:  # in place, same inode
            f.truncate(0)
            f.write(other)
        self.wait_content("r.ra/r.ra", other, "the rewritten .ra")
        self.assertEqual(read(self.mp("r.ra", "shape")), b"4 4\n")

    def test_valid_file_replaced_by_broken_one_and_back(self):
        with open(self.src.join("a.npy"), "wb") as f:
            f.write(b"\x93NUMPY garbage")
        wait_for(lambda: os.path.isfile(self.mp("a.npy")), DEADLINE,
                 what="the broken a.npy as a plain file")
        save_by_rename(self.src.join("a.npy"), self.old)
        wait_for(lambda: os.path.isdir(self.mp("a.npy")), DEADLINE,
                 what="a.npy as an array directory again")
        self.assert_array_dir("a.npy", self.old)


class HeldOpenReaderTest(ChangeCase):
    """A reader that holds `data` open while the source changes."""

    src_arr = np.arange(256 * 1024, dtype="<i8")  # 2 MiB of data

    def populate_more(self):
        save(self.src.join("big.npy"), self.src_arr)

    def read_all_after_change(self, change):
        """Open data, read its first 64 KiB, CHANGE the source, then read
        the whole file through the same descriptor, stopping at EIO.
        Returns (bytes read, errno or None)."""
        fd = os.open(self.mp("big.npy", "data"), os.O_RDONLY)
        try:
            head = os.pread(fd, 65536, 0)
            self.assertEqual(head, self.src_arr.tobytes()[:65536])
            change()
            return read_fd_to_end(fd)
        finally:
            os.close(fd)

    def assert_no_mix(self, got, err, old, new):
        if err is None:
            self.assertTrue(got == old or got == new,
                            "read %d bytes after the change: neither all old (%d) nor all "
                            "new (%d): first difference from old at %d"
                            % (len(got), len(old), len(new), expect.first_difference(got, old)))
        else:
            self.assertTrue(got == old[:len(got)] or got == new[:len(got)],
                            "EIO after %d bytes that mix old and new" % len(got))

    def test_in_place_rewrite_same_size_gives_old_new_or_eio(self):
        new_arr = self.src_arr[::-1].copy()
        got, err = self.read_all_after_change(lambda: save(self.src.join("big.npy"), new_arr))
        self.assert_no_mix(got, err, self.src_arr.tobytes(), new_arr.tobytes())

    def test_replace_by_rename_gives_old_new_or_eio(self):
        new_arr = self.src_arr + 7
        got, err = self.read_all_after_change(
            lambda: save_by_rename(self.src.join("big.npy"), new_arr))
        self.assert_no_mix(got, err, self.src_arr.tobytes(), new_arr.tobytes())

    def test_source_truncated_gives_old_bytes_or_eio(self):
        got, err = self.read_all_after_change(
            lambda: os.truncate(self.src.join("big.npy"), 128 + 100000))
        old = self.src_arr.tobytes()
        if err is None:
            expect.assert_bytes(got, old, "data read through a held descriptor")
        else:
            self.assertEqual(got, old[:len(got)], "EIO after bytes that differ from old")

    def test_source_deleted_gives_old_bytes_or_eio(self):
        got, err = self.read_all_after_change(lambda: os.unlink(self.src.join("big.npy")))
        old = self.src_arr.tobytes()
        self.assertEqual(got, old[:len(got)])
        if err is None:
            self.assertEqual(len(got), len(old), "a silent short read")


if __name__ == "__main__":
    mountlib.main()
