# SPDX-License-Identifier: MIT
"""An NFS client that keeps its file handles: libnfs (libnfs13, through
ctypes) with one NFSv4 mount, files opened once and read again later, so a
test can ask whether a handle taken before a server restart still reads.
Run as a child in the server's network namespace (it keeps the namespace
alive while ganesha restarts); one command a line on stdin, one answer a
line on stdout:

    mount SERVER EXPORT        -> ok | err MESSAGE
    open NAME PATH             -> ok | err MESSAGE   (PATH under the export)
    read NAME                  -> ok SHA256 LENGTH | err MESSAGE
    pread NAME OFFSET COUNT    -> ok HEX | err MESSAGE (errno N)  (one nfs_pread)
    close NAME                 -> ok
    fh NAME                    -> ok HEX (the file handle the server gave)
    reset                      -> ok  (a new context: mount again after it)

    p = NfsProbe(netns_path); p.call("mount 127.0.0.1 /arrays"); ...; p.close()
"""
import ctypes
import hashlib
import os
import subprocess
import sys

LIB = "libnfs.so.13"
NFS_V4 = 4
TIMEOUT_MS = 10000
CHUNK = 1 << 20


class NfsFh(ctypes.Structure):
    _fields_ = [("len", ctypes.c_int), ("val", ctypes.POINTER(ctypes.c_ubyte))]


class NfsProbe:
    """The probe as a child process in network namespace NETNS."""

    def __init__(self, netns):
        self.proc = subprocess.Popen(["nsenter", "--net=" + netns, sys.executable,
                                      os.path.abspath(__file__)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)

    def netns(self):
        return "/proc/%d/ns/net" % self.proc.pid

    def call(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            raise AssertionError("nfs probe died (status %s)" % self.proc.poll())
        return answer.rstrip("\n")

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()


def serve():
    lib = ctypes.CDLL(LIB)
    lib.nfs_init_context.restype = ctypes.c_void_p
    lib.nfs_get_error.restype = ctypes.c_char_p
    lib.nfs_get_error.argtypes = [ctypes.c_void_p]
    lib.nfs_mount.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    lib.nfs_open.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                             ctypes.POINTER(ctypes.c_void_p)]
    # libnfs 4: nfs_pread(nfs, fh, uint64 offset, uint64 count, void *buf)
    lib.nfs_pread.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64,
                              ctypes.c_uint64, ctypes.c_void_p]
    lib.nfs_set_version.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.nfs_set_timeout.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.nfs_get_fh.restype = ctypes.POINTER(NfsFh)
    lib.nfs_get_fh.argtypes = [ctypes.c_void_p]
    lib.nfs_close.argtypes = [ctypes.c_void_p, ctypes.c_void_p]

    def new_context():
        c = lib.nfs_init_context()
        lib.nfs_set_version(c, NFS_V4)
        lib.nfs_set_timeout(c, TIMEOUT_MS)
        return c
    ctx = new_context()
    files = {}
    buf = ctypes.create_string_buffer(CHUNK)

    def err(rc=None):
        """The context's last error; with RC (libnfs's -errno) its errno too."""
        msg = "err " + (lib.nfs_get_error(ctx) or b"?").decode("utf-8", "replace")
        return msg if rc is None else "%s (errno %d)" % (msg, -rc)

    for line in sys.stdin:
        words = line.split()
        if words[0] == "mount":
            out = "ok" if lib.nfs_mount(ctx, words[1].encode(), words[2].encode()) == 0 else err()
        elif words[0] == "open":
            fh = ctypes.c_void_p()
            rc = lib.nfs_open(ctx, words[2].encode(), os.O_RDONLY, ctypes.byref(fh))
            if rc == 0:
                files[words[1]] = fh
                out = "ok"
            else:
                out = err(rc)
        elif words[0] == "pread":
            count = int(words[3])
            one = ctypes.create_string_buffer(max(count, 1))
            n = lib.nfs_pread(ctx, files[words[1]], int(words[2]), count, one)
            out = err(n) if n < 0 else "ok " + one.raw[:n].hex()
        elif words[0] == "close":
            lib.nfs_close(ctx, files.pop(words[1]))
            out = "ok"
        elif words[0] == "fh":
            fh = lib.nfs_get_fh(files[words[1]]).contents
            out = "ok " + bytes(fh.val[:fh.len]).hex()
        elif words[0] == "reset":
            # the old context's connection died with the server: dropped,
            # not destroyed (its teardown talks to the server)
            ctx, files = new_context(), {}
            out = "ok"
        else:
            h, off = hashlib.sha256(), 0
            while True:
                n = lib.nfs_pread(ctx, files[words[1]], off, CHUNK, buf)
                if n <= 0:
                    break
                h.update(buf.raw[:n])
                off += n
            out = err() if n < 0 else "ok %s %d" % (h.hexdigest(), off)
        print(out.replace("\n", " "), flush=True)


if __name__ == "__main__":
    serve()
