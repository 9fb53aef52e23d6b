#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`.zarr/` groups (CONTRACT.md, "A folder or npz as a Zarr group") as
remote and browser-side readers use them, on test_zarr_group.py's corpus
(stored and deflated npz, .ra plain, big-endian and LZ4, Fortran order,
nested npz keys, key collisions, an npz in a sub-folder) served by nginx
(examples/nginx.conf, httpserver.py) on 127.0.0.1:
- zarrita.js opens the v3 group (and the v2 one through its consolidated
  `.zmetadata`), walks to every child array by key through its
  sub-groups, npz sub-groups among them, and reads each as numpy does,
  from the mount and over HTTP (FetchStore). zarrita 0.7.5 reads no
  complex, float16 or empty array (zarrita.py): the corpus's one complex
  member is left out of those reads, not of the listing;
- zarr-python (zarr 2.13) through fsspec's HTTP store: open_consolidated
  and open_group (nginx's listings) list exactly the children and every
  array equals numpy's; xarray opens an npz, one in a sub-folder too, as
  a Dataset over HTTP;
- nginx serves the hidden name `.zarr` (asked for by name) and lists the
  group's children."""
import json
import os
import subprocess
import sys
import urllib.request
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mountlib  # noqa: E402
import numpy as np  # noqa: E402
import xarray  # noqa: E402
import zarrita  # noqa: E402
from httpserver import HttpServer  # noqa: E402
from mountlib import TempDir, check_all, npy_bytes, read  # noqa: E402
from sharecorpus import ServedCase  # noqa: E402
from test_stack import npz_bytes  # noqa: E402
from test_zarr_group import (NESTED, ROOT_ARRAYS, ROOT_GROUPS, RUN,  # noqa: E402
                             assert_equal_array, expected_arrays, populate)

import fsspec  # noqa: E402
import zarr  # noqa: E402

CURL_DEADLINE = 60
INNER = {"k": np.arange(3.0)}  # sub/inner.npz of the corpus


def make_source():
    src = TempDir()
    # mkdtemp makes it 0700; nginx reads as www-data (the mount keeps the
    # source's permissions)
    os.chmod(src.path, 0o755)
    populate(src)
    return src


def groups_of(keys):
    """Every group above the array KEYS ('/'-separated), root as ''."""
    out = {""}
    for key in keys:
        parts = key.split("/")[:-1]
        out.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    return out


class GroupServed(ServedCase):
    make_source = staticmethod(make_source)
    make_server = HttpServer

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.want = expected_arrays(cls.src)
        # what zarrita can read (see the module comment)
        cls.readable = {k: a for k, a in cls.want.items()
                        if zarrita.readable(a.dtype, a.shape)}
        cls.groups = groups_of(cls.want)

    def url(self, *parts):
        return self.server.url("/".join(parts))

    def group_location(self, fetch):
        return self.url(".zarr") if fetch else self.mp(".zarr")

    def zarrita_keys(self):
        """Every readable array's key, then every sub-group's (ending in
        '/': zgroup.mjs opens it as a group)."""
        return sorted(self.readable) + sorted(g + "/" for g in self.groups if g)

    def check_zarrita_group(self, version, fetch):
        self.assertEqual(set(self.want) - set(self.readable), {"nested/sub/deeper/c"})
        keys = self.zarrita_keys()
        head, got = zarrita.read_group(self.group_location(fetch), version, keys, fetch)
        self.assertIsInstance(head, dict, head)
        self.assertEqual(head["node_type"], "group")

        def check(key):
            if key.endswith("/"):
                self.assertEqual(got[key], {"node_type": "group"}, key)
            else:
                zarrita.assert_same(got[key], self.readable[key], key)
        check_all(self, keys, check, label=lambda k: "%s (%s)" % (k, version))
        return head

    def test_zarrita_reads_the_v3_group_and_its_arrays(self):
        self.check_zarrita_group("v3", fetch=False)

    def test_zarrita_reads_the_v3_group_over_http(self):
        self.check_zarrita_group("v3", fetch=True)

    def test_zarrita_reads_the_v2_group_and_its_arrays(self):
        self.check_zarrita_group("v2", fetch=False)

    def test_zarrita_lists_the_consolidated_v2_group_over_http(self):
        """withConsolidatedMetadata lists exactly the children (the complex
        member too: it is listed, not read), and every array opens and
        reads from that one document."""
        head = self.check_zarrita_group("v2-consolidated", fetch=True)
        want = sorted(["array /" + k for k in self.want] +
                      ["group /" + g for g in self.groups])
        self.assertEqual(head["contents"], want)

    def test_zarr_python_open_consolidated_over_http(self):
        """Through an fsspec mapper, and an FSStore as docs/SHARING.md
        says."""
        for store in (fsspec.get_mapper(self.url(".zarr")),
                      zarr.storage.FSStore(self.url(".zarr"))):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                g = zarr.open_consolidated(store)
            self.assert_group(g)

    def test_zarr_python_open_group_over_http(self):
        """v2 metadata, children found through nginx's listings of the
        group's folders (autoindex leaves out only dot files)."""
        g = zarr.open_group(fsspec.get_mapper(self.url(".zarr")), mode="r")
        self.assertFalse(hasattr(g.store, "meta"), "a consolidated store")
        self.assert_group(g)

    def assert_group(self, g):
        self.assertEqual(set(g.array_keys()), ROOT_ARRAYS)
        self.assertEqual(set(g.group_keys()), ROOT_GROUPS)
        self.assertEqual(set(g["nested"].array_keys()), {"a"})
        self.assertEqual(set(g["nested"].group_keys()), {"sub"})
        self.assertEqual(set(g["nested/sub"].array_keys()), {"b"})
        self.assertEqual(set(g["sub"].group_keys()), {"inner"})
        self.assertEqual(set(g["sub/inner"].array_keys()), set(INNER))
        self.assertEqual(set(g["run.npz"].array_keys()), set(RUN))
        check_all(self, sorted(self.want),
                  lambda key: assert_equal_array(g[key][...], self.want[key], key))

    def test_xarray_dataset_of_an_npz_over_http(self):
        for npz, arrays in (("run.npz", RUN), ("sub/inner.npz", INNER),
                            ("nested.npz", {"a": NESTED["a"]})):
            ds = xarray.open_zarr(self.url(npz, ".zarr"))
            self.assertEqual(set(ds.data_vars), set(arrays), npz)
            for k, want in arrays.items():
                assert_equal_array(ds[k].values, want, npz + "/" + k)

    def test_nginx_serves_the_hidden_name_and_lists_the_group(self):
        """nginx serves `.zarr` asked for by name (examples/nginx.conf
        refuses no dot name) and its listing of `.zarr/` gives the
        children (autoindex hides dot names, so that `.zarr` is in no
        listing is test_zarr_group's to show)."""
        for folder in ("", "sub", "run.npz", "nested.npz/sub"):
            rel = folder + "/.zarr/.zgroup" if folder else ".zarr/.zgroup"
            r = subprocess.run(["curl", "-sS", "-o", "-", "-w", "\n%{http_code}",
                                self.url(rel)], capture_output=True, timeout=CURL_DEADLINE)
            body, _, code = r.stdout.rpartition(b"\n")
            self.assertEqual(code, b"200", r.stderr)
            self.assertEqual(body, read(self.mp(rel)))
        fs = fsspec.filesystem("http")

        def names(url):
            return {u.rstrip("/").rsplit("/", 1)[-1] for u in fs.ls(url, detail=False)}
        self.assertEqual(names(self.url(".zarr") + "/"),
                         ROOT_ARRAYS | ROOT_GROUPS | {"zarr.json"})
        self.assertEqual(names(self.url("sub", ".zarr") + "/"), {"y", "inner", "zarr.json"})


class GroupKeysToQuote(ServedCase):
    """Keys that a URL must quote and JSON escape (a space, UTF-8, a
    quote), in a folder and an npz: zarr-python reads them over HTTP
    through `.zmetadata`, zarrita.js from the mount and over HTTP. Left
    out, as the clients cannot take them (not the mount): `%`, `#`, `?`
    and `\\` in zarrita 0.7.5 (it resolves keys as URLs), `?` in fsspec's
    HTTP store, `\\` in zarr 2.13 (a path separator there); and zarr's
    open_group over HTTP lists such keys as nginx's links spell them,
    percent-encoded (fsspec issue 1713)."""
    ARRAYS = {"a b": np.arange(3, dtype="<i4"), "température": np.arange(4.0),
              'quote"x': np.arange(5, dtype=">u2")}
    make_server = HttpServer

    @classmethod
    def make_source(cls):
        src = TempDir()
        os.chmod(src.path, 0o755)
        for key, arr in cls.ARRAYS.items():
            with open(src.join(key + ".npy"), "wb") as f:
                f.write(npy_bytes(arr))
        with open(src.join("my run.npz"), "wb") as f:
            f.write(npz_bytes({k + ".npy": a for k, a in cls.ARRAYS.items()}, True))
        return src

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.want = dict(cls.ARRAYS)
        cls.want.update({"my run/" + k: a for k, a in cls.ARRAYS.items()})

    def test_zmetadata_names_them_as_they_are(self):
        with urllib.request.urlopen(self.server.url(".zarr/.zmetadata"),
                                    timeout=CURL_DEADLINE) as r:
            meta = json.load(r)["metadata"]
        self.assertEqual({k[:-len("/.zarray")] for k in meta if k.endswith("/.zarray")},
                         set(self.want))

    def test_zarr_python_open_consolidated_over_http(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = zarr.open_consolidated(fsspec.get_mapper(self.server.url(".zarr")))
        self.assertEqual(set(g.array_keys()), set(self.ARRAYS))
        self.assertEqual(set(g.group_keys()), {"my run"})
        check_all(self, sorted(self.want),
                  lambda key: assert_equal_array(g[key][...], self.want[key], key))

    def test_zarrita_reads_them_from_the_mount_and_over_http(self):
        for location, fetch in ((self.mp(".zarr"), False), (self.server.url(".zarr"), True)):
            head, got = zarrita.read_group(location, "v3", sorted(self.want), fetch)
            self.assertIsInstance(head, dict, head)
            check_all(self, sorted(self.want),
                      lambda key: zarrita.assert_same(got[key], self.want[key], key),
                      label=lambda key: "%s (%s)" % (key, location))


if __name__ == "__main__":
    mountlib.main()
