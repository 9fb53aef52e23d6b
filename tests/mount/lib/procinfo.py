# SPDX-License-Identifier: MIT
"""What a running daemon holds, read from /proc: fds, RSS, sanitizer."""
import os


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def fd_targets(pid):
    """{what an fd points at: how many}, for failure messages."""
    d = "/proc/%d/fd" % pid
    out = {}
    for n in os.listdir(d):
        try:
            t = os.readlink(os.path.join(d, n))
        except OSError:
            continue
        t = t.split(":[")[0]
        out[t] = out.get(t, 0) + 1
    return out


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for pid %d" % pid)


def sanitized(pid):
    """True when the daemon runs under AddressSanitizer (whose quarantine
    keeps freed memory) or ThreadSanitizer (whose shadow memory is counted
    in RSS): RSS bounds must be looser."""
    try:
        with open("/proc/%d/maps" % pid) as f:
            maps = f.read()
    except OSError:
        return False
    return "libasan" in maps or "libtsan" in maps
