#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""scripts/bench's sharing rows: one array's `data` read through a server
serving an arrayfs mount, against the same server serving the source
folder itself (the .npy file). KIND picks the server and its client:

  nfs   nfs-ganesha (tests/mount/lib/nfsserver.py: examples/ganesha.conf,
        NFSv4, in a network namespace of its own), `nfs-cat URL`;
  smb   smbd (smbserver.py: examples/smb.conf, guest, read-only),
        `smbclient -c 'get PATH /dev/null'`;
  http  nginx (httpserver.py: examples/nginx.conf, sendfile on),
        `curl -o /dev/null URL`.

Each run: a fresh arrayfs mount and a fresh server, the source read first
(page cache warm, as for the plain folder), then the client timed once
(the first read after mounting: every byte through the daemon) and again
(from the mount's page cache, as the plain file comes from the source's);
then a fresh server on the folder, the .npy timed. The bytes through the
mount are checked once against the .npy's data. With BENCH_PASSTHROUGH
set to a build of libfuse's passthrough_ll, each run also times the same
server over a fresh passthrough_ll mount of the folder (-o cache=always),
the .npy first read and again: what any FUSE file system costs the server
here. Prints MiB/s of the best run of each and every run, as `name value`
lines for scripts/bench.

usage: bench_share.py KIND ARRAYFS SOURCE_DIR NPY_NAME RUNS [ARRAYFS_OPTION...]
(as root)
"""
import hashlib
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tests", "mount", "lib"))
import numpy as np  # noqa: E402

from httpserver import HttpServer  # noqa: E402
from mountlib import Mount  # noqa: E402
from nfsserver import NfsServer  # noqa: E402
from smbserver import SmbServer  # noqa: E402

SHARE = "arrays"


def let_others_in(path):
    """Make every folder above PATH searchable by others (o+x): smbd's
    guest and nginx's workers serve the plain folder as other users, and
    the bench's temporary folder is private (0700)."""
    d = os.path.dirname(os.path.abspath(path))
    while d != "/":
        mode = os.stat(d).st_mode
        if not mode & 0o001:
            os.chmod(d, (mode & 0o7777) | 0o001)
        d = os.path.dirname(d)


def read_source(path):
    with open(path, "rb") as f:
        while f.read(1 << 20):
            pass


class Nfs:
    """nfs-cat writes to its stdout."""
    stdout = True

    def __init__(self, folder):
        self.srv = NfsServer(folder)

    def argv(self, rel, out):
        return ["nsenter", "--net=" + self.srv.netns(), "nfs-cat", self.srv.url(rel)]


class Smb:
    """smbclient writes to a file."""
    stdout = False

    def __init__(self, folder):
        self.srv = SmbServer({SHARE: folder})

    def argv(self, rel, out):
        return ["smbclient", "//127.0.0.1/%s" % SHARE, "-p", str(self.srv.port),
                "--configfile=" + self.srv.client_conf, "-N",
                "-c", "get %s %s" % (rel, out)]


class Http:
    stdout = False

    def __init__(self, folder):
        self.srv = HttpServer(folder)

    def argv(self, rel, out):
        return ["curl", "-sSf", "-o", out, self.srv.url(rel)]


KINDS = {"nfs": Nfs, "smb": Smb, "http": Http}


def fetch(server, rel, out):
    """Run the client copying REL to OUT; its wall time in seconds."""
    with open(out if server.stdout else os.devnull, "wb") as sink:
        t = time.monotonic()
        r = subprocess.run(server.argv(rel, out), stdout=sink,
                           stderr=subprocess.PIPE, timeout=600)
        dt = time.monotonic() - t
    if r.returncode != 0:
        raise SystemExit("reading %s failed: %s\n%s" % (rel, r.stderr, server.srv.log()))
    return dt


