# SPDX-License-Identifier: MIT
"""Samba for a test: smbd run from examples/smb.conf with its own state
under a temporary folder, on 127.0.0.1 and a free port, and smbclient to
talk to it as a guest.

    smb = SmbServer({"arrays": mount_path})     # share name -> folder
    smb.start()
    smb.client("arrays", "get x.npy/data /tmp/out")   # CompletedProcess
    smb.stop()                                  # before unmounting mount_path

Needs Debian's samba (smbd) and smbclient, and root: smbd switches to the
guest account to read files. The folder shared must be readable by that
account (`guest account`, nobody): an arrayfs mount needs `-o allow_other`.
"""
import os
import re
import shutil
import subprocess

from serverproc import FolderServer, ServerProcess, substitute

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "..", "..", "..", "examples", "smb.conf")
# What the example says that a test replaces.
EXAMPLE_PATH = "/mnt/arrays"
EXAMPLE_PORT = "smb ports = 445"
EXAMPLE_SHARE = "[arrays]"
# smb.conf settings that would otherwise point at the system's folders.
STATE_SETTINGS = ("private dir", "lock directory", "state directory",
                  "cache directory", "pid directory", "ncalrpc dir")

EA_START = re.compile(r"^(\S+) \((\d+)\) =$")
EA_HEX_LINE = re.compile(r"^\[[0-9A-F]{4}\] ")
# dump_data: 16 bytes as "XX " with an extra space after the 8th, then text
EA_HEX_WIDTH = 16 * 3 + 1


def smb_conf(shares, port, state_dir):
    """The text of examples/smb.conf serving SHARES ({name: folder}) on
    PORT, every state folder under STATE_DIR (made here). Each share is
    the example's [arrays] section with its name and path replaced."""
    with open(EXAMPLE) as f:
        text = f.read()
    text = substitute(text, EXAMPLE_PORT, "smb ports = %d" % port)
    cut = text.index(EXAMPLE_SHARE)
    head, section = text[:cut], text[cut:]
    state = ["[global]"]
    for setting in STATE_SETTINGS:
        d = os.path.join(state_dir, setting.split()[0])
        os.makedirs(d, exist_ok=True)
        state.append("   %s = %s" % (setting, d))
    state.append("   log file = %s" % os.path.join(state_dir, "log.%m"))
    head = substitute(head, "[global]", "\n".join(state))
    body = [substitute(substitute(section, EXAMPLE_SHARE, "[%s]" % name), EXAMPLE_PATH, path)
            for name, path in shares.items()]
    return head + "\n".join(body)


def parse_eas(text):
    """{name: bytes} from smbclient's `geteas` output (a name line, then
    hex dump lines); {} for NT_STATUS_NO_EAS_ON_FILE. Raises
    AssertionError on any other output."""
    eas, name = {}, None
    for line in text.splitlines():
        m = EA_START.match(line)
        if m:
            name = m.group(1)
            eas[name] = b""
        elif EA_HEX_LINE.match(line) and name is not None:
            hexpart = line[7:7 + EA_HEX_WIDTH]
            eas[name] += bytes.fromhex("".join(re.findall(r"[0-9A-F]{2}", hexpart)))
        elif line.strip() and "NT_STATUS_NO_EAS_ON_FILE" not in line:
            raise AssertionError("geteas printed %r" % line)
    return eas


class SmbServer(FolderServer):
    """smbd serving SHARES ({name: folder}) read-only to guests on
    127.0.0.1:port (see the module comment). `workdir` holds smb.conf, the
    state folders, smbd.log and a client config."""

    def __init__(self, shares):
        FolderServer.__init__(self, "arrayfs-smb-")
        self.shares = dict(shares)
        self.conf_path = os.path.join(self.workdir, "smb.conf")
        with open(self.conf_path, "w") as f:
            f.write(smb_conf(self.shares, self.port, os.path.join(self.workdir, "state")))
        # smbclient reads /etc/samba/smb.conf unless told otherwise
        self.client_conf = os.path.join(self.workdir, "client.conf")
        with open(self.client_conf, "w") as f:
            f.write("[global]\n")
        # --no-process-group: smbd would call setsid(), which fails in the
        # session of its own that ServerProcess gives it
        argv = [shutil.which("smbd") or "/usr/sbin/smbd", "--foreground",
                "--no-process-group", "--debug-stdout", "--configfile=" + self.conf_path]
        self.server = ServerProcess("smbd", argv, self.port,
                                    os.path.join(self.workdir, "smbd.log"), cwd=self.workdir)

    def client(self, share, commands, user=None, timeout=120):
        """Run `smbclient //127.0.0.1/SHARE -c COMMANDS` as a guest (no
        password), or as USER ('name%password'). Returns the
        CompletedProcess, stdout and stderr merged as text."""
        auth = ["-U", user] if user else ["-N"]
        argv = ["smbclient", "//127.0.0.1/%s" % share, "-p", str(self.port),
                "--configfile=" + self.client_conf] + auth + ["-c", commands]
        return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=timeout)
