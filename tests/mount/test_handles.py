#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""File handles (name_to_handle_at / open_by_handle_at, what an NFS server
keeps for its clients) on every view of the numpy-written sharing corpus
and on its folders: a handle opens the same file, with the same bytes,
after the kernel has forgotten the inode (echo 2 > drop_caches sends
FORGET) and after the daemon is restarted on the same mountpoint and
SOURCE (the id map is saved in the index folder). A handle whose path was
removed, replaced by another file, or whose array was rewritten in place
(its old version is gone) is ESTALE, never another file's bytes, and so is
every handle when the saved id map is corrupt (the daemon says so in one
log line). Runs as root (open_by_handle_at needs CAP_DAC_READ_SEARCH)."""
import ctypes
import errno
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import numpy as np  # noqa: E402

import expect  # noqa: E402
import mountlib  # noqa: E402
import sharecorpus  # noqa: E402
from mountlib import Mount, check_all  # noqa: E402

AT_FDCWD = -100
MAX_HANDLE_SZ = 128
_libc = ctypes.CDLL(None, use_errno=True)


class FileHandle(ctypes.Structure):
    _fields_ = [("handle_bytes", ctypes.c_uint), ("handle_type", ctypes.c_int),
                ("f_handle", ctypes.c_ubyte * MAX_HANDLE_SZ)]


def name_to_handle(path):
    fh = FileHandle()
    fh.handle_bytes = MAX_HANDLE_SZ
    mount_id = ctypes.c_int()
    if _libc.name_to_handle_at(AT_FDCWD, os.fsencode(path), ctypes.byref(fh),
                               ctypes.byref(mount_id), 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), path)
    return bytes(fh)[:8 + fh.handle_bytes]


def open_by_handle(mount_fd, handle, flags=os.O_RDONLY):
    fh = FileHandle.from_buffer_copy(handle.ljust(ctypes.sizeof(FileHandle), b"\0"))
    fd = _libc.open_by_handle_at(mount_fd, ctypes.byref(fh), flags)
    if fd < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return fd


def drop_caches():
    """Make the kernel forget every unused inode of the mount (FORGET)."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("2\n")


def read_fd(fd):
    chunks = []
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            return b"".join(chunks)
        chunks.append(b)


def npy(arr):
    f = io.BytesIO()
    np.save(f, arr)
    return f.getvalue()


