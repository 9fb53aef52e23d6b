#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Hostile input: zip bombs, a huge declared size, a nested npz, a million
tiny members, headers declaring huge shapes / ndims / header lengths, member
names with "..", a leading "/", NUL, control bytes or invalid UTF-8, symlink
loops, and reads of huge views. Nothing crashes, nothing hangs, memory stays
bounded, a bad entry never hides a good one, and what is served is right.

The archives are written here by a small hand-made zip writer (ZipWriter),
since Python's zipfile refuses to write most of them."""
import errno
import os
import struct
import sys
import time
import unittest
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import numpy as np  # noqa: E402

import expect  # noqa: E402
import mountlib  # noqa: E402
from mountlib import TempDir, npy_bytes, read, walk  # noqa: E402
from procinfo import rss_kib, sanitized, sanitizer  # noqa: E402

# Generating and listing one million members takes about a minute under
# ASan on two cores; AF_HOSTILE_MEMBERS lowers it for a quick run.
MEMBERS = int(os.environ.get("AF_HOSTILE_MEMBERS", "1000000"))
LIST_DEADLINE = 300.0   # seconds to list every member
BYTES_PER_MEMBER = 1024  # daemon RSS allowed per listed member (ASan: x3)

# Under AddressSanitizer freed memory waits in a quarantine (256 MiB by
# default) before reuse, which would hide the bound we measure: keep it small.
if os.environ.get("ASAN_OPTIONS") is not None:
    os.environ["ASAN_OPTIONS"] += ":quarantine_size_mb=16"


def raw_deflate(buf, level=6):
    c = zlib.compressobj(level, zlib.DEFLATED, -15)
    return c.compress(buf) + c.flush()


class ZipWriter:
    """Writes a zip archive member by member, lying where told to.

    add(name, data, method=0|8, usize=None, csize=None, crc=None, flags=0):
    NAME is bytes (written as is); DATA the bytes stored (already deflated
    for method 8); USIZE / CRC override what the headers declare. Sizes or
    that do not fit 32 bits go to a zip64 extra field, and more than 65535
    members get zip64 end records, as CPython's zipfile does. Archives
    stay below 4 GiB (offsets are 32-bit)."""

    def __init__(self, path):
        self.f = open(path, "wb", buffering=1 << 20)
        self.central = []
        self.count = 0
        self.pos = 0

    def _write(self, b):
        self.f.write(b)
        self.pos += len(b)

    def add(self, name, data, method=0, usize=None, crc=None, flags=0, plain=None):
        usize = len(data) if usize is None else usize
        if crc is None:
            crc = zlib.crc32(plain if plain is not None else data) & 0xFFFFFFFF
        csize, off = len(data), self.pos
        big = usize >= 0xFFFFFFFF or csize >= 0xFFFFFFFF
        extra = struct.pack("<HHQQ", 1, 16, usize, csize) if big else b""
        u32, c32 = (0xFFFFFFFF, 0xFFFFFFFF) if big else (usize, csize)
        self._write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 45 if big else 20, flags,
                                method, 0, 0x21, crc, c32, u32, len(name), len(extra))
                    + name + extra)
        self._write(data)
        self.central.append(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0x031E,
                                        45 if big else 20, flags, method, 0, 0x21, crc,
                                        c32, u32, len(name), len(extra), 0, 0, 0,
                                        0o100644 << 16, off) + name + extra)
        self.count += 1

    def close(self):
        cd_off = self.pos
        for c in self.central:
            self._write(c)
        cd_size = self.pos - cd_off
        if self.count > 0xFFFF:
            z64 = self.pos
            self._write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0,
                                    self.count, self.count, cd_size, cd_off))
            self._write(struct.pack("<IIQI", 0x07064B50, 0, z64, 1))
        n16 = min(self.count, 0xFFFF)
        self._write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n16, n16, cd_size,
                                cd_off, 0))
        self.f.close()


