#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Extended attributes: array folders and their `data` carry
user.array.shape, .dtype, .order and .offset (the data's offset in the
source file; for a deflated npz member, in the member), listed by
listxattr and shown by `getfattr -d`; other user. names are ENODATA,
names of other namespaces (SELinux labels, POSIX ACLs) EOPNOTSUPP, so that
`ls -l` stops probing them after the first file; other files have none,
and nothing can be set."""
import errno
import io
import os
import re
import shutil
import subprocess
import sys
import zipfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import mountlib  # noqa: E402
from mountlib import MountCase, TempDir  # noqa: E402

NAMES = ["user.array.dtype", "user.array.offset", "user.array.order", "user.array.shape"]


def npy_data_offset(blob):
    """numpy's own idea of where the data starts in .npy bytes."""
    f = io.BytesIO(blob)
    version = np.lib.format.read_magic(f)
    np.lib.format._read_array_header(f, version)
    return f.tell()


def make_source():
    src = TempDir()
    np.save(src.join("c.npy"), np.arange(12, dtype=">i4").reshape(3, 4))
    np.save(src.join("f.npy"), np.asfortranarray(np.zeros((2, 5), dtype="<f8")))
    shutil.copyfile(mountlib.reference("test.ra"), src.join("t.ra"))
    np.savez(src.join("s.npz"), x=np.ones((4, 2), dtype="u1"))
    np.savez_compressed(src.join("d.npz"), y=np.arange(5, dtype="<u2"))
    with open(src.join("plain.txt"), "w") as f:
        f.write("text\n")
    return src


class XattrTest(MountCase):
    make_source = staticmethod(make_source)

    def attrs(self, *parts):
        p = self.mp(*parts)
        return {n: os.getxattr(p, n).decode() for n in os.listxattr(p)}

    def expect_both(self, folder, want):
        """The array folder and its data file answer WANT."""
        for parts in ((folder,), (folder, "data")):
            self.assertEqual(sorted(os.listxattr(self.mp(*parts))), NAMES, parts)
            self.assertEqual(self.attrs(*parts), want, parts)

    def test_c_order_npy(self):
        blob = open(self.src.join("c.npy"), "rb").read()
        self.expect_both("c.npy", {"user.array.shape": "3 4", "user.array.dtype": ">i4",
                                   "user.array.order": "C",
                                   "user.array.offset": str(npy_data_offset(blob))})

    def test_fortran_order_npy(self):
        blob = open(self.src.join("f.npy"), "rb").read()
        self.expect_both("f.npy", {"user.array.shape": "2 5", "user.array.dtype": "<f8",
                                   "user.array.order": "F",
                                   "user.array.offset": str(npy_data_offset(blob))})

    def test_ra_dims_and_header_offset(self):
        # test.ra: complex64 dims (3, 4); data after 48 + 8 x ndims bytes
        self.expect_both("t.ra", {"user.array.shape": "3 4", "user.array.dtype": "<c8",
                                  "user.array.order": "F", "user.array.offset": "64"})

    def test_stored_npz_member_offset_is_in_the_archive(self):
        path = self.src.join("s.npz")
        with zipfile.ZipFile(path) as z:
            info = z.getinfo("x.npy")
            member = z.read("x.npy")
        with open(path, "rb") as f:
            f.seek(info.header_offset)
            local = f.read(30)
        name_len = int.from_bytes(local[26:28], "little")
        extra_len = int.from_bytes(local[28:30], "little")
        start = info.header_offset + 30 + name_len + extra_len
        want = start + npy_data_offset(member)
        self.expect_both(os.path.join("s.npz", "x.npy"),
                         {"user.array.shape": "4 2", "user.array.dtype": "|u1",
                          "user.array.order": "C", "user.array.offset": str(want)})

    def test_deflated_npz_member_offset_is_in_the_member(self):
        with zipfile.ZipFile(self.src.join("d.npz")) as z:
            member = z.read("y.npy")
        self.expect_both(os.path.join("d.npz", "y.npy"),
                         {"user.array.shape": "5", "user.array.dtype": "<u2",
                          "user.array.order": "C",
                          "user.array.offset": str(npy_data_offset(member))})

    def test_getfattr_dump_lists_them(self):
        out = subprocess.run(["getfattr", "-d", self.mp("c.npy", "data")],
                             capture_output=True, text=True, check=True).stdout
        for line in ['user.array.shape="3 4"', 'user.array.dtype=">i4"', 'user.array.order="C"']:
            self.assertIn(line, out)

    def test_unknown_names_are_enodata(self):
        for parts in (("c.npy",), ("c.npy", "data")):
            with self.assertRaises(OSError) as cm:
                os.getxattr(self.mp(*parts), "user.array.nonsense")
            self.assertEqual(cm.exception.errno, errno.ENODATA)

    def test_other_namespaces_are_not_supported(self):
        for parts in (("c.npy",), ("c.npy", "data"), ("plain.txt",), ("s.npz",)):
            for name in ("security.selinux", "system.posix_acl_access",
                         "system.posix_acl_default", "trusted.x"):
                with self.assertRaises(OSError) as cm:
                    os.getxattr(self.mp(*parts), name)
                self.assertEqual(cm.exception.errno, errno.EOPNOTSUPP, (parts, name))

    def test_other_entries_have_none(self):
        for parts in (("c.npy", "shape"), ("c.npy", "c.npy"), ("plain.txt",), ("s.npz",)):
            self.assertEqual(os.listxattr(self.mp(*parts)), [], parts)

    def test_setting_or_removing_fails_with_erofs(self):
        for call in (lambda p: os.setxattr(p, "user.x", b"1"),
                     lambda p: os.removexattr(p, "user.array.shape")):
            with self.assertRaises(OSError) as cm:
                call(self.mp("c.npy", "data"))
            self.assertEqual(cm.exception.errno, errno.EROFS)


PROBED = 40   # arrays `ls -l` lists in the probe test


def make_probed_source():
    src = TempDir()
    for i in range(PROBED):
        np.save(src.join("a%03d.npy" % i), np.full((4, 4), i, dtype="u1"))
    return src


class LsProbeTest(MountCase):
    """`ls -l` asks each file for its SELinux label and POSIX ACLs; each
    question is a round trip to the daemon unless ls stops asking: it does
    once a device answers EOPNOTSUPP. The request count comes from the
    daemon's debug log (libfuse's "opcode: NAME" line per request)."""
    make_source = staticmethod(make_probed_source)
    mount_args = ("-d",)

    def test_ls_l_probes_once_not_once_a_file(self):
        since = len(self.m.log())
        out = subprocess.run(["ls", "-l", self.mp()], capture_output=True,
                             text=True, check=True).stdout
        self.assertEqual(len([ln for ln in out.splitlines() if ".npy" in ln]), PROBED)
        asked = re.findall(r"opcode: GETXATTR \(", self.m.log()[since:])
        # one label and one ACL probe before ls stops (three with a
        # folder's default ACL), against 3 x PROBED with ENODATA
        self.assertLessEqual(len(asked), 3)

    def test_user_array_names_still_answer(self):
        self.assertEqual(os.getxattr(self.mp("a007.npy"), "user.array.shape"), b"4 4")


if __name__ == "__main__":
    mountlib.main()
