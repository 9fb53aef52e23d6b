#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Faults under a live mount: sources truncated, grown, rewritten, deleted or
replaced while a reader holds `data` open or mapped; a source sub-folder
deleted; the daemon killed with SIGKILL; 10,000 open/read/close cycles with
no fd or memory growth; 8 threads reading random ranges for a bounded time,
every byte judged by numpy; a source on a file system that returns EIO.

The rule everywhere: the daemon lives; a reader gets old bytes, new bytes or
EIO, never a mix and never a crash. (A SIGBUS in a reader whose mmap page-in
fails, past the new end of a shrunk file or because the read got EIO, is the
kernel's normal behaviour and is accepted; it happens in a child process.)"""
import errno
import hashlib
import io
import os
import random
import select
import shutil
import signal
import struct
import subprocess
import sys
import textwrap
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import numpy as np  # noqa: E402

import expect  # noqa: E402
import mountlib  # noqa: E402
from mountlib import TempDir, is_mounted, read, read_fd_to_end, wait_for  # noqa: E402
from procinfo import fd_count, fd_targets, rss_kib, sanitized  # noqa: E402

DEADLINE = 10.0          # seconds a change may take to show
CYCLES = 10000           # open/read/close cycles for the leak check
THREAD_SECONDS = float(os.environ.get("AF_FAULT_SECONDS", "20"))
THREADS = 8
JOIN_DEADLINE = THREAD_SECONDS + 120.0


# -- sources ------------------------------------------------------------------
def npy_bytes(arr):
    f = io.BytesIO()
    np.save(f, arr)
    return f.getvalue()


def ra_bytes(arr):
    """A RawArray file of ARR (numeric, little-endian), dims = numpy shape in
    Fortran order, as the reference writer does."""
    kinds = {"i": 1, "u": 2, "b": 2, "f": 3, "c": 4}
    arr = np.asfortranarray(arr)
    data = arr.tobytes(order="F")
    head = struct.pack("<6Q", 0x7961727261776172, 0, kinds[arr.dtype.kind],
                       arr.dtype.itemsize, len(data), arr.ndim)
    return head + struct.pack("<%dQ" % arr.ndim, *arr.shape) + data


def write(path, buf):
    with open(path, "wb") as f:  # in place: same inode
        f.write(buf)


def append(path, buf):
    with open(path, "ab") as f:
        f.write(buf)


def write_by_rename(path, buf):
    tmp = path + ".tmp-new"
    write(tmp, buf)
    os.replace(tmp, path)


class FaultCase(mountlib.FreshMountCase):
    """Each test gets its own source folder (filled by populate) and mount."""


class HeldOpenTest(FaultCase):
    """The source changes under an open descriptor of a .ra source's `data`
    and of its synthesized .npy view (test_changes covers .npy sources)."""

    old_arr = np.arange(300 * 1024, dtype="<i8").reshape(1024, 300)  # 2.4 MB

    def populate(self):
        self.old = ra_bytes(self.old_arr)
        write(self.src.join("big.ra"), self.old)

    def expected(self, buf, name):
        return expect.ArrayDir.of_ra(buf, "big", "big.ra").exact(name)

    def run_change(self, name, change, new_buf):
        """Open big.ra/NAME, read 64 KiB, CHANGE the source, then read the
        rest through the same descriptor; the bytes must be all old, all new
        (if NEW_BUF), or a prefix of one of them ending in EIO."""
        rel = ("big.ra", name)
        old = read(self.mp(*rel)) if name != "data" else self.old_arr.tobytes(order="F")
        if name == "big.npy":  # judged by numpy, since the header text is ours
            self.assertTrue(np.array_equal(np.load(io.BytesIO(old)), self.old_arr))
        new = None
        if new_buf is not None:
            new = (self.expected(new_buf, name) if name == "data"
                   else None)  # the .npy view of the new file: old length may differ
        fd = os.open(self.mp(*rel), os.O_RDONLY)
        try:
            self.assertEqual(os.pread(fd, 65536, 0), old[:65536])
            change()
            rest, err = read_fd_to_end(fd, 65536)
        finally:
            os.close(fd)
        got = old[:65536] + rest
        if got == old or (new is not None and got == new):
            return
        if err == errno.EIO:
            self.assertTrue(got == old[:len(got)] or (new is not None and got == new[:len(got)]),
                            "EIO after %d bytes that are neither old nor new" % len(got))
            return
        if name == "big.npy" and new_buf is not None:
            # a whole new .npy view is fine too: numpy must read the new array
            arr = np.load(io.BytesIO(got))
            self.assertEqual(arr.tobytes(order="F"), self.expected(new_buf, "data"))
            return
        self.fail("%s: %d bytes that are neither the old %d nor the new; first "
                  "difference from old at %d" % ("/".join(rel), len(got), len(old),
                                                   expect.first_difference(got, old)))

    def change_cases(self):
        path = self.src.join("big.ra")
        rev = ra_bytes(self.old_arr[::-1].copy())
        grown = ra_bytes(np.arange(600 * 1024, dtype="<i8").reshape(2048, 300))
        return {
            "truncated": (lambda: os.truncate(path, 48 + 16 + 100000), None),
            "grown": (lambda: write(path, grown), grown),
            "appended": (lambda: append(path, b"\0" * 500000), None),
            "rewritten_in_place": (lambda: write(path, rev), rev),
            "deleted": (lambda: os.unlink(path), None),
            "replaced_by_rename": (lambda: write_by_rename(path, rev), rev),
        }

    def restored(self, name):
        """big.ra is the old array again and big.ra/NAME reads. A size
        alone can pass before the notifier has dropped the kernel's entry
        of the last version (an append keeps data's size), whose reads
        are EIO once that version is gone."""
        try:
            if os.stat(self.mp("big.ra", "data")).st_size != len(self.old) - 64:
                return False
            read(self.mp("big.ra", name))
            return True
        except OSError as e:
            if e.errno in (errno.EIO, errno.ENOENT, errno.ENOTDIR, errno.ESTALE):
                return False
            raise

    def check_each(self, name):
        for label, (change, new_buf) in self.change_cases().items():
            with self.subTest(change=label):
                write_by_rename(self.src.join("big.ra"), self.old)
                wait_for(lambda: self.restored(name), DEADLINE, what="big.ra restored")
                self.run_change(name, change, new_buf)
                self.m.check_alive()

    def test_data_held_open_through_every_change(self):
        self.check_each("data")

    def test_npy_view_held_open_through_every_change(self):
        self.check_each("big.npy")


# -- a reader with `data` mapped ----------------------------------------------
MMAP_CHILD = textwrap.dedent("""
    import hashlib, mmap, os, sys
    fd = os.open(sys.argv[1], os.O_RDONLY)
    size = os.fstat(fd).st_size
    mm = mmap.mmap(fd, size, prot=mmap.PROT_READ)
    first = mm[:4096]            # fault in the first page before the change
    print("ready", flush=True)
    sys.stdin.readline()         # the parent changes the source now
    whole = mm[:]                # may raise SIGBUS past a shrunk end
    sys.stdout.write(hashlib.sha256(whole).hexdigest() + " %d\\n" % len(whole))
""")


class MmapTest(FaultCase):
    arr = np.arange(256 * 1024, dtype="<f8")  # 2 MiB
    mount_args = ("-d",)  # its log says when the notifier has seen a change

    def populate(self):
        write(self.src.join("m.npy"), npy_bytes(self.arr))
        write(self.src.join("m.ra"), ra_bytes(self.arr))

    def mapped_reader(self, rel, change, allowed):
        """Map REL in a child, CHANGE the source, let the child read the whole
        mapping. The child must print the digest of one of the ALLOWED byte
        strings, or die of SIGBUS (the kernel's answer to a failed page-in)."""
        child = subprocess.Popen([sys.executable, "-c", MMAP_CHILD, self.mp(*rel)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        try:
            ready, _, _ = select.select([child.stdout], [], [], 60)
            if not ready or child.stdout.readline().strip() != "ready":
                child.stdin.close()
                self.fail("the mapping reader could not start: " + child.stderr.read())
            seen = "source changed: " + rel[0]
            before = self.m.log().count(seen)
            change()
            # the child reads once the daemon's notifier has seen the change
            wait_for(lambda: self.m.log().count(seen) > before, DEADLINE, what=seen)
            out, err = child.communicate("go\n", timeout=60)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        self.m.check_alive()
        if child.returncode == -signal.SIGBUS:
            print("\n%s: the mapping reader got SIGBUS" % "/".join(rel), file=sys.stderr)
            return "sigbus"
        self.assertEqual(child.returncode, 0, err)
        digests = {hashlib.sha256(b).hexdigest() + " %d" % len(b) for b in allowed}
        self.assertIn(out.strip(), digests, "the mapping held neither old nor new bytes")
        which = [i for i, b in enumerate(allowed)
                 if hashlib.sha256(b).hexdigest() + " %d" % len(b) == out.strip()]
        print("\n%s: the mapping reader saw the %s bytes" % (
            "/".join(rel), "old" if which[0] == 0 else "new"), file=sys.stderr)
        return "bytes"

    def test_mmap_of_npy_data_while_source_truncated(self):
        old = self.arr.tobytes()
        self.mapped_reader(("m.npy", "data"),
                           lambda: os.truncate(self.src.join("m.npy"), 4096), [old])

    def test_mmap_of_ra_data_while_source_truncated(self):
        old = self.arr.tobytes()
        self.mapped_reader(("m.ra", "data"),
                           lambda: os.truncate(self.src.join("m.ra"), 4096), [old])

    def test_mmap_of_npy_data_while_source_replaced_by_rename(self):
        old, new_arr = self.arr.tobytes(), self.arr[::-1].copy()
        self.mapped_reader(("m.npy", "data"),
                           lambda: write_by_rename(self.src.join("m.npy"), npy_bytes(new_arr)),
                           [old, new_arr.tobytes()])

    def test_mmap_of_ra_view_while_source_rewritten_in_place(self):
        old = read(self.mp("m.ra", "m.ra"))
        new = ra_bytes(self.arr + 1)
        self.mapped_reader(("m.ra", "m.ra"), lambda: write(self.src.join("m.ra"), new),
                           [old, new])

    def test_mmap_of_plain_file_while_source_deleted(self):
        buf = os.urandom(1 << 20)
        write(self.src.join("blob.bin"), buf)
        wait_for(lambda: os.path.isfile(self.mp("blob.bin")), DEADLINE, what="blob.bin")
        self.mapped_reader(("blob.bin",), lambda: os.unlink(self.src.join("blob.bin")), [buf])


# -- folders and the daemon itself --------------------------------------------
class SubFolderDeletedTest(FaultCase):
    arr = np.arange(100000, dtype="<i4")

    def populate(self):
        os.makedirs(self.src.join("sub", "deeper"))
        write(self.src.join("sub", "deeper", "a.ra"), ra_bytes(self.arr))
        write(self.src.join("sub", "a.npy"), npy_bytes(self.arr))
        write(self.src.join("keep.ra"), ra_bytes(self.arr))

    def test_deleted_sub_folder_vanishes_and_open_readers_stay_safe(self):
        fd = os.open(self.mp("sub", "deeper", "a.ra", "data"), os.O_RDONLY)
        dfd = os.open(self.mp("sub", "deeper"), os.O_RDONLY | os.O_DIRECTORY)
        try:
            self.assertEqual(os.pread(fd, 4096, 0), self.arr.tobytes()[:4096])
            shutil.rmtree(self.src.join("sub"))
            wait_for(lambda: "sub" not in os.listdir(self.m.mountpoint), DEADLINE,
                     what="sub to leave the listing")
            # the listing is read anew at once; the kernel's cached names
            # go when the notifier thread has handled the deletion
            wait_for(lambda: not os.path.lexists(self.mp("sub", "deeper", "a.ra", "data")),
                     DEADLINE, what="sub/deeper/a.ra/data to go")
            with self.assertRaises(FileNotFoundError):
                os.stat(self.mp("sub", "deeper", "a.ra", "data"))
            got, err = read_fd_to_end(fd)
            self.assertEqual(got, self.arr.tobytes()[:len(got)])
            if err is None:
                self.assertEqual(len(got), self.arr.nbytes, "a silent short read")
            try:  # a held directory: empty, ENOENT or EIO, but no crash
                os.listdir(dfd)
            except OSError as e:
                self.assertIn(e.errno, (errno.ENOENT, errno.EIO, errno.ESTALE))
        finally:
            os.close(fd)
            os.close(dfd)
        self.m.check_alive()
        self.assertEqual(read(self.mp("keep.ra", "data")), self.arr.tobytes())
        # the folder comes back with new content
        os.mkdir(self.src.join("sub"))
        write(self.src.join("sub", "b.ra"), ra_bytes(self.arr[:10]))
        wait_for(lambda: os.path.isdir(self.mp("sub", "b.ra")), DEADLINE, what="sub/b.ra")
        self.assertEqual(read(self.mp("sub", "b.ra", "data")), self.arr[:10].tobytes())


class KilledDaemonTest(unittest.TestCase):
    def test_sigkill_then_fusermount_u_then_a_new_mount_on_the_same_point(self):
        src, mnt = TempDir(), TempDir("arrayfs-mnt-")
        self.addCleanup(src.close)
        self.addCleanup(mnt.close)
        arr = np.arange(5000, dtype="<u2")
        write(src.join("a.ra"), ra_bytes(arr))
        m = mountlib.Mount(src.path, mnt.path)
        self.addCleanup(m.cleanup)
        m.start()
        fd = os.open(m.path("a.ra", "data"), os.O_RDONLY)
        try:
            self.assertEqual(os.pread(fd, 100, 0), arr.tobytes()[:100])
            os.kill(m.proc.pid, signal.SIGKILL)
            self.assertEqual(m.proc.wait(timeout=10), -signal.SIGKILL)
        finally:
            try:
                os.close(fd)  # the flush fails with ENOTCONN once the daemon is gone
            except OSError as e:
                self.assertEqual(e.errno, errno.ENOTCONN)
        with self.assertRaises(OSError) as cm:  # statfs is never cached
            os.statvfs(mnt.path)
        self.assertEqual(cm.exception.errno, errno.ENOTCONN)
        r = subprocess.run(["fusermount3", "-u", mnt.path], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(is_mounted(mnt.path))
        self.assertEqual(os.listdir(mnt.path), [])
        with mountlib.mount(src.path, mnt.path) as m2:
            self.assertEqual(read(m2.path("a.ra", "data")), arr.tobytes())


# -- resources over many requests ---------------------------------------------
class ManyCyclesTest(FaultCase):
    arr = np.arange(3000, dtype=">f8").reshape(50, 60)

    def populate(self):
        write(self.src.join("a.npy"), npy_bytes(self.arr))
        write(self.src.join("b.ra"), ra_bytes(self.arr.astype("<i4")))
        write(self.src.join("plain.txt"), b"hello\n" * 100)

    def test_ten_thousand_open_read_close_cycles_leak_no_fd_and_little_memory(self):
        want = {}
        for rel in [("a.npy", "data"), ("a.npy", "a.ra"), ("a.npy", "shape"),
                    ("b.ra", "data"), ("b.ra", "b.npy"), ("b.ra", "header"),
                    ("plain.txt",)]:
            want[self.mp(*rel)] = read(self.mp(*rel))
        self.assertEqual(want[self.mp("a.npy", "data")], self.arr.tobytes())
        paths = sorted(want)
        pid = self.m.proc.pid

        def cycles(n, seed):
            rng = random.Random(seed)
            for _ in range(n):
                p = rng.choice(paths)
                fd = os.open(p, os.O_RDONLY)
                try:
                    off = rng.randrange(0, len(want[p]) + 1)
                    # drop the page cache so the read reaches the daemon
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                    if os.pread(fd, 4096, off) != want[p][off:off + 4096]:
                        self.fail("%s at %d: wrong bytes" % (p, off))
                finally:
                    os.close(fd)

        cycles(2000, 1)  # warm up: caches and worker threads reach their steady size
        fds0, rss0 = fd_count(pid), rss_kib(pid)
        t0 = time.monotonic()
        cycles(CYCLES, 2)
        secs = time.monotonic() - t0
        fds1, rss1 = fd_count(pid), rss_kib(pid)
        bound = 96 * 1024 if sanitized(pid) else 16 * 1024
        print("\n%d cycles in %.1f s: daemon fds %d -> %d, RSS %d -> %d KiB (bound +%d)"
              % (CYCLES, secs, fds0, fds1, rss0, rss1, bound), file=sys.stderr)
        # a new worker thread brings its splice pipe (2 fds): allow a few,
        # never one a cycle
        self.assertLessEqual(fds1, fds0 + 8, "the daemon's fd count grew: %s" % fd_targets(pid))
        self.assertLess(rss1 - rss0, bound, "the daemon's RSS grew by %d KiB" % (rss1 - rss0))


class RandomReadersTest(FaultCase):
    """8 threads, random files and offsets, for THREAD_SECONDS."""

    def populate(self):
        rng = np.random.default_rng(7)
        self.sources = {
            "c.npy": npy_bytes(rng.standard_normal((300, 200))),
            "f_be.npy": npy_bytes(np.asfortranarray(
                rng.integers(-10**9, 10**9, (123, 457)).astype(">i4"))),
            "cplx.npy": npy_bytes(rng.standard_normal(50000).astype(">c8")),
            "r.ra": ra_bytes(rng.integers(0, 255, (999, 77)).astype("<u2")),
        }
        for name, buf in self.sources.items():
            write(self.src.join(name), buf)

    def targets(self):
        want = {}
        for name, buf in self.sources.items():
            base = name.rsplit(".", 1)[0]
            a = (expect.ArrayDir.of_ra(buf, base, name) if name.endswith(".ra")
                 else expect.ArrayDir.of_npy(buf, base, name))
            for view in ("data", base + ".npy", base + ".ra"):
                exact = a.exact(view)
                if exact is not None:
                    want[self.mp(name, view)] = exact
        return want

    def test_eight_threads_random_offsets_every_byte_checked(self):
        want = self.targets()
        # numpy itself is the judge of the expected data
        arr = np.load(io.BytesIO(self.sources["f_be.npy"]))
        self.assertEqual(want[self.mp("f_be.npy", "data")], arr.tobytes(order="A"))
        errors, counts = [], [0] * THREADS
        stop = time.monotonic() + THREAD_SECONDS
        paths = sorted(want)

        def reader(t):
            rng = random.Random(100 + t)
            fds = {}
            try:
                for p in paths:
                    fds[p] = os.open(p, os.O_RDONLY)
                while time.monotonic() < stop and not errors:
                    p = rng.choice(paths)
                    w = want[p]
                    size = rng.choice((1, 3, 8, 4095, 4096, 65536, 131073,
                                       rng.randint(1, 400000)))
                    off = rng.randrange(0, len(w) + 2)
                    if rng.random() < 0.1:
                        os.posix_fadvise(fds[p], 0, 0, os.POSIX_FADV_DONTNEED)
                    got = os.pread(fds[p], size, off)
                    if got != w[off:off + size]:
                        errors.append("thread %d: %s [%d, +%d): first difference at +%d"
                                      % (t, p, off, size,
                                         expect.first_difference(got, w[off:off + size])))
                    counts[t] += 1
            except Exception as e:
                errors.append("thread %d: %r" % (t, e))
            finally:
                for fd in fds.values():
                    os.close(fd)

        threads = [threading.Thread(target=reader, args=(t,), daemon=True)
                   for t in range(THREADS)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(JOIN_DEADLINE)
        self.assertFalse(any(th.is_alive() for th in threads),
                         "readers still blocked %.0f s after the end" % JOIN_DEADLINE)
        print("\n%d reads by %d threads in %.0f s" % (sum(counts), THREADS, THREAD_SECONDS),
              file=sys.stderr)
        self.assertEqual(errors, [], "\n".join(errors[:20]))
        self.assertGreater(min(counts), 0)


# -- a source file system that fails reads ------------------------------------
EIOFS_C = r"""
/* A read-only passthrough of one folder whose reads fail with EIO:
 * files named "eio-all*" fail every read, files named "eio-*" fail every
 * read that reaches byte 4096 or beyond. direct_io keeps reads exact. */
#define FUSE_USE_VERSION 31
#include <fuse.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char root[PATH_MAX];

static void full(char *out, const char *path)
{
	snprintf(out, PATH_MAX, "%s%s", root, path);
}

static int e_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	char p[PATH_MAX];
	(void)fi;
	full(p, path);
	return lstat(p, st) ? -errno : 0;
}

static int e_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		     struct fuse_file_info *fi, enum fuse_readdir_flags fl)
{
	char p[PATH_MAX];
	(void)off; (void)fi; (void)fl;
	full(p, path);
	DIR *d = opendir(p);
	if (!d)
		return -errno;
	struct dirent *e;
	while ((e = readdir(d)))
		fill(buf, e->d_name, NULL, 0, 0);
	closedir(d);
	return 0;
}

static int e_open(const char *path, struct fuse_file_info *fi)
{
	char p[PATH_MAX];
	full(p, path);
	int fd = open(p, O_RDONLY);
	if (fd < 0)
		return -errno;
	fi->fh = (uint64_t)fd;
	fi->direct_io = 1;
	return 0;
}

static int e_read(const char *path, char *buf, size_t size, off_t off,
		  struct fuse_file_info *fi)
{
	const char *name = strrchr(path, '/') + 1;
	if (strncmp(name, "eio-all", 7) == 0)
		return -EIO;
	if (strncmp(name, "eio-", 4) == 0 && off + (off_t)size > 4096)
		return -EIO;
	ssize_t n = pread((int)fi->fh, buf, size, off);
	return n < 0 ? -errno : (int)n;
}

static int e_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	close((int)fi->fh);
	return 0;
}

static const struct fuse_operations ops = {
	.getattr = e_getattr, .readdir = e_readdir, .open = e_open,
	.read = e_read, .release = e_release,
};

int main(int argc, char **argv)
{
	/* usage: eiofs BACKING_DIR -f MOUNTPOINT */
	if (argc < 3 || !realpath(argv[1], root))
		return 2;
	argv[1] = argv[0];
	return fuse_main(argc - 1, argv + 1, &ops, NULL);
}
"""


class EioFsCase(unittest.TestCase):
    """The source folder is a tiny FUSE file system (built here from
    EIOFS_C) over the folder `self.back`, failing reads of files named
    eio-*. device-mapper's "error" target would be the classic tool, but
    this kernel has no device-mapper."""

    arr = np.arange(20000, dtype="<i8")  # 160000 bytes: data well past 4096

    def setUp(self):
        self.work = TempDir("arrayfs-eio-")
        self.addCleanup(self.work.close)
        back = self.back = self.work.join("back")
        os.mkdir(back)
        write(os.path.join(back, "eio-late.ra"), ra_bytes(self.arr))
        write(os.path.join(back, "eio-late.npy"), npy_bytes(self.arr))
        write(os.path.join(back, "eio-all.ra"), ra_bytes(self.arr))
        write(os.path.join(back, "eio-all.txt"), b"never readable\n")
        write(os.path.join(back, "fine.ra"), ra_bytes(self.arr))
        exe = self.work.join("eiofs")
        csrc = self.work.join("eiofs.c")
        with open(csrc, "w") as f:
            f.write(EIOFS_C)
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"],
                               capture_output=True, text=True, check=True).stdout.split()
        subprocess.run(["cc", "-O1", "-o", exe, csrc] + flags, check=True)
        self.emnt = self.work.join("eiomnt")
        os.mkdir(self.emnt)
        self.eiofs = subprocess.Popen([exe, back, "-f", self.emnt],
                                      stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.addCleanup(self.stop_eiofs)
        self.assertTrue(mountlib.wait_mounted(self.emnt, self.eiofs, DEADLINE),
                        "the EIO file system did not mount")
        self.m = mountlib.Mount(self.emnt)
        self.addCleanup(self.m.cleanup)
        self.m.start()

    def stop_eiofs(self):
        self.m.cleanup()  # arrayfs first: it holds files of eiofs open
        subprocess.run(["fusermount3", "-u", self.emnt], capture_output=True)
        try:
            self.eiofs.wait(timeout=10)
        except subprocess.TimeoutExpired:
            subprocess.run(["fusermount3", "-uz", self.emnt], capture_output=True)
            self.eiofs.kill()
            self.eiofs.wait()

    def read_until_eio(self, path):
        fd = os.open(path, os.O_RDONLY)
        try:
            return read_fd_to_end(fd, 0, 65536)
        finally:
            os.close(fd)



class EioSourceTest(EioFsCase):
    def test_eio_sources_give_eio_or_correct_bytes_and_the_rest_is_served(self):
        # the source really fails, as designed
        with self.assertRaises(OSError) as cm:
            read(os.path.join(self.emnt, "eio-all.txt"))
        self.assertEqual(cm.exception.errno, errno.EIO)

        names = set(os.listdir(self.m.mountpoint))
        self.assertEqual(names, {"eio-late.ra", "eio-late.npy", "eio-all.ra", "eio-all.txt",
                                 "fine.ra"}, "a failing file hid another entry")
        self.assertEqual(read(self.m.path("fine.ra", "data")), self.arr.tobytes())
        want = self.arr.tobytes()
        for name in ("eio-late.ra", "eio-late.npy"):
            with self.subTest(name=name):
                p = self.m.path(name)
                if os.path.isdir(p):  # header readable: an array whose data fails
                    got, err = self.read_until_eio(os.path.join(p, "data"))
                    self.assertEqual(err, errno.EIO,
                                     "%s/data: the source fails past byte 4096, yet the read "
                                     "ended without EIO after %d of %d bytes (a silent short "
                                     "read)" % (name, len(got), len(want)))
                    self.assertEqual(got, want[:len(got)])
                else:  # a plain file of the source bytes, or EIO
                    got, err = self.read_until_eio(p)
                    self.assertEqual(err, errno.EIO)
                self.m.check_alive()
        for name in ("eio-all.ra", "eio-all.txt"):
            with self.subTest(name=name):
                p = self.m.path(name)
                self.assertTrue(os.path.isfile(p), "an unreadable source is a plain file")
                got, err = self.read_until_eio(p)
                self.assertEqual((got, err), (b"", errno.EIO))
        self.m.check_alive()
        self.m.umount()


class NetworkSourceTest(EioFsCase):
    """A source on a FUSE file system stands for NFS and the like: inotify
    there sees no change made around it (here: in the folder under it), so
    arrayfs must not let the kernel cache such files for long."""

    def test_a_change_inotify_cannot_see_shows_within_seconds(self):
        self.assertEqual(read(self.m.path("fine.ra", "data")), self.arr.tobytes())
        new = (self.arr * 3)[::-1].copy()
        write_by_rename(os.path.join(self.back, "fine.ra"), ra_bytes(new))
        wait_for(lambda: read(self.m.path("fine.ra", "data")) == new.tobytes(), DEADLINE,
                 what="the new bytes of a source changed behind a network-like file system")
        self.m.check_alive()
        self.m.umount()


if __name__ == "__main__":
    mountlib.main()