def write_many_members(path, n):
    """N stored empty members dNNNN/mNNNNNN.bin, written fast: the headers
    differ only in the name, so each is packed from a template."""
    per_dir = 1000
    lh, cd, off = bytearray(), bytearray(), 0
    with open(path, "wb") as f:
        for i in range(n):
            name = b"d%04d/m%07d.bin" % (i // per_dir, i)
            local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0x21, 0, 0, 0,
                                len(name), 0) + name
            lh += local
            cd += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0x031E, 20, 0, 0, 0, 0x21,
                              0, 0, 0, len(name), 0, 0, 0, 0, 0o100644 << 16, off) + name
            off += len(local)
            if len(lh) > (8 << 20):
                f.write(lh)
                lh = bytearray()
        f.write(lh)
        f.write(cd)
        z64 = off + len(cd)
        f.write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, n, n, len(cd), off))
        f.write(struct.pack("<IIQI", 0x07064B50, 0, z64, 1))
        f.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF,
                            min(len(cd), 0xFFFFFFFF), min(off, 0xFFFFFFFF), 0))


def npy_v1(header_text, data=b""):
    h = header_text.encode("latin1")
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + data


def npy_v2(header_text, data=b"", hlen=None):
    h = header_text.encode("latin1")
    return (b"\x93NUMPY\x02\x00" + struct.pack("<I", len(h) if hlen is None else hlen)
            + h + data)


def ra_raw(flags, eltype, elbyte, size, dims, data=b"", ndims=None):
    nd = len(dims) if ndims is None else ndims
    return (struct.pack("<6Q", 0x7961727261776172, flags, eltype, elbyte, size, nd)
            + b"".join(struct.pack("<Q", d) for d in dims) + data)


GOOD = np.arange(1000, dtype="<f8").reshape(10, 100)


def hostile_headers():
    """{file name: bytes} of array files no reader may accept as arrays."""
    big = "{'descr': '<f8', 'fortran_order': False, 'shape': (%s), }"
    return {
        "overflow-shape.npy": npy_v1(big % "4294967296, 4294967296") + b"\0" * 64,
        "overflow-3d.npy": npy_v1(big % "2097152, 2097152, 4194304") + b"\0" * 64,
        "huge-shape.npy": npy_v1(big % "1000000000000,") + b"\0" * 64,
        "many-dims.npy": npy_v2(big % ("1, " * 100000)) + b"\0" * 8,
        "many-dims-overflow.npy": npy_v2(big % ("2, " * 100000)) + b"\0" * 8,
        "negative-dim.npy": npy_v1(big % "-1, 5") + b"\0" * 64,
        "float-dim.npy": npy_v1(big % "2.5,") + b"\0" * 64,
        "deep-nesting.npy": npy_v1("{'descr': " + "[" * 5000 + "]" * 5000 +
                                   ", 'fortran_order': False, 'shape': (1,), }"),
        "header-len-past-eof.npy": npy_v2("{'descr': '<f8', ", hlen=0xFFFFFFF0),
        "header-len-max-v1.npy": b"\x93NUMPY\x01\x00\xff\xff{'descr'",
        "huge-itemsize.npy": npy_v1("{'descr': '|V18446744073709551615', "
                                    "'fortran_order': False, 'shape': (2,), }"),
        "huge-string.npy": npy_v1("{'descr': '<U4611686018427387904', "
                                  "'fortran_order': False, 'shape': (1,), }"),
        "huge-subarray.npy": npy_v1("{'descr': [('a', '<f8', (4294967296, 4294967296))], "
                                    "'fortran_order': False, 'shape': (1,), }"),
        "truncated-data.npy": npy_bytes(GOOD)[:-1],
        "ra-huge-ndims.ra": ra_raw(0, 3, 8, 8, [1], b"\0" * 8, ndims=1 << 60),
        "ra-dims-overflow.ra": ra_raw(0, 3, 8, 0, [1 << 32, 1 << 32, 1 << 8]),
        "ra-size-too-big.ra": ra_raw(0, 3, 8, 1 << 62, [4], b"\0" * 32),
        "ra-elbyte-huge.ra": ra_raw(0, 0, 1 << 63, 0, [2]),
        "ra-lz4-bomb.ra": ra_raw(2, 2, 1, 10, [1 << 40], b"\x1f\x00\x01\x00" + b"\0" * 6),
    }


