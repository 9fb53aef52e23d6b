# SPDX-License-Identifier: MIT
"""Mount arrayfs for a test, and make sure nothing is ever left behind.

Model: libfuse test/cases/lib/common.sh and sshfs test/util.py.

    with mount(SOURCE) as m:          # foreground daemon, stderr -> m.log_path
        open(m.path("x.npy", "data"))
    # leaving the block: fusermount3 -u, the daemon must exit 0 within a
    # deadline, and its log must hold no sanitizer report.

Environment (set by tests/meson.build and tests/mount/meson.build):
  ARRAYFS_BIN   the daemon to run
  AF_FIXTURES   the fixture root; gen_mount.py's corpus is in AF_FIXTURES/mount
  AF_REFERENCE  the RawArray reference samples

Side effects: temp folders under /tmp (removed by cleanup); an atexit hook
and a SIGTERM handler lazily unmount (`fusermount3 -uz`) and kill every
daemon this module started, so an interrupted or failing test leaves no mount.
"""
import atexit
import errno
import io
import mmap
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

MOUNT_DEADLINE = 20.0   # seconds for a mount to appear
EXIT_DEADLINE = 20.0    # seconds for the daemon to exit after unmount
STUCK_DEADLINE = 3.0    # seconds after SIGKILL before its connection is aborted
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "runtime error:", "LeakSanitizer",
                   "ERROR: ThreadSanitizer", "WARNING: ThreadSanitizer")

_live = []  # every Mount not yet cleaned up


def env_path(name):
    """The path in environment variable NAME; fails clearly when unset."""
    value = os.environ.get(name)
    if not value:
        raise RuntimeError("%s is not set: run through `meson test` "
                           "(or set it by hand)" % name)
    return value


def arrayfs_bin():
    return env_path("ARRAYFS_BIN")


def arrayinfo_bin():
    """arrayinfo of the daemon's build (its src/tools/ beside src/daemon/)."""
    return os.path.join(os.path.dirname(os.path.dirname(arrayfs_bin())),
                        "tools", "arrayinfo")


def arrayrefs_bin():
    """arrayrefs of the daemon's build, beside arrayinfo."""
    return os.path.join(os.path.dirname(arrayinfo_bin()), "arrayrefs")


def fixtures(*parts):
    """A path inside the gen_mount.py corpus folder."""
    return os.path.join(env_path("AF_FIXTURES"), "mount", *parts)


def reference(*parts):
    return os.path.join(env_path("AF_REFERENCE"), *parts)


