# SPDX-License-Identifier: MIT
"""zarrita.js (npm, a pinned version) for a test: a JavaScript Zarr v2/v3
reader run with this machine's node.

    arr = zarrita.read(store_folder, "v3")        # numpy array in C order
    arr = zarrita.read(url, "v2", fetch=True)     # through HTTP GETs
    arrs = zarrita.read_all([folder, ...], "v3")  # one node run for many
    zarrita.assert_same(arrs[folder], numpy_array, "what")
    head, got = zarrita.read_group(url, "v3", ["a", "sub/b", "sub/"], fetch=True)

The first use installs tests/mount/js/package.json (its package-lock.json:
exact versions of every package) with `npm ci` into a folder of the build
tree ($AF_BUILD_ROOT/zarrita-js), its npm cache beside it; later runs use
that folder and need no network. When it cannot be installed (npm or the
registry unreachable) read() raises: a test that needs zarrita fails, it
never skips.

Limits of zarrita 0.7.5 on node 20 (tests leave these arrays out): no
float16 (node has no Float16Array) and no complex types ("Unknown or
unsupported dataType"); zarr.get() of an array with no elements throws.
"""
import base64
import json
import os
import shutil
import subprocess

import numpy as np

from mountlib import env_path

JS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "js")
NPM_DEADLINE = 600   # seconds for npm ci
READ_DEADLINE = 300  # seconds for one node run
NUMPY_TYPES = {"bool": "|b1", "int8": "|i1", "int16": "=i2", "int32": "=i4",
               "int64": "=i8", "uint8": "|u1", "uint16": "=u2", "uint32": "=u4",
               "uint64": "=u8", "float32": "=f4", "float64": "=f8"}


def readable(dtype, shape):
    """Whether zarrita 0.7.5 can read an array of numpy DTYPE and SHAPE
    (see the module comment for what it cannot)."""
    dtype = np.dtype(dtype)
    if dtype.fields is not None or dtype.subdtype is not None:
        return False
    core = dtype.kind in "biu" or (dtype.kind == "f" and dtype.itemsize in (4, 8))
    return core and all(n > 0 for n in shape)


def copy_scripts(root):
    """Copy the .mjs scripts into ROOT, where node finds node_modules (on
    every use: an install outlives edits of the scripts)."""
    for name in os.listdir(JS):
        if name.endswith(".mjs"):
            shutil.copy(os.path.join(JS, name), root)


def install():
    """The folder holding node_modules with the pinned zarrita (installed
    on first use) and the current scripts. Raises RuntimeError when npm
    fails."""
    root = os.path.join(env_path("AF_BUILD_ROOT"), "zarrita-js")
    with open(os.path.join(JS, "package-lock.json"), "rb") as f:
        lock = f.read()
    stamp = os.path.join(root, "installed-lock.json")
    if os.path.exists(stamp):
        with open(stamp, "rb") as f:
            if f.read() == lock:
                copy_scripts(root)
                return root
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(os.path.join(JS, name), root)
    copy_scripts(root)
    npm = shutil.which("npm")
    if not npm:
        raise RuntimeError("npm is not installed: run scripts/lib/deps.sh test")
    r = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error",
                        "--cache", os.path.join(root, "npm-cache")],
                       cwd=root, capture_output=True, text=True, timeout=NPM_DEADLINE)
    if r.returncode != 0:
        raise RuntimeError("npm ci of zarrita failed (is the npm registry reachable?):\n"
                           + r.stdout + r.stderr)
    with open(stamp, "wb") as f:
        f.write(lock)
    return root


def run_script(script, args, count):
    """The COUNT JSON lines node SCRIPT (of tests/mount/js) prints for ARGS,
    decoded. Raises AssertionError when node fails."""
    root = install()
    r = subprocess.run(["node", os.path.join(root, script)] + list(args),
                       cwd=root, capture_output=True, text=True, timeout=READ_DEADLINE)
    lines = r.stdout.splitlines()
    if r.returncode != 0 or len(lines) != count:
        raise AssertionError("zarrita (node %s) failed: %s" % (script, r.stderr.strip()))
    return [json.loads(line) for line in lines]


def decode(got):
    """One line of zarray.mjs: a numpy array in C order, the error text (a
    str), or, for a group, the line itself (a dict)."""
    if "error" in got:
        return got["error"]
    if got.get("node_type") == "group":
        return got
    dtype = np.dtype(NUMPY_TYPES[got["data_type"]])
    raw = base64.b64decode(got["base64"])
    return np.frombuffer(raw, dtype=dtype).reshape(got["shape"])


def read_all(locations, version, fetch=False):
    """The arrays at LOCATIONS (store folders, or their URLs with FETCH) as
    zarrita reads their VERSION ("v2": .zarray, "v3": zarr.json) metadata,
    in one node run: {location: numpy array in C order, or the error text
    (a str) for one zarrita could not read}."""
    lines = run_script("zread.mjs", ["fetch" if fetch else "fs", version] + list(locations),
                       len(locations))
    return {location: decode(line) for location, line in zip(locations, lines)}


def read_group(location, version, keys, fetch=False):
    """Open the group at LOCATION (a folder, or its URL with FETCH) as
    zarrita does with VERSION ("v2", "v3", or "v2-consolidated": every
    metadata document from its .zmetadata), then walk to each of KEYS
    ('/'-separated; one ending in '/' is opened as a group) from it, in one
    node run. Returns (the group's line: a dict with "contents", the
    sorted "array /path" and "group /path" of the document, for
    v2-consolidated, or the error text), {key: numpy array in C order, the
    group's line for a group, or the error text}."""
    lines = run_script("zgroup.mjs", ["fetch" if fetch else "fs", version, location]
                       + list(keys), 1 + len(keys))
    return decode(lines[0]), {key: decode(line) for key, line in zip(keys, lines[1:])}


def read(location, version, fetch=False):
    """The one array at LOCATION (see read_all). Raises AssertionError with
    zarrita's error when it cannot read it."""
    got = read_all([location], version, fetch)[location]
    if isinstance(got, str):
        raise AssertionError("zarrita %s of %s: %s" % (version, location, got))
    return got


def assert_same(got, want, what):
    """GOT (read_all's answer for one array) holds numpy array WANT's values
    (in this machine's byte order; bool as 0/1 bytes); raises
    AssertionError with zarrita's error or what differs."""
    if isinstance(got, str):
        raise AssertionError("%s: zarrita: %s" % (what, got.splitlines()[0]))
    native = want.astype(want.dtype.newbyteorder("="))
    if want.dtype.kind == "b":
        native = native.view("u1")
    if got.shape != want.shape:
        raise AssertionError("%s: zarrita's shape %s, numpy's %s" % (what, got.shape, want.shape))
    if not np.array_equal(got, native, equal_nan=want.dtype.kind == "f"):
        raise AssertionError("%s: zarrita's values differ from numpy's" % what)
