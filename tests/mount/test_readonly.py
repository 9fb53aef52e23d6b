#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The mount is read-only: every call that would change it fails with EROFS,
and the source is left untouched."""
import errno
import os
import shutil
import stat
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import mountlib  # noqa: E402
from mountlib import MountCase, TempDir, fixtures, read  # noqa: E402


def make_source():
    src = TempDir()
    shutil.copyfile(fixtures("corpus", "dtypes", "f8_le.npy"), src.join("a.npy"))
    shutil.copyfile(fixtures("corpus", "npz", "mixed.npz"), src.join("z.npz"))
    shutil.copyfile(fixtures("corpus", "ra", "test.ra"), src.join("t.ra"))
    with open(src.join("plain.txt"), "w") as f:
        f.write("plain text\n")
    os.mkdir(src.join("empty"))
    os.mkdir(src.join("sub"))
    with open(src.join("sub", "x.txt"), "w") as f:
        f.write("x\n")
    return src


def snapshot(root):
    """{rel: (mode, size, mtime_ns, bytes)} of everything under ROOT."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            data = read(p) if stat.S_ISREG(st.st_mode) else None
            out[os.path.relpath(p, root)] = (st.st_mode, st.st_size, st.st_mtime_ns, data)
    return out


class ReadOnlyTest(MountCase):
    @classmethod
    def setUpClass(cls):
        cls.src = make_source()
        cls.source = cls.src.path
        cls.before = snapshot(cls.src.path)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            after = snapshot(cls.src.path)
            cls.src.close()
        if after != cls.before:
            raise AssertionError("the source changed under a read-only mount")

    # one existing entry of each kind, and a new name in each kind of folder
    FILES = ["plain.txt", "sub/x.txt", "a.npy/data", "a.npy/a.npy", "a.npy/a.ra",
             "a.npy/shape", "z.npz/notes.txt", "z.npz/first.npy/data", "t.ra/t.npy"]
    DIRS = ["sub", "empty", "a.npy", "z.npz", "z.npz/first.npy", "t.ra"]
    NEW = ["new", "sub/new", "a.npy/new", "z.npz/new", "empty/new"]

    def assertErofs(self, fn, *args, **kw):
        with self.assertRaises(OSError) as cm:
            fn(*args, **kw)
        self.assertEqual(cm.exception.errno, errno.EROFS,
                         "%s%r: %s" % (fn.__name__, args, cm.exception))

    def each(self, rels, fn, *extra):
        for rel in rels:
            with self.subTest(rel=rel):
                self.assertErofs(fn, self.mp(rel), *extra)

    def test_open_for_write_is_erofs(self):
        for flags in (os.O_WRONLY, os.O_RDWR, os.O_WRONLY | os.O_APPEND,
                      os.O_WRONLY | os.O_TRUNC):
            with self.subTest(flags=flags):
                self.each(self.FILES, os.open, flags)

    def test_create_is_erofs(self):
        self.each(self.NEW, os.open, os.O_WRONLY | os.O_CREAT, 0o644)
        self.each(self.NEW, os.open, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)

    def test_mkdir_is_erofs(self):
        self.each(self.NEW, os.mkdir)

    def test_unlink_is_erofs(self):
        self.each(self.FILES, os.unlink)

    def test_rmdir_is_erofs(self):
        self.each(self.DIRS, os.rmdir)

    def test_rename_is_erofs(self):
        for rel in self.FILES + self.DIRS:
            with self.subTest(rel=rel):
                self.assertErofs(os.rename, self.mp(rel), self.mp(rel + ".moved"))
        self.assertErofs(os.rename, self.mp("plain.txt"), self.mp("sub", "x.txt"))

    def test_chmod_is_erofs(self):
        self.each(self.FILES + self.DIRS, os.chmod, 0o600)

    def test_chown_is_erofs(self):
        self.each(self.FILES + self.DIRS, os.chown, os.getuid(), os.getgid())

    def test_utime_is_erofs(self):
        self.each(self.FILES + self.DIRS, os.utime, None)
        self.each(self.FILES, os.utime, (1, 2))

    def test_truncate_is_erofs(self):
        self.each(self.FILES, os.truncate, 0)

    def test_symlink_is_erofs(self):
        for rel in self.NEW:
            with self.subTest(rel=rel):
                self.assertErofs(os.symlink, "target", self.mp(rel))

    def test_link_is_erofs(self):
        for rel in self.NEW:
            with self.subTest(rel=rel):
                self.assertErofs(os.link, self.mp("plain.txt"), self.mp(rel))

    def test_setxattr_is_erofs(self):
        self.each(self.FILES + self.DIRS, os.setxattr, "user.test", b"v")

    def test_mknod_is_erofs(self):
        self.each(self.NEW, os.mknod, stat.S_IFREG | 0o644)
        self.each(self.NEW, os.mkfifo, 0o644)


if __name__ == "__main__":
    mountlib.main()