def _unescape_mountinfo(field):
    # mountinfo escapes space, tab, newline and backslash as \ooo
    out, i = [], 0
    while i < len(field):
        code = field[i + 1:i + 4]
        if field[i] == "\\" and len(code) == 3 and code.isdigit():
            out.append(chr(int(code, 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mounts_at(mountpoint):
    """The mounts on MOUNTPOINT, oldest first, as (fs type, 'MAJ:MIN')."""
    mountpoint = os.path.realpath(mountpoint)
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if _unescape_mountinfo(fields[4]) != mountpoint:
                continue
            sep = fields.index("-")
            found.append((fields[sep + 1], fields[2]))
    return found


def mounted_fs(mountpoint):
    """The fs type mounted at MOUNTPOINT (e.g. 'fuse.arrayfs'), or None."""
    found = mounts_at(mountpoint)
    return found[-1][0] if found else None


def abort_connection(device):
    """Abort the FUSE connection of DEVICE ('MAJ:MIN') through fusectl: the
    one way out of a mount whose daemon is stuck on its own requests.
    Mounts fusectl if needed; returns whether the abort was written."""
    conns = "/sys/fs/fuse/connections"
    if not os.path.exists(os.path.join(conns, device.split(":")[1])):
        subprocess.run(["mount", "-t", "fusectl", "none", conns],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with open(os.path.join(conns, device.split(":")[1], "abort"), "w") as f:
            f.write("1")
        return True
    except OSError:
        return False


def is_mounted(mountpoint):
    return mounted_fs(mountpoint) is not None


def wait_for(predicate, deadline=10.0, interval=0.02, what="condition"):
    """Poll PREDICATE until it returns a true value (returned) or DEADLINE
    seconds pass (AssertionError naming WHAT). Exceptions count as false.
    Only for what nothing signals (a source change showing through the
    mount); a mount appearing or a process exiting has wait_mounted and
    wait_pid_exit."""
    end = time.monotonic() + deadline
    last = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except Exception as e:  # the metadata may be in flux
            last = e
        if time.monotonic() > end:
            raise AssertionError("timed out after %.0f s waiting for %s%s" % (
                deadline, what, " (last error: %r)" % last if last else ""))
        time.sleep(interval)


def wait_mounted(mountpoint, proc=None, deadline=MOUNT_DEADLINE):
    """Wait until MOUNTPOINT shows in mountinfo. Woken by the kernel's
    notice of a mount table change (POLLPRI on /proc/self/mountinfo) and by
    the exit of PROC (a Popen, through its pidfd), never by a timer.
    Returns True once mounted, False if PROC exits first or DEADLINE passes."""
    end = time.monotonic() + deadline
    with open("/proc/self/mountinfo", "rb") as table:  # opened before the check
        waiter = select.poll()
        waiter.register(table, select.POLLPRI | select.POLLERR)
        pidfd = os.pidfd_open(proc.pid) if proc is not None else None
        if pidfd is not None:
            waiter.register(pidfd, select.POLLIN)
        try:
            while not is_mounted(mountpoint):
                left = end - time.monotonic()
                if (proc is not None and proc.poll() is not None) or left <= 0:
                    return False
                waiter.poll(left * 1000)
            return True
        finally:
            if pidfd is not None:
                os.close(pidfd)


def wait_pid_exit(pid, deadline=EXIT_DEADLINE):
    """Wait for process PID (any process, not only a child) to exit, woken
    by its pidfd. Returns whether it exited within DEADLINE seconds."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([pidfd], [], [], deadline)[0])
    finally:
        os.close(pidfd)


class MountError(AssertionError):
    """A mount that could not be made or did not end cleanly: a test failure."""


class Mount:
    """One foreground arrayfs daemon serving SOURCE at MOUNTPOINT.

    usage: m = Mount(source, mountpoint=None, args=()); m.start(); ...; m.umount()
    mountpoint None: a new empty folder under /tmp, removed by cleanup().
    """

    def __init__(self, source, mountpoint=None, args=()):
        self.source = source
        self.args = list(args)
        self._own_dirs = []
        if mountpoint is None:
            mountpoint = tempfile.mkdtemp(prefix="arrayfs-mnt-", dir="/tmp")
            self._own_dirs.append(mountpoint)
        self.mountpoint = os.path.realpath(mountpoint)
        logdir = tempfile.mkdtemp(prefix="arrayfs-log-", dir="/tmp")
        self._own_dirs.append(logdir)
        # saved inflate indexes go to a folder of this mount's own, never to
        # the machine's cache (/var/cache/arrayfs for root), unless the test
        # chooses (index_dir=, no_index)
        if not any("index_dir" in a or "no_index" in a for a in self.args):
            self.args += ["-o", "index_dir=" + os.path.join(logdir, "index")]
        self.log_path = os.path.join(logdir, "daemon.log")
        self.proc = None
        self.returncode = None
        self.device = None  # 'MAJ:MIN' of the mount, once mounted

    # -- life cycle ---------------------------------------------------------
    def start(self, deadline=MOUNT_DEADLINE):
        """Start the daemon and wait until the mount shows in mountinfo.
        Raises MountError (with the log) if the daemon exits or time runs out."""
        cmd = [arrayfs_bin(), "-f"] + self.args + [self.source, self.mountpoint]
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT)
        _live.append(self)
        if not wait_mounted(self.mountpoint, self.proc, deadline):
            rc = self.proc.poll()
            if rc is not None:
                self.returncode = rc
                raise MountError("arrayfs exited with status %d before mounting %s:\n%s"
                                 % (rc, self.mountpoint, self.log()))
            raise MountError("%s not mounted after %.0f s:\n%s"
                             % (self.mountpoint, deadline, self.log()))
        self.device = mounts_at(self.mountpoint)[-1][1]
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def check_alive(self):
        """Raise MountError unless the daemon is still running and mounted."""
        if not self.alive():
            raise MountError("arrayfs died (status %s) while mounted:\n%s"
                             % (self.proc.poll(), self.log()))
        if not is_mounted(self.mountpoint):
            raise MountError("%s is no longer mounted:\n%s" % (self.mountpoint, self.log()))

    def umount(self, deadline=EXIT_DEADLINE):
        """fusermount3 -u, then require exit status 0 within DEADLINE and a
        log free of sanitizer reports. Always cleans up, even on failure."""
        try:
            self.check_alive()
            r = subprocess.run(["fusermount3", "-u", self.mountpoint],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise MountError("fusermount3 -u %s failed: %s" % (self.mountpoint, r.stderr))
            self.wait_exit(deadline)
        finally:
            self.cleanup()

    def wait_exit(self, deadline=EXIT_DEADLINE, expect=0):
        """Wait for the daemon to exit; require status EXPECT and a clean log."""
        try:
            self.returncode = self.proc.wait(timeout=deadline)
        except subprocess.TimeoutExpired:
            raise MountError("arrayfs still running %.0f s after unmount:\n%s"
                             % (deadline, self.log()))
        if self.returncode != expect:
            raise MountError("arrayfs exited with status %d, expected %d:\n%s"
                             % (self.returncode, expect, self.log()))
        self.check_log()

    def check_log(self):
        text = self.log()
        for mark in SANITIZER_MARKS:
            if mark in text:
                raise MountError("sanitizer report in the daemon log:\n" + text)

    def cleanup(self):
        """Lazy unmount, kill the daemon, remove temp folders. Idempotent."""
        if self.proc is not None and self.proc.poll() is None or is_mounted(self.mountpoint):
            subprocess.run(["fusermount3", "-uz", self.mountpoint],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=STUCK_DEADLINE)
            except subprocess.TimeoutExpired:
                # threads stuck on the mount's own requests outlive SIGKILL
                if self.device:
                    abort_connection(self.device)
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
        if getattr(self, "_log", None):
            self._log.close()
        self._final_log = self.log()  # log() still works once the file is gone
        for d in self._own_dirs:
            if not is_mounted(d):
                shutil.rmtree(d, ignore_errors=True)
        self._own_dirs = []
        if self in _live:
            _live.remove(self)

    # -- helpers ------------------------------------------------------------
    def path(self, *parts):
        return os.path.join(self.mountpoint, *parts)

    def log(self):
        """The daemon's stderr so far (kept after cleanup)."""
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return getattr(self, "_final_log", "")

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.umount()
        else:
            self.cleanup()
        return False


def mount(source, mountpoint=None, *args):
    """Mount SOURCE at MOUNTPOINT (a new /tmp folder if None) with extra
    daemon ARGS; returns a started Mount, usable as a context manager."""
    m = Mount(source, mountpoint, args)
    try:
        return m.start()
    except BaseException:
        m.cleanup()
        raise


def read_in_steps(path, step):
    """The whole of @p path, read @p step bytes a read (through the
    kernel's page cache and read-ahead)."""
    got = bytearray()
    with open(path, "rb", buffering=0) as f:
        while True:
            b = f.read(step)
            if not b:
                break
            got += b
    return bytes(got)


def read_direct(path, step):
    """The whole of @p path, read with O_DIRECT @p step bytes a read: the
    kernel sends each as 1 MiB reads at once, without its page cache."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, step)  # page-aligned, as O_DIRECT wants
    got = bytearray()
    try:
        while True:
            n = os.preadv(fd, [buf], len(got))
            got += buf[:n]
            if n < len(buf):
                break
    finally:
        os.close(fd)
        buf.close()
    return bytes(got)


def _cleanup_all():
    for m in list(_live):
        m.cleanup()


def _on_signal(signum, frame):
    _cleanup_all()
    sys.exit(128 + signum)


atexit.register(_cleanup_all)
signal.signal(signal.SIGTERM, _on_signal)
signal.signal(signal.SIGHUP, _on_signal)


class TempDir:
    """A folder under /tmp removed at close(). usage: d = TempDir(); d.path"""

    def __init__(self, prefix="arrayfs-src-"):
        self.path = tempfile.mkdtemp(prefix=prefix, dir="/tmp")

    def join(self, *parts):
        return os.path.join(self.path, *parts)

    def write(self, files):
        """Write FILES ({name: bytes}) into the folder."""
        for name, buf in files.items():
            with open(self.join(name), "wb") as f:
                f.write(buf)

    def close(self):
        shutil.rmtree(self.path, ignore_errors=True)


class MountCase(unittest.TestCase):
    """One mount shared by a TestCase class: SOURCE is mounted in setUpClass,
    each test ends by checking the daemon is alive, and tearDownClass
    unmounts and requires exit status 0.

    Subclasses set `source` (a path, or a callable returning one), or
    `make_source` (a staticmethod returning a TempDir that the class then
    owns as `cls.src` and removes after unmounting), and may set
    `mount_args`."""
    source = None
    make_source = None
    mount_args = ()

    @classmethod
    def setUpClass(cls):
        if cls.make_source is not None:
            cls.src = cls.make_source()
            cls.source = cls.src.path
        src = cls.source() if callable(cls.source) else cls.source
        cls.m = Mount(src, None, cls.mount_args)
        try:
            cls.m.start()
        except BaseException:
            cls.m.cleanup()
            if cls.make_source is not None:
                cls.src.close()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            cls.m.umount()
        finally:
            if cls.make_source is not None:
                cls.src.close()

    def tearDown(self):
        self.m.check_alive()

    def mp(self, *parts):
        return self.m.path(*parts)


class FreshMountCase(unittest.TestCase):
    """A new source folder and mount for every test: setUp makes `self.src`
    (a TempDir), calls populate() to fill it, mounts it as `self.m`;
    tearDown checks the daemon is alive and unmounts it (exit 0). Both are
    removed even when a test fails. Subclasses may set `mount_args`."""
    mount_args = ()

    def setUp(self):
        self.src = TempDir()
        self.addCleanup(self.src.close)
        self.populate()
        self.m = Mount(self.src.path, None, self.mount_args)
        self.addCleanup(self.m.cleanup)
        self.m.start()

    def populate(self):
        """Hook: write source files before the mount."""

    def tearDown(self):
        self.m.check_alive()
        self.m.umount()

    def mp(self, *parts):
        return self.m.path(*parts)


def check_all(testcase, items, fn, label=str, limit=40):
    """Run FN(item) for every item; fail TESTCASE once, listing every item
    whose check raised AssertionError or OSError (one line each), so a broken
    feature gives one readable failure instead of hundreds."""
    bad = []
    for item in items:
        try:
            fn(item)
        except (AssertionError, OSError) as e:
            msg = str(e).strip().split("\n")[0]
            bad.append("%s: %s: %s" % (label(item), type(e).__name__, msg[:300]))
    if bad:
        more = "\n  ... and %d more" % (len(bad) - limit) if len(bad) > limit else ""
        testcase.fail("%d of %d wrong:\n  %s%s" % (len(bad), len(items),
                                                   "\n  ".join(bad[:limit]), more))


def dask_cluster(testcase, memory_limit):
    """A dask.distributed client of a cluster of 2 worker processes (one
    thread each) on 127.0.0.1, closed at TESTCASE's cleanup; checks that
    both workers are there and local."""
    from dask.distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           host="127.0.0.1", dashboard_address=None,
                           memory_limit=memory_limit)
    testcase.addCleanup(cluster.close)
    client = Client(cluster)
    testcase.addCleanup(client.close)
    workers = client.scheduler_info()["workers"]
    testcase.assertEqual(len(workers), 2)
    for addr in workers:
        testcase.assertTrue(addr.startswith("tcp://127.0.0.1:"), addr)
    return client


def main():
    """unittest.main with verbose output, for the test files' __main__."""
    unittest.main(verbosity=2)


def walk(root):
    """{relpath: 'dir'|'file'|'link'|'other'} of everything under ROOT
    (ROOT itself is ""), without following symlinks."""
    out = {"": "dir"}

    def visit(path, rel):
        with os.scandir(path) as it:
            for e in it:
                r = e.name if rel == "" else rel + "/" + e.name
                if e.is_symlink():
                    out[r] = "link"
                elif e.is_dir(follow_symlinks=False):
                    out[r] = "dir"
                    visit(e.path, r)
                elif e.is_file(follow_symlinks=False):
                    out[r] = "file"
                else:
                    out[r] = "other"
    visit(root, "")
    return out


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, buf):
    """Write BUF to PATH in place (same inode when it exists)."""
    with open(path, "wb") as f:
        f.write(buf)


def write_by_rename(path, buf):
    """Replace PATH by a new file holding BUF, renamed over it."""
    write(path + ".tmp", buf)
    os.replace(path + ".tmp", path)


def npy_bytes(arr):
    """ARR as numpy.save writes it."""
    f = io.BytesIO()
    np.save(f, arr)
    return f.getvalue()


def read_fd_to_end(fd, start=0, step=100000):
    """Read FD from START to EOF with pread; returns (bytes, errno or None)."""
    got, off = bytearray(), start
    while True:
        try:
            chunk = os.pread(fd, step, off)
        except OSError as e:
            if e.errno != errno.EIO:
                raise
            return bytes(got), errno.EIO
        if not chunk:
            return bytes(got), None
        got += chunk
        off += len(chunk)
