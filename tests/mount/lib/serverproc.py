# SPDX-License-Identifier: MIT
"""Run a network server (smbd, nginx) for a test: in the foreground, in a
session of its own, listening on 127.0.0.1 only, stopped by pid with
everything it forked at the end, even when the test fails.

    srv = ServerProcess("nginx", argv, port, log_path, cwd=workdir)
    srv.start()          # returns once 127.0.0.1:PORT is listening
    srv.listening()      # ["127.0.0.1:PORT"]: every TCP socket it listens on
    srv.stop()           # SIGTERM, then SIGKILL; returns once all of it is gone

Stop servers BEFORE unmounting what they serve: a server holding files or
its working folder in a FUSE mount makes `fusermount3 -u` fail with EBUSY.
A session of its own also keeps a server that signals its whole process
group on exit (smbd does) from signalling the test.

Side effects: an atexit hook stops every server still running. It is
registered after mountlib's (this module imports mountlib), so it runs
first and servers let go of mounts before mountlib unmounts them.
"""
import atexit
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from mountlib import wait_pid_exit

START_DEADLINE = 20.0  # seconds for a server to listen
STOP_DEADLINE = 10.0   # seconds for it to exit after SIGTERM
POLL_INTERVAL = 0.02   # seconds between looks at the listening sockets

_live = []  # every ServerProcess started and not yet stopped


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def substitute(text, old, new):
    """TEXT with OLD replaced by NEW; OLD must occur, so a config template
    that no longer holds what a test replaces fails loudly instead of
    being run unchanged."""
    if old not in text:
        raise AssertionError("config template lacks %r" % old)
    return text.replace(old, new)


def _stat_fields(pid):
    """(state, session id) of PID from /proc/PID/stat, or None if gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # the name may hold spaces
    return fields[0], int(fields[3])


def session_pids(sid):
    """Live (not zombie) processes whose session id is SID."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat_fields(int(name))
            if st is not None and st[1] == sid and st[0] != "Z":
                out.append(int(name))
    return out


def _socket_inodes(pids):
    inodes = set()
    for pid in pids:
        d = "/proc/%d/fd" % pid
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            try:
                target = os.readlink(os.path.join(d, n))
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(int(target[8:-1]))
    return inodes


def _hex_address(text):
    """'0100007F:1F90' (/proc/net/tcp) or its tcp6 form -> '127.0.0.1:8080'."""
    addr, port = text.split(":")
    raw = bytes.fromhex(addr)
    # the kernel prints each 32-bit word in host (little-endian) order
    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    family = socket.AF_INET if len(raw) == 4 else socket.AF_INET6
    host = socket.inet_ntop(family, raw)
    return ("%s:%d" if family == socket.AF_INET else "[%s]:%d") % (host, int(port, 16))


