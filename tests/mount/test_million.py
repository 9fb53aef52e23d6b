#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""One folder of 200,000 tiny arrays (issues 29 and 27), mounted once.
Nothing is timed; the daemon's bounds are checked:
- RSS with every entry held by the kernel (after a names-only listing
  and an lstat of every name) under HELD_MIB (a daemon keeping more
  than about 240 bytes an entry fails), and once the kernel has
  forgotten them (drop_caches, as root) under FORGOTTEN_MIB: a daemon
  that kept ~200 bytes an entry after the forgets fails;
- open descriptors under FD_BOUND throughout (never one an entry);
- the entry type a names-only listing gives (the raw d_type of readdir,
  what os.scandir's is_dir() uses without a stat) never contradicts a
  later lookup of the same name: DT_DIR for an array directory or folder,
  DT_REG for a plain file or an unreadable .npz, or DT_UNKNOWN;
- `.zarr/` of the folder: found by name, `.zgroup` readable, no
  `.zmetadata` (over 10,000 arrays), a lazy listing gives every key (as
  DT_DIR or DT_UNKNOWN: no header is read for it), a few children read
  through zarr.open_group equal numpy's, and the daemon's RSS grows by
  less than ZARR_GROWTH_MIB meanwhile (its model holds names only) and
  fds stay bounded;
- `.stack` of the folder: its lookup and shape within the same bounds.
Under a sanitizer the RSS bounds are looser (its shadow and quarantine)."""
import json
import os
import stat
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import numpy as np  # noqa: E402
import zarr  # noqa: E402

from dirents import DT_DIR, DT_REG, DT_UNKNOWN, listing_types  # noqa: E402
import mountlib  # noqa: E402
from mountlib import MountCase, TempDir, npy_bytes, read  # noqa: E402
from procinfo import fd_count, fd_targets, rss_kib, sanitized  # noqa: E402

N = 200_000
# bounds, from what main measured (2026-11-29, load 2.5-7, four runs): held
# 64-121 MiB, forgotten 61-76 MiB, .zarr listing 314-327 MiB, 77 fds; with
# the node slab (load 6-9, two runs): held 77-81 MiB, forgotten 34-41 MiB,
# .zarr listing 295-547 MiB
# (.stack keeps up to 64 members' sources open)
FD_BOUND = 256           # not one an entry: the source fd cache is bounded
# every entry held: issue 29's 256 MiB at 1,000,000 entries is about 240
# bytes an entry over 20-30 MiB of fixed costs; 200,000 at that rate and
# 40-50 MiB fixed is 86-96 MiB. Nodes of 368 bytes each (a 160-byte node
# and a 176-byte summary in one malloc'd block: 118 MiB here, 2026-11-29)
# fail; the slab's 176-byte cells pass (77-81 MiB, load 6-9)
HELD_MIB = 96
FORGOTTEN_MIB = 64       # issue 29's target once the entries are forgotten
# the .zarr listing's growth: a model of names, about 100 bytes a child,
# grew 28 MiB here (2026-11-29, load 6; its nodes included); one that parsed every header
# while it was built grew 250 MiB, one rebuilt per child 1.6 GiB
ZARR_GROWTH_MIB = 64
SANITIZED_MIB = 2048
SAMPLE_EVERY = 997       # names whose listing type is checked by a lookup
# the entries that are not tiny arrays: name -> what a lookup must say
ODD = {"notes.txt": "file", "broken.npz": "file", "sub": "dir"}


def name(i):
    return "a%06d.npy" % i


def values(i):
    return ((np.arange(16, dtype=np.uint32) * 3 + i) % 251).astype(np.uint8).reshape(4, 4)


def make_source():
    src = TempDir()
    many = src.join("many")
    os.mkdir(many)
    head = npy_bytes(values(0))[:-16]  # the 128-byte header every array shares
    for i in range(N):
        with open(os.path.join(many, name(i)), "wb") as f:
            f.write(head + values(i).tobytes())
    with open(os.path.join(many, "notes.txt"), "w") as f:
        f.write("not an array\n")
    # looks like an archive, is none: a plain file (a broken .npy would
    # take the folder's .stack away: CONTRACT.md)
    with open(os.path.join(many, "broken.npz"), "wb") as f:
        f.write(b"PK\x03\x04 not a zip")
    os.mkdir(os.path.join(many, "sub"))
    return src


def drop_caches():
    """Make the kernel forget unused dentries and inodes (FORGETs)."""
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("2\n")


def settled_rss(pid, deadline=30.0):
    """RSS (KiB) once it has not fallen for a second."""
    last, since, end = rss_kib(pid), time.monotonic(), time.monotonic() + deadline
    while time.monotonic() < end and time.monotonic() - since < 1.0:
        time.sleep(0.1)
        now = rss_kib(pid)
        if now < last:
            last, since = now, time.monotonic()
    return last


class MillionTest(MountCase):
    make_source = staticmethod(make_source)

    def bounds(self):
        pid = self.m.proc.pid
        if sanitized(pid):
            return (SANITIZED_MIB * 1024,) * 3
        return HELD_MIB * 1024, FORGOTTEN_MIB * 1024, ZARR_GROWTH_MIB * 1024

    def check_fds(self, where):
        pid = self.m.proc.pid
        self.assertLess(fd_count(pid), FD_BOUND, "%s: %r" % (where, fd_targets(pid)))

    def test_listing_types_and_memory(self):
        pid = self.m.proc.pid
        held_bound, forgotten_bound, _ = self.bounds()
        many = self.mp("many")
        types = listing_types(many)
        self.assertEqual(len(types), N + len(ODD))
        self.check_fds("after the names-only listing")
        with os.scandir(many) as it:  # names only: no stat asked for
            self.assertEqual(sum(1 for _ in it), N + len(ODD))
        for n in types:  # every entry held by the kernel, as after ls -l
            os.lstat(os.path.join(many, n))
        held = rss_kib(pid)
        print("\nRSS with %d entries held: %d KiB" % (len(types), held), file=sys.stderr)
        self.assertLess(held, held_bound, "RSS %d KiB with every entry held" % held)
        self.check_fds("with every entry held")
        sample = sorted(types)[::SAMPLE_EVERY] + sorted(ODD)
        if os.geteuid() == 0:
            drop_caches()
            forgotten = settled_rss(pid)
            print("RSS once forgotten: %d KiB" % forgotten, file=sys.stderr)
            self.assertLess(forgotten, forgotten_bound,
                            "RSS %d KiB once the kernel forgot the entries" % forgotten)
        # after the forgets each lstat is a fresh LOOKUP
        for n in sample:
            st = os.lstat(os.path.join(many, n))
            got = types[n]
            if got == DT_DIR:
                self.assertTrue(stat.S_ISDIR(st.st_mode), "%s listed DT_DIR" % n)
            elif got == DT_REG:
                self.assertTrue(stat.S_ISREG(st.st_mode), "%s listed DT_REG" % n)
            else:
                self.assertEqual(got, DT_UNKNOWN, "%s listed d_type %d" % (n, got))
            if n in ODD:
                want = stat.S_ISDIR if ODD[n] == "dir" else stat.S_ISREG
                self.assertTrue(want(st.st_mode), "%s: mode %o" % (n, st.st_mode))
            else:
                self.assertTrue(stat.S_ISDIR(st.st_mode), "%s is no array directory" % n)
        self.check_fds("after the lookups")

    def test_zarr_group_bounded(self):
        pid = self.m.proc.pid
        zarr_bound = self.bounds()[2]
        base = rss_kib(pid)
        group = self.mp("many", ".zarr")
        self.assertTrue(stat.S_ISDIR(os.stat(group).st_mode))
        self.assertEqual(json.loads(read(os.path.join(group, ".zgroup"))), {"zarr_format": 2})
        with self.assertRaises(FileNotFoundError):
            os.stat(os.path.join(group, ".zmetadata"))
        types = listing_types(group)
        peak_rss, peak_fds = rss_kib(pid), fd_count(pid)
        want = {name(i)[:-4] for i in range(N)} | {"sub", ".zgroup", ".zattrs", "zarr.json"}
        self.assertEqual(len(types), len(want))
        self.assertEqual(set(types), want)
        self.assertEqual(types["sub"], DT_DIR)
        odd = {k: t for k, t in types.items() if t not in (DT_DIR, DT_UNKNOWN)
               and k not in (".zgroup", ".zattrs", "zarr.json")}
        self.assertEqual(odd, {}, "keys of other types")
        g = zarr.open_group(group, mode="r")
        for i in (0, 1, 12_345, N // 2, N - 1):
            np.testing.assert_array_equal(g[name(i)[:-4]][...], values(i))
        peak_rss = max(peak_rss, rss_kib(pid))
        peak_fds = max(peak_fds, fd_count(pid))
        print("\n.zarr listing: RSS %d KiB before, peak %d KiB, fds %d" %
              (base, peak_rss, peak_fds), file=sys.stderr)
        self.assertLess(peak_rss - base, zarr_bound,
                        "RSS %d -> %d KiB listing .zarr/" % (base, peak_rss))
        self.assertLess(peak_fds, FD_BOUND, fd_targets(pid))

    def test_stack_lookup_bounded(self):
        pid = self.m.proc.pid
        held_bound = self.bounds()[0]
        st = os.stat(self.mp("many", ".stack"))
        self.assertTrue(stat.S_ISDIR(st.st_mode))
        self.assertEqual(read(self.mp("many", ".stack", "shape")), b"%d 4 4\n" % N)
        with open(self.mp("many", ".stack", "data"), "rb") as f:
            f.seek(16 * (N - 1))
            self.assertEqual(f.read(), values(N - 1).tobytes())
        rss = rss_kib(pid)
        self.assertLess(rss, held_bound, "RSS %d KiB after .stack" % rss)
        self.check_fds("after .stack")


if __name__ == "__main__":
    mountlib.main()
