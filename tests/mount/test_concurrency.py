#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""8 threads read random ranges of several views at once (a deflated npz
member of 4 MiB among them); every byte is checked."""
import os
import random
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import expect  # noqa: E402
import mountlib  # noqa: E402
from mountlib import MountCase, fixtures  # noqa: E402

THREADS = 8
READS_PER_THREAD = 150
JOIN_DEADLINE = 120.0  # seconds; a hang fails the test instead of blocking it
FILES = ["deflated.npz/big.npy/data", "deflated.npz/big.npy/big.npy",
         "deflated.npz/big.npy/big.ra", "deflated.npz/small.npy/small.ra",
         "c_f8.npy/data", "c_f8.npy/c_f8.npy", "c_f8.npy/c_f8.ra",
         "fortran_i4_be.npy/data", "fortran_i4_be.npy/fortran_i4_be.ra"]


class ConcurrencyTest(MountCase):
    source = staticmethod(lambda: fixtures("big"))

    @classmethod
    def setUpClass(cls):
        tree = expect.expected_tree(fixtures("big"))
        cls.want = {}
        for rel in FILES:
            arr_rel, name = rel.rsplit("/", 1)
            cls.want[rel] = tree[arr_rel].array.exact(name)
        super().setUpClass()

    def reader(self, seed, shared_fds, errors):
        rng = random.Random(seed)
        own = {rel: os.open(self.mp(rel), os.O_RDONLY) for rel in FILES}
        try:
            for i in range(READS_PER_THREAD):
                rel = rng.choice(FILES)
                want = self.want[rel]
                fd = own[rel] if rng.random() < 0.5 else shared_fds[rel]
                size = rng.choice((1, 7, 512, 4096, 65536, 200000, rng.randint(1, 300000)))
                off = rng.choice((0, rng.randrange(0, 200), rng.randrange(0, len(want) + 1),
                                  max(0, len(want) - rng.randrange(1, 5000))))
                if rng.random() < 0.2:  # make the daemon serve it, not the page cache
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                got = os.pread(fd, size, off)
                if got != want[off:off + size]:
                    errors.append("seed %d read %d: %s [%d, +%d): %d bytes, first "
                                  "difference at +%d" % (
                                      seed, i, rel, off, size, len(got),
                                      expect.first_difference(got, want[off:off + size])))
        except Exception as e:
            errors.append("seed %d: %r" % (seed, e))
        finally:
            for fd in own.values():
                os.close(fd)

    def test_eight_threads_random_reads_every_byte_right(self):
        shared = {rel: os.open(self.mp(rel), os.O_RDONLY) for rel in FILES}
        errors = []
        try:
            threads = [threading.Thread(target=self.reader, args=(1000 + t, shared, errors),
                                        daemon=True) for t in range(THREADS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(JOIN_DEADLINE)
            self.assertFalse(any(t.is_alive() for t in threads),
                             "readers still blocked after %.0f s" % JOIN_DEADLINE)
        finally:
            for fd in shared.values():
                os.close(fd)
        self.assertEqual(errors, [], "\n".join(errors[:20]))

    def test_parallel_sequential_readers_of_the_deflated_member(self):
        rel = "deflated.npz/big.npy/data"
        errors = []

        def whole(seed):
            try:
                with open(self.mp(rel), "rb", buffering=0) as f:
                    os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
                    got = bytearray()
                    step = 4096 * (seed + 1)
                    while True:
                        chunk = f.read(step)
                        if not chunk:
                            break
                        got += chunk
                if bytes(got) != self.want[rel]:
                    errors.append("reader %d: first difference at %d of %d" % (
                        seed, expect.first_difference(bytes(got), self.want[rel]), len(got)))
            except Exception as e:
                errors.append("reader %d: %r" % (seed, e))

        threads = [threading.Thread(target=whole, args=(s,), daemon=True)
                   for s in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(JOIN_DEADLINE)
        self.assertFalse(any(t.is_alive() for t in threads), "readers blocked")
        self.assertEqual(errors, [], "\n".join(errors))


if __name__ == "__main__":
    mountlib.main()
