#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Sharing a mount over SMB: Samba's smbd, run from examples/smb.conf on
127.0.0.1 and a free port, shares an arrayfs mount (-o allow_other) read-only
to guests. smbclient lists the tree and reads every view of a numpy-written
corpus (equal to expect.py's model), sees the user.array.* xattrs as SMB
EAs, and every write is refused. Without allow_other the guest sees nothing.
smbd is stopped before the mount is unmounted."""
import hashlib
import os
import re
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import expect  # noqa: E402
import mountlib  # noqa: E402
import sharecorpus  # noqa: E402
from mountlib import check_all  # noqa: E402
from smbserver import SmbServer, parse_eas  # noqa: E402

SHARE = "arrays"
EA_NAMES = ["array.dtype", "array.offset", "array.order", "array.shape"]
# `ls` lines: name, attributes, size, date (smbclient's client.c display_finfo)
LS_ENTRY = re.compile(r"^  (.+?)\s+([A-Z]*)\s+(\d+)\s+\w{3} \w{3} +\d+ [\d:]+ \d{4}$")
MARK = "__mark_%d"
MARK_LINE = re.compile(r"^NT_STATUS_\w+ listing \\__mark_(\d+)$", re.M)


def smb_path(rel):
    return "\\" + rel.replace("/", "\\")


def quoted(path):
    return '"%s"' % path


def parse_recursive_ls(text):
    """{relpath: 'dir'|'file'} from `recurse; ls` output."""
    out, folder = {}, ""
    for line in text.splitlines():
        if line.startswith("\\"):
            folder = line[1:].replace("\\", "/")
            continue
        m = LS_ENTRY.match(line)
        if m and m.group(1) not in (".", ".."):
            rel = m.group(1) if folder == "" else folder + "/" + m.group(1)
            out[rel] = "dir" if "D" in m.group(2) else "file"
    return out


def snapshot(folder):
    """{relpath: sha256 or 'dir'} of everything under FOLDER."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), folder)] = "dir"
        for name in filenames:
            p = os.path.join(dirpath, name)
            with open(p, "rb") as f:
                out[os.path.relpath(p, folder)] = hashlib.sha256(f.read()).hexdigest()
    return out


class SmbShareTest(sharecorpus.ServedCorpusCase):
    make_server = staticmethod(lambda path: SmbServer({SHARE: path}))

    def smbclient(self, commands, **kw):
        return self.server.client(SHARE, commands, **kw)

    def test_listens_on_loopback_only(self):
        self.assertEqual(self.server.listening(), ["127.0.0.1:%d" % self.server.port])

    def test_listing_is_the_mounts_tree(self):
        r = self.smbclient("recurse; ls")
        self.assertEqual(r.returncode, 0, r.stdout)
        got = parse_recursive_ls(r.stdout)
        self.assertEqual(got, sharecorpus.served_tree(self.src.path), r.stdout)

    def test_every_view_reads_as_numpy_says(self):
        with tempfile.TemporaryDirectory(prefix="arrayfs-smbget-") as out:
            local = {f.rel: os.path.join(out, "f%04d" % i) for i, f in enumerate(self.files)}
            r = self.smbclient("; ".join("get %s %s" % (quoted(smb_path(f.rel)), local[f.rel])
                                         for f in self.files))
            self.assertEqual(r.returncode, 0, r.stdout)

            def check(f):
                f.check(mountlib.read(local[f.rel]))
            check_all(self, self.files, check, label=repr)
        # the kinds of view the share must have carried, so a corpus change
        # cannot quietly drop one
        names = {f.rel.rsplit("/", 1)[-1] for f in self.files}
        for view in ("data", "shape", "dtype", "header", "be_i4.npy", "be_i4.ra",
                     "test.ra", "test.npy", "big.npy", "notes.txt", "meta.json"):
            self.assertIn(view, names)

    def geteas(self, rels):
        """{rel: {EA name: bytes}} for each of RELS, in one smbclient run:
        a listing of a missing name marks where each answer starts."""
        cmds = []
        for i, rel in enumerate(rels):
            cmds += ["ls \\" + MARK % i, "geteas " + quoted(smb_path(rel))]
        r = self.smbclient("; ".join(cmds))
        parts = MARK_LINE.split(r.stdout)[1:]  # [index, text, index, text...]
        self.assertEqual([int(p) for p in parts[0::2]], list(range(len(rels))), r.stdout)
        return {rel: parse_eas(text) for rel, text in zip(rels, parts[1::2])}

    def test_array_xattrs_are_smb_eas(self):
        tree = sharecorpus.served_tree(self.src.path)
        arrays = sorted(rel for rel in tree
                        if os.path.exists(self.mp(rel, "data")))
        self.assertGreater(len(arrays), 8)
        rels = arrays + [a + "/data" for a in arrays]
        eas = self.geteas(rels)

        def check(rel):
            local = {n[len("user."):]: os.getxattr(self.mp(rel), n)
                     for n in os.listxattr(self.mp(rel))}
            self.assertEqual(sorted(eas[rel]), EA_NAMES)
            self.assertEqual(eas[rel], local)
            folder = rel[:-len("/data")] if rel.endswith("/data") else rel
            shape = mountlib.read(self.mp(folder, "shape")).rstrip(b"\n")
            self.assertEqual(eas[rel]["array.shape"], shape)
        check_all(self, rels, check)

    def test_other_files_have_no_eas(self):
        rels = [f.rel for f in self.files
                if not f.rel.endswith("/data") and not expect.is_zarr_chunk(f.rel)]
        rels += ["stored.npz", "sub"]
        eas = self.geteas(rels)
        check_all(self, rels, lambda rel: self.assertEqual(eas[rel], {}))

    def test_guests_and_unknown_users_read(self):
        want = mountlib.read(self.src.join("readme.txt"))
        for user in (None, "nosuchuser%secret"):
            with tempfile.TemporaryDirectory(prefix="arrayfs-smbget-") as out:
                got = os.path.join(out, "readme")
                r = self.smbclient("get readme.txt " + got, user=user)
                self.assertEqual(r.returncode, 0, r.stdout)
                self.assertEqual(mountlib.read(got), want, user)

    def test_writes_are_refused(self):
        before = snapshot(self.src.path)
        with tempfile.NamedTemporaryFile(prefix="arrayfs-smbput-") as local:
            local.write(b"new bytes\n")
            local.flush()
            writes = ["put %s new.txt" % local.name,
                      "put %s c_f4.npy\\data" % local.name,
                      "put %s readme.txt" % local.name,
                      "mkdir newdir",
                      "rmdir empty",
                      "del readme.txt",
                      "del c_f4.npy\\shape",
                      "rename readme.txt renamed.txt",
                      "rename c_f4.npy c_f4_moved.npy",
                      "setmode readme.txt +h"]

            def refused(cmd):
                out = self.smbclient(cmd).stdout
                self.assertRegex(out, r"NT_STATUS_(ACCESS_DENIED|MEDIA_WRITE_PROTECTED)", out)
            check_all(self, writes, refused)
        self.assertEqual(snapshot(self.src.path), before)
        r = self.smbclient("recurse; ls")
        self.assertEqual(parse_recursive_ls(r.stdout), sharecorpus.served_tree(self.src.path))


class WithoutAllowOtherTest(unittest.TestCase):
    """What allow_other is for: smbd reads as the guest account, and the
    kernel lets no one but the mounting user into a mount without it."""

    def test_guest_is_refused_without_allow_other(self):
        smb = sharecorpus.serve_corpus(self, lambda path: SmbServer({SHARE: path}))
        r = smb.client(SHARE, "ls")
        self.assertIn("NT_STATUS_ACCESS_DENIED", r.stdout)
        self.assertNotIn("readme.txt", r.stdout)
        smb.check_alive()


if __name__ == "__main__":
    mountlib.main()
