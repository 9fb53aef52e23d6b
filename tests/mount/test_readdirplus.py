#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A program that lists a folder, then reads every file (as data loaders
do): the listing is answered with readdirplus, which gives the kernel the
entry and attributes of every name, so reading each X.npy/data afterwards
costs at most two requests (LOOKUP of data, READ) instead of three; what
the listing said equals what a fresh lookup says; a source changed
between listing and reading shows its new bytes, never the old ones; and
every lookup the listing counted is undone by the kernel's forgets.

The request counts come from the daemon's debug log (-d): libfuse prints
one "opcode: NAME" line per request, and the daemon a "forget: N nodes
left" line after each forget. FORGET and BATCH_FORGET are not counted as
requests of a file: they have no reply and come when the kernel evicts."""
import errno
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import numpy as np  # noqa: E402

import mountlib  # noqa: E402
from mountlib import npy_bytes, wait_for, write, write_by_rename  # noqa: E402

N = 300              # arrays in the listed folder
DEADLINE = 10.0      # seconds a change or the forgets may take to show
# attributes compared between the listing and a fresh lookup
ATTRS = ("st_ino", "st_mode", "st_nlink", "st_uid", "st_gid", "st_size",
         "st_atime_ns", "st_mtime_ns", "st_ctime_ns")
NOT_ROUND_TRIPS = ("FORGET", "BATCH_FORGET")


def array(i):
    """Array i: its values and dtype say which one it is."""
    return np.arange(i, i + 10 + i % 7, dtype="<i4" if i % 2 else "<f8")


def read_os(path):
    """The whole file through os.open/os.read (no isatty ioctl, unlike
    Python's open() before 3.14)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        out = bytearray()
        while True:
            b = os.read(fd, 1 << 16)
            if not b:
                return bytes(out)
            out += b
    finally:
        os.close(fd)


def populate(root):
    """many/: N arrays, a plain file, a broken .npy, a symlink, a folder
    and an npz; warm/: one array read first. Every atime is set ahead of
    mtime and ctime, so the daemon's own reads (relatime) never move it
    and the listing's times can be compared with a later lookup's."""
    many = os.path.join(root, "many")
    os.makedirs(os.path.join(many, "sub"))
    os.mkdir(os.path.join(root, "warm"))
    np.save(os.path.join(root, "warm", "w.npy"), np.arange(4))
    for i in range(N):
        np.save(os.path.join(many, "a%04d.npy" % i), array(i))
    write(os.path.join(many, "notes.txt"), b"plain bytes\n")
    write(os.path.join(many, "broken.npy"), b"\x93NUMPY not a header")
    os.symlink("notes.txt", os.path.join(many, "link"))
    np.savez(os.path.join(many, "z.npz"), k=np.arange(3))
    ahead = time.time_ns() + 3600 * 10**9
    for d, _, files in os.walk(root):
        for name in files + [""]:
            p = os.path.join(d, name)
            os.utime(p, ns=(ahead, os.lstat(p).st_mtime_ns), follow_symlinks=False)


def forget_everything(case):
    """Drop the kernel's dentries and inodes, so that it forgets every node
    of CASE's mount; wait until its daemon's -d log says only the root is
    left (failing with the last counts if not). Returns where the log stood
    before the drop."""
    at = len(case.m.log())
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("2")  # dentries and inodes: the kernel forgets them all

    # each forget logs the count after its own; threads may write
    # their lines out of order, so any line will do
    def only_the_root_left():
        return 1 in map(int, re.findall(r"forget: (\d+) nodes left", case.m.log()[at:]))
    try:
        wait_for(only_the_root_left, DEADLINE, what="the kernel's forgets")
    except AssertionError:
        left = re.findall(r"forget: \d+ nodes left", case.m.log()[at:])
        case.fail("nodes are left after the kernel forgot everything: %s" % left[-3:])
    return at


class CountsRequests:
    """For a FreshMountCase mounted with -d: the requests sent since a
    mark."""

    def mark(self):
        """Where the daemon's log ends now: count requests from there.
        Waits for the RELEASEDIR of every listing so far, which the kernel
        sends after closedir() has returned."""
        def settled():
            log = self.m.log()
            return log.count("opcode: OPENDIR (") == log.count("opcode: RELEASEDIR (")
        wait_for(settled, DEADLINE, what="every listing's RELEASEDIR")
        return len(self.m.log())

    def requests(self, since):
        """{opcode: count} of the requests logged since mark SINCE."""
        out = {}
        for op in re.findall(r"opcode: (\w+) \(", self.m.log()[since:]):
            if op not in NOT_ROUND_TRIPS:
                out[op] = out.get(op, 0) + 1
        return out

    def attrs_as_fresh_mount_says(self, seen):
        """SEEN: {path parts: os.lstat result}; each equals what a fresh
        mount of the same sources says of that path."""
        fresh = mountlib.mount(self.src.path)
        try:
            for p, before in seen.items():
                st = os.lstat(fresh.path(*p))
                for a in ATTRS:
                    self.assertEqual(getattr(before, a), getattr(st, a),
                                     "%s of %s" % (a, "/".join(p)))
        finally:
            fresh.umount()


class ReaddirplusCase(CountsRequests, mountlib.FreshMountCase):
    mount_args = ("-d",)

    def populate(self):
        populate(self.src.path)

    def warm_up(self):
        # a kernel with no-open support sends one OPEN (answered ENOSYS,
        # "send no more") and one FLUSH (ENOSYS) for the whole mount: let
        # a file outside the listed folder pay them
        self.assertEqual(read_os(self.mp("warm", "w.npy", "data")), np.arange(4).tobytes())

    def test_reading_every_listed_array_costs_at_most_two_requests_a_file(self):
        self.warm_up()
        os.stat(self.mp("many"))  # its own lookup, not the listing's
        at = self.mark()
        names = os.listdir(self.mp("many"))
        listing = self.requests(at)
        at = self.mark()
        self.assertIn("READDIRPLUS", listing, "the kernel was not offered readdirplus")
        self.assertNotIn("LOOKUP", listing)
        arrays = sorted(n for n in names if n.startswith("a"))
        self.assertEqual(len(arrays), N)
        for i, name in enumerate(arrays):
            self.assertEqual(read_os(self.mp("many", name, "data")), array(i).tobytes(), name)
        got = self.requests(at)
        total = sum(got.values())
        self.assertLessEqual(total / N, 2.0,
                             "%.2f requests a file after the listing: %s" % (total / N, got))
        self.assertEqual(got.get("LOOKUP", 0), N, "one LOOKUP (data) a file: %s" % got)

    def test_the_listing_says_what_a_fresh_lookup_says(self):
        names = sorted(os.listdir(self.mp("many")))
        inside = sorted(os.listdir(self.mp("many", "a0001.npy")))
        self.assertIn("data", inside)
        # every name of both listings but z.npz: an archive is listed by
        # name alone (its entry would parse every member)
        paths = [("many", n) for n in names if n != "z.npz"] + \
                [("many", "a0001.npy", n) for n in inside]
        at = self.mark()
        after_listing = {p: os.lstat(self.mp(*p)) for p in paths}
        self.assertEqual(self.requests(at), {},
                         "stat after the listing asked the daemon")
        paths.append(("many", "z.npz"))
        after_listing[paths[-1]] = os.lstat(self.mp(*paths[-1]))
        self.assertTrue(os.path.isdir(self.mp("many", "a0001.npy")))
        self.assertFalse(os.path.isdir(self.mp("many", "broken.npy")),
                         "a broken array file is a plain file")
        self.attrs_as_fresh_mount_says(after_listing)

    def test_a_walk_of_array_folders_and_their_stores_looks_nothing_up(self):
        # what du and find -ls do: list each folder, stat each name
        names = sorted(n for n in os.listdir(self.mp("many")) if n.startswith("a"))[:25]
        at = self.mark()
        seen = {}
        for name in names:
            for inner in os.listdir(self.mp("many", name)):
                seen["many", name, inner] = os.lstat(self.mp("many", name, inner))
            store = name[:-len(".npy")] + ".zarr"
            inside = os.listdir(self.mp("many", name, store))
            self.assertIn(".zarray", inside)
            for z in inside:
                seen["many", name, store, z] = os.lstat(self.mp("many", name, store, z))
        got = self.requests(at)
        # READDIRPLUS_AUTO: the kernel asks a listing's end (an empty
        # batch, after a batch it looked nothing up in) by plain READDIR
        self.assertLessEqual(set(got), {"OPENDIR", "READDIRPLUS", "READDIR",
                                        "RELEASEDIR"},
                             "the walk sent %s" % got)
        self.assertEqual(got["OPENDIR"], 2 * len(names))
        self.attrs_as_fresh_mount_says(seen)

    def test_an_archive_is_listed_by_name_and_parsed_only_when_used(self):
        os.stat(self.mp("many"))
        os.listdir(self.mp("many"))
        at = self.mark()
        os.lstat(self.mp("many", "a0002.npy"))
        self.assertEqual(self.requests(at), {}, "an array's entry came with the listing")
        os.lstat(self.mp("many", "z.npz"))
        self.assertEqual(self.requests(at), {"LOOKUP": 1},
                         "the listing sent an archive's entry (it read its central directory)")
        self.assertEqual(sorted(os.listdir(self.mp("many", "z.npz"))), ["k.npy"])

    def test_a_source_changed_between_listing_and_reading_reads_new_bytes(self):
        os.listdir(self.mp("many"))
        for name in ("a0003.npy", "a0004.npy", "a0005.npy"):
            os.listdir(self.mp("many", name))  # the entries of data etc. too
        new3 = array(1003)
        new4 = np.arange(40, dtype=">i2").reshape(4, 10)
        with open(self.src.join("many", "a0003.npy"), "r+b") as f:  # in place
            np.save(f, new3)
            f.truncate()
        write_by_rename(self.src.join("many", "a0004.npy"), npy_bytes(new4))
        write(self.src.join("many", "notes.txt"), b"PLAIN BYTES\n")
        write(self.src.join("many", "a0005.npy"), b"no longer an array")
        cases = [(("many", "a0003.npy", "data"), array(3).tobytes(), new3.tobytes()),
                 (("many", "a0004.npy", "data"), array(4).tobytes(), new4.tobytes()),
                 (("many", "a0004.npy", "shape"), b"14\n", b"4 10\n"),
                 (("many", "notes.txt"), b"plain bytes\n", b"PLAIN BYTES\n"),
                 (("many", "a0005.npy"), None, b"no longer an array")]
        for parts, old, new in cases:
            def fresh(parts=parts, old=old, new=new):
                try:
                    got = read_os(self.mp(*parts))
                except OSError as e:
                    # a node of the old version refuses (EIO) until the
                    # notifier makes the kernel look the name up again
                    if e.errno in (errno.EIO, errno.ENOENT, errno.ESTALE, errno.ENOTDIR):
                        return False
                    raise
                self.assertNotEqual(got, old, "stale bytes from %s" % "/".join(parts))
                self.assertEqual(got, new, "/".join(parts))
                return True
            wait_for(fresh, DEADLINE, what="new bytes of %s" % "/".join(parts))

    def rewrite_before_first_read(self, name, listed):
        """Look NAME/data up (by listing its folder, or by a lookup of its
        own), open it (no request: no-open), rewrite the source in place,
        same size, then read it: returns the OSError's errno, or the bytes."""
        if listed:
            os.listdir(self.mp("many"))
            os.listdir(self.mp("many", name))
        else:
            os.stat(self.mp("many", name, "data"))
        fd = os.open(self.mp("many", name, "data"), os.O_RDONLY)
        try:
            i = int(name[1:5])
            with open(self.src.join("many", name), "r+b") as f:
                np.save(f, array(i)[::-1].copy())
            try:
                return os.read(fd, 1 << 16)
            except OSError as e:
                return e.errno
        finally:
            os.close(fd)

    def test_a_source_rewritten_after_data_was_looked_up_is_never_served_as_it(self):
        # the node of the version looked up remembers where data is in
        # that version (listed), or holds the file opened by its lookup:
        # either way the first read sees the file is another version now
        # (EIO), and serves neither the old range out of the new file nor
        # the new bytes under the old node
        for name, listed in (("a0006.npy", True), ("a0008.npy", False)):
            self.assertEqual(self.rewrite_before_first_read(name, listed), errno.EIO,
                             "%s, %s" % (name, "listed" if listed else "looked up"))
            new = array(int(name[1:5]))[::-1].tobytes()

            def fresh(name=name, new=new):
                try:
                    return read_os(self.mp("many", name, "data")) == new
                except OSError as e:
                    if e.errno == errno.EIO:
                        return False
                    raise
            wait_for(fresh, DEADLINE, what="new bytes of %s/data" % name)

    def test_data_looked_up_then_replaced_by_rename_reads_the_version_looked_up(self):
        # a lookup of data opens its source (to check it is the version
        # its folder remembers) and keeps that fd for the read that
        # follows: a file renamed over it afterwards changes nothing for
        # that node, which serves its own version whole
        os.listdir(self.mp("many"))
        os.stat(self.mp("many", "a0009.npy", "data"))
        fd = os.open(self.mp("many", "a0009.npy", "data"), os.O_RDONLY)
        try:
            write_by_rename(self.src.join("many", "a0009.npy"), npy_bytes(array(1009)))
            self.assertEqual(os.read(fd, 1 << 16), array(9).tobytes())
        finally:
            os.close(fd)

    @mountlib.unittest.skipUnless(os.geteuid() == 0, "drop_caches needs root")
    def test_every_lookup_the_listing_counted_is_forgotten(self):
        os.listdir(self.mp("many"))
        os.listdir(self.mp("many", "a0007.npy"))
        os.listdir(self.mp("many", "sub"))
        for i in range(0, N, 10):
            read_os(self.mp("many", "a%04d.npy" % i, "data"))
        forget_everything(self)


class StoreOfManyChunksCase(CountsRequests, mountlib.FreshMountCase):
    """A listing of B.zarr/ gives the entries of its first 64 names only:
    a store of 100,000 chunks must not make 100,000 nodes when listed."""
    mount_args = ("-d", "-o", "zarr_chunk=8")
    FIRST = 64

    def populate(self):
        np.save(self.src.join("big.npy"), np.arange(1000, dtype="u1"))

    def test_a_listing_gives_the_entries_of_a_stores_first_names_only(self):
        names = os.listdir(self.mp("big.npy", "big.zarr"))
        # .zarray, .zattrs, zarr.json and 125 chunks of 8 bytes
        self.assertEqual(len(names), 128)
        at = self.mark()
        for z in names:
            os.lstat(self.mp("big.npy", "big.zarr", z))
        self.assertEqual(self.requests(at), {"LOOKUP": len(names) - self.FIRST})
        self.assertEqual(read_os(self.mp("big.npy", "big.zarr", "124")),
                         np.arange(1000, dtype="u1")[992:].tobytes())


def list_with_stats(path):
    """The names in @p path, each stat'ed as it is listed, as ls -l does:
    the kernel then asks every batch by READDIRPLUS."""
    names = []
    with os.scandir(path) as it:
        for e in it:
            e.stat(follow_symlinks=False)
            names.append(e.name)
    return names


class BeyondTheParseCacheCase(mountlib.FreshMountCase):
    """A folder of more arrays than the daemon keeps parsed (4096): by
    the time a program reads what it listed, the listing's parses have
    left the cache. Looking up each X.npy/data must parse each source once
at most (a names-only listing parsed none after its first batch):
    the array folder's node remembers what its entries' lookups need from
    the version it was listed as (one stat says it is still that one).
    Nor does listing the folder again parse what has not changed."""
    mount_args = ("-d",)
    MANY = 4200

    def populate(self):
        os.mkdir(self.src.join("big"))
        for i in range(self.MANY):
            write(self.src.join("big", "b%05d.npy" % i), npy_bytes(array(i)))

    def test_looking_up_and_reading_data_after_a_long_listing_parses_nothing(self):
        at = len(self.m.log())
        names = sorted(os.listdir(self.mp("big")))
        self.assertEqual(len(names), self.MANY)
        # only its first batch (READDIRPLUS) came with entries, each a parse
        listed = re.findall(r"parsing (\S+)", self.m.log()[at:])
        self.assertLess(len(listed), self.MANY // 2,
                        "a names-only listing parsed %d sources" % len(listed))
        at = len(self.m.log())
        for i, name in enumerate(names):
            self.assertEqual(os.stat(self.mp("big", name, "data")).st_size,
                             array(i).nbytes, name)
        # a names-only listing parses nothing (READDIRPLUS_AUTO: the kernel
        # asks all but its first batch by plain READDIR), so the lookups
        # parse each source once, those of the first batch not at all
        parsed = re.findall(r"parsing (\S+)", self.m.log()[at:])
        self.assertEqual(len(parsed), len(set(parsed)),
                         "a source was parsed twice by the lookups")
        self.assertLess(len(parsed), self.MANY,
                        "the first batch's entries were parsed again")
        # nor does reading each data: its node knows where the bytes are
        # in the version it was looked up as, and the read checks that
        at = len(self.m.log())
        for i, name in enumerate(names):
            self.assertEqual(read_os(self.mp("big", name, "data")),
                             array(i).tobytes(), name)
        parsed = re.findall(r"parsing (\S+)", self.m.log()[at:])
        self.assertEqual(parsed, [], "%d of %d first reads of data parsed "
                         "their source again" % (len(parsed), self.MANY))
        # a source changed since the listing: the next lookup parses the
        # new version and says its size (the notifier drops the old entry)
        new = np.arange(50, dtype="<u2")
        write_by_rename(self.src.join("big", names[0]), npy_bytes(new))

        def fresh():
            return os.stat(self.mp("big", names[0], "data")).st_size == new.nbytes
        wait_for(fresh, DEADLINE, what="the new size of %s/data" % names[0])
        self.assertEqual(read_os(self.mp("big", names[0], "data")), new.tobytes())

    @mountlib.unittest.skipUnless(os.geteuid() == 0, "drop_caches needs root")
    def test_memory_of_a_walk_is_given_back_when_the_kernel_forgets_it(self):
        # a walk into every array folder (du, find) makes a node per entry:
        # about ten an array. Once the kernel forgets them, the daemon frees
        # them and gives the heap's free memory back to the system
        walked = 0
        for _, dirs, files in os.walk(self.mp("big")):
            walked += len(dirs) + len(files)
            dirs[:] = [d for d in dirs if not d.endswith(".zarr")]
        self.assertGreater(walked, 9 * self.MANY)
        at = forget_everything(self)
        self.assertTrue("forget: free memory returned" in self.m.log()[at:],
                        "the forgets of %d entries gave no memory back" % walked)
        names = sorted(os.listdir(self.mp("big")))
        self.assertEqual(read_os(self.mp("big", names[5], "data")), array(5).tobytes())

    def test_listing_again_parses_only_the_sources_changed_since(self):
        # the folder's second listing answers each array from its folder's
        # node (one stat says it is the version listed): no open, no parse.
        # A source replaced by rename, or by a file that is no array, is
        # parsed again and listed as what it is now
        names = sorted(list_with_stats(self.mp("big")))
        replaced, broken = names[7], names[8]
        new = np.arange(50, dtype="<u2")
        write_by_rename(self.src.join("big", replaced), npy_bytes(new))
        write(self.src.join("big", broken), b"no longer an array")
        at = len(self.m.log())
        self.assertEqual(sorted(list_with_stats(self.mp("big"))), names)
        parsed = set(re.findall(r"parsing (\S+)", self.m.log()[at:]))
        self.assertEqual(parsed, {"big/" + replaced, "big/" + broken},
                         "the second listing parsed %d sources" % len(parsed))

        def fresh():
            return (os.stat(self.mp("big", replaced, "data")).st_size == new.nbytes and
                    os.path.isfile(self.mp("big", broken)))
        wait_for(fresh, DEADLINE, what="the changed sources as they are now")
        self.assertEqual(read_os(self.mp("big", replaced, "data")), new.tobytes())
        self.assertEqual(read_os(self.mp("big", broken)), b"no longer an array")
        self.assertEqual(read_os(self.mp("big", names[9], "data")), array(9).tobytes())


if __name__ == "__main__":
    mountlib.main()
