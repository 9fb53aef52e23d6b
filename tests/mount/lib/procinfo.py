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


def sanitizer(pid):
    """"asan" when the daemon runs under AddressSanitizer (whose quarantine
    keeps freed memory), "tsan" under ThreadSanitizer (whose shadow memory,
    about 4 bytes for each byte touched, counts in RSS), else None."""
    try:
        with open("/proc/%d/maps" % pid) as f:
            maps = f.read()
    except OSError:
        return None
    return "asan" if "libasan" in maps else "tsan" if "libtsan" in maps else None


def sanitized(pid):
    """True under either sanitizer: RSS bounds must be looser."""
    return sanitizer(pid) is not None