@unittest.skipUnless(os.geteuid() == 0, "open_by_handle_at needs root")
class HandlesTest(unittest.TestCase):
    def setUp(self):
        self.src = sharecorpus.make_source()
        self.addCleanup(self.src.close)
        self.work = tempfile.TemporaryDirectory(prefix="arrayfs-handles-")
        self.addCleanup(self.work.cleanup)
        self.mountpoint = os.path.join(self.work.name, "mnt")
        self.index = os.path.join(self.work.name, "index")
        os.mkdir(self.mountpoint)
        self.files = sharecorpus.served_files(self.src.path)
        tree = sharecorpus.served_tree(self.src.path)
        self.folders = sorted(rel for rel, kind in tree.items() if kind == "dir")
        self.m = None
        self.mount_fd = -1
        self.addCleanup(self.stop)
        self.start()

    def start(self):
        self.m = Mount(self.src.path, self.mountpoint, ["-o", "index_dir=" + self.index])
        self.m.start()
        self.mount_fd = os.open(self.mountpoint, os.O_RDONLY | os.O_DIRECTORY)

    def stop(self):
        if self.mount_fd >= 0:
            os.close(self.mount_fd)
            self.mount_fd = -1
        if self.m is not None:
            m, self.m = self.m, None
            m.umount()

    def restart(self):
        self.stop()
        self.start()

    def handles(self, rels):
        return {rel: name_to_handle(os.path.join(self.mountpoint, rel)) for rel in rels}

    def check_files(self, handles):
        def check(f):
            fd = open_by_handle(self.mount_fd, handles[f.rel])
            try:
                f.check(read_fd(fd))
            finally:
                os.close(fd)
        check_all(self, self.files, check, label=repr)

    def check_folders(self, handles):
        def check(rel):
            fd = open_by_handle(self.mount_fd, handles[rel], os.O_RDONLY | os.O_DIRECTORY)
            try:
                self.assertEqual(sorted(os.listdir(fd)),
                                 sorted(os.listdir(os.path.join(self.mountpoint, rel))))
            finally:
                os.close(fd)
        check_all(self, self.folders, check)

    def test_views_and_folders_are_handled(self):
        # the kinds the handles must cover, so a corpus change cannot drop one
        rels = [f.rel for f in self.files]
        self.assertTrue(any(r.endswith("/data") for r in rels))
        self.assertTrue(any(r.startswith("stored.npz/") and r.endswith("/data") for r in rels))
        self.assertIn("stored.npz/notes.txt", rels)
        self.assertTrue(any(expect.is_zarr_chunk(r) for r in rels))
        self.assertIn("sub", self.folders)
        self.assertIn("stored.npz", self.folders)

    def test_handles_open_the_same_files_after_forget(self):
        fh = self.handles(f.rel for f in self.files)
        dh = self.handles(self.folders)
        self.check_files(fh)       # while the kernel holds the inodes
        drop_caches()
        self.check_files(fh)       # each one looked up again by id
        drop_caches()
        self.check_folders(dh)     # folders: reconnected through ".."
        drop_caches()
        self.check_files(fh)
        self.m.check_alive()

    def test_handles_survive_a_daemon_restart(self):
        fh = self.handles(f.rel for f in self.files)
        dh = self.handles(self.folders)
        self.restart()
        self.check_files(fh)
        self.check_folders(dh)
        drop_caches()
        self.restart()             # the map saved again, after a restart
        self.check_files(fh)
        self.m.check_alive()

    def stale_setup(self):
        """Three arrays and a plain file, and handles to their views."""
        for name in ("gone.npy", "replaced.npy", "inplace.npy"):
            np.save(self.src.join(name), np.arange(12, dtype="<i4").reshape(3, 4))
        with open(self.src.join("gone.txt"), "wb") as f:
            f.write(b"soon gone\n")
        rels = ["gone.npy/data", "gone.npy", "gone.txt", "replaced.npy/data",
                "replaced.npy", "replaced.npy/shape", "inplace.npy/data"]
        h = self.handles(rels)
        keep = self.handles(["inplace.npy", "readme.txt"])
        return h, keep

    def change_sources(self):
        os.unlink(self.src.join("gone.npy"))
        os.unlink(self.src.join("gone.txt"))
        other = self.src.join("other.tmp")
        with open(other, "wb") as f:
            f.write(npy(np.arange(30, dtype=">f8").reshape(5, 6)))
        os.replace(other, self.src.join("replaced.npy"))
        # the same inode, new bytes: the old version of its data is gone
        with open(self.src.join("inplace.npy"), "r+b") as f:
            f.write(npy(np.arange(12, dtype="<i4").reshape(3, 4) * 2))

    def assert_stale(self, handles):
        def stale(rel):
            with self.assertRaises(OSError) as cm:
                fd = open_by_handle(self.mount_fd, handles[rel])
                got = read_fd(fd)
                os.close(fd)
                self.fail("%s opened (%d bytes)" % (rel, len(got)))
            self.assertEqual(cm.exception.errno, errno.ESTALE, rel)
        check_all(self, sorted(handles), stale)

    def assert_same(self, handles):
        def same(rel):
            fd = open_by_handle(self.mount_fd, handles[rel],
                                os.O_RDONLY | (os.O_DIRECTORY if rel.endswith(".npy") else 0))
            try:
                if rel.endswith(".npy"):
                    self.assertIn("data", os.listdir(fd))
                else:
                    self.assertEqual(read_fd(fd), mountlib.read(self.src.join(rel)))
            finally:
                os.close(fd)
        check_all(self, sorted(handles), same)

    def test_gone_or_replaced_is_stale(self):
        h, keep = self.stale_setup()
        self.change_sources()
        drop_caches()
        self.assert_stale(h)
        self.assert_same(keep)
        # the new files have handles of their own that work
        fd = open_by_handle(self.mount_fd, name_to_handle(
            os.path.join(self.mountpoint, "replaced.npy", "data")))
        self.assertEqual(read_fd(fd), np.arange(30, dtype=">f8").tobytes())
        os.close(fd)

    def test_changed_while_stopped_is_stale(self):
        h, keep = self.stale_setup()
        self.stop()
        self.change_sources()
        self.start()
        self.assert_stale(h)
        self.assert_same(keep)

    def test_corrupt_map_is_ignored_with_a_log_line(self):
        h = self.handles(["readme.txt", "c_f4.npy/data"])
        self.stop()
        maps = [n for n in os.listdir(self.index) if n.endswith(".afm")]
        self.assertEqual(len(maps), 1, os.listdir(self.index))
        path = os.path.join(self.index, maps[0])
        with open(path, "r+b") as f:
            f.seek(50)
            b = f.read(1)
            f.seek(50)
            f.write(bytes([b[0] ^ 0x40]))
        self.start()
        # the new daemon gives the same numbers to whatever it meets first
        # (in another order: another file, maybe): only the generation tells
        # them apart, and the kernel checks it
        for rel in sorted(sharecorpus.served_tree(self.src.path), reverse=True):
            os.stat(os.path.join(self.mountpoint, rel))
        self.assert_stale(h)
        self.assertEqual(self.m.log().count("id map"), 1, self.m.log())
        self.assertIn("checksum", self.m.log())


if __name__ == "__main__":
    mountlib.main()
