# SPDX-License-Identifier: MIT
"""nginx for a test: run from examples/nginx.conf in the foreground
(`-p PREFIX -c CONF -g 'daemon off;'`), its prefix (config, pid, logs,
temporary files) under a temporary folder, on 127.0.0.1 and a free port.

    web = HttpServer(mount_path)
    web.start()
    web.url("x.npy/data")            # 'http://127.0.0.1:PORT/x.npy/data'
    web.stop()                       # before unmounting mount_path

Needs Debian's nginx. Run as root, its workers read as the config's
`user` (www-data): an arrayfs mount needs `-o allow_other`.
"""
import os
import shutil
import urllib.parse

from serverproc import FolderServer, ServerProcess, substitute

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "..", "..", "..", "examples", "nginx.conf")
# What the example says that a test replaces.
EXAMPLE_ROOT = "root /mnt/arrays;"
EXAMPLE_LISTEN = "listen 127.0.0.1:8080;"


def nginx_conf(root, port):
    """The text of examples/nginx.conf serving ROOT on 127.0.0.1:PORT."""
    with open(EXAMPLE) as f:
        text = f.read()
    text = substitute(text, EXAMPLE_ROOT, "root %s;" % root)
    return substitute(text, EXAMPLE_LISTEN, "listen 127.0.0.1:%d;" % port)


class HttpServer(FolderServer):
    """nginx serving ROOT on 127.0.0.1:port (see the module comment);
    `workdir` is its -p prefix: nginx.conf, nginx.pid, logs/, tmp/."""

    def __init__(self, root):
        FolderServer.__init__(self, "arrayfs-nginx-")
        self.root = root
        for sub in ("logs", "tmp"):
            os.mkdir(os.path.join(self.workdir, sub))
        self.conf_path = os.path.join(self.workdir, "nginx.conf")
        with open(self.conf_path, "w") as f:
            f.write(nginx_conf(root, self.port))
        # -e: the log used before the config is read (else /var/log/nginx)
        argv = [shutil.which("nginx") or "/usr/sbin/nginx", "-p", self.workdir,
                "-c", self.conf_path, "-e", "stderr", "-g", "daemon off;"]
        self.server = ServerProcess("nginx", argv, self.port,
                                    os.path.join(self.workdir, "stderr.log"), cwd=self.workdir)

    def url(self, rel=""):
        """The URL of REL ('/' separated, under the served root)."""
        return "http://127.0.0.1:%d/%s" % (self.port, urllib.parse.quote(rel))

    def log(self):
        """nginx's stderr and error log."""
        try:
            with open(os.path.join(self.workdir, "logs", "error.log")) as f:
                errors = f.read()
        except OSError:
            errors = ""
        return self.server.log() + errors
