#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""scripts/run: mounts in the background, shows the tour, says how to unmount;
fails with a clear message and exit status 1 when it cannot mount."""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import expect  # noqa: E402
import mountlib  # noqa: E402
from mountlib import TempDir, env_path, is_mounted  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
RUN = os.path.join(ROOT, "scripts", "run")
EXAMPLE = os.path.join(ROOT, "tests", "data", "example")


def run_script(*args):
    # the build dir of this test run, so the script builds nothing new
    env = dict(os.environ, AF_BUILDDIR=env_path("AF_BUILD_ROOT"))
    return subprocess.run([RUN] + list(args), capture_output=True, text=True, env=env,
                          timeout=300, stdin=subprocess.DEVNULL)


def daemon_pids(mnt):
    """Pids of arrayfs processes whose last argument is MNT (ours: MNT is new)."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                args = f.read().decode(errors="replace").split("\0")[:-1]
        except OSError:
            continue
        if args and os.path.basename(args[0]) == "arrayfs" and args[-1] == mnt:
            pids.append(int(pid))
    return pids


class RunScriptTest(unittest.TestCase):
    def test_run_mounts_the_example_in_the_background_and_says_how_to_unmount(self):
        mnt = TempDir("arrayfs-run-")
        self.addCleanup(mnt.close)
        try:
            r = run_script(EXAMPLE, mnt.path)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(is_mounted(mnt.path), "scripts/run returned 0 but nothing is mounted")
            self.assertIn("fusermount3 -u " + mnt.path, r.stdout)
            self.assertIn("temperature.npy", r.stdout)
            self.assertIn("0000000", r.stdout, "no od of a data file")
            tree = expect.expected_tree(EXAMPLE)
            self.assertEqual(set(mountlib.walk(mnt.path)), set(expect.flatten(tree)))
        finally:
            pids = daemon_pids(mnt.path)
            subprocess.run(["fusermount3", "-u", mnt.path], capture_output=True)
            for pid in pids:
                self.assertTrue(mountlib.wait_pid_exit(pid, 20),
                                "the daemon still runs after fusermount3 -u")
            subprocess.run(["fusermount3", "-uz", mnt.path], capture_output=True)

    def test_run_with_missing_source_exits_1_with_a_message(self):
        r = run_script("/nonexistent/source/dir")
        self.assertEqual(r.returncode, 1)
        self.assertIn("/nonexistent/source/dir", r.stderr)

    def test_run_with_bad_mountpoint_exits_1_and_mounts_nothing(self):
        d = TempDir("arrayfs-run-")
        self.addCleanup(d.close)
        bad = d.join("a-file")
        with open(bad, "w") as f:
            f.write("x\n")
        r = run_script(EXAMPLE, bad)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(bad, r.stderr)
        self.assertFalse(is_mounted(bad))


if __name__ == "__main__":
    mountlib.main()
