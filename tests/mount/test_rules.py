#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""One place for each rule, seen through a real mount:

- log lines said once are keyed by what they are about (kind, source
  version, index), so lines of different kinds never hide one another: an
  archive with a zip warning, a member whose .npy header is broken and a
  member that fails to open, at indexes whose old XOR keys collided, logs
  each exactly once however often it is looked up and read;
- a failure is answered with one errno wherever it is met (af_status.h's
  table): EIO for bytes that cannot be served, whether that is found when
  the file is opened or when it is read;
- which zip members are readable is the codec's rule: a member with flags
  bit 6 (strong encryption) is left out like one with bit 0."""
import errno
import os
import struct
import sys
import unittest
import zlib

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import mountlib  # noqa: E402
from mountlib import TempDir, npy_bytes, read, read_fd_to_end  # noqa: E402

STORED, DEFLATED, BZIP2 = 0, 8, 12
LOOKS = 5   # how often each name is looked up and read


def zip_bytes(members):
    """A zip archive of MEMBERS, written by hand so that every field can lie.
    Each member is a dict: name, data (the uncompressed bytes), and optional
    method (STORED), flags (0), stored (the bytes as stored: the data, or
    its raw deflate stream when DEFLATED) and usize (the uncompressed size
    the central directory claims)."""
    body, central = bytearray(), bytearray()
    for m in members:
        name = m["name"].encode()
        data = m["data"]
        method = m.get("method", STORED)
        if "stored" in m:
            stored = m["stored"]
        elif method == DEFLATED:
            z = zlib.compressobj(6, zlib.DEFLATED, -15)
            stored = z.compress(data) + z.flush()
        else:
            stored = data
        crc = zlib.crc32(data)
        usize = m.get("usize", len(data))
        flags = m.get("flags", 0)
        at = len(body)
        body += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, flags, method, 0, 0x21,
                            crc, len(stored), len(data), len(name), 0) + name + stored
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, flags, method,
                               0, 0x21, crc, len(stored), usize, len(name), 0, 0, 0, 0,
                               0, at) + name
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members),
                      len(central), len(body), 0)
    return bytes(body + central + end)


def good(i):
    return {"name": "a%d.npy" % i, "data": npy_bytes(np.arange(4 + i, dtype="<i4"))}


# Member indexes after the unsafe name is left out. The old keys were
# source ^ mix(w + 7) for zip warning w, ^ mix(j + 1) for a member whose
# header is broken and ^ mix(k + 3) for a member that failed to open:
# w = 0, j = 6 and k = 4 all gave source ^ mix(7).
K_OPEN, J_PARSE = 4, 6
BROKEN_NPY = b"\x93NUMPY\x01\x00\x10\x00{'descr': nope}\n"
STORED_SIZE_LIE = 16  # k4.bin claims this many bytes more than it stores


def collide_archive():
    members = [good(0), good(1),
               {"name": "../evil.npy", "data": npy_bytes(np.zeros(2))},  # warning 0
               good(2), good(3),
               {"name": "k4.bin", "data": b"k" * 100,  # fails to open: sizes disagree
                "usize": 100 + STORED_SIZE_LIE},
               good(5),
               {"name": "j6.npy", "data": BROKEN_NPY},  # broken .npy header
               # the codec's readable rule: flags bit 6 alone is encryption
               {"name": "enc7.npy", "data": npy_bytes(np.ones(3)), "flags": 0x40},
               {"name": "enc8.bin", "data": b"secret", "flags": 0x40},
               {"name": "bz9.npy", "data": b"x" * 10, "method": BZIP2}]
    return zip_bytes(members)


def lines_with(log, *words):
    return [ln for ln in log.splitlines() if all(w in ln for w in words)]


class RulesCase(unittest.TestCase):
    """A fresh source folder and mount per test: setUp writes self.files
    ({name: bytes}), mounts it as self.m; the test unmounts (exit 0) before
    reading the whole log."""
    files = {}

    def setUp(self):
        self.src = TempDir()
        self.addCleanup(self.src.close)
        self.src.write(self.files)
        self.m = mountlib.Mount(self.src.path)
        self.addCleanup(self.m.cleanup)
        self.m.start()

    def errno_of(self, fn, *args):
        """The errno FN(*ARGS) fails with, or None if it does not fail."""
        try:
            fn(*args)
        except OSError as e:
            return e.errno
        return None

    def log_after_umount(self):
        self.m.umount()
        return self.m.log()


class LogOnceTest(RulesCase):
    files = {"x.npz": collide_archive()}

    def test_lines_whose_old_keys_collided_are_each_said_once(self):
        top = self.m.path("x.npz")
        for _ in range(LOOKS):
            names = set(os.listdir(top))
            self.assertIn("k4.bin", names)
            self.assertIn("j6.npy", names)  # a plain file: its header is broken
            self.assertEqual(self.errno_of(read, os.path.join(top, "k4.bin")), errno.EIO)
            self.assertEqual(read(os.path.join(top, "j6.npy")), BROKEN_NPY)
            self.assertEqual(read(os.path.join(top, "a5.npy", "data")),
                             np.arange(9, dtype="<i4").tobytes())
        log = self.log_after_umount()
        said = {
            "the zip warning": lines_with(log, "x.npz", "evil.npy", "left out"),
            "the broken header of member 6": lines_with(log, "cannot read x.npz/j6.npy"),
            "the failed open of member 4": lines_with(log, "cannot read", "k4.bin"),
        }
        wrong = {what: len(ls) for what, ls in said.items() if len(ls) != 1}
        self.assertEqual(wrong, {}, "lines not said exactly once:\n" + log)


class ReadableMemberTest(RulesCase):
    files = {"x.npz": collide_archive()}

    def test_flags_bit_6_is_encryption_whatever_the_member_is(self):
        top = self.m.path("x.npz")
        names = set(os.listdir(top))
        for name in ("enc7.npy", "enc8.bin", "bz9.npy"):
            with self.subTest(name=name):
                self.assertNotIn(name, names, "an unreadable member is listed")
                self.assertEqual(self.errno_of(os.stat, os.path.join(top, name)),
                                 errno.ENOENT)
        log = self.log_after_umount()
        self.assertEqual(len(lines_with(log, "cannot read x.npz/enc7.npy", "encrypted")), 1,
                         log)


def npy_of(n):
    return npy_bytes(np.arange(n, dtype="<i8"))


def corrupt_deflated(data):
    """DATA's raw deflate stream with bytes in its middle flipped."""
    z = zlib.compressobj(6, zlib.DEFLATED, -15)
    stream = bytearray(z.compress(data) + z.flush())
    mid = len(stream) // 2
    stream[mid:mid + 64] = bytes(b ^ 0xA5 for b in stream[mid:mid + 64])
    return bytes(stream)


