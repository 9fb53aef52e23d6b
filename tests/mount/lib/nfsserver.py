# SPDX-License-Identifier: MIT
"""nfs-ganesha for a test: ganesha.nfsd run in the foreground from
examples/ganesha.conf (NFSv4 only, FSAL VFS, read-only), with its config,
recovery state, pid file and log in a temporary folder, inside a network
namespace of its own that has only loopback; libnfs-utils' nfs-ls and
nfs-cat run in that namespace as its clients.

    nfs = NfsServer(mount_path)     # the folder to export (an arrayfs mount)
    nfs.start()                     # returns once ganesha listens
    nfs.cat("x.npy/data")           # bytes, through NFS (CompletedProcess.stdout)
    nfs.ls("x.npy")                 # {name: 'dir'|'file'}
    nfs.stop()                      # before unmounting mount_path

The namespace (`unshare -n`) is the server's: it lives as long as
ganesha's process and goes with it, so the port is the example's 2049 in
every test run without clashing. It has lo up with 127.0.0.1 and one more
loopback-only address (192.0.2.1/32, a documentation address on lo):
glibc's getaddrinfo with AI_ADDRCONFIG, which ganesha uses to read
Bind_addr, finds nothing on a host whose only IPv4 address is 127.0.0.1.
Needs root (namespaces, and ganesha reads the mount as root).
"""
import os
import shutil
import subprocess

from serverproc import FolderServer, ServerError, ServerProcess, listening_sockets, substitute

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "..", "..", "..", "examples", "ganesha.conf")
PORT = 2049
NETNS_SETUP = ("ip link set lo up && ip addr add 192.0.2.1/32 dev lo && "
               "exec \"$0\" \"$@\"")
CLIENT_TIMEOUT = 120


def ganesha_conf(path, workdir):
    """examples/ganesha.conf exporting PATH, its recovery state in WORKDIR."""
    with open(EXAMPLE) as f:
        text = f.read()
    text = substitute(text, "Path = /mnt/arrays;", "Path = %s;" % path)
    state = os.path.join(workdir, "recovery")
    os.makedirs(state)
    return substitute(text, "RecoveryRoot = /var/lib/nfs/ganesha;",
                      "RecoveryRoot = %s;" % state)


class GaneshaProcess(ServerProcess):
    """ganesha.nfsd in its namespace: its sockets are seen through
    /proc/PID/net, not the test's own /proc/net."""

    def __init__(self, *args, **kw):
        ServerProcess.__init__(self, *args, **kw)
        # ganesha 4.3 listens on every address of its namespace (IPv6 and
        # IPv4 both), which are all loopback there
        self.want = ["[::]:%d" % PORT, "0.0.0.0:%d" % PORT, "127.0.0.1:%d" % PORT]

    def listening(self):
        pids = self.pids()
        if not pids:
            return []
        return listening_sockets(None, proc_root="/proc/%d" % pids[0])


class NfsServer(FolderServer):
    """ganesha exporting PATH as /arrays (see the module comment); in a new
    namespace, or with NETNS (a /proc/PID/ns/net path) in that one, which
    must be set up as a new one is (a client that kept a namespace alive
    across a restart of ganesha)."""

    def __init__(self, path, netns=None):
        FolderServer.__init__(self, "arrayfs-nfs-")
        self.port = PORT
        self.path = path
        self.conf_path = os.path.join(self.workdir, "ganesha.conf")
        with open(self.conf_path, "w") as f:
            f.write(ganesha_conf(path, self.workdir))
        ganesha = shutil.which("ganesha.nfsd") or "/usr/bin/ganesha.nfsd"
        enter = ["nsenter", "--net=" + netns] if netns else \
            ["unshare", "-n", "sh", "-c", NETNS_SETUP]
        argv = enter + [ganesha, "-F", "-f", self.conf_path,
                        "-p", os.path.join(self.workdir, "ganesha.pid"),
                        "-L", os.path.join(self.workdir, "ganesha.log"), "-N", "NIV_EVENT"]
        self.server = GaneshaProcess("ganesha.nfsd", argv, PORT,
                                     os.path.join(self.workdir, "stdout.log"),
                                     cwd=self.workdir)

    def log(self):
        try:
            with open(os.path.join(self.workdir, "ganesha.log"), "rb") as f:
                return f.read().decode("utf-8", "replace")[-20000:]
        except OSError:
            return self.server.log()

    def netns(self):
        """The namespace's path (ganesha's), for nsenter."""
        self.check_alive()
        return "/proc/%d/ns/net" % self.server.proc.pid

    def run_in_netns(self, argv, timeout=CLIENT_TIMEOUT, **kw):
        """Run ARGV in the server's network namespace; CompletedProcess."""
        return subprocess.run(["nsenter", "--net=" + self.netns()] + list(argv),
                              timeout=timeout, **kw)

    def url(self, rel=""):
        rel = rel.strip("/")
        return "nfs://127.0.0.1/arrays%s?version=4" % ("/" + rel if rel else "")

    def cat(self, rel):
        """nfs-cat of REL (relative to the export): CompletedProcess, stdout bytes."""
        return self.run_in_netns(["nfs-cat", self.url(rel)], capture_output=True)

    def cat_to(self, rel, out_path):
        """nfs-cat of REL into OUT_PATH; CompletedProcess (stderr text)."""
        with open(out_path, "wb") as out:
            return self.run_in_netns(["nfs-cat", self.url(rel)], stdout=out,
                                     stderr=subprocess.PIPE)

    def ls(self, rel=""):
        """{name: 'dir'|'file'} of folder REL, from `nfs-ls`; raises
        ServerError if nfs-ls fails."""
        r = self.run_in_netns(["nfs-ls", self.url(rel)], capture_output=True, text=True)
        if r.returncode != 0:
            raise ServerError("nfs-ls %s failed (%d): %s\n%s"
                              % (rel, r.returncode, r.stderr, self.log()))
        out = {}
        for line in r.stdout.splitlines():
            # "dr-xr-xr-x  2     0     0            0 name" (names may hold spaces)
            fields = line.split(None, 5)
            if len(fields) == 6 and fields[5] not in (".", ".."):
                out[fields[5]] = "dir" if fields[0].startswith("d") else "file"
        return out

    def walk(self, rel=""):
        """{relpath: 'dir'|'file'} of everything under REL, through nfs-ls."""
        out = {}
        for name, kind in self.ls(rel).items():
            r = name if rel == "" else rel + "/" + name
            out[r] = kind
            if kind == "dir":
                out.update(self.walk(r))
        return out

    def addresses(self):
        """`ip -o addr` lines of the namespace: what it can be reached on."""
        r = self.run_in_netns(["ip", "-o", "addr"], capture_output=True, text=True)
        return [line for line in r.stdout.splitlines() if line.strip()]