class HostileHeadersTest(mountlib.MountCase):
    """Every hostile header is a plain file with the source's bytes, and the
    good array beside them is an array directory."""

    @classmethod
    def make_source(cls):
        cls.tmp = TempDir()
        cls.files = hostile_headers()
        cls.tmp.write(cls.files)
        cls.tmp.write({"good.npy": npy_bytes(GOOD)})
        return cls.tmp  # MountCase mounts it and removes it at the end

    def test_hostile_headers_are_plain_files_with_the_source_bytes(self):
        t0 = time.monotonic()
        names = set(os.listdir(self.m.mountpoint))
        self.assertEqual(names, set(self.files) | {"good.npy"}, "an entry is missing")

        def check(name):
            p = self.mp(name)
            if not os.path.isfile(p):
                raise AssertionError("shown as %s, not a plain file" %
                                     ("a folder" if os.path.isdir(p) else "something else"))
            expect.assert_bytes(read(p), self.files[name], name)
        mountlib.check_all(self, sorted(self.files), check)
        print("\n%d hostile headers judged in %.1f s" % (len(self.files),
                                                          time.monotonic() - t0),
              file=sys.stderr)

    def test_good_array_beside_them_is_served(self):
        self.assertEqual(read(self.mp("good.npy", "data")), GOOD.tobytes())
        self.assertEqual(read(self.mp("good.npy", "shape")), b"10 100\n")

    def test_broken_files_are_logged(self):
        for name in os.listdir(self.m.mountpoint):  # each file is judged on lookup
            os.lstat(self.mp(name))
        log = self.m.log()
        for name in ("overflow-shape.npy", "header-len-past-eof.npy", "ra-huge-ndims.ra"):
            self.assertIn(name, log, "no log line names " + name)


class BigHeadersTest(unittest.TestCase):
    """Headers that are really that long: over the parser's 16 MiB limit, a
    plain file; a 200,000-field structured dtype (a 3.4 MB header), an array
    read in bounded time."""

    def test_giant_and_wide_headers_are_bounded(self):
        tmp = TempDir()
        self.addCleanup(tmp.close)
        data = np.arange(10, dtype="<f8").tobytes()
        giant = npy_v2("{'descr': '<f8', 'fortran_order': False, 'shape': (10,), }" +
                       " " * (16 << 20) + "\n", data)
        descr = "[" + ", ".join("('f%d', '<i4')" % i for i in range(200000)) + "]"
        wide = npy_v2("{'descr': %s, 'fortran_order': False, 'shape': (2,), }\n" % descr,
                      bytes(range(256)) * 6250)
        for name, buf in (("giant.npy", giant), ("wide.npy", wide)):
            with open(tmp.join(name), "wb") as f:
                f.write(buf)
        with mountlib.mount(tmp.path) as m:
            rss0 = rss_kib(m.proc.pid)
            t0 = time.monotonic()
            self.assertTrue(os.path.isfile(m.path("giant.npy")))
            self.assertEqual(read(m.path("giant.npy")), giant)
            self.assertEqual(read(m.path("wide.npy", "dtype")), (descr + "\n").encode())
            self.assertEqual(read(m.path("wide.npy", "shape")), b"2\n")
            self.assertEqual(read(m.path("wide.npy", "data")), bytes(range(256)) * 6250)
            secs = time.monotonic() - t0
            grew = rss_kib(m.proc.pid) - rss0
            print("\nbig headers: %.1f s, RSS +%d KiB" % (secs, grew), file=sys.stderr)
            self.assertLess(grew, 256 * 1024)


