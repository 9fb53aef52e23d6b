#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""arrayrefs over HTTP: nginx (examples/nginx.conf, httpserver.py) serves
the SOURCE folder itself, no mount; zarr 2.13 reads every array of the
arrayrefs corpus through fsspec's ReferenceFileSystem with HTTP range
requests, element-exact against numpy, with the mount's grid and with the
grids arrayrefs chooses for short tails too big to go inline."""
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))
import mountlib  # noqa: E402
import refscorpus  # noqa: E402
from httpserver import HttpServer  # noqa: E402

GRIDS = (["--chunk", "1000"], ["--chunk", "4096", "--inline-max", "1024"])


class RefsHttpTest(unittest.TestCase):
    def setUp(self):
        self.tmp = mountlib.TempDir()
        # nginx's workers read as www-data
        os.chmod(self.tmp.path, 0o755)
        self.src = os.path.join(self.tmp.path, "src")
        self.want = refscorpus.write_corpus(self.src)
        self.web = HttpServer(self.src)
        self.addCleanup(self.tmp.close)
        self.web.start()
        self.addCleanup(self.web.stop)

    def test_zarr_reads_every_array_over_http_from_the_source_folder(self):
        out = os.path.join(self.tmp.path, "refs.json")
        for grid in GRIDS:
            with self.subTest(grid=grid):
                p = subprocess.run([mountlib.arrayrefs_bin(), *grid, "--url",
                                    self.web.url(""), "-o", out, self.src],
                                   capture_output=True, timeout=120)
                self.assertEqual(p.returncode, 3, p.stderr.decode())
                got = refscorpus.read_refs(out)
                self.assertEqual(refscorpus.mismatches(self.want, got), [],
                                 self.web.log())
        # the chunks came as range requests of the original files
        with open(os.path.join(self.web.workdir, "logs", "access.log")) as f:
            log = f.read()
        self.assertIn("GET /run.npz HTTP/1.1\" 206", log)
        self.assertIn("GET /we%20ird%23%3F%25/%C3%A9%20x.npy HTTP/1.1\" 206", log)


if __name__ == "__main__":
    unittest.main()