def listening_sockets(inodes=None, proc_root="/proc"):
    """['ADDR:PORT'] of TCP sockets in LISTEN state, all of them or those
    whose inode is in INODES; in this network namespace, or with PROC_ROOT
    /proc/PID in that process's."""
    out = []
    for table in (proc_root + "/net/tcp", proc_root + "/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if cols[3] == "0A" and (inodes is None or int(cols[9]) in inodes):
                out.append(_hex_address(cols[1]))
    return sorted(set(out))


class ServerError(AssertionError):
    """A server that did not start or stop as it should: a test failure."""


class ServerProcess:
    """One server process started by a test (see the module comment).

    ARGV runs in the foreground; its stdout and stderr go to LOG_PATH; it
    must come to listen on one of `want` (127.0.0.1:PORT, unless a
    subclass says otherwise)."""

    def __init__(self, name, argv, port, log_path, cwd=None):
        self.name, self.argv, self.port = name, list(argv), port
        # the addresses start() waits for (any one of them)
        self.want = ["127.0.0.1:%d" % port]
        self.log_path, self.cwd = log_path, cwd
        self.proc = None
        self.returncode = None

    def start(self, deadline=START_DEADLINE):
        """Start it and wait until it listens on one of `want`. Raises
        ServerError (with its log) if it exits first or time runs out; the
        server is stopped then."""
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, cwd=self.cwd,
                                         start_new_session=True)
        _live.append(self)
        try:
            self._wait_listening(deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_listening(self, deadline):
        # Nothing signals a listening socket: look at /proc/net/tcp (no
        # connection is made), woken early by the server's exit (pidfd).
        want = " or ".join(self.want)
        end = time.monotonic() + deadline
        pidfd = os.pidfd_open(self.proc.pid)
        try:
            while not set(self.want) & set(self.listening()):
                left = end - time.monotonic()
                if left <= 0:
                    raise ServerError("%s not listening on %s after %.0f s:\n%s"
                                      % (self.name, want, deadline, self.log()))
                if select.select([pidfd], [], [], min(POLL_INTERVAL, left))[0]:
                    raise ServerError("%s exited with status %s before listening:\n%s"
                                      % (self.name, self.proc.wait(), self.log()))
        finally:
            os.close(pidfd)

    def pids(self):
        """The server's live processes (its session), the main one first."""
        if self.proc is None or self.proc.poll() is not None:
            return session_pids(self.proc.pid) if self.proc else []
        return [self.proc.pid] + [p for p in session_pids(self.proc.pid)
                                  if p != self.proc.pid]

    def listening(self):
        """['ADDR:PORT'] of every TCP socket the server's processes listen on."""
        return listening_sockets(_socket_inodes(self.pids()))

    def check_alive(self):
        if self.proc is None or self.proc.poll() is not None:
            raise ServerError("%s died (status %s):\n%s"
                              % (self.name, self.proc and self.proc.poll(), self.log()))

    def stop(self, deadline=STOP_DEADLINE):
        """SIGTERM to its pid, SIGKILL to its process group after DEADLINE,
        then the same for any process left in its session (forked workers).
        Returns once none is left. Idempotent; never raises for a server
        that already exited."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=deadline)
            except subprocess.TimeoutExpired:
                self._kill_group()
                self.proc.wait(timeout=deadline)
        self.returncode = self.proc.returncode
        for sig in (signal.SIGTERM, signal.SIGKILL):
            left = session_pids(self.proc.pid)
            for pid in left:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            if all([wait_pid_exit(pid, deadline) for pid in left]):
                break
        if session_pids(self.proc.pid):
            raise ServerError("%s left processes %s after SIGKILL"
                              % (self.name, session_pids(self.proc.pid)))
        if self in _live:
            _live.remove(self)

    def _kill_group(self):
        # the group id is the pid: start_new_session made it a leader
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")[-20000:]
        except OSError:
            return ""


class FolderServer:
    """A server whose config and state live in a temporary folder of its
    own, `workdir`, removed once it has stopped. A subclass calls
    FolderServer.__init__, writes its config in workdir and sets
    `self.server` to a ServerProcess on `self.port`."""

    def __init__(self, prefix):
        self.port = free_port()
        self.workdir = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
        self.server = None

    def start(self):
        """Start the server; returns self once it listens (ServerError if
        not, with the server stopped and workdir removed)."""
        try:
            self.server.start()
        except BaseException:
            self._remove_workdir()
            raise
        return self

    def stop(self):
        """Stop the server and everything it forked; remove workdir."""
        try:
            if self.server is not None:
                self.server.stop()
        finally:
            self._remove_workdir()

    def _remove_workdir(self):
        proc = self.server.proc if self.server is not None else None
        if proc is None or proc.poll() is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def check_alive(self):
        self.server.check_alive()

    def listening(self):
        """['ADDR:PORT'] of every TCP socket the server listens on."""
        return self.server.listening()

    def log(self):
        return self.server.log()


def _stop_all():
    for srv in list(_live):
        try:
            srv.stop()
        except Exception:  # at exit: stop the others anyway
            pass


atexit.register(_stop_all)