# -- zip bombs and lies in zip headers ----------------------------------------
class ZipBombTest(mountlib.MountCase):
    """Archives holding one or more lying members beside good ones."""

    @classmethod
    def make_source(cls):
        cls.tmp = TempDir()
        good = npy_bytes(GOOD)
        cls.good = good
        small = npy_bytes(np.arange(10, dtype="<i4"))
        cls.small = small
        bomb_plain = small + b"\0" * (200 << 20)  # 200 MiB more than declared
        inner = cls.tmp.join("inner.npz")
        np.savez(inner, x=np.arange(5))
        cls.inner_bytes = read(inner)
        os.unlink(inner)

        def archive(name, lies):
            z = ZipWriter(cls.tmp.join(name))
            z.add(b"good.npy", raw_deflate(good), method=8, usize=len(good), plain=good)
            for args, kw in lies:
                z.add(*args, **kw)
            z.add(b"good_stored.npy", good)
            z.close()

        bomb = raw_deflate(bomb_plain, 9)
        archive("bomb.npz", [((b"bomb.npy", bomb), dict(method=8, usize=len(small),
                                                         plain=small))])
        archive("bomb-crc.npz", [((b"bomb.npy", bomb), dict(method=8, usize=len(small),
                                                             plain=bomb_plain))])
        # a stream that ends before its declared size
        archive("short-stream.npz", [((b"short.npy", raw_deflate(small)),
                                      dict(method=8, usize=len(small) + 1000, plain=small))])
        archive("huge-declared.npz", [
            ((b"huge.npy", raw_deflate(small)), dict(method=8, usize=1 << 40, plain=small)),
            ((b"huge_stored.npy", small), dict(method=0, usize=1 << 40)),
        ])
        archive("bad-method.npz", [((b"lzma.npy", small), dict(method=14))])
        archive("garbage-stream.npz", [((b"garbage.npy", os.urandom(5000)),
                                        dict(method=8, usize=100000, plain=b""))])
        archive("nested.npz", [((b"inner.npz", cls.inner_bytes), {}),
                               ((b"inner_deflated.npz", raw_deflate(cls.inner_bytes)),
                                dict(method=8, usize=len(cls.inner_bytes),
                                     plain=cls.inner_bytes))])
        return cls.tmp  # MountCase mounts it and removes it at the end

    def assert_good_members(self, archive):
        for key in ("good", "good_stored"):
            self.assertEqual(read(self.mp(archive, key + ".npy", "data")), GOOD.tobytes(),
                             "%s/%s.npy hidden or wrong" % (archive, key))

    def read_or_eio(self, path):
        """The bytes of PATH, or None when a read fails with EIO."""
        try:
            return read(path)
        except OSError as e:
            self.assertEqual(e.errno, errno.EIO, "%s: %s" % (path, e))
            return None

    def member_bytes(self, archive, key):
        """What a lying member shows: None if left out, else ('dir', data or
        None on EIO) or ('file', bytes or None)."""
        p = self.mp(archive, key + ".npy")
        if not os.path.lexists(p):
            return None
        if os.path.isdir(p):
            return "dir", self.read_or_eio(os.path.join(p, "data"))
        return "file", self.read_or_eio(p)

    def test_deflate_bomb_is_bounded_and_good_members_stay(self):
        pid = self.m.proc.pid
        rss0 = rss_kib(pid)
        t0 = time.monotonic()
        for archive in ("bomb.npz", "bomb-crc.npz"):
            with self.subTest(archive=archive):
                self.assert_good_members(archive)
                got = self.member_bytes(archive, "bomb")
                # never more than the declared bytes; if served, the right ones
                if got is not None and got[1] is not None:
                    if got[0] == "dir":
                        self.assertEqual(got[1], np.arange(10, dtype="<i4").tobytes())
                    else:
                        self.assertEqual(got[1], self.small)
        grew = rss_kib(pid) - rss0
        print("\nbomb archives: RSS +%d KiB, %.1f s" % (grew, time.monotonic() - t0),
              file=sys.stderr)
        self.assertLess(grew, 64 * 1024, "a 200 MiB bomb grew the daemon by %d KiB" % grew)

    def test_stream_shorter_than_declared_never_serves_made_up_bytes(self):
        self.assert_good_members("short-stream.npz")
        got = self.member_bytes("short-stream.npz", "short")
        if got is not None and got[1] is not None:
            self.fail("a member whose stream ends 1000 bytes early was served as %s of %d "
                      "bytes" % (got[0], len(got[1])))

    def test_huge_declared_size_allocates_nothing_and_good_members_stay(self):
        pid = self.m.proc.pid
        rss0 = rss_kib(pid)
        self.assert_good_members("huge-declared.npz")
        for key in ("huge", "huge_stored"):
            p = self.mp("huge-declared.npz", key + ".npy")
            if os.path.lexists(p):  # if shown, reads fail cleanly
                target = os.path.join(p, "data") if os.path.isdir(p) else p
                with open(target, "rb") as f:
                    for off in (0, 1 << 20, (1 << 40) - 10):
                        try:
                            f.seek(off)
                            f.read(4096)
                        except OSError as e:
                            self.assertEqual(e.errno, errno.EIO)
        self.assertLess(rss_kib(pid) - rss0, 64 * 1024)

    def test_unsupported_method_and_garbage_streams_leave_good_members(self):
        for archive, key in (("bad-method.npz", "lzma"), ("garbage-stream.npz", "garbage")):
            with self.subTest(archive=archive):
                self.assert_good_members(archive)
                got = self.member_bytes(archive, key)
                if got is not None and got[1] is not None:
                    self.fail("%s/%s.npy served %d made-up bytes" % (archive, key, len(got[1])))

    def test_nested_npz_is_a_plain_member(self):
        self.assert_good_members("nested.npz")
        for key in ("inner", "inner_deflated"):
            p = self.mp("nested.npz", key + ".npz")
            self.assertTrue(os.path.isfile(p), "%s is not a plain file" % p)
            self.assertEqual(read(p), self.inner_bytes)


