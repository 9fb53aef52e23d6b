#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Mounting the Unix ways: `mount -t fuse.arrayfs` and an fstab line, both
through mount.fuse3, which finds `arrayfs` on PATH and runs
`arrayfs SOURCE MOUNTPOINT -o OPTIONS`. Needs root (mount(8) does).
Every mount is undone in a finally block, lazily if it must be."""
import errno
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from toolslib import ARRAYFS, fixture, run  # noqa: E402


def mount_options(mnt):
    """The options /proc/self/mounts lists for mnt, or None if not mounted."""
    with open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            if fields[1] == mnt:
                return fields[3].split(","), fields[2]
    return None


def force_unmount(mnt):
    """Last-resort cleanup: lazy unmount, ignoring every error."""
    if mount_options(mnt) is not None:
        subprocess.run(["fusermount3", "-u", "-z", mnt],
                       stderr=subprocess.DEVNULL)
    if mount_options(mnt) is not None:
        subprocess.run(["umount", "-l", mnt], stderr=subprocess.DEVNULL)


class MountCase(unittest.TestCase):
    def setUp(self):
        if os.geteuid() != 0:
            self.fail("mount(8) with a fuse type needs root; run as root")
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = os.path.realpath(self._tmp.name)
        self.src = os.path.join(self.tmp, "src")
        self.mnt = os.path.join(self.tmp, "mnt")
        os.mkdir(self.src)
        os.mkdir(self.mnt)
        shutil.copy(fixture("good", "c_order.npy"), self.src)
        shutil.copy(fixture("good", "stored.npz"), self.src)
        # mount.fuse3 runs `arrayfs` by name: the build dir goes first.
        self.env = dict(os.environ, PATH=os.path.dirname(
            os.path.abspath(ARRAYFS)) + ":" + os.environ.get("PATH", ""))

    def tearDown(self):
        try:
            force_unmount(self.mnt)
        finally:
            self._tmp.cleanup()

    def check_mounted_tree(self):
        opts, fstype = mount_options(self.mnt)
        self.assertEqual(fstype, "fuse.arrayfs")
        self.assertIn("ro", opts)
        self.assertEqual(sorted(os.listdir(self.mnt)),
                         ["c_order.npy", "stored.npz"])
        arr = np.load(fixture("good", "c_order.npy"))
        d = os.path.join(self.mnt, "c_order.npy")
        with open(os.path.join(d, "shape")) as f:
            self.assertEqual(f.read(), "3 4 5\n")
        np.testing.assert_array_equal(
            np.load(os.path.join(d, "c_order.npy")), arr)
        with self.assertRaises(OSError) as cm:
            open(os.path.join(self.mnt, "new"), "w")
        self.assertEqual(cm.exception.errno, errno.EROFS)
        return opts

    def unmount(self, cmd):
        r = run(cmd + [self.mnt])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIsNone(mount_options(self.mnt))


class TestMountConventions(MountCase):
    def test_mount_t_fuse_arrayfs_then_umount(self):
        try:
            r = run(["mount", "-t", "fuse.arrayfs", self.src, self.mnt,
                     "-o", "ro"], env=self.env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.check_mounted_tree()
            self.unmount(["umount"])
        finally:
            force_unmount(self.mnt)

    def test_fstab_line_with_allow_other_then_fusermount(self):
        fstab = os.path.join(self.tmp, "fstab")
        with open(fstab, "w") as f:
            f.write(f"{self.src} {self.mnt} fuse.arrayfs ro,allow_other 0 0\n")
        try:
            # mount --fstab reads this file instead of /etc/fstab.
            r = run(["mount", "--fstab", fstab, self.mnt], env=self.env)
            self.assertEqual(r.returncode, 0, r.stderr)
            opts = self.check_mounted_tree()
            self.assertIn("allow_other", opts)
            self.unmount(["fusermount3", "-u"])
        finally:
            force_unmount(self.mnt)

    def test_single_file_source(self):
        src = os.path.join(self.src, "c_order.npy")
        try:
            r = run(["mount", "-t", "fuse.arrayfs", src, self.mnt, "-o", "ro"],
                    env=self.env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(mount_options(self.mnt)[1], "fuse.arrayfs")
            self.assertTrue(os.listdir(self.mnt))
            self.unmount(["umount"])
        finally:
            force_unmount(self.mnt)

    def test_bad_source_fails_and_mounts_nothing(self):
        try:
            r = run(["mount", "-t", "fuse.arrayfs",
                     os.path.join(self.tmp, "missing"), self.mnt, "-o", "ro"],
                    env=self.env)
            self.assertNotEqual(r.returncode, 0)
            self.assertIsNone(mount_options(self.mnt))
        finally:
            force_unmount(self.mnt)


if __name__ == "__main__":
    unittest.main(verbosity=2)
