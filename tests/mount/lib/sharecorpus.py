# SPDX-License-Identifier: MIT
"""The small numpy-written corpus the sharing tests (SMB, HTTP) serve, and
every file a mount of it shows with its expected bytes (expect.py's model).

    src = make_source()                # a TempDir; the caller closes it
    for f in served_files(src.path):   # every file of the mount
        f.check(bytes_read_through_a_server)
    server = serve_corpus(testcase, SmbServer)   # stopped at its cleanup
    class T(ServedCorpusCase): make_server = ...  # one server for a class
"""
import os
import shutil
import zipfile

import numpy as np

import expect
import mountlib
from mountlib import Mount, MountCase, TempDir

# Arrays whose views the tests read in ranges: a C and a Fortran array, a
# big-endian one (its B.ra is byte-swapped), a deflated npz member, and an
# LZ4-compressed .ra (its data is decoded).
RANGE_ARRAYS = ("c_f4.npy", "f_f8.npy", "be_i4.npy", "deflated.npz/big.npy",
                "ra/mnist_8_z.ra", "stored.npz/grp/y.npy")


def make_source():
    """A TempDir holding: .npy files of several dtypes and both orders (two
    big-endian, one structured), reference .ra files (one LZ4), a stored
    and a deflated .npz each with a plain member and a nested key, a plain
    file, a sub-folder and an empty one."""
    rng = np.random.default_rng(20261124)
    src = TempDir()
    # mkdtemp makes it 0700; the servers read as another user (the mount
    # keeps the source's permissions)
    os.chmod(src.path, 0o755)
    np.save(src.join("c_f4.npy"), rng.standard_normal((3, 4, 5)).astype("<f4"))
    np.save(src.join("f_f8.npy"), np.asfortranarray(rng.standard_normal((6, 7))))
    np.save(src.join("be_i4.npy"), np.arange(-7, 8, dtype=">i4").reshape(5, 3))
    np.save(src.join("be_c8_f.npy"), np.asfortranarray(
        (rng.standard_normal((4, 3)) + 1j).astype(">c8")))
    np.save(src.join("u1.npy"), np.arange(17, dtype="|u1"))
    rec = np.zeros(4, dtype=[("a", "<i4"), ("b", ">f8"), ("name", "S5")])
    rec["a"], rec["b"], rec["name"] = [1, 2, 3, 4], [0.5, 1.5, 2.5, 3.5], b"abcde"
    np.save(src.join("rec.npy"), rec)
    os.mkdir(src.join("ra"))
    for name in ("test.ra", "mnist_8_z.ra"):
        shutil.copyfile(mountlib.reference(name), src.join("ra", name))
    np.savez(src.join("stored.npz"), x=np.arange(24, dtype="<i2").reshape(4, 6),
             **{"grp/y": np.linspace(0, 1, 9, dtype=">f4").reshape(3, 3)})
    with zipfile.ZipFile(src.join("stored.npz"), "a", zipfile.ZIP_STORED) as z:
        z.writestr("notes.txt", b"a plain member\n")
    # 512 KiB of deflated member: ranges far from its start need the
    # daemon's access points, not just the first deflate blocks
    np.savez_compressed(src.join("deflated.npz"),
                        big=rng.integers(0, 50, (256, 256)).astype("<f8"),
                        be=np.arange(100, dtype=">u2"))
    with zipfile.ZipFile(src.join("deflated.npz"), "a", zipfile.ZIP_DEFLATED) as z:
        z.writestr("meta.json", b'{"units": "m"}\n' * 20)
    with open(src.join("readme.txt"), "wb") as f:
        f.write(b"served by arrayfs\n")
    os.mkdir(src.join("sub"))
    os.mkdir(src.join("empty"))
    np.save(src.join("sub", "inner.npy"), np.ones((2, 2), dtype="<u4"))
    return src


class ServedFile:
    """One file of the mount: REL (its path, '/' separated), CHECKS (from
    expect.py), and EXACT (the expected bytes, or None where the model
    checks only: a .ra's `header` and `B.npy`)."""

    def __init__(self, rel, checks):
        self.rel, self.checks = rel, checks
        self.exact = next((c.expected for c in checks if hasattr(c, "expected")), None)

    def check(self, actual):
        """Raise AssertionError unless ACTUAL is what the mount must show."""
        for c in self.checks:
            c(actual)

    def __repr__(self):
        return self.rel


def served_files(source):
    """[ServedFile] for every file of a mount of SOURCE, sorted by path:
    each view of each array directory, plain files and npz members."""
    out = []
    for rel, e in expect.expected_tree(source).items():
        if e.kind == "array":
            out += [ServedFile(rel + "/" + name, checks) for name, checks in e.array.checks.items()]
        elif e.kind == "file":
            out.append(ServedFile(rel, [expect.equals(e.data, rel)]))
    return sorted(out, key=lambda f: f.rel)


def served_tree(source):
    """{relpath: 'dir'|'file'} of a mount of SOURCE (no symlinks in it)."""
    return {rel: kind for rel, kind in expect.flatten(expect.expected_tree(source)).items()
            if rel != ""}


def serve_corpus(testcase, make_server, mount_args=()):
    """Mount a new corpus with MOUNT_ARGS and serve it with
    MAKE_SERVER(mountpoint) (an SmbServer, an HttpServer). Returns the
    started server. TESTCASE's cleanups stop the server, then unmount
    (exit status 0 required) and remove the corpus, even on failure."""
    src = make_source()
    testcase.addCleanup(src.close)
    m = Mount(src.path, None, mount_args)
    try:
        m.start()
    except BaseException:
        m.cleanup()
        raise
    testcase.addCleanup(m.umount)
    server = make_server(m.mountpoint)
    server.start()
    testcase.addCleanup(server.stop)  # first: a server holding the mount makes it EBUSY
    return server


class ServedCase(MountCase):
    """A source (MountCase's `make_source` or `source`) mounted with
    -o allow_other (servers read as another user than the one who
    mounted) and served by `make_server(mountpoint)` as `cls.server`:
    started after the mount, stopped before the unmount (a server holding
    the mount makes it EBUSY), checked alive after each test."""
    mount_args = ("-o", "allow_other")
    make_server = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            cls.server = cls.make_server(cls.m.mountpoint)
            cls.server.start()
        except BaseException:
            super().tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            cls.server.stop()
        finally:
            super().tearDownClass()

    def tearDown(self):
        self.server.check_alive()
        super().tearDown()


class ServedCorpusCase(ServedCase):
    """The corpus above, served as ServedCase says; `cls.files` is
    served_files() of it."""
    make_source = staticmethod(make_source)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.files = served_files(cls.src.path)
