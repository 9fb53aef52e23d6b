#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""scripts/run: mounts in the background, shows the tour, says how to unmount;
fails with a clear message and exit status 1 when it cannot mount; installs
only what building and mounting need, where scripts/test installs the rest."""
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
DEPS = os.path.join(ROOT, "scripts", "lib", "deps.sh")
EXAMPLE = os.path.join(ROOT, "tests", "data", "example")

# What scripts/run must install on a machine that has nothing ...
MOUNT_PACKAGES = {"gcc", "libc6-dev", "meson", "ninja-build", "pkg-config",
                  "libfuse3-dev", "fuse3", "zlib1g-dev", "liblz4-dev"}
# ... and a few of the packages only the tests use: the test lab
TEST_ONLY_PACKAGES = {"check", "python3-numpy", "python3-lz4", "valgrind", "man-db",
                      "lintian", "debhelper", "samba", "nginx", "nfs-ganesha",
                      "python3-zarr", "gdal-bin", "python3-vtk9", "nodejs"}


def run_script(*args, env=None):
    # the build dir of this test run, so the script builds nothing new
    env = dict(env or os.environ, AF_BUILDDIR=env_path("AF_BUILD_ROOT"))
    return subprocess.run([RUN] + list(args), capture_output=True, text=True, env=env,
                          timeout=300, stdin=subprocess.DEVNULL)


class FakeApt:
    """A PATH on which dpkg-query finds nothing installed and apt-get only
    writes its arguments to a log: what a script would install on a bare
    machine, without installing anything."""

    def __init__(self):
        self.dir = TempDir("arrayfs-apt-")
        self.log = self.dir.join("apt-get.log")
        for name, body in {
                "dpkg-query": "exit 1\n",
                "apt-get": 'echo "$*" >> %s\n' % self.log,
                "sudo": '"$@"\n'}.items():
            path = self.dir.join(name)
            with open(path, "w") as f:
                f.write("#!/bin/sh\n" + body)
            os.chmod(path, 0o755)
        self.env = dict(os.environ, PATH=self.dir.path + ":" + os.environ["PATH"])

    def installed(self):
        """The packages of every apt-get install call, and its options."""
        packages, options = set(), set()
        with open(self.log) as f:
            for line in f:
                words = line.split()
                if "install" in words:
                    after = words[words.index("install") + 1:]
                    packages |= {w for w in after if not w.startswith("-")}
                    options |= {w for w in after if w.startswith("-")}
        return packages, options

    def close(self):
        self.dir.close()


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



class InstallSetTest(unittest.TestCase):
    def setUp(self):
        self.apt = FakeApt()
        self.addCleanup(self.apt.close)

    def test_run_installs_what_building_and_mounting_need_and_none_of_the_test_lab(self):
        d = TempDir("arrayfs-run-")
        self.addCleanup(d.close)
        bad = d.join("a-file")  # so the run stops after installing and building
        with open(bad, "w") as f:
            f.write("x\n")
        r = run_script(EXAMPLE, bad, env=self.apt.env)
        self.assertEqual(r.returncode, 1, r.stderr)
        packages, options = self.apt.installed()
        self.assertLessEqual(MOUNT_PACKAGES, packages)
        self.assertEqual(packages & TEST_ONLY_PACKAGES, set())
        self.assertIn("--no-install-recommends", options)

    def test_deps_test_installs_the_mount_set_and_the_test_lab(self):
        r = subprocess.run([DEPS, "test"], capture_output=True, text=True, env=self.apt.env,
                           timeout=60, stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 0, r.stderr)
        packages, options = self.apt.installed()
        self.assertLessEqual(MOUNT_PACKAGES | TEST_ONLY_PACKAGES, packages)
        self.assertIn("--no-install-recommends", options)

    def test_deps_without_a_purpose_exits_2_and_installs_nothing(self):
        r = subprocess.run([DEPS], capture_output=True, text=True, env=self.apt.env,
                           timeout=60, stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 2)
        self.assertIn("run|test", r.stderr)
        self.assertFalse(os.path.exists(self.apt.log))


if __name__ == "__main__":
    mountlib.main()