def digest_through(server, rel):
    """sha256 of REL as the client reads it (through a temporary file:
    smbclient writes only to files)."""
    out = os.path.join(server.srv.workdir, "check.bin")
    fetch(server, rel, out)
    h = hashlib.sha256()
    with open(out, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    os.unlink(out)
    return h.hexdigest()


def passthrough_times(pll, make, src, name, mib):
    """(first read, again) in MiB/s of NAME through the server over a fresh
    passthrough_ll mount of SRC."""
    mnt = tempfile.mkdtemp(prefix="bench-pll-")
    let_others_in(os.path.join(mnt, "x"))
    proc = subprocess.Popen([pll, "-f", "-o", "source=" + src, "-o", "allow_other",
                             "-o", "cache=always", mnt], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if os.path.ismount(mnt):
                break
            time.sleep(0.1)
        else:
            raise SystemExit("passthrough_ll did not mount %s" % mnt)
        server = make(mnt)
        server.srv.start()
        try:
            read_source(os.path.join(src, name))
            first = mib / fetch(server, name, "/dev/null")
            read_source(os.path.join(src, name))
            again = mib / fetch(server, name, "/dev/null")
        finally:
            server.srv.stop()
    finally:
        subprocess.run(["fusermount3", "-u", mnt], stderr=subprocess.DEVNULL)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        os.rmdir(mnt)
    return first, again


def data_digest(path):
    a = np.load(path, mmap_mode="r")
    h = hashlib.sha256()
    with open(path, "rb") as f:
        f.seek(a.offset)
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest(), a.nbytes


def main():
    kind, arrayfs, src, name, runs = (sys.argv[1], sys.argv[2], sys.argv[3],
                                      sys.argv[4], int(sys.argv[5]))
    extra = sys.argv[6:]   # more arrayfs options
    make = KINDS[kind]
    os.environ["ARRAYFS_BIN"] = arrayfs
    path = os.path.join(src, name)
    let_others_in(path)
    want, nbytes = data_digest(path)
    mib = nbytes / (1 << 20)
    pll = os.environ.get("BENCH_PASSTHROUGH")
    via_mount, warm, direct, pll_first, pll_again = [], [], [], [], []
    for run in range(runs):
        m = Mount(src, None, ["-o", "allow_other", "-o", "no_index"] + extra)
        m.start()
        try:
            server = make(m.mountpoint)
            server.srv.start()
            try:
                read_source(path)
                via_mount.append(mib / fetch(server, name + "/data", "/dev/null"))
                read_source(path)
                warm.append(mib / fetch(server, name + "/data", "/dev/null"))
                if run == 0 and digest_through(server, name + "/data") != want:
                    raise SystemExit("data through %s differs from the .npy's data" % kind)
            finally:
                server.srv.stop()
        finally:
            m.umount()
        if pll:
            first, again = passthrough_times(pll, make, src, name,
                                             os.path.getsize(path) / (1 << 20))
            pll_first.append(first)
            pll_again.append(again)
        server = make(src)
        server.srv.start()
        try:
            read_source(path)
            direct.append((os.path.getsize(path) / (1 << 20)) /
                          fetch(server, name, "/dev/null"))
        finally:
            server.srv.stop()
    fmt = " ".join
    print("mount %.0f" % max(via_mount))
    print("warm %.0f" % max(warm))
    print("direct %.0f" % max(direct))
    print("mount_all %s" % fmt("%.0f" % x for x in via_mount))
    print("warm_all %s" % fmt("%.0f" % x for x in warm))
    print("direct_all %s" % fmt("%.0f" % x for x in direct))
    print("ratio %.2fx" % (max(via_mount) / max(direct)))
    print("warm_ratio %.2fx" % (max(warm) / max(direct)))
    if pll:
        print("pll %.0f" % max(pll_first))
        print("pll_again %.0f" % max(pll_again))
        print("pll_all %s" % fmt("%.0f" % x for x in pll_first))
        print("pll_again_all %s" % fmt("%.0f" % x for x in pll_again))
        print("pll_ratio %.2fx" % (max(pll_first) / max(direct)))
        print("pll_again_ratio %.2fx" % (max(pll_again) / max(direct)))


if __name__ == "__main__":
    main()
