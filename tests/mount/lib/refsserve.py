# SPDX-License-Identifier: MIT
"""A source folder that nginx can serve, mounts of it, servers over them,
and arrayrefs runs on it, for one test; everything stops at its cleanup.

    s = Served(testcase)          # s.src: an empty folder under s.tmp
    m = s.mount("-o", "zarr_chunk=1000")    # -o allow_other added
    web = s.serve(s.src)          # nginx (httpserver.py) over a folder
    refs, stderr = s.refs("--url", web.url(""), status=0)
    access_log(web)               # nginx's access log text
"""
import os
import subprocess

import mountlib
from httpserver import HttpServer


def access_log(web):
    with open(os.path.join(web.workdir, "logs", "access.log")) as f:
        return f.read()


class Served:
    """See the module comment. Cleanups run last in, first out: a server
    started after a mount stops before the mount is unmounted."""

    def __init__(self, testcase):
        self.t = testcase
        self.tmp = mountlib.TempDir()
        testcase.addCleanup(self.tmp.close)
        # nginx's workers read as www-data
        os.chmod(self.tmp.path, 0o755)
        self.src = os.path.join(self.tmp.path, "src")
        os.mkdir(self.src)

    def serve(self, root):
        web = HttpServer(root)
        self.t.addCleanup(web.stop)
        web.start()
        return web

    def mount(self, *args):
        # allow_other: nginx's workers are not root
        m = mountlib.Mount(self.src, None, ("-o", "allow_other") + args)
        self.t.addCleanup(m.cleanup)
        m.start()
        return m

    def refs(self, *args, status=0):
        """(path of the reference file, arrayrefs' stderr) of `arrayrefs
        ARGS -o FILE SRC`, which must exit with STATUS."""
        out = os.path.join(self.tmp.path, "refs.json")
        p = subprocess.run([mountlib.arrayrefs_bin(), *args, "-o", out, self.src],
                           capture_output=True, timeout=300)
        self.t.assertEqual(p.returncode, status, p.stderr.decode())
        return out, p.stderr.decode()
