#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""scripts/bench's NFS row: one array's `data` read through nfs-ganesha
serving an arrayfs mount, against ganesha serving the source folder itself
(the .npy file). Each run: a fresh arrayfs mount and a fresh ganesha
(tests/mount/lib/nfsserver.py: examples/ganesha.conf, NFSv4, in a network
namespace of its own), the source read first (page cache warm, as for the
plain folder), then `nfs-cat ... > /dev/null` timed: once (the first read
after mounting: every byte through the daemon) and again (from the mount's
page cache, as the plain file comes from the source's). The bytes through
the mount are checked once against the .npy's data. Prints MiB/s of the
best run of each and every run, as `name value` lines for scripts/bench.

usage: bench_nfs.py ARRAYFS SOURCE_DIR NPY_NAME RUNS [ARRAYFS_OPTION...]
(as root)
"""
import hashlib
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tests", "mount", "lib"))
import numpy as np  # noqa: E402

from mountlib import Mount  # noqa: E402
from nfsserver import NfsServer  # noqa: E402


def read_source(path):
    with open(path, "rb") as f:
        while f.read(1 << 20):
            pass


def timed_cat(nfs, rel):
    t = time.monotonic()
    r = nfs.run_in_netns(["nfs-cat", nfs.url(rel)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, timeout=600)
    dt = time.monotonic() - t
    if r.returncode != 0:
        raise SystemExit("nfs-cat %s failed: %s\n%s" % (rel, r.stderr, nfs.log()))
    return dt


def digest_through(nfs, rel):
    p = subprocess.Popen(["nsenter", "--net=" + nfs.netns(), "nfs-cat", nfs.url(rel)],
                         stdout=subprocess.PIPE)
    h = hashlib.sha256()
    for chunk in iter(lambda: p.stdout.read(1 << 20), b""):
        h.update(chunk)
    if p.wait() != 0:
        raise SystemExit("nfs-cat %s failed" % rel)
    return h.hexdigest()


def data_digest(path):
    a = np.load(path, mmap_mode="r")
    h = hashlib.sha256()
    with open(path, "rb") as f:
        f.seek(a.offset)
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest(), a.nbytes


def main():
    arrayfs, src, name, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    extra = sys.argv[5:]   # more arrayfs options
    os.environ["ARRAYFS_BIN"] = arrayfs
    path = os.path.join(src, name)
    want, nbytes = data_digest(path)
    mib = nbytes / (1 << 20)
    via_mount, warm, direct = [], [], []
    for run in range(runs):
        m = Mount(src, None, ["-o", "allow_other", "-o", "no_index"] + extra)
        m.start()
        try:
            nfs = NfsServer(m.mountpoint)
            nfs.start()
            try:
                read_source(path)
                via_mount.append(mib / timed_cat(nfs, name + "/data"))
                read_source(path)
                warm.append(mib / timed_cat(nfs, name + "/data"))
                if run == 0 and digest_through(nfs, name + "/data") != want:
                    raise SystemExit("data through NFS differs from the .npy's data")
            finally:
                nfs.stop()
        finally:
            m.umount()
        nfs = NfsServer(src)
        nfs.start()
        try:
            read_source(path)
            direct.append((os.path.getsize(path) / (1 << 20)) / timed_cat(nfs, name))
        finally:
            nfs.stop()
    fmt = " ".join
    print("mount %.0f" % max(via_mount))
    print("warm %.0f" % max(warm))
    print("direct %.0f" % max(direct))
    print("mount_all %s" % fmt("%.0f" % x for x in via_mount))
    print("warm_all %s" % fmt("%.0f" % x for x in warm))
    print("direct_all %s" % fmt("%.0f" % x for x in direct))
    print("ratio %.2fx" % (max(via_mount) / max(direct)))
    print("warm_ratio %.2fx" % (max(warm) / max(direct)))


if __name__ == "__main__":
    main()