TEXT = b"".join(b"line %06d of a member\n" % i for i in range(20000))
MIB = 1 << 20


class SameErrnoTest(RulesCase):
    """The same failure gets the same errno whether it is met when a file's
    handle is made (at open; on kernels with no-open, at its first read) or
    at a later read of a handle made before; each is logged once."""
    files = {"r.npy": npy_of(2 * MIB), "s.npy": npy_of(2 * MIB),
             "y.npz": zip_bytes([
                 {"name": "k.bin", "data": b"k" * 100, "usize": 100 + STORED_SIZE_LIE},
                 {"name": "c.bin", "data": TEXT, "method": DEFLATED,
                  "stored": corrupt_deflated(TEXT)}])}

    def rewrite(self, name):
        """Rewrite source NAME in place: same size, new bytes and mtime."""
        path = self.src.join(name)
        st = os.stat(path)
        with open(path, "r+b") as f:
            f.seek(-8, os.SEEK_END)
            f.write(b"\xff" * 8)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))

    def test_a_changed_source_is_eio_at_open_and_at_read(self):
        # at read: r.npy's handle was made, by a read, before the change
        fd = os.open(self.m.path("r.npy", "data"), os.O_RDONLY)
        try:
            self.assertEqual(len(os.pread(fd, 4096, 0)), 4096)
            self.rewrite("r.npy")
            at_read = self.errno_of(os.pread, fd, 4096, 12 * MIB)
        finally:
            os.close(fd)
        # at open: s.npy/data was listed (readdirplus: its entry, and no
        # open) before the change, its handle is made after it; a lookup
        # of data of its own would have opened it (the handle made then)
        os.listdir(self.m.path("s.npy"))
        fd = os.open(self.m.path("s.npy", "data"), os.O_RDONLY)
        try:
            self.rewrite("s.npy")
            at_open = [self.errno_of(os.pread, fd, 4096, 0) for _ in range(LOOKS)]
        finally:
            os.close(fd)
        self.assertEqual(at_read, errno.EIO)
        self.assertEqual(at_open, [errno.EIO] * LOOKS)
        log = self.log_after_umount()
        said = {"r.npy": lines_with(log, "cannot read r.npy/data", "changed while open"),
                "s.npy": lines_with(log, "cannot read s.npy/data", "changed after it was")}
        self.assertEqual({k: len(v) for k, v in said.items()}, {"r.npy": 1, "s.npy": 1},
                         log)

    def test_a_broken_member_is_eio_at_open_and_at_read(self):
        top = self.m.path("y.npz")
        # at open: k.bin's sizes disagree, af_member_open refuses it
        at_open = [self.errno_of(read, os.path.join(top, "k.bin")) for _ in range(LOOKS)]
        # at read: c.bin opens, and its stream fails part way
        fd = os.open(os.path.join(top, "c.bin"), os.O_RDONLY)
        try:
            got, at_read = read_fd_to_end(fd, 0, 65536)
        finally:
            os.close(fd)
        self.assertEqual(at_open, [errno.EIO] * LOOKS)
        # (bytes before the failure may be garbage: deflate finds a bad
        # stream only where it stops decoding, or at its CRC-32)
        self.assertEqual(at_read, errno.EIO)
        self.assertLess(len(got), len(TEXT))
        log = self.log_after_umount()
        self.assertEqual(len(lines_with(log, "cannot read y.npz/k.bin")), 1, log)
        self.assertEqual(len(lines_with(log, "cannot read y.npz/c.bin")), 1, log)


if __name__ == "__main__":
    mountlib.main()
