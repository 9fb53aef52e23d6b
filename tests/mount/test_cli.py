#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The command line: --help, --version, bad arguments, signals, the log."""
import os
import shutil
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import mountlib  # noqa: E402
from mountlib import TempDir, arrayfs_bin, fixtures, is_mounted, read  # noqa: E402

RUN_DEADLINE = 20  # seconds for a command that must not mount


class OptionsTest(unittest.TestCase):
    def run_bin(self, *args):
        return subprocess.run([arrayfs_bin()] + list(args), capture_output=True, text=True,
                              timeout=RUN_DEADLINE, stdin=subprocess.DEVNULL)

    def test_help_exits_0_with_usage(self):
        r = self.run_bin("--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout + r.stderr
        self.assertIn("SOURCE", out.upper())
        self.assertIn("MOUNTPOINT", out.upper())

    def test_version_exits_0_with_a_version_number(self):
        r = self.run_bin("--version")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout + r.stderr, r"\d+\.\d+")


class BadArgumentsTest(unittest.TestCase):
    """Exit status 1, a message on stderr, and nothing mounted."""

    def setUp(self):
        self.dir = TempDir("arrayfs-cli-")
        self.addCleanup(self.dir.close)
        os.mkdir(self.dir.join("mnt"))
        with open(self.dir.join("plain.txt"), "w") as f:
            f.write("not a source\n")
        shutil.copyfile(fixtures("corpus", "dtypes", "f8_le.npy"), self.dir.join("a.npy"))

    def assert_refused(self, source, mountpoint):
        proc = subprocess.Popen([arrayfs_bin(), "-f", source, mountpoint],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            out, err = proc.communicate(timeout=RUN_DEADLINE)
        except subprocess.TimeoutExpired:
            subprocess.run(["fusermount3", "-uz", mountpoint], capture_output=True)
            proc.kill()
            proc.communicate()
            self.fail("arrayfs %s %s did not exit: it should refuse" % (source, mountpoint))
        mounted = os.path.isdir(mountpoint) and is_mounted(mountpoint)
        if mounted:
            subprocess.run(["fusermount3", "-uz", mountpoint], capture_output=True)
        self.assertFalse(mounted, "a bad argument left a mount behind")
        self.assertEqual(proc.returncode, 1, "stderr: %r" % err)
        self.assertTrue(err.strip(), "no message on stderr")
        return err

    def test_missing_source_exits_1_with_message(self):
        err = self.assert_refused(self.dir.join("no-such-source"), self.dir.join("mnt"))
        self.assertIn("no-such-source", err)

    def test_source_that_is_not_a_folder_or_array_file_exits_1(self):
        self.assert_refused(self.dir.join("plain.txt"), self.dir.join("mnt"))

    def test_missing_mountpoint_exits_1_with_message(self):
        err = self.assert_refused(self.dir.path, self.dir.join("no-such-mnt"))
        self.assertIn("no-such-mnt", err)

    def test_mountpoint_that_is_a_file_exits_1(self):
        self.assert_refused(self.dir.path, self.dir.join("plain.txt"))

    def test_missing_arguments_exit_1(self):
        r = subprocess.run([arrayfs_bin()], capture_output=True, text=True,
                           timeout=RUN_DEADLINE, stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 1)
        self.assertTrue(r.stderr.strip())


class SignalTest(unittest.TestCase):
    def check_signal(self, signum):
        m = mountlib.Mount(fixtures("corpus"))
        try:
            m.start()
            read(m.path("readme.txt"))
            read(m.path("ra", "test.ra", "data"))
            m.proc.send_signal(signum)
            m.wait_exit()  # status 0, clean log
            self.assertFalse(is_mounted(m.mountpoint), "still mounted after the signal")
        finally:
            m.cleanup()

    def test_sigterm_unmounts_and_exits_0(self):
        self.check_signal(signal.SIGTERM)

    def test_sigint_unmounts_and_exits_0(self):
        self.check_signal(signal.SIGINT)


class StandardOptionsTest(unittest.TestCase):
    """libfuse's own options pass through: -s (one thread), -o ro, -o allow_other."""

    def check_serves(self, *args):
        with mountlib.mount(fixtures("corpus"), None, *args) as m:
            self.assertEqual(read(m.path("readme.txt")), read(fixtures("corpus", "readme.txt")))
            self.assertEqual(read(m.path("ra", "test.ra", "test.ra")),
                             read(fixtures("corpus", "ra", "test.ra")))
            m.check_alive()

    def test_single_thread_option_s(self):
        self.check_serves("-s")

    def test_option_o_ro(self):
        self.check_serves("-o", "ro")

    def test_option_o_allow_other(self):
        self.check_serves("-o", "allow_other")


class ReadaheadTest(unittest.TestCase):
    """-o readahead_kb: the mount's own readahead window (root only; the
    kernel gives a FUSE mount 128 KiB). The tests run as root."""

    def window_kb(self, m):
        dev = os.stat(m.mountpoint).st_dev
        path = "/sys/class/bdi/%d:%d/read_ahead_kb" % (os.major(dev), os.minor(dev))
        with open(path) as f:
            return int(f.read())

    def check_window(self, want, *args):
        if os.geteuid() != 0:
            self.skipTest("only root may set a readahead window")
        with mountlib.mount(fixtures("corpus"), None, *args) as m:
            self.assertEqual(self.window_kb(m), want)
            self.assertEqual(read(m.path("ra", "test.ra", "test.ra")),
                             read(fixtures("corpus", "ra", "test.ra")))

    def test_default_window_is_512_kib(self):
        self.check_window(512)

    def test_option_sets_the_window(self):
        self.check_window(300, "-o", "readahead_kb=300")

    def test_zero_keeps_the_kernel_window(self):
        self.check_window(128, "-o", "readahead_kb=0")


class BackgroundTest(unittest.TestCase):
    def test_without_f_returns_0_once_mounted_and_serves(self):
        mnt = TempDir("arrayfs-mnt-")
        self.addCleanup(mnt.close)
        src = fixtures("corpus")
        r = subprocess.run([arrayfs_bin(), src, mnt.path], capture_output=True, text=True,
                           timeout=RUN_DEADLINE, stdin=subprocess.DEVNULL)
        try:
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(is_mounted(mnt.path), "launcher returned 0 before the mount")
            self.assertEqual(read(os.path.join(mnt.path, "readme.txt")),
                             read(fixtures("corpus", "readme.txt")))
        finally:
            pid = self.find_daemon(src, mnt.path)
            subprocess.run(["fusermount3", "-u", mnt.path], capture_output=True)
            if pid:
                self.assertTrue(mountlib.wait_pid_exit(pid, 20),
                                "the background daemon still runs after unmount")
            subprocess.run(["fusermount3", "-uz", mnt.path], capture_output=True)

    @staticmethod
    def find_daemon(src, mnt):
        """The pid of the daemon this test started (its exact command line)."""
        want = [arrayfs_bin(), src, mnt]
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    args = f.read().decode(errors="replace").split("\0")[:-1]
            except OSError:
                continue
            if args[-2:] == want[-2:] and os.path.basename(args[0]) == "arrayfs":
                return int(pid)
        return None


class LogTest(unittest.TestCase):
    def test_broken_file_is_logged_in_exactly_one_line_naming_it(self):
        src = TempDir()
        self.addCleanup(src.close)
        shutil.copyfile(fixtures("corpus", "broken", "truncated-data.npy"),
                        src.join("zz-truncated.npy"))
        shutil.copyfile(fixtures("corpus", "ra", "test.ra"), src.join("good.ra"))
        with mountlib.mount(src.path) as m:
            for _ in range(3):  # look it up, list it, read it: still one line
                os.listdir(m.mountpoint)
                os.stat(m.path("zz-truncated.npy"))
                read(m.path("zz-truncated.npy"))
                read(m.path("good.ra", "data"))
            m.check_alive()
        lines = [ln for ln in m.log().splitlines() if "zz-truncated.npy" in ln]
        self.assertEqual(len(lines), 1, "log:\n" + m.log())

    def test_control_bytes_in_a_file_name_cannot_forge_log_lines(self):
        src = TempDir()
        self.addCleanup(src.close)
        name = "zz\narrayfs: FORGED\r\x1b[2J.npy"
        shutil.copyfile(fixtures("corpus", "broken", "truncated-data.npy"), src.join(name))
        with mountlib.mount(src.path) as m:
            read(m.path(name))
            m.check_alive()
        log = m.log()
        self.assertNotIn("\narrayfs: FORGED", log)
        self.assertNotIn("\x1b", log)
        lines = [ln for ln in log.splitlines() if "FORGED" in ln]
        self.assertEqual(len(lines), 1, "log:\n" + log)
        self.assertIn("zz\\x0aarrayfs: FORGED\\x0d\\x1b[2J.npy", lines[0])


if __name__ == "__main__":
    mountlib.main()
