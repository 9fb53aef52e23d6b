#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The mount never reads through itself: a MOUNTPOINT inside SOURCE, a
SOURCE that is the MOUNTPOINT, symlinks and bind mounts of the mount inside
the source; a second mount on the same MOUNTPOINT is refused.

The proof that the daemon never asks its own mount anything: with -d,
libfuse logs the pid of the process behind every request, and none is the
daemon's."""
import os
import re
import shutil
import subprocess
import sys
import threading
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import mountlib  # noqa: E402
from mountlib import Mount, TempDir, arrayfs_bin, fixtures, read  # noqa: E402

WALK_DEADLINE = 30  # s: a walk of a few files; a mount that loops never ends
RUN_DEADLINE = 20   # s: a command that must refuse
WATCHDOG = 90       # s: a test still running then is stuck on a looping mount


def write_arrays(folder):
    np.save(os.path.join(folder, "a.npy"), np.arange(12, dtype="<i4").reshape(3, 4))
    os.mkdir(os.path.join(folder, "sub"))
    np.save(os.path.join(folder, "sub", "b.npy"), np.linspace(0, 1, 5))


def self_requests(m):
    """The requests in M's -d log made by the daemon itself."""
    pid = m.proc.pid
    return [line for line in m.log().splitlines()
            if re.search(r"\bpid: %d\b" % pid, line)]


def mountpoints(path):
    real = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        return [mp for mp in f.read().splitlines()
                if mountlib._unescape_mountinfo(mp.split()[4]) == real]


