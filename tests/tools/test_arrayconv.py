#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""arrayconv against the contract's views, judged by numpy and a RawArray
reader written like the reference Python one."""
import glob
import io
import os
import pty
import resource
import struct
import subprocess
import sys
import tempfile
import unittest
import zipfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from toolslib import (ARRAYCONV, REFERENCE, RA_MAGIC, fixture,  # noqa: E402
                      npy_header, ra_header, ra_read, run)

RA_ELTYPE = {"i": 1, "u": 2, "b": 2, "f": 3, "c": 4, "M": 1, "m": 1}


def read(path):
    with open(path, "rb") as f:
        return f.read()


def npy_of_bytes(data):
    """(version, shape, fortran, dtype, offset) of a .npy held in bytes."""
    f = io.BytesIO(data)
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        hdr = np.lib.format.read_array_header_1_0(f)
    else:
        hdr = np.lib.format.read_array_header_2_0(f)
    return (version,) + hdr + (f.tell(),)


class ConvCase(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def conv(self, src, name, *opts, rc=0):
        out = os.path.join(self.tmp, name)
        r = run([ARRAYCONV, *opts, src, out])
        self.assertEqual(r.returncode, rc, r.stderr.decode())
        if rc == 0:
            self.assertEqual(r.stderr, b"")
        return out, r

    def check_ra_of_npy(self, npy_path, ra_path):
        """The .ra view of a numpy array, field by field (the contract)."""
        arr = np.load(npy_path, allow_pickle=False)
        _, shape, fortran, dtype, off = npy_header(npy_path)
        ra = read(ra_path)
        h = ra_header(ra)
        self.assertEqual(struct.unpack_from("<Q", ra)[0], RA_MAGIC)
        self.assertEqual(h["flags"], 0)
        self.assertEqual(h["eltype"], RA_ELTYPE.get(dtype.kind, 0))
        self.assertEqual(h["elbyte"], dtype.itemsize)
        self.assertEqual(h["size"], arr.nbytes)
        want_dims = list(shape) if fortran else list(reversed(shape))
        self.assertEqual(h["dims"], want_dims)
        self.assertEqual(len(ra), h["data_offset"] + arr.nbytes)
        # The bytes never move; big-endian numbers are swapped in place.
        le = arr.astype(dtype.newbyteorder("<")) if dtype.byteorder == ">" else arr
        order = "F" if fortran else "C"
        self.assertEqual(ra[h["data_offset"]:], le.tobytes(order=order))
        return arr, h


class TestNpyToRa(ConvCase):
    def test_c_order_reverses_shape(self):
        src = fixture("good", "c_order.npy")
        out, _ = self.conv(src, "c.ra")
        arr, h = self.check_ra_of_npy(src, out)
        self.assertEqual(h["dims"], [5, 4, 3])
        np.testing.assert_array_equal(ra_read(read(out)), arr.T)

    def test_fortran_order_keeps_shape(self):
        src = fixture("good", "fortran.npy")
        out, _ = self.conv(src, "f.ra")
        arr, h = self.check_ra_of_npy(src, out)
        self.assertEqual(h["dims"], [3, 4])
        np.testing.assert_array_equal(ra_read(read(out)), arr)

    def test_big_endian_is_swapped(self):
        src = fixture("good", "bigendian.npy")
        out, _ = self.conv(src, "be.ra")
        arr, _ = self.check_ra_of_npy(src, out)
        np.testing.assert_array_equal(ra_read(read(out)), arr.T)

    def test_big_endian_complex_halves_swapped(self):
        src = fixture("good", "complex_be.npy")
        out, _ = self.conv(src, "cbe.ra")
        arr, h = self.check_ra_of_npy(src, out)
        self.assertEqual((h["eltype"], h["elbyte"]), (4, 8))
        np.testing.assert_array_equal(ra_read(read(out)), arr.T)

    def test_every_plain_npy(self):
        for name in ["u8", "bool", "scalar", "empty", "f16", "unicode",
                     "datetime", "struct", "v2", "v3"]:
            with self.subTest(name=name):
                src = fixture("good", name + ".npy")
                out, _ = self.conv(src, name + ".ra")
                self.check_ra_of_npy(src, out)

    def test_object_array_refused_no_output(self):
        out, r = self.conv(fixture("good", "object.npy"), "o.ra", rc=1)
        self.assertRegex(r.stderr.decode(), r"^arrayconv: .*object\.npy: ")
        self.assertEqual(os.listdir(self.tmp), [])


class TestRaToNpy(ConvCase):
    def check_npy_of_ra(self, ra_path, npy_path, want=None):
        data = read(ra_path)
        h = ra_header(data)
        out = read(npy_path)
        version, shape, fortran, dtype, off = npy_of_bytes(out)
        self.assertEqual(version, (1, 0))
        self.assertTrue(fortran)
        self.assertEqual(list(shape), h["dims"])
        self.assertEqual(dtype.itemsize, h["elbyte"])
        count = int(np.prod(h["dims"], dtype=np.uint64))
        self.assertEqual(len(out), off + count * h["elbyte"])
        loaded = np.load(npy_path)
        if want is None:
            want = ra_read(data)
        np.testing.assert_array_equal(loaded, want)
        self.assertEqual(loaded.dtype, want.dtype)
        return loaded

    def test_reference_samples_load_like_reference_reader(self):
        paths = [p for p in sorted(glob.glob(os.path.join(REFERENCE, "*.ra")))
                 if not p.endswith("_z.ra")]
        self.assertGreater(len(paths), 8)
        for p in paths:
            with self.subTest(file=os.path.basename(p)):
                out, _ = self.conv(p, os.path.basename(p)[:-3] + ".npy")
                self.check_npy_of_ra(p, out)

    def test_lz4_reference_samples_decompressed(self):
        for base in ["mnist_8", "cifar_airplane"]:
            with self.subTest(file=base):
                z = os.path.join(REFERENCE, base + "_z.ra")
                out, _ = self.conv(z, base + ".npy")
                plain = ra_read(read(os.path.join(REFERENCE, base + ".ra")))
                self.check_npy_of_ra(z, out, want=plain)

    def test_reference_complex_values(self):
        out, _ = self.conv(os.path.join(REFERENCE, "test.ra"), "t.npy")
        a = np.load(out)
        self.assertEqual(a.shape, (3, 4))
        self.assertEqual(a.dtype, np.complex64)
        k = np.arange(12, dtype=np.float64).reshape((3, 4), order="F")
        np.testing.assert_array_equal(a.real, k.astype(np.float32))


class TestRoundTrips(ConvCase):
    def test_npy_ra_npy_is_fortran_with_reversed_shape(self):
        src = fixture("good", "c_order.npy")
        ra, _ = self.conv(src, "a.ra")
        back, _ = self.conv(ra, "b.npy")
        orig = np.load(src)
        version, shape, fortran, dtype, off = npy_of_bytes(read(back))
        self.assertTrue(fortran)
        self.assertEqual(shape, tuple(reversed(orig.shape)))
        np.testing.assert_array_equal(np.load(back), orig.T)
        # The element bytes are the source's, unmoved.
        self.assertEqual(read(back)[off:], read(src)[npy_header(src)[4]:])

    def test_fortran_npy_ra_npy_same_array(self):
        src = fixture("good", "fortran.npy")
        ra, _ = self.conv(src, "a.ra")
        back, _ = self.conv(ra, "b.npy")
        np.testing.assert_array_equal(np.load(back), np.load(src))

    def test_ra_npy_ra_byte_identical(self):
        src = os.path.join(REFERENCE, "randf64.ra")
        npy, _ = self.conv(src, "a.npy")
        back, _ = self.conv(npy, "b.ra")
        self.assertEqual(read(back), read(src))

    def test_same_format_is_a_copy(self):
        for src, name in [(fixture("good", "c_order.npy"), "c.npy"),
                          (fixture("good", "object.npy"), "o.npy"),
                          (os.path.join(REFERENCE, "mnist_8_z.ra"), "z.ra")]:
            with self.subTest(name=name):
                out, _ = self.conv(src, name)
                self.assertEqual(read(out), read(src))


class TestNpzMembers(ConvCase):
    def test_stored_member_by_key_is_member_bytes(self):
        src = fixture("good", "stored.npz")
        out, _ = self.conv(src + ":x", "x.npy")
        with zipfile.ZipFile(src) as z:
            self.assertEqual(read(out), z.read("x.npy"))

    def test_full_member_name_accepted(self):
        src = fixture("good", "stored.npz")
        out, _ = self.conv(src + ":y.npy", "y.npy")
        np.testing.assert_array_equal(np.load(out), np.load(src)["y"])

    def test_nested_key(self):
        src = fixture("good", "stored.npz")
        out, _ = self.conv(src + ":nested/z", "z.npy")
        np.testing.assert_array_equal(np.load(out), np.eye(3))

    def test_deflated_member_to_ra(self):
        src = fixture("good", "deflated.npz")
        out, _ = self.conv(src + ":b", "b.ra")
        want = np.load(src)["b"]
        self.assertTrue(want.flags.f_contiguous)
        np.testing.assert_array_equal(ra_read(read(out)), want)
        self.assertEqual(ra_header(read(out))["dims"], [7, 9])

    def test_deflated_member_to_npy_equals_member(self):
        src = fixture("good", "deflated.npz")
        out, _ = self.conv(src + ":x", "x.npy")
        with zipfile.ZipFile(src) as z:
            self.assertEqual(read(out), z.read("x.npy"))

    def test_missing_member(self):
        _, r = self.conv(fixture("good", "stored.npz") + ":nope", "n.npy", rc=1)
        self.assertIn("nope", r.stderr.decode())
        self.assertEqual(os.listdir(self.tmp), [])

    def test_archive_without_member_is_usage_error(self):
        _, r = self.conv(fixture("good", "stored.npz"), "n.npy", rc=2)
        self.assertIn(":KEY", r.stderr.decode())

    def test_member_of_non_archive_is_usage_error(self):
        self.conv(fixture("good", "u8.npy") + ":x", "n.npy", rc=2)


class TestOutput(ConvCase):
    def test_stdout_equals_file(self):
        src = fixture("good", "bigendian.npy")
        f, _ = self.conv(src, "f.ra")
        r = run([ARRAYCONV, "--to", "ra", src, "-"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, read(f))

    def test_stdout_needs_to(self):
        r = run([ARRAYCONV, fixture("good", "u8.npy"), "-"])
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"--to", r.stderr)

    def test_to_overrides_extension(self):
        out, _ = self.conv(fixture("good", "u8.npy"), "u8.bin", "--to", "ra")
        self.assertEqual(ra_header(read(out))["dims"], [16, 16])

    def test_unknown_output_extension_is_usage_error(self):
        self.conv(fixture("good", "u8.npy"), "u8.bin", rc=2)

    def test_refuses_to_overwrite_without_f(self):
        out = os.path.join(self.tmp, "x.ra")
        with open(out, "wb") as f:
            f.write(b"keep me")
        _, r = self.conv(fixture("good", "u8.npy"), "x.ra", rc=1)
        self.assertEqual(r.stderr.decode(),
                         f"arrayconv: {out}: exists; not overwritten "
                         "(use -f to overwrite)\n")
        self.assertEqual(read(out), b"keep me")
        self.assertEqual(os.listdir(self.tmp), ["x.ra"])

    def test_overwrites_with_f(self):
        out = os.path.join(self.tmp, "x.ra")
        with open(out, "wb") as f:
            f.write(b"old")
        self.conv(fixture("good", "u8.npy"), "x.ra", "-f")
        self.assertEqual(ra_header(read(out))["dims"], [16, 16])

    def test_broken_input_leaves_nothing(self):
        for name in ["truncated-data.npy", "header-past-end.npy",
                     "bad-magic.npy", "truncated.ra"]:
            with self.subTest(name=name):
                src = fixture("broken", name)
                _, r = self.conv(src, "out.ra" if name.endswith("npy") else
                                 "out.npy", rc=1)
                self.assertRegex(r.stderr.decode(), r"^arrayconv: " +
                                 src.replace(".", r"\.") +
                                 r": .+ \(at byte \d+\)\n$")
                self.assertEqual(os.listdir(self.tmp), [])

    def test_output_into_a_folder_refused(self):
        os.mkdir(os.path.join(self.tmp, "d.ra"))
        self.conv(fixture("good", "u8.npy"), "d.ra", "-f", rc=1)

    def test_missing_output_folder(self):
        _, r = self.conv(fixture("good", "u8.npy"), "no/such/x.ra", rc=1)
        self.assertIn("temporary file", r.stderr.decode())

    def test_mode_follows_umask(self):
        out = os.path.join(self.tmp, "m.ra")
        r = subprocess.run([ARRAYCONV, fixture("good", "u8.npy"), out],
                           preexec_fn=lambda: os.umask(0o027), timeout=60)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(os.stat(out).st_mode & 0o777, 0o640)

    def test_usage_errors(self):
        for args in [[], ["one"], ["a", "b", "c"], ["--to", "zip", "a", "-"],
                     ["--bogus", "a.npy", "b.ra"]]:
            with self.subTest(args=args):
                self.assertEqual(run([ARRAYCONV, *args]).returncode, 2)

    def test_help_and_version(self):
        r = run([ARRAYCONV, "--help"])
        self.assertEqual(r.returncode, 0)
        self.assertTrue(r.stdout.startswith(b"usage: arrayconv"))
        r = run([ARRAYCONV, "--version"])
        self.assertRegex(r.stdout.decode(), r"^arrayconv \d+\.\d+\.\d+\n$")


def big_npy(path, dtype, nbytes):
    n = nbytes // np.dtype(dtype).itemsize
    np.save(path, np.arange(n, dtype=dtype).reshape(-1, 1024))


class TestStreaming(ConvCase):
    """Memory stays flat however large the array (chunks of 1 MiB)."""

    def run_capped(self, args, limit):
        """Run with the address space capped at `limit` bytes (RLIMIT_AS).
        ru_maxrss cannot be used: Linux carries it over fork and exec, so
        it would show this Python process's own size."""
        def cap():
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        return subprocess.run(args, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, preexec_fn=cap,
                              timeout=300)

    def test_64_mib_conversions_fit_in_32_mib(self):
        if os.environ.get("AF_SANITIZE", "none") not in ("", "none"):
            # ASan and TSan reserve terabytes of address space: RLIMIT_AS
            # cannot measure it; the plain build runs this case
            self.skipTest("address space cap is meaningless under a "
                          "sanitizer")
        src = os.path.join(self.tmp, "big.npy")
        big_npy(src, ">i4", 64 << 20)
        npz = os.path.join(self.tmp, "big.npz")
        np.savez_compressed(npz, a=np.arange((64 << 20) // 8, dtype="<f8"))
        for args in [[src, os.path.join(self.tmp, "big.ra")],
                     [npz + ":a", os.path.join(self.tmp, "a.ra")],
                     [os.path.join(self.tmp, "big.ra"),
                      os.path.join(self.tmp, "back.npy")]]:
            with self.subTest(src=args[0]):
                r = self.run_capped([ARRAYCONV, *args], 32 << 20)
                self.assertEqual(r.returncode, 0, r.stderr.decode())
        h = ra_header(read(os.path.join(self.tmp, "big.ra"))[:64])
        self.assertEqual(h["dims"], [1024, (64 << 20) // 4 // 1024])
        a = ra_read(read(os.path.join(self.tmp, "a.ra")))
        np.testing.assert_array_equal(a, np.arange((64 << 20) // 8))
        # A whole-array buffer would not fit: the cap is what makes it a test.
        r = self.run_capped(["/usr/bin/python3", "-c",
                             "bytearray(64 << 20)"], 32 << 20)
        self.assertNotEqual(r.returncode, 0)

    def test_no_progress_when_stderr_is_not_a_terminal(self):
        src = os.path.join(self.tmp, "p.npy")
        big_npy(src, "<f8", 20 << 20)
        _, r = self.conv(src, "p.ra")
        self.assertEqual(r.stderr, b"")

    def test_progress_bar_on_a_terminal(self):
        src = os.path.join(self.tmp, "p.npy")
        big_npy(src, "<f8", 20 << 20)
        master, slave = pty.openpty()
        try:
            p = subprocess.Popen([ARRAYCONV, src,
                                  os.path.join(self.tmp, "p.ra")],
                                 stderr=slave, stdout=subprocess.DEVNULL)
            os.close(slave)
            seen = b""
            while True:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                seen += chunk
            self.assertEqual(p.wait(timeout=60), 0)
        finally:
            os.close(master)
        self.assertIn(b"100%", seen)
        self.assertIn(b"MiB", seen)
        self.assertTrue(seen.endswith(b"\r\x1b[K"), seen[-40:])

    def test_small_output_no_bar_even_on_a_terminal(self):
        master, slave = pty.openpty()
        try:
            p = subprocess.Popen([ARRAYCONV, fixture("good", "u8.npy"),
                                  os.path.join(self.tmp, "s.ra")],
                                 stderr=slave, stdout=subprocess.DEVNULL)
            os.close(slave)
            self.assertEqual(p.wait(timeout=60), 0)
            os.set_blocking(master, False)
            try:
                seen = os.read(master, 4096)
            except (BlockingIOError, OSError):
                seen = b""
        finally:
            os.close(master)
        self.assertEqual(seen, b"")


if __name__ == "__main__":
    unittest.main(verbosity=2)