# -- member names -------------------------------------------------------------
BAD_NAMES = [b"../evil.npy", b"a/../../evil2.npy", b"/abs.npy", b"/etc/passwd",
             b"nul\x00byte.npy", b"ctl\x01\x1f\x7f.npy", b"new\nline.npy", b"bad\xff\xfe.npy",
             b"back\\slash.npy", b"./dot.npy", b"a//b.npy", b"", b"..", b".", b"x/./y.npy",
             b"n" * 300 + b".npy", b"d/" + b"n" * 300 + b"/x.npy"]


class MemberNamesTest(mountlib.MountCase):
    @classmethod
    def make_source(cls):
        cls.tmp = TempDir()
        good = npy_bytes(GOOD)
        for name, flags in (("names-utf8.npz", 0x800), ("names-cp437.npz", 0)):
            z = ZipWriter(cls.tmp.join(name))
            z.add(b"first.npy", good)
            for bad in BAD_NAMES:
                z.add(bad, good, flags=flags)
            z.add("caf\u00e9/\u00fcber.npy".encode(), good, flags=0x800)
            z.add(b"last.npy", good)
            z.close()
        return cls.tmp  # MountCase mounts it and removes it at the end

    def test_bad_names_never_escape_and_never_hide_good_members(self):
        for archive in ("names-utf8.npz", "names-cp437.npz"):
            with self.subTest(archive=archive):
                root = self.mp(archive)
                tree = walk(root)
                for key in ("first", "last"):
                    self.assertEqual(read(os.path.join(root, key + ".npy", "data")),
                                     GOOD.tobytes())
                for rel in tree:
                    parts = rel.split("/") if rel else []
                    self.assertNotIn("..", parts, rel)
                    self.assertNotIn(".", parts, rel)
                    self.assertFalse(any(c in rel for c in "\0\\"), repr(rel))
                    self.assertTrue(all(0 < len(p.encode("utf-8", "surrogateescape")) <= 255
                                        for p in parts), repr(rel))
                    os.lstat(os.path.join(root, rel))  # every listed entry exists
        self.assertFalse(os.path.lexists(self.mp("evil.npy")))
        self.assertFalse(os.path.lexists(self.mp("evil2.npy")))
        # the UTF-8 key made folders with the right names
        self.assertTrue(os.path.isdir(self.mp("names-utf8.npz", "caf\u00e9", "\u00fcber.npy")))

    def test_names_are_logged_escaped(self):
        log = self.m.log()
        self.assertIn("names-utf8.npz", log)
        self.assertNotIn("nul\x00byte", log)
        self.assertNotIn("ctl\x01", log)
        self.assertNotIn("new\nline", log, "a member name can forge a log line")


