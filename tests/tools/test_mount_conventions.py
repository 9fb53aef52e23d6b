#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Mounting the Unix ways: `mount -t fuse.arrayfs`, an fstab line, and the
mount.fuse3 helper they both run, which starts `arrayfs SOURCE MOUNTPOINT
-o OPTIONS` found by name. Needs root, as mount(8) does.

mount(8) runs its helpers without PATH, so the shell that mount.fuse3
starts looks in the default path (/usr/local/sbin first). To test mount(8)
itself without installing anything, those cases run in a private mount
namespace (unshare -m) where a folder holding a link to the built arrayfs
is bind-mounted over /usr/local/sbin; the system never sees it.

Every mount is undone: umount/fusermount3 as the test, then a lazy unmount
in a trap or finally block if anything failed.
"""
import errno
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from toolslib import ARRAYFS, fixture, run  # noqa: E402


def mount_entry(mnt):
    """(fstype, options) of mnt in /proc/self/mounts, or None."""
    with open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            if fields[1] == mnt:
                return fields[2], fields[3].split(",")
    return None


def force_unmount(mnt):
    """Last-resort cleanup: lazy unmount, ignoring every error."""
    if mount_entry(mnt) is not None:
        subprocess.run(["fusermount3", "-u", "-z", mnt],
                       stderr=subprocess.DEVNULL)
    if mount_entry(mnt) is not None:
        subprocess.run(["umount", "-l", mnt], stderr=subprocess.DEVNULL)


# Runs inside `unshare -m`: MOUNT_CMD mounts, the checks print KEY: value
# lines for the test to judge, UMOUNT_CMD unmounts. Paths come from the
# environment (BIN, SRC, MNT, FSTAB).
NAMESPACE_SCRIPT = r'''
cleanup() {
  fusermount3 -u -z "$MNT" 2>/dev/null || true
  umount -l "$MNT" 2>/dev/null || true
}
trap cleanup EXIT
mount --bind "$BIN" /usr/local/sbin
eval "$MOUNT_CMD" || { echo "MOUNT FAILED: $?"; exit 1; }
echo "MOUNTS: $(grep " $MNT " /proc/self/mounts)"
echo "LS: $(ls "$MNT" | tr '\n' ' ')"
echo "SHAPE: $(cat "$MNT/c_order.npy/shape")"
echo "MD5: $(md5sum < "$MNT/c_order.npy/c_order.npy" | cut -d' ' -f1)"
if touch "$MNT/new" 2>"$BIN/../touch.err"; then echo "TOUCH: ok"
else echo "TOUCH: $(cat "$BIN/../touch.err")"; fi
$UMOUNT_CMD "$MNT" || echo "UMOUNT FAILED"
if grep -q " $MNT " /proc/self/mounts; then echo "AFTER: mounted"
else echo "AFTER: unmounted"; fi
'''


class MountCase(unittest.TestCase):
    def setUp(self):
        if os.geteuid() != 0:
            self.fail("mount(8) with a fuse type needs root; run as root")
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = os.path.realpath(self._tmp.name)
        self.src = os.path.join(self.tmp, "src")
        self.mnt = os.path.join(self.tmp, "mnt")
        self.bin = os.path.join(self.tmp, "bin")
        for d in (self.src, self.mnt, self.bin):
            os.mkdir(d)
        os.symlink(os.path.abspath(ARRAYFS), os.path.join(self.bin, "arrayfs"))
        shutil.copy(fixture("good", "c_order.npy"), self.src)
        shutil.copy(fixture("good", "stored.npz"), self.src)
        with open(fixture("good", "c_order.npy"), "rb") as f:
            self.md5 = hashlib.md5(f.read()).hexdigest()

    def tearDown(self):
        try:
            force_unmount(self.mnt)
        finally:
            self._tmp.cleanup()

    def in_namespace(self, mount_cmd, umount_cmd, fstab=None):
        """Run NAMESPACE_SCRIPT in a private mount namespace; return its
        KEY: value lines as a dict."""
        env = dict(os.environ, BIN=self.bin, SRC=self.src, MNT=self.mnt,
                   FSTAB=fstab or "", MOUNT_CMD=mount_cmd,
                   UMOUNT_CMD=umount_cmd)
        r = run(["unshare", "-m", "--propagation", "private",
                 "sh", "-c", NAMESPACE_SCRIPT], env=env)
        out = r.stdout.decode()
        self.assertEqual(r.returncode, 0, out + r.stderr.decode())
        facts = dict(line.split(": ", 1) for line in out.splitlines()
                     if ": " in line)
        return facts, out + r.stderr.decode()

    def check_facts(self, facts, log):
        self.assertNotIn("MOUNT FAILED", facts, log)
        mounts = facts["MOUNTS"].split()
        self.assertEqual(mounts[1:3], [self.mnt, "fuse.arrayfs"], log)
        self.assertIn("ro", mounts[3].split(","))
        self.assertEqual(facts["LS"].split(), ["c_order.npy", "stored.npz"])
        self.assertEqual(facts["SHAPE"], "3 4 5")
        self.assertEqual(facts["MD5"], self.md5)
        self.assertIn("Read-only file system", facts["TOUCH"])
        self.assertEqual(facts["AFTER"], "unmounted", log)
        self.assertNotIn("UMOUNT FAILED", log)
        return mounts[3].split(",")


class TestMountCommand(MountCase):
    def test_mount_t_fuse_arrayfs_then_umount(self):
        facts, log = self.in_namespace(
            'mount -t fuse.arrayfs "$SRC" "$MNT" -o ro', "umount")
        self.check_facts(facts, log)

    def test_fstab_line_with_allow_other_then_fusermount(self):
        fstab = os.path.join(self.tmp, "fstab")
        with open(fstab, "w") as f:
            f.write(f"{self.src} {self.mnt} fuse.arrayfs ro,allow_other 0 0\n")
        # `mount MOUNTPOINT` looks the rest up in the fstab (--fstab names
        # this file instead of /etc/fstab).
        facts, log = self.in_namespace('mount --fstab "$FSTAB" "$MNT"',
                                       "fusermount3 -u", fstab=fstab)
        opts = self.check_facts(facts, log)
        self.assertIn("allow_other", opts)

    def test_bad_source_fails_and_mounts_nothing(self):
        env = dict(os.environ, BIN=self.bin, MNT=self.mnt,
                   SRC=os.path.join(self.tmp, "missing"))
        r = run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                 'mount --bind "$BIN" /usr/local/sbin; '
                 'mount -t fuse.arrayfs "$SRC" "$MNT" -o ro; rc=$?; '
                 'grep -q " $MNT " /proc/self/mounts && umount -l "$MNT" '
                 '&& echo MOUNTED; exit $rc'], env=env)
        self.assertNotEqual(r.returncode, 0)
        self.assertNotIn(b"MOUNTED", r.stdout)
        self.assertIn(b"missing", r.stderr)


class TestMountFuseHelper(MountCase):
    """mount.fuse3 directly, as mount(8) calls it: finds arrayfs on PATH."""

    def test_helper_with_path_then_fusermount(self):
        env = dict(os.environ, PATH=self.bin + ":" + os.environ["PATH"])
        try:
            r = run(["mount.fuse3", self.src, self.mnt, "-t", "fuse.arrayfs",
                     "-o", "ro,allow_other"], env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            fstype, opts = mount_entry(self.mnt)
            self.assertEqual(fstype, "fuse.arrayfs")
            self.assertIn("ro", opts)
            self.assertIn("allow_other", opts)
            d = os.path.join(self.mnt, "c_order.npy")
            np.testing.assert_array_equal(
                np.load(os.path.join(d, "c_order.npy")),
                np.load(fixture("good", "c_order.npy")))
            with self.assertRaises(OSError) as cm:
                open(os.path.join(self.mnt, "new"), "w")
            self.assertEqual(cm.exception.errno, errno.EROFS)
            r = run(["fusermount3", "-u", self.mnt])
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIsNone(mount_entry(self.mnt))
        finally:
            force_unmount(self.mnt)

    def test_single_file_source(self):
        env = dict(os.environ, PATH=self.bin + ":" + os.environ["PATH"])
        try:
            r = run(["mount.fuse3", os.path.join(self.src, "c_order.npy"),
                     self.mnt, "-t", "fuse.arrayfs", "-o", "ro"], env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(mount_entry(self.mnt)[0], "fuse.arrayfs")
            self.assertTrue(os.listdir(self.mnt))
            r = run(["umount", self.mnt])
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIsNone(mount_entry(self.mnt))
        finally:
            force_unmount(self.mnt)


if __name__ == "__main__":
    unittest.main(verbosity=2)