class SelfCase(unittest.TestCase):
    """A source folder with arrays, mounted with -d by each test."""

    def setUp(self):
        self.src = TempDir()
        self.addCleanup(self.src.close)
        write_arrays(self.src.path)

    def mount(self, mountpoint, source=None):
        """Mount with -d. A watchdog aborts the connection of a mount that
        deadlocks on itself, so a regression fails the test (ENOTCONN)
        instead of hanging every later one."""
        m = Mount(source or self.src.path, mountpoint, ["-d"])
        self.addCleanup(m.cleanup)
        m.start()
        dog = threading.Timer(WATCHDOG, mountlib.abort_connection, [m.device])
        dog.daemon = True
        dog.start()
        self.addCleanup(dog.cancel)
        return m

    def walk(self, top):
        """`find TOP` with a deadline: the names, or a failure if it hangs.
        A mount stuck on its own requests holds find in an uninterruptible
        wait: its connection is aborted first, so find can be killed."""
        proc = subprocess.Popen(["find", top], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            out, err = proc.communicate(timeout=WALK_DEADLINE)
        except subprocess.TimeoutExpired:
            mountlib.abort_connection(self.m.device)
            proc.kill()
            proc.communicate()
            self.fail("find %s did not end in %d s: the mount reads through itself"
                      % (top, WALK_DEADLINE))
        self.assertEqual(proc.returncode, 0, err)
        return [os.path.relpath(p, top) for p in out.splitlines()]

    def assert_never_asked_itself(self, m):
        mine = self_requests(m)
        self.assertEqual(mine, [], "the daemon sent requests to its own mount")
        self.assertNotIn("network file system", m.log())

    def assert_arrays_served(self, m):
        got = np.load(m.path("a.npy", "a.npy"))
        np.testing.assert_array_equal(got, np.arange(12, dtype="<i4").reshape(3, 4))
        self.assertEqual(read(m.path("sub", "b.npy", "shape")), b"5\n")


class MountpointInsideSourceTest(SelfCase):
    def setUp(self):
        super().setUp()
        os.mkdir(self.src.join("mnt"))
        self.m = self.mount(self.src.join("mnt"))

    def test_a_walk_of_the_mount_ends(self):
        names = self.walk(self.m.mountpoint)
        self.assertIn("mnt", names)
        self.assertFalse([n for n in names if n.startswith("mnt/")], names)
        self.assertIn("a.npy/data", names)
        self.assertIn("sub/b.npy/b.ra", names)
        self.assert_never_asked_itself(self.m)

    def test_the_mountpoint_shows_as_an_empty_folder(self):
        inner = self.m.path("mnt")
        self.assertTrue(os.path.isdir(inner))
        self.assertEqual(os.listdir(inner), [])
        with self.assertRaises(FileNotFoundError):
            os.stat(os.path.join(inner, "mnt"))
        with self.assertRaises(FileNotFoundError):
            os.listdir(os.path.join(inner, "mnt", "mnt"))
        self.assert_never_asked_itself(self.m)

    def test_arrays_are_still_served(self):
        self.walk(self.m.mountpoint)
        self.assert_arrays_served(self.m)
        self.assert_never_asked_itself(self.m)

    def test_the_source_path_of_the_mount_reads_the_mount(self):
        """Users (not the daemon) may go through it: SOURCE/mnt is the mount."""
        self.assertIn("a.npy", os.listdir(self.src.join("mnt")))
        self.assertEqual(os.listdir(self.src.join("mnt", "mnt")), [])


class DeepMountpointTest(SelfCase):
    """The mountpoint several folders down, named like an array."""

    def setUp(self):
        super().setUp()
        os.makedirs(self.src.join("sub", "deeper", "view.npy"))
        self.m = self.mount(self.src.join("sub", "deeper", "view.npy"))

    def test_walk_ends_and_the_mountpoint_is_an_empty_folder(self):
        names = self.walk(self.m.mountpoint)
        self.assertIn("sub/deeper/view.npy", names)
        self.assertFalse([n for n in names if n.startswith("sub/deeper/view.npy/")])
        self.assertEqual(os.listdir(self.m.path("sub", "deeper", "view.npy")), [])
        self.assert_never_asked_itself(self.m)


class SymlinkToTheMountTest(SelfCase):
    """Symlinks in the source that lead into the mount stay symlinks: the
    daemon never follows them (the kernel does, for the mount's users)."""

    def setUp(self):
        super().setUp()
        self.mpdir = TempDir("arrayfs-mnt-")
        self.addCleanup(self.mpdir.close)
        os.symlink(self.mpdir.path, self.src.join("to_mount"))
        os.symlink(os.path.join(self.mpdir.path, "sub"), self.src.join("to_sub"))
        self.m = self.mount(self.mpdir.path)

    def test_links_stay_links_and_a_walk_ends(self):
        self.assertEqual(os.readlink(self.m.path("to_mount")), self.mpdir.path)
        names = self.walk(self.m.mountpoint)
        self.assertIn("to_mount", names)
        self.assertIn("to_sub", names)
        # following them is the kernel's work, and ends at the mount itself
        self.assertIn("a.npy", os.listdir(self.m.path("to_mount")))
        self.assertIn("b.npy", os.listdir(self.m.path("to_sub")))
        self.assert_never_asked_itself(self.m)


class BindMountOfTheMountTest(SelfCase):
    """A bind mount of the mount inside the source has another mount id and
    the same device: the daemon knows it as its own and shows it empty."""

    def setUp(self):
        super().setUp()
        self.mpdir = TempDir("arrayfs-mnt-")
        self.addCleanup(self.mpdir.close)
        os.mkdir(self.src.join("bound"))
        self.m = self.mount(self.mpdir.path)
        bound = self.src.join("bound")
        r = subprocess.run(["mount", "--bind", self.mpdir.path, bound],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, "mount --bind (needs root): " + r.stderr)
        # before the mount's own cleanup (added earlier, so run later)
        self.addCleanup(subprocess.run, ["umount", "-l", bound], capture_output=True)

    def test_the_bind_mount_shows_as_an_empty_folder(self):
        self.assertIn("a.npy", os.listdir(self.src.join("bound")))
        names = self.walk(self.m.mountpoint)
        self.assertIn("bound", names)
        self.assertFalse([n for n in names if n.startswith("bound/")], names)
        self.assertEqual(os.listdir(self.m.path("bound")), [])
        self.assert_never_asked_itself(self.m)


class SourceIsTheMountpointTest(SelfCase):
    """SOURCE == MOUNTPOINT: the mount covers the folder and shows what the
    folder held, read from beneath the mount."""

    def setUp(self):
        super().setUp()
        self.m = self.mount(self.src.path, source=self.src.path)

    def test_the_covered_folder_is_served(self):
        self.assertEqual(sorted(os.listdir(self.m.mountpoint)), ["a.npy", "sub"])
        self.assertTrue(os.path.isdir(self.m.path("a.npy")))
        self.assert_arrays_served(self.m)
        names = self.walk(self.m.mountpoint)
        self.assertIn("sub/b.npy/data", names)
        self.assert_never_asked_itself(self.m)


class MountTwiceTest(unittest.TestCase):
    """A MOUNTPOINT that is already an arrayfs mount is refused."""

    def setUp(self):
        self.src = TempDir()
        self.addCleanup(self.src.close)
        write_arrays(self.src.path)
        self.m = Mount(self.src.path)
        self.addCleanup(self.m.cleanup)
        self.m.start()

    def mount_again(self, fg):
        """Run a second arrayfs on the mountpoint: (status, stderr). One that
        mounts (the bug) is unmounted and stopped before this returns."""
        proc = subprocess.Popen([arrayfs_bin()] + fg + [self.src.path, self.m.mountpoint],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        try:
            _, err = proc.communicate(timeout=RUN_DEADLINE)
        except subprocess.TimeoutExpired:
            err = "(still running: it mounted)"
        while len(mountpoints(self.m.mountpoint)) > 1:
            subprocess.run(["fusermount3", "-uz", self.m.mountpoint], capture_output=True)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        return proc.returncode, err

    def test_second_mount_is_refused_and_one_unmount_suffices(self):
        for fg in (["-f"], []):
            status, err = self.mount_again(fg)
            self.assertEqual(status, 1, err)
            self.assertIn("already an arrayfs mount", err)
            self.assertEqual(len(mountpoints(self.m.mountpoint)), 1)
        self.m.check_alive()
        self.m.umount()
        self.assertEqual(mountpoints(self.m.mountpoint), [])


class NonEmptyMountpointTest(unittest.TestCase):
    def test_a_warning_says_the_files_are_hidden(self):
        src = TempDir()
        self.addCleanup(src.close)
        write_arrays(src.path)
        mp = TempDir("arrayfs-mnt-")
        self.addCleanup(mp.close)
        with open(mp.join("notes.txt"), "w") as f:
            f.write("hidden while mounted\n")
        m = Mount(src.path, mp.path)
        self.addCleanup(m.cleanup)
        m.start()
        self.assertRegex(m.log(), r"warning: mountpoint .* is not empty: its files are "
                                  r"hidden while arrayfs is mounted there")
        self.assertEqual(sorted(os.listdir(mp.path)), ["a.npy", "sub"])
        m.umount()
        self.assertEqual(os.listdir(mp.path), ["notes.txt"])

    def test_no_warning_for_an_empty_mountpoint(self):
        src = TempDir()
        self.addCleanup(src.close)
        write_arrays(src.path)
        m = Mount(src.path)
        self.addCleanup(m.cleanup)
        m.start()
        self.assertNotIn("not empty", m.log())
        m.umount()


if __name__ == "__main__":
    mountlib.main()