# -- symlink loops ------------------------------------------------------------
class SymlinkLoopTest(mountlib.MountCase):
    @classmethod
    def make_source(cls):
        cls.tmp = TempDir()
        os.mkdir(cls.tmp.join("sub"))
        os.symlink(".", cls.tmp.join("self"))
        os.symlink("..", cls.tmp.join("sub", "up"))
        os.symlink("b", cls.tmp.join("a"))
        os.symlink("a", cls.tmp.join("b"))
        os.symlink("loop.npy", cls.tmp.join("loop.npy"))
        with open(cls.tmp.join("sub", "x.npy"), "wb") as f:
            f.write(npy_bytes(GOOD))
        return cls.tmp  # MountCase mounts it and removes it at the end

    def test_loops_are_symlinks_with_their_targets(self):
        tree = walk(self.m.mountpoint)
        want = {"": "dir", "sub": "dir", "sub/x.npy": "dir", "self": "link", "sub/up": "link",
                "a": "link", "b": "link", "loop.npy": "link"}
        got = {k: v for k, v in tree.items() if not k.startswith("sub/x.npy/")}
        self.assertEqual(got, want)
        for rel, target in (("self", "."), ("sub/up", ".."), ("a", "b"), ("b", "a"),
                            ("loop.npy", "loop.npy")):
            self.assertEqual(os.readlink(self.mp(rel)), target)
        with self.assertRaises(OSError) as cm:
            os.stat(self.mp("a"))
        self.assertEqual(cm.exception.errno, errno.ELOOP)
        # following a loop once lands back in the mount, served right
        self.assertEqual(read(self.mp("self", "self", "sub", "up", "sub", "x.npy", "data")),
                         GOOD.tobytes())


# -- huge views and a million members -----------------------------------------
class HugeViewReadTest(mountlib.MountCase):
    """Memory per request is bounded: a 256 MiB big-endian array (a sparse
    source) read whole through its byte-swapped .ra view, and a 256 MiB
    deflated member read whole, grow the daemon by a bounded amount."""

    @classmethod
    def make_source(cls):
        cls.tmp = TempDir()
        hdr = npy_bytes(np.zeros((0, 1 << 24), ">f8"))  # a header of the right length
        hdr = hdr.replace(b"(0, 16777216)", b"(2, 16777216)")
        with open(cls.tmp.join("sparse.npy"), "wb") as f:
            f.write(hdr)
            f.truncate(len(hdr) + (1 << 28))
        cls.zeros = 256 << 20
        z = ZipWriter(cls.tmp.join("zeros.npz"))
        zhdr = npy_bytes(np.zeros((0, cls.zeros), "<u1")).replace(b"(0, ", b"(1, ")
        body = zlib.compressobj(6, zlib.DEFLATED, -15)
        stream = body.compress(zhdr)
        chunk = b"\0" * (1 << 20)
        crc = zlib.crc32(zhdr)
        for _ in range(cls.zeros >> 20):
            stream += body.compress(chunk)
            crc = zlib.crc32(chunk, crc)
        stream += body.flush()
        z.add(b"zeros.npy", stream, method=8, usize=len(zhdr) + cls.zeros, crc=crc)
        z.close()
        return cls.tmp  # MountCase mounts it and removes it at the end

    def read_all_zero(self, path, expect_len, skip=0):
        n = 0
        with open(path, "rb", buffering=0) as f:
            f.seek(skip)
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                if b.count(0) != len(b):
                    self.fail("%s: non-zero bytes near %d" % (path, skip + n))
                n += len(b)
                os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        self.assertEqual(n + skip, expect_len)

    def test_byte_swapped_view_and_big_deflated_member_in_bounded_memory(self):
        pid = self.m.proc.pid
        rss0 = rss_kib(pid)
        ra = self.mp("sparse.npy", "sparse.ra")
        ra_len = os.stat(ra).st_size
        self.assertEqual(ra_len, 48 + 16 + (1 << 28))
        t0 = time.monotonic()
        self.read_all_zero(ra, ra_len, skip=64)
        t1 = time.monotonic()
        self.read_all_zero(self.mp("zeros.npz", "zeros.npy", "data"), self.zeros)
        t2 = time.monotonic()
        grew = rss_kib(pid) - rss0
        # a read-through member keeps its read-ahead buffers (up to the
        # pool's 20 MiB) until it closes; TSan's shadow of them is 4x more
        bound = {None: 64, "asan": 96, "tsan": 192}[sanitizer(pid)] * 1024
        print("\n256 MiB swapped view in %.1f s, 256 MiB deflated member in %.1f s; "
              "RSS +%d KiB (bound %d)" % (t1 - t0, t2 - t1, grew, bound), file=sys.stderr)
        self.assertLess(grew, bound)


