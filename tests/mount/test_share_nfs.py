#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Sharing a mount over NFS: nfs-ganesha (FSAL VFS, NFSv4 only), run from
examples/ganesha.conf inside a network namespace that has only loopback,
exports an arrayfs mount read-only; libnfs-utils' nfs-ls lists it and
nfs-cat reads every view of a numpy-written corpus (equal to expect.py's
model) after the kernel's caches are dropped, so ganesha's file handles
must be looked up again by id (FORGET, then LOOKUP of "."). After arrayfs
is restarted on the same mountpoint (ganesha stopped first, then started
again) every view still reads right, and a client's file handles survive:
ganesha gives the same handle bytes for the same files, and they read
the same bytes, even when the new mount got another device number (a
libnfs client, tests/mount/lib/nfsprobe.py; libnfs itself does not
recover its NFSv4 session after a server restart, so it reads again
through a new session). ganesha is stopped before each unmount; its
namespace goes with it."""
import hashlib
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import expect  # noqa: E402
import mountlib  # noqa: E402
import sharecorpus  # noqa: E402
from mountlib import Mount, check_all  # noqa: E402
from nfsprobe import NfsProbe  # noqa: E402
from nfsserver import NfsServer  # noqa: E402


def drop_caches():
    """Make the kernel forget every unused inode of the mount (FORGET)."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("2\n")


def check_every_view(testcase, nfs, files):
    with tempfile.TemporaryDirectory(prefix="arrayfs-nfscat-") as out:
        def check(f):
            local = os.path.join(out, "f")
            r = nfs.cat_to(f.rel, local)
            testcase.assertEqual(r.returncode, 0, r.stderr)
            f.check(mountlib.read(local))
        check_all(testcase, files, check, label=repr)


@unittest.skipUnless(os.geteuid() == 0, "network namespaces and ganesha need root")
class NfsShareTest(sharecorpus.ServedCorpusCase):
    make_server = staticmethod(NfsServer)

    def test_the_namespace_has_only_loopback(self):
        addrs = self.server.addresses()
        self.assertTrue(addrs)
        for line in addrs:
            self.assertEqual(line.split()[1], "lo", addrs)
        self.assertIn(2049, {int(a.rsplit(":", 1)[1]) for a in self.server.listening()})

    def test_listing_is_the_mounts_tree(self):
        self.assertEqual(self.server.walk(), sharecorpus.served_tree(self.src.path))

    def test_every_view_reads_as_numpy_says_after_forget(self):
        self.server.walk()     # ganesha holds a handle of everything
        drop_caches()          # the kernel forgets the inodes under them
        check_every_view(self, self.server, self.files)
        names = {f.rel.rsplit("/", 1)[-1] for f in self.files}
        for view in ("data", "shape", "dtype", "header", "be_i4.npy", "be_i4.ra",
                     "test.ra", "test.npy", "big.npy", "notes.txt", "meta.json"):
            self.assertIn(view, names)
        self.assertTrue(any(expect.is_zarr_chunk(f.rel) for f in self.files))

    def test_writes_are_refused(self):
        # nfs-cp copies a local file to an nfs:// URL
        with tempfile.NamedTemporaryFile(prefix="arrayfs-nfsput-") as local:
            local.write(b"new bytes\n")
            local.flush()
            for rel in ("new.txt", "readme.txt", "c_f4.npy/data"):
                r = self.server.run_in_netns(["nfs-cp", local.name, self.server.url(rel)],
                                             capture_output=True, text=True)
                self.assertNotEqual(r.returncode, 0, rel)
        self.assertFalse(os.path.exists(self.src.join("new.txt")))
        self.assertEqual(mountlib.read(self.src.join("readme.txt")), b"served by arrayfs\n")


@unittest.skipUnless(os.geteuid() == 0, "network namespaces and ganesha need root")
class NfsRestartTest(unittest.TestCase):
    """arrayfs restarted under ganesha: stop ganesha (it holds the mount:
    EBUSY), unmount, mount again on the same mountpoint and SOURCE, start
    ganesha again."""

    def setUp(self):
        self.src = sharecorpus.make_source()
        self.addCleanup(self.src.close)
        self.work = tempfile.TemporaryDirectory(prefix="arrayfs-nfsrestart-")
        self.addCleanup(self.work.cleanup)
        self.mountpoint = os.path.join(self.work.name, "mnt")
        os.mkdir(self.mountpoint)
        self.args = ["-o", "allow_other", "-o",
                     "index_dir=" + os.path.join(self.work.name, "index")]
        self.files = sharecorpus.served_files(self.src.path)
        self.m = self.nfs = None
        self.addCleanup(self.stop)
        self.start()

    def start(self, netns=None):
        self.m = Mount(self.src.path, self.mountpoint, self.args)
        self.m.start()
        self.nfs = NfsServer(self.mountpoint, netns)
        self.nfs.start()

    def stop(self):
        try:
            if self.nfs is not None:
                nfs, self.nfs = self.nfs, None
                nfs.stop()
        finally:
            if self.m is not None:
                m, self.m = self.m, None
                m.umount()

    def test_every_view_reads_right_after_a_restart(self):
        check_every_view(self, self.nfs, self.files)
        self.stop()
        self.start()
        drop_caches()
        check_every_view(self, self.nfs, self.files)
        self.m.check_alive()
        self.nfs.check_alive()

    def test_a_clients_handles_survive_a_restart(self):
        probe = NfsProbe(self.nfs.netns())
        self.addCleanup(probe.close)
        netns = probe.netns()   # kept alive by the probe across the restart
        files = {f.rel: f for f in self.files}
        rels = ["readme.txt", "c_f4.npy/data", "stored.npz/x.npy/data",
                "deflated.npz/big.npy/big.npy", "stored.npz/notes.txt"]
        rels += [next(r for r in files if expect.is_zarr_chunk(r))]

        def open_all():
            self.assertEqual(probe.call("mount 127.0.0.1 /arrays"), "ok")
            for i, rel in enumerate(rels):
                self.assertEqual(probe.call("open f%d /%s" % (i, rel)), "ok", rel)
            return [probe.call("fh f%d" % i) for i in range(len(rels))]

        def check_reads():
            for i, rel in enumerate(rels):
                answer = probe.call("read f%d" % i).split()
                self.assertEqual(answer[0], "ok", (rel, answer))
                exact = files[rel].exact
                if exact is not None:
                    self.assertEqual(answer[1], hashlib.sha256(exact).hexdigest(), rel)
                    self.assertEqual(int(answer[2]), len(exact), rel)

        before = open_all()
        check_reads()
        device = self.m.device
        self.stop()
        # other mounts take free device numbers (the lowest first) until
        # one has the freed one: the new mount gets another
        decoys = []
        while len(decoys) < 16 and (not decoys or decoys[-1].device != device):
            decoys.append(Mount(self.src.path, None, ["-o", "no_index"]))
            self.addCleanup(decoys[-1].cleanup)
            decoys[-1].start()
        self.start(netns)
        self.assertNotEqual(self.m.device, device)
        drop_caches()
        self.assertEqual(probe.call("reset"), "ok")
        self.assertEqual(open_all(), before)   # the same handles: they survive
        check_reads()
        self.stop()
        for decoy in decoys:
            decoy.umount()


if __name__ == "__main__":
    mountlib.main()
