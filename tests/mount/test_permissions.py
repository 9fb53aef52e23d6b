#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Permissions through a mount made with -o allow_other, checked as the
user `nobody` (setpriv drops to uid/gid 65534 in a child process): a source
file of mode 0600 owned by root cannot be read through the mount, in any of
its forms (the plain file, an array directory's data, views and text
files); a 0644 one can, byte for byte; nothing is writable. Without
allow_other, nobody cannot even look. No user is created."""
import io
import json
import os
import pwd
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import numpy as np  # noqa: E402

import mountlib  # noqa: E402
from mountlib import MountCase, TempDir, read  # noqa: E402

OTHER = "nobody"

# Run as OTHER: for each path, try to read it and to write to it; print
# {path: {"read": bytes hex digest or errno name, "write": errno name or "ok"}}.
PROBE = r"""
import errno, hashlib, json, os, sys
out = {}
for p in json.loads(sys.stdin.read()):
    r = {}
    try:
        with open(p, "rb") as f:
            r["read"] = hashlib.sha256(f.read()).hexdigest()
    except OSError as e:
        r["read"] = errno.errorcode[e.errno]
    try:
        fd = os.open(p, os.O_WRONLY)
        os.close(fd)
        r["write"] = "ok"
    except OSError as e:
        r["write"] = errno.errorcode[e.errno]
    for name, fn in (("create", lambda: os.open(os.path.join(os.path.dirname(p), "new"),
                                                 os.O_WRONLY | os.O_CREAT, 0o644)),
                     ("mkdir", lambda: os.mkdir(p + ".d")),
                     ("unlink", lambda: os.unlink(p)),
                     ("chmod", lambda: os.chmod(p, 0o777)),
                     ("rename", lambda: os.rename(p, p + ".moved"))):
        try:
            fn()
            r[name] = "ok"
        except OSError as e:
            r[name] = errno.errorcode[e.errno]
    out[p] = r
print(json.dumps(out))
"""


def npy_bytes(arr):
    f = io.BytesIO()
    np.save(f, arr)
    return f.getvalue()


def sha(b):
    import hashlib
    return hashlib.sha256(b).hexdigest()


def as_other(paths):
    """PROBE's answer for PATHS, run as OTHER."""
    pw = pwd.getpwnam(OTHER)
    r = subprocess.run(["setpriv", "--reuid=%d" % pw.pw_uid, "--regid=%d" % pw.pw_gid,
                        "--clear-groups", "--", sys.executable, "-c", PROBE],
                       input=json.dumps(paths), capture_output=True, text=True, timeout=60,
                       cwd="/")
    if r.returncode != 0:
        raise AssertionError("probe as %s failed: %s" % (OTHER, r.stderr))
    return json.loads(r.stdout)


ARR = np.arange(24, dtype="<i4").reshape(4, 6)


def make_source():
    src = TempDir()
    os.chmod(src.path, 0o755)
    for mode in ("0600", "0644"):
        m = int(mode, 8)
        files = {"a%s.npy" % mode: npy_bytes(ARR),
                 "t%s.txt" % mode: b"text %s\n" % mode.encode()}
        for name, buf in files.items():
            with open(src.join(name), "wb") as f:
                f.write(buf)
            os.chmod(src.join(name), m)
        z = src.join("z%s.npz" % mode)
        np.savez(z, k=ARR)
        os.chmod(z, m)
    os.mkdir(src.join("private"), 0o700)
    with open(src.join("private", "p.npy"), "wb") as f:
        f.write(npy_bytes(ARR))
    os.chmod(src.join("private", "p.npy"), 0o644)
    return src


class AllowOtherTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.src = make_source()
        cls.m = mountlib.Mount(cls.src.path, None, ["-o", "allow_other"])
        try:
            cls.m.start()
        except BaseException:
            cls.m.cleanup()
            cls.src.close()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            cls.m.umount()
        finally:
            cls.src.close()

    def mp(self, *parts):
        return self.m.path(*parts)

    def forms(self, mode):
        """{mount path: expected bytes} of every readable form of the
        sources of MODE."""
        a, z = "a%s.npy" % mode, "z%s.npz" % mode
        base = a[:-4]
        out = {self.mp("t%s.txt" % mode): ("text %s\n" % mode).encode()}
        for d, b in ((self.mp(a), base), (self.mp(z, "k.npy"), "k")):
            out[os.path.join(d, "data")] = ARR.tobytes()
            out[os.path.join(d, "shape")] = b"4 6\n"
            out[os.path.join(d, "dtype")] = b"<i4\n"
            out[os.path.join(d, "header")] = None  # any bytes
            out[os.path.join(d, b + ".npy")] = npy_bytes(ARR)  # np.savez writes the same
            out[os.path.join(d, b + ".ra")] = None
        return out

    def test_root_0600_sources_are_unreadable_by_another_user_in_every_form(self):
        forms = self.forms("0600")
        got = as_other(sorted(forms))
        bad = ["%s: %s" % (p, got[p]["read"]) for p in sorted(forms)
               if got[p]["read"] not in ("EACCES", "EPERM")]
        self.assertEqual(bad, [], "readable by %s:\n  " % OTHER + "\n  ".join(bad))
        # root still reads them (so the denial is about permissions, not a broken mount)
        self.assertEqual(read(self.mp("a0600.npy", "data")), ARR.tobytes())
        self.assertEqual(read(self.mp("z0600.npz", "k.npy", "data")), ARR.tobytes())

    def test_0644_sources_are_readable_by_another_user_byte_for_byte(self):
        forms = self.forms("0644")
        got = as_other(sorted(forms))
        bad = []
        for p, want in sorted(forms.items()):
            if want is None:
                want = read(p)  # as root: the view's bytes are judged by other suites
            if got[p]["read"] != sha(want):
                bad.append("%s: %s" % (p, got[p]["read"]))
        self.assertEqual(bad, [], "\n  ".join(bad))

    def test_a_0700_source_folder_keeps_other_users_out(self):
        got = as_other([self.mp("private", "p.npy", "data")])
        self.assertIn(got[self.mp("private", "p.npy", "data")]["read"], ("EACCES", "EPERM"))

    def test_nothing_is_writable_by_another_user(self):
        paths = sorted(self.forms("0644")) + sorted(self.forms("0600"))
        got = as_other(paths)
        bad = []
        for p in paths:
            for op in ("write", "create", "mkdir", "unlink", "chmod", "rename"):
                if got[p][op] not in ("EROFS", "EACCES", "EPERM"):
                    bad.append("%s %s: %s" % (op, p, got[p][op]))
        self.assertEqual(bad, [], "\n  ".join(bad))
        self.m.check_alive()
        self.assertEqual(read(self.mp("a0644.npy", "data")), ARR.tobytes())


class WithoutAllowOtherTest(unittest.TestCase):
    def test_another_user_cannot_look_into_a_mount_without_allow_other(self):
        src = make_source()
        self.addCleanup(src.close)
        with mountlib.mount(src.path) as m:
            p = m.path("a0644.npy", "data")
            got = as_other([p])
            self.assertIn(got[p]["read"], ("EACCES", "EPERM"))
            self.assertEqual(read(p), ARR.tobytes())


def make_owned_source():
    src = TempDir()
    np.save(src.join("a.npy"), np.arange(6, dtype="<i2"))
    np.savez(src.join("z.npz"), k=np.ones(3))
    with open(src.join("t.txt"), "w") as f:
        f.write("x\n")
    os.mkdir(src.join("sub"))
    return src


class OwnerOverrideTest(MountCase):
    """-o uid=N,gid=M shows every entry as owned by N:M (the mount.fuse3
    form, as in an fstab line); without them entries keep the source's."""
    make_source = staticmethod(make_owned_source)
    mount_args = ("-o", "uid=12345,gid=54321")

    def test_every_kind_of_entry_has_the_given_owner(self):
        for parts in ((), ("a.npy",), ("a.npy", "data"), ("a.npy", "a.ra"),
                      ("a.npy", "shape"), ("z.npz",), ("z.npz", "k.npy"),
                      ("z.npz", "k.npy", "data"), ("t.txt",), ("sub",)):
            st = os.stat(self.mp(*parts))
            self.assertEqual((st.st_uid, st.st_gid), (12345, 54321), parts)

    def test_contents_are_unchanged(self):
        self.assertEqual(read(self.mp("a.npy", "data")),
                         np.arange(6, dtype="<i2").tobytes())


if __name__ == "__main__":
    mountlib.main()
