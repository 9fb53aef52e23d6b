#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The mount over remote storage (docs/SHARING.md, "Remote storage:
rclone"): nginx serves a folder of stored and deflated npz files, a
big-endian .npy and plain and LZ4 .ra files over HTTP; `rclone mount` of
that HTTP remote, with the recipe's options, is arrayfs' SOURCE; every
array read through the mount equals numpy's. The requests nginx saw
while arrayfs listed everything are the recipe's cost: one HEAD a file
(rclone's listing) and one ranged GET a header (an .npz: its end and
central directory, then each member's header)."""
import collections
import os
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import expect  # noqa: E402
import mountlib  # noqa: E402
import numpy as np  # noqa: E402
import refscorpus  # noqa: E402
from httpserver import HttpServer  # noqa: E402

# The recipe: small ranged reads for headers, no read-ahead of whole
# files, the remote's listing kept (it does not change under the mount).
RCLONE_OPTS = ["--read-only", "--vfs-read-chunk-size", "64k",
               "--buffer-size", "0", "--dir-cache-time", "1h"]


class RcloneCase(unittest.TestCase):
    def setUp(self):
        self.tmp = mountlib.TempDir()
        self.addCleanup(self.tmp.close)
        os.chmod(self.tmp.path, 0o755)  # nginx's workers read as www-data
        src = self.tmp.join("src")
        self.want = self.write_source(src)
        self.web = HttpServer(src)
        self.web.start()
        self.addCleanup(self.web.stop)
        self.remote = self.tmp.join("remote")
        os.mkdir(self.remote)
        self.rclone_log = self.tmp.join("rclone.log")
        with open(self.rclone_log, "wb") as log:
            self.rclone = subprocess.Popen(
                ["rclone", "mount", ":http:", self.remote, "--http-url",
                 self.web.url("")] + RCLONE_OPTS, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.addCleanup(self.stop_rclone)
        mountlib.wait_for(lambda: mountlib.is_mounted(self.remote)
                          or self.rclone.poll() is not None,
                          what="rclone mount")
        if self.rclone.poll() is not None:
            with open(self.rclone_log) as f:
                self.fail("rclone mount exited: " + f.read())

    def stop_rclone(self):
        """Unmount rclone's remote (arrayfs' mount is gone by now) and wait
        for its process, by pid, killing it if it will not go."""
        subprocess.run(["fusermount3", "-u", self.remote],
                       stderr=subprocess.DEVNULL)
        try:
            self.rclone.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.rclone.pid, signal.SIGKILL)
            self.rclone.wait(10)

    @staticmethod
    def write_source(src):
        """The served folder; {path of an array's B.npy view: array}."""
        os.mkdir(src)
        want = {"stored.npz/a.npy/a.npy": np.arange(20000, dtype="<f8"),
                "stored.npz/b.npy/b.npy": np.ones((30, 40), "<i2"),
                "packed.npz/c.npy/c.npy": np.arange(50000, dtype="<u4"),
                "x.npy/x.npy": np.arange(5000, dtype=">i4"),
                "plain.ra/plain.npy": np.arange(24, dtype="<f4").reshape(4, 6),
                "lz.ra/lz.npy": np.arange(999, dtype="<u2")}
        np.savez(os.path.join(src, "stored.npz"),
                 a=want["stored.npz/a.npy/a.npy"], b=want["stored.npz/b.npy/b.npy"])
        np.savez_compressed(os.path.join(src, "packed.npz"),
                            c=want["packed.npz/c.npy/c.npy"])
        np.save(os.path.join(src, "x.npy"), want["x.npy/x.npy"])
        with open(os.path.join(src, "plain.ra"), "wb") as f:
            f.write(refscorpus.ra_bytes(want["plain.ra/plain.npy"]))
        with open(os.path.join(src, "lz.ra"), "wb") as f:
            f.write(expect.lz4_ra(want["lz.ra/lz.npy"]))
        return want

    def requests(self):
        """{method: count} of the requests nginx has logged."""
        with open(os.path.join(self.web.workdir, "logs", "access.log")) as f:
            return collections.Counter(line.split('"')[1].split()[0]
                                       for line in f if '"' in line)

    def test_arrayfs_over_rclone_of_http_reads_every_array(self):
        with mountlib.mount(self.remote) as m:
            files = os.listdir(m.mountpoint)
            for name in files:
                os.listdir(m.path(name))
            listed = self.requests()
            for rel, want in sorted(self.want.items()):
                with self.subTest(array=rel):
                    got = np.load(m.path(rel))
                    self.assertEqual(got.dtype, want.dtype)
                    np.testing.assert_array_equal(got, want)
        print("\nlisting %d files over rclone: %s" % (len(files), dict(listed)),
              file=sys.stderr)
        # rclone's listing (one GET) and a HEAD a file; one ranged GET a
        # .npy or .ra header; an .npz's end and central directory (two)
        # and each member's header (3 members in 2 npz files)
        self.assertLessEqual(listed["HEAD"], len(files))
        self.assertLessEqual(listed["GET"], 1 + (len(files) - 2) + 2 * 2 + 3)


if __name__ == "__main__":
    unittest.main()
