#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A walk (du -s, find) over a folder of arrays leaves a bounded number of
nodes behind (-o max_walked, issue 29): the kernel keeps every entry a
listing gave it, about 14 an array folder, until memory runs short, so
without the bound a walk of N arrays holds 14 N nodes in the kernel and
the daemon. With max_walked=64, the array folders listed longest ago are
dropped from the kernel and their nodes forgotten: the daemon's node count
(its -d log's "forget: N nodes left") falls under BOUND once the walk is
done, where it would stay over 14,000 here.

What was dropped is still there: a walk again sees the same names and
sizes, a pruned array folder reads the same bytes, and a process whose
cwd is inside an array folder that was pruned keeps reading and listing
it through its cwd while other walks go on."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import numpy as np  # noqa: E402

import mountlib  # noqa: E402
from mountlib import npy_bytes, read, wait_for  # noqa: E402

N = 1000             # arrays in the walked folder
WALKED = 64          # -o max_walked
# nodes one walked array folder holds (the folder, 8 files and B.zarr/ with
# its 4 files), and the bound on what a walk leaves: twice what 64 walked
# folders hold; without the bound 14 * N stay
PER_ARRAY = 14
BOUND = 2 * WALKED * PER_ARRAY
DEADLINE = 20.0      # seconds the kernel's forgets may take to arrive


def name(i):
    return "a%04d.npy" % i


def values(i):
    return ((np.arange(16, dtype=np.uint32) * 7 + i) % 251).astype(np.uint8).reshape(4, 4)


def entries(i):
    """The names in array folder i."""
    stem = name(i)[:-4]
    return sorted(["data", "data.hdr", "dtype", "header", "shape", stem + ".nhdr",
                   stem + ".npy", stem + ".ra", stem + ".zarr"])


class WalkPruneTest(mountlib.FreshMountCase):
    mount_args = ("-d", "-o", "max_walked=%d" % WALKED)

    def populate(self):
        many = self.src.join("many")
        os.mkdir(many)
        for i in range(N):
            with open(os.path.join(many, name(i)), "wb") as f:
                f.write(npy_bytes(values(i)))
        os.mkdir(self.src.join("other"))
        with open(self.src.join("other", "x.npy"), "wb") as f:
            f.write(npy_bytes(values(0)))

    def nodes_left_after(self, at):
        """The daemon's node counts its -d log gave after offset AT."""
        return [int(x) for x in re.findall(r"forget: (\d+) nodes left", self.m.log()[at:])]

    def check_bounded(self):
        """After a walk: the daemon's node count under BOUND. It is logged
        at each forget, and the last forgets of a walk may come before it
        ends, or never (no bound): so touch the last array's source, which
        makes the notifier drop its entries, whose forgets log the count
        (every pruned folder's forgets sent by then, or coming later). The
        array is one outside the walked folder, looked up, never listed."""
        os.stat(self.mp("other", "x.npy", "data"))
        at = len(self.m.log())
        os.utime(self.src.join("other", "x.npy"))

        def bounded():
            left = self.nodes_left_after(at)
            return bool(left) and min(left) <= BOUND
        try:
            wait_for(bounded, DEADLINE, interval=0.2, what="the pruned folders' forgets")
        except AssertionError:
            left = self.nodes_left_after(at)
            self.fail("a walk of %d arrays left %s nodes (bound %d)"
                      % (N, min(left) if left else "all its", BOUND))

    def check_array(self, i, where):
        d = os.path.join(where, name(i))
        self.assertEqual(sorted(os.listdir(d)), entries(i))
        self.assertEqual(read(os.path.join(d, "data")), values(i).tobytes())
        np.testing.assert_array_equal(np.load(os.path.join(d, name(i))), values(i))

    def du(self):
        out = subprocess.run(["du", "-s", "--apparent-size", "-b", self.mp("many")],
                             check=True, capture_output=True, text=True).stdout
        return int(out.split()[0])

    def test_du_bounded_and_pruned_folders_read(self):
        total = self.du()
        self.check_bounded()
        # most folders walked were pruned: still all there
        for i in range(0, N, 10):
            self.check_array(i, self.mp("many"))
        self.assertEqual(self.du(), total)
        self.check_bounded()

    def test_find_bounded_and_complete(self):
        out = subprocess.run(["find", self.mp("many"), "-name", "*.npy"], check=True,
                             capture_output=True, text=True).stdout.split()
        self.check_bounded()
        want = []
        for i in range(N):
            want += [self.mp("many", name(i)), self.mp("many", name(i), name(i))]
        self.assertEqual(sorted(out), sorted(want))

    def test_walk_with_cwd_in_a_pruned_folder(self):
        # a process whose cwd is array folder 0: a walk prunes that folder
        # (listed first, here); what the process reads through its cwd
        # stays right, and so does a walk while it is there
        holder = subprocess.Popen(
            [sys.executable, "-c",
             "import os, sys\n"
             "for line in sys.stdin:\n"
             "    with open('data', 'rb') as f:\n"
             "        data = f.read().hex()\n"
             "    print(data, ','.join(sorted(os.listdir('.'))),"
             " ','.join(sorted(os.listdir(os.path.join('.', '" + name(0)[:-4] + ".zarr')))),"
             " flush=True)\n"],
            cwd=self.mp("many", name(0)), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True)
        # stopped here, not at cleanup: the mount is unmounted before that
        try:
            self.walk_around(holder)
        finally:
            holder.stdin.close()
            holder.wait()

    def walk_around(self, holder):

        def ask():
            holder.stdin.write("go\n")
            holder.stdin.flush()
            return holder.stdout.readline().split()

        want = [values(0).tobytes().hex(), ",".join(entries(0)),
                ".zarray,.zattrs,0.0,zarr.json"]
        self.assertEqual(ask(), want)
        os.listdir(self.mp("many", name(0)))
        total = self.du()
        self.check_bounded()
        self.assertEqual(ask(), want)
        self.assertEqual(self.du(), total)
        self.assertEqual(ask(), want)
        self.check_array(0, self.mp("many"))


if __name__ == "__main__":
    mountlib.main()