class FuzzRegressionsTest(unittest.TestCase):
    """Every input the fuzzers ever crashed on (tests/fuzz/regressions/),
    mounted as a file of its kind: walked and read whole, it never crashes
    the daemon (whose log mountlib scans for sanitizer reports). A replay
    that finds no input, or an input the mount does not show, fails."""

    KINDS = {"fuzz_npy": ".npy", "fuzz_zip": ".npz", "fuzz_ra": ".ra"}
    # inputs that are no file of their own (a descr string, a raw deflate
    # stream, one decoded by both engines, a saved index file, a kind byte and
    # a file for arrayrefs' writer, an id map file): scripts/fuzz replays them
    # through their targets
    NOT_MOUNTABLE = {"fuzz_dtype", "fuzz_inflate", "fuzz_inflate_diff",
                     "fuzz_lz4_index", "fuzz_inflate_index", "fuzz_refs",
                     "fuzz_idmap"}

    def regression_inputs(self, root):
        """{file name in the source: bytes} of every mountable input."""
        self.assertTrue(os.path.isdir(root), "no regression folder " + root)
        targets = set(os.listdir(root))
        self.assertEqual(targets - set(self.KINDS) - self.NOT_MOUNTABLE, set(),
                         "regressions of a target this replay does not know")
        inputs = {}
        for target in sorted(targets & set(self.KINDS)):
            d = os.path.join(root, target)
            for name in sorted(os.listdir(d)):
                inputs["%s-%s%s" % (target, name, self.KINDS[target])] = read(
                    os.path.join(d, name))
        self.assertGreater(len(inputs), 0, "no regression input found under " + root)
        return inputs

    def test_every_fuzz_regression_mounts_and_reads_without_a_crash(self):
        root = os.path.join(mountlib.env_path("AF_SOURCE_ROOT"), "tests", "fuzz", "regressions")
        inputs = self.regression_inputs(root)
        tmp = TempDir()
        self.addCleanup(tmp.close)
        tmp.write(inputs)
        with mountlib.mount(tmp.path) as m:
            self.assertEqual(set(os.listdir(m.mountpoint)), set(inputs),
                             "the mount does not show every input")
            for rel, kind in sorted(walk(m.mountpoint).items()):
                if kind != "file":
                    continue
                try:
                    read(m.path(rel))
                except OSError as e:
                    self.assertEqual(e.errno, errno.EIO, "%s: %s" % (rel, e))
                m.check_alive()
        print("\n%d fuzz regressions mounted" % len(inputs), file=sys.stderr)


class MillionMembersTest(unittest.TestCase):
    def test_a_million_empty_members_list_in_bounded_time_and_memory(self):
        tmp = TempDir()
        self.addCleanup(tmp.close)
        t0 = time.monotonic()
        write_many_members(tmp.join("many.npz"), MEMBERS)
        gen = time.monotonic() - t0
        with mountlib.mount(tmp.path) as m:
            pid = m.proc.pid
            rss0 = rss_kib(pid)
            t0 = time.monotonic()
            root = m.path("many.npz")
            folders = sorted(os.listdir(root))
            count = 0
            for d in folders:
                with os.scandir(os.path.join(root, d)) as it:
                    for e in it:
                        count += 1
            secs = time.monotonic() - t0
            rss1 = rss_kib(pid)
            self.assertEqual(read(m.path("many.npz", "d0000", "m0000000.bin")), b"")
            last = MEMBERS - 1
            self.assertEqual(os.stat(m.path("many.npz", "d%04d" % (last // 1000),
                                            "m%07d.bin" % last)).st_size, 0)
            per = (BYTES_PER_MEMBER * (3 if sanitized(pid) else 1))
            print("\n%d members: generated in %.1f s, listed in %.1f s; daemon RSS %d -> "
                  "%d KiB (%.0f bytes a member, bound %d)" % (
                      MEMBERS, gen, secs, rss0, rss1, (rss1 * 1024.0) / MEMBERS, per),
                  file=sys.stderr)
            self.assertEqual(count, MEMBERS)
            self.assertEqual(len(folders), (MEMBERS + 999) // 1000)
            self.assertLess(secs, LIST_DEADLINE)
            self.assertLess(rss1 * 1024, MEMBERS * per + (64 << 20))


if __name__ == "__main__":
    mountlib.main()
