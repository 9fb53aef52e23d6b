# SPDX-License-Identifier: MIT
"""What arrayfs must show for a source, computed in Python with numpy as the
judge (CONTRACT.md, FORMATS.md). Nothing here looks at the mount.

    tree = expected_tree(SOURCE)      # {relpath: Entry}, relpath "" = root
    tree["x.npy"].array.checks["data"](actual_bytes)   # raises AssertionError
    tree["x.npy"].array.checks["x.zarr/0.0"](actual_bytes)

B.zarr/ and the sidecar headers come from scripts/fixtures/gen_zarr.py's
model of the contract (metadata texts as zarr-python writes them); chunk
bytes are cut out of the array by numpy indexing, each when it is checked.

Includes a small reference RawArray reader (per FORMATS.md and the reference
Python reader: numpy shape = dims, Fortran order) with an LZ4 block decoder.
"""
import ast
import io
import itertools
import os
import re
import struct
import sys
import warnings
import zipfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "scripts", "fixtures"))
import gen_zarr  # noqa: E402  (the model of B.zarr/ and the sidecars)

RA_MAGIC = 0x7961727261776172
RA_FIELDS = ("magic", "flags", "eltype", "elbyte", "size", "ndims", "dims")
ZARR_CHUNK = 8 << 20   # the daemon's default -o zarr_chunk


# -- byte comparison ----------------------------------------------------------
def first_difference(a, b):
    for i in range(min(len(a), len(b))):
        if a[i] != b[i]:
            return i
    return min(len(a), len(b))


def assert_bytes(actual, expected, what):
    if actual != expected:
        i = first_difference(actual, expected)
        raise AssertionError(
            "%s: %d bytes, expected %d; first difference at byte %d: got %r, expected %r"
            % (what, len(actual), len(expected), i, actual[i:i + 16], expected[i:i + 16]))


def equals(expected, what):
    check = lambda actual: assert_bytes(actual, expected, what)  # noqa: E731
    check.expected = expected  # the exact bytes, for tools that need them
    return check


# -- .npy ---------------------------------------------------------------------
class Npy:
    """The parts of a .npy file: version, raw header text, data offset, and
    the dict values; `array` is numpy.load's answer."""

    def __init__(self, buf):
        if buf[:6] != b"\x93NUMPY":
            raise ValueError("not a .npy file")
        self.version = (buf[6], buf[7])
        if self.version not in ((1, 0), (2, 0), (3, 0)):
            raise ValueError("unknown .npy version %r" % (self.version,))
        if self.version == (1, 0):
            (hlen,), start = struct.unpack_from("<H", buf, 8), 10
        else:
            (hlen,), start = struct.unpack_from("<I", buf, 8), 12
        if start + hlen > len(buf):
            raise ValueError("header runs past the end")
        self.header_raw = buf[start:start + hlen]
        self.data_offset = start + hlen
        enc = "utf-8" if self.version == (3, 0) else "latin1"
        text = self.header_raw.decode(enc)
        if self.version != (3, 0):  # Python 2 `L` suffixes, as numpy strips them
            text = np.lib.format._filter_header(text)
        d = ast.literal_eval(text)
        if not isinstance(d, dict) or sorted(d) != ["descr", "fortran_order", "shape"]:
            raise ValueError("header keys %r" % (d,))
        self.descr, self.fortran, self.shape = d["descr"], d["fortran_order"], d["shape"]
        if not isinstance(self.fortran, bool) or not isinstance(self.shape, tuple) or \
                not all(isinstance(x, int) and x >= 0 for x in self.shape):
            raise ValueError("bad fortran_order or shape")
        self.dtype = np.lib.format.descr_to_dtype(self.descr)
        self.buf = buf
        count = 1
        for x in self.shape:
            count *= x
        if not self.dtype.hasobject and \
                len(buf) < self.data_offset + count * self.dtype.itemsize:
            raise ValueError("data is truncated")  # checked before numpy allocates
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.array = np.load(io.BytesIO(buf), allow_pickle=True)

    @property
    def has_object(self):
        return self.dtype.hasobject

    def data(self):
        """The element bytes as stored. numpy is the judge: for dtypes
        without padding, its bytes in the file's order must be these (numpy
        copies struct fields one by one, so padding bytes come from the file)."""
        count = int(np.prod(self.shape, dtype=np.int64))
        raw = self.buf[self.data_offset:self.data_offset + count * self.dtype.itemsize]
        if self.dtype.fields is None:
            ours = self.array.tobytes(order="F" if self.fortran else "C")
            if ours != raw:
                raise AssertionError("test bug: numpy's bytes differ from the file's")
        return raw

    def dtype_text(self):
        # the descr as written: numpy writes repr() of each header value
        d = self.descr
        return (d if isinstance(d, str) else repr(d)).encode("utf-8") + b"\n"

    def header_text(self):
        return self.header_raw.rstrip(b" \t\r\n") + b"\n"


def shape_text(dims):
    return (" ".join(str(int(x)) for x in dims) + "\n").encode()


# -- .ra ----------------------------------------------------------------------
def ra_header(buf):
    """The RawArray header fields as a dict, plus data_offset."""
    magic, flags, eltype, elbyte, size, ndims = struct.unpack_from("<6Q", buf, 0)
    dims = list(struct.unpack_from("<%dQ" % ndims, buf, 48))
    return dict(magic=magic, flags=flags, eltype=eltype, elbyte=elbyte, size=size,
                ndims=ndims, dims=dims, data_offset=48 + 8 * ndims)


def lz4_block_decompress(src, outlen):
    """Decode one raw LZ4 block (no frame) of OUTLEN bytes."""
    out, i, n = bytearray(), 0, len(src)
    while i < n:
        token = src[i]
        i += 1
        lit = token >> 4
        if lit == 15:
            while True:
                b = src[i]
                i += 1
                lit += b
                if b != 255:
                    break
        out += src[i:i + lit]
        i += lit
        if i >= n:
            break
        off = src[i] | src[i + 1] << 8
        i += 2
        ml = token & 15
        if ml == 15:
            while True:
                b = src[i]
                i += 1
                ml += b
                if b != 255:
                    break
        start = len(out) - off
        for k in range(ml + 4):
            out.append(out[start + k])
    if len(out) != outlen:
        raise ValueError("LZ4 block gave %d bytes, expected %d" % (len(out), outlen))
    return bytes(out)


def ra_numpy_dtype(h):
    """The numpy dtype of RA elements (bfloat16 -> u2, as B.npy shows it)."""
    kind = {0: "V", 1: "i", 2: "u", 3: "f", 4: "c", 5: "u"}[h["eltype"]]
    order = ">" if h["flags"] & 1 else "<"
    if kind == "V" or h["elbyte"] == 1:
        order = "|"
    return np.dtype("%s%s%d" % (order, kind, h["elbyte"]))


def ra_dtype_text(h):
    if h["eltype"] == 5:
        return b"bfloat16\n"
    return ra_numpy_dtype(h).str.encode() + b"\n"


def ra_reference_read(buf):
    """The reference reader's array: numpy shape = dims, Fortran order."""
    h = ra_header(buf)
    raw = buf[h["data_offset"]:h["data_offset"] + h["size"]]
    count = int(np.prod(h["dims"], dtype=np.int64))
    if h["flags"] & 2:
        raw = lz4_block_decompress(raw, count * h["elbyte"])
    dt = ra_numpy_dtype(h)
    return np.frombuffer(raw, dtype=dt, count=count).reshape(h["dims"], order="F")


def ra_header_check(h):
    """A check of the `header` text of a .ra: one `name: value` line per field."""
    def check(actual):
        lines = actual.decode("utf-8").rstrip("\n").split("\n")
        pairs = [ln.split(":", 1) for ln in lines]
        names = [p[0].strip() for p in pairs]
        if names != list(RA_FIELDS) or not actual.endswith(b"\n"):
            raise AssertionError("header text %r: expected lines %s" % (actual, RA_FIELDS))
        vals = dict((p[0].strip(), p[1].strip()) for p in pairs)
        mv = vals["magic"]
        if "rawarray" not in mv and not (_int(mv) == RA_MAGIC):
            raise AssertionError("header magic line %r" % mv)
        for k in ("flags", "eltype", "elbyte", "size", "ndims"):
            if _int(vals[k]) != h[k]:
                raise AssertionError("header %s: %r, expected %d" % (k, vals[k], h[k]))
        if [int(x) for x in re.findall(r"\d+", vals["dims"])] != h["dims"]:
            raise AssertionError("header dims: %r, expected %s" % (vals["dims"], h["dims"]))
    return check


def _int(text):
    try:
        return int(text, 0)
    except ValueError:
        return None


# -- views of an .npy array as .ra, and of a .ra as .npy ------------------------
def ra_type_of(dt):
    """CONTRACT: the RawArray (eltype, elbyte) of numpy dtype DT."""
    if dt.fields is None and dt.subdtype is None:
        if dt.kind == "i":
            return 1, dt.itemsize
        if dt.kind in "ub":
            return 2, dt.itemsize
        if dt.kind == "f":
            return 3, dt.itemsize
        if dt.kind == "c":
            return 4, dt.itemsize
        if dt.kind in "Mm":
            return 1, 8
    return 0, dt.itemsize


def lz4_ra(a):
    """An LZ4 .ra of 1-d array A as the reference RawArray library writes
    one (flags bit 1: the data is one raw LZ4 block, python-lz4's
    lz4.block, the library's call)."""
    import lz4.block  # only the LZ4 tests need python-lz4
    data = lz4.block.compress(a.tobytes(), mode="default", store_size=False)
    eltype, elbyte = ra_type_of(a.dtype)
    return struct.pack("<7Q", RA_MAGIC, 2, eltype, elbyte, len(data), 1,
                       a.size) + data


def swap_unit(dt):
    """Bytes per scalar that the .ra view reverses, or 0. Its numeric
    eltypes are little-endian: big-endian numbers are swapped (each half of
    a complex separately); eltype 0 (bytes, unicode, void, structured) keeps
    its bytes as stored."""
    if dt.byteorder != ">" or dt.fields is not None or dt.subdtype is not None:
        return 0
    eltype, elbyte = ra_type_of(dt)
    if eltype == 0 or elbyte == 1:
        return 0
    return elbyte // 2 if eltype == 4 else elbyte


def ra_view_of(npy):
    """The exact bytes of B.ra for an .npy/.npz array (CONTRACT)."""
    eltype, elbyte = ra_type_of(npy.dtype)
    data = npy.data()
    unit = swap_unit(npy.dtype)
    if unit and data:
        b = np.frombuffer(data, np.uint8).reshape(-1, unit)
        data = b[:, ::-1].tobytes()
    dims = list(npy.shape) if npy.fortran else list(npy.shape)[::-1]
    hdr = struct.pack("<6Q", RA_MAGIC, 0, eltype, elbyte, len(data), len(dims))
    return hdr + struct.pack("<%dQ" % len(dims), *dims) + data


def ra_view_numpy_check(npy):
    """B.ra parsed back agrees with numpy's values (for numeric dtypes)."""
    def check(actual):
        h = ra_header(actual)
        if h["magic"] != RA_MAGIC or h["flags"] != 0:
            raise AssertionError("B.ra magic/flags: %x/%d" % (h["magic"], h["flags"]))
        got = ra_reference_read(actual)
        want = npy.array if npy.fortran else npy.array.T
        if h["eltype"] == 0:
            ok = got.tobytes(order="F") == npy.data()  # padding: see Npy.data
        elif npy.dtype.kind in "Mm":
            ok = np.array_equal(got, want.view(want.dtype.str[0] + "i8"))
        else:
            ok = got.shape == want.shape and np.array_equal(
                got, want, equal_nan=npy.dtype.kind in "fc")
        if not ok:
            raise AssertionError("B.ra read back: %r, numpy has %r" % (got, want))
    return check


def npy_view_of_ra_check(buf):
    """B.npy of a .ra: a v1.0 (v2.0 if long) .npy that numpy.load reads as the
    reference reader's array, header data then nothing more."""
    ref = ra_reference_read(buf)

    def check(actual):
        if actual[:8] not in (b"\x93NUMPY\x01\x00", b"\x93NUMPY\x02\x00"):
            raise AssertionError("B.npy starts %r, not a version 1.0/2.0 .npy" % actual[:8])
        v = Npy(actual)
        if v.version == (2, 0) and len(v.header_raw) < 65536:
            raise AssertionError("B.npy is version 2.0 with a header that fits 1.0")
        got = v.array
        if got.dtype != ref.dtype or got.shape != ref.shape:
            raise AssertionError("numpy.load(B.npy): %s %s, reference reader: %s %s"
                                 % (got.dtype, got.shape, ref.dtype, ref.shape))
        if got.tobytes(order="F") != ref.tobytes(order="F"):
            raise AssertionError("numpy.load(B.npy) values differ from the reference reader")
        if not v.fortran:
            raise AssertionError("B.npy of a .ra must say 'fortran_order': True")
        if len(actual) != v.data_offset + ref.nbytes:
            raise AssertionError("B.npy has %d bytes, header + data = %d"
                                 % (len(actual), v.data_offset + ref.nbytes))
    return check


# -- B.zarr/ and sidecar headers ----------------------------------------------
def zarr_chunk_shape(shape, itemsize, fortran, max_bytes):
    """CONTRACT: the largest block (1, .., 1, k, n[j+1], .., n[last]) of at
    most max_bytes (zero dims count as 1), at least one element; mirrored
    for Fortran order. In closed form: the first axis j whose faster dims
    fit, cut as long as it fits (gen_zarr.chunk_shape tries every block)."""
    dims = [max(int(n), 1) for n in shape]
    if fortran:
        dims = dims[::-1]
    block = [1] * len(dims)
    for j in range(len(dims)):
        inner = int(np.prod(dims[j + 1:], dtype=object)) * itemsize
        if inner <= max_bytes:
            block = [1] * j + [min(dims[j], max_bytes // inner)] + dims[j + 1:]
            break
    return tuple(block[::-1] if fortran else block)


def zarr_chunk_names(shape, chunks, fortran=False):
    """Every chunk file name ("0" for 0-d; none for a zero dim), in the
    order of their bytes in `data`: the last index fastest for C order, the
    first for Fortran order."""
    if any(n == 0 for n in shape):
        return []
    grid = [-(-int(n) // c) for n, c in zip(shape, chunks)]
    axes = [range(g) for g in grid]
    order = (lambda idx: idx[::-1]) if fortran else (lambda idx: idx)
    return [".".join(map(str, order(idx))) if idx else "0"
            for idx in itertools.product(*order(axes))]


def zarr_chunk_bytes(data, shape, itemsize, fortran, chunks, name):
    """The bytes of chunk file NAME: the elements numpy indexing cuts out of
    the array (raw bytes in the stored order), zero-padded past the edge."""
    order = "F" if fortran else "C"
    elem = np.dtype((np.void, itemsize))
    arr = np.frombuffer(data, dtype=elem).reshape(shape, order=order)
    idx = [int(x) for x in name.split(".")] if shape else []
    src = tuple(slice(i * c, min((i + 1) * c, n))
                for i, c, n in zip(idx, chunks, shape))
    chunk = np.zeros(chunks, dtype=elem)
    chunk[tuple(slice(0, s.stop - s.start) for s in src)] = arr[src]
    return chunk.tobytes(order=order)


def zarr_chunk_check(data, shape, itemsize, fortran, chunks, name, what):
    """A check of chunk file NAME (zarr_chunk_bytes); its make_expected()
    gives those bytes, made when asked (ArrayDir.exact)."""
    def expected():
        return zarr_chunk_bytes(data, shape, itemsize, fortran, chunks, name)
    check = lambda actual: assert_bytes(actual, expected(), what)  # noqa: E731
    check.make_expected = expected
    return check


def is_zarr_chunk(rel):
    """Whether the file at REL ('/'-separated) is a chunk file of a
    B.zarr/ (its bytes are bytes of `data`, and it has `data`'s xattrs)."""
    parts = rel.split("/")
    return len(parts) >= 2 and parts[-2].endswith(".zarr") and \
        not parts[-1].startswith(".") and parts[-1] != "zarr.json"


def add_zarr_and_sidecars(a, base, label, shape, data, descr, dt_kind, itemsize,
                          byteorder, fortran, zarr_chunk):
    """Add B.zarr/ (its files as "B.zarr/NAME") and data.hdr / B.nhdr to
    ArrayDir A, per CONTRACT: dt_kind is numpy's kind letter ("V" for
    structured), "bfloat16" for RawArray eltype 5."""
    store = base + ".zarr"
    chunks = zarr_chunk_shape(shape, itemsize, fortran, zarr_chunk)
    meta = gen_zarr.metadata(shape, chunks, descr, dt_kind, itemsize, byteorder, fortran)
    for name, text in meta.items():
        a.add(store + "/" + name, equals(text.encode("ascii"), label + "/" + store + "/" + name))
    for name in zarr_chunk_names(shape, chunks):
        a.add(store + "/" + name, zarr_chunk_check(
            data, shape, itemsize, fortran, chunks, name, label + "/" + store + "/" + name))
    for name, text in gen_zarr.sidecars(shape, dt_kind, itemsize, byteorder, fortran).items():
        name = base + ".nhdr" if name == "B.nhdr" else name
        a.add(name, equals(text.encode("ascii"), label + "/" + name))


# -- array directories -------------------------------------------------------
class ArrayDir:
    """Expected array directory: `checks` maps each file name to a list of
    callables taking the file's bytes (raising AssertionError); the files of
    B.zarr/ are named "B.zarr/NAME"."""

    def __init__(self, label):
        self.label = label
        self.checks = {}

    @property
    def names(self):
        """What the array directory lists (B.zarr among them)."""
        return {name.split("/")[0] for name in self.checks}

    @property
    def files(self):
        """Every file under the array directory, B.zarr/'s included, sorted."""
        return sorted(self.checks)

    @property
    def dirs(self):
        """Its folders: B.zarr, or none."""
        return sorted({name.split("/")[0] for name in self.checks if "/" in name})

    def exact(self, name):
        """The exact expected bytes of file NAME (a chunk file's made now),
        or None if only checked."""
        for check in self.checks.get(name, ()):
            if hasattr(check, "expected"):
                return check.expected
            if hasattr(check, "make_expected"):
                return check.make_expected()
        return None

    def add(self, name, *checks):
        self.checks[name] = list(checks)

    @classmethod
    def of_npy(cls, buf, base, label, zarr_chunk=ZARR_CHUNK):
        a = cls(label)
        n = Npy(buf)
        a.npy = n
        a.add("shape", equals(shape_text(n.shape), label + "/shape"))
        a.add("dtype", equals(n.dtype_text(), label + "/dtype"))
        a.add("header", equals(n.header_text(), label + "/header"))
        # an object array (a pickle) has B.npy, byte-identical, and no more
        a.add(base + ".npy", equals(buf, label + "/" + base + ".npy"))
        if not n.has_object:
            a.add("data", equals(n.data(), label + "/data"))
            a.add(base + ".ra", equals(ra_view_of(n), label + "/" + base + ".ra"),
                  ra_view_numpy_check(n))
            dt = n.dtype
            simple = dt.fields is None and dt.subdtype is None
            add_zarr_and_sidecars(a, base, label, n.shape, n.data(), n.descr,
                                  dt.kind if simple else "V", dt.itemsize,
                                  dt.str[0] if simple else "|", n.fortran, zarr_chunk)
        return a

    @classmethod
    def of_ra(cls, buf, base, label, zarr_chunk=ZARR_CHUNK):
        a = cls(label)
        h = ra_header(buf)
        a.ra = h
        data = ra_reference_read(buf).tobytes(order="F")
        a.add("shape", equals(shape_text(h["dims"]), label + "/shape"))
        a.add("dtype", equals(ra_dtype_text(h), label + "/dtype"))
        a.add("header", ra_header_check(h))
        a.add("data", equals(data, label + "/data"))
        a.add(base + ".npy", npy_view_of_ra_check(buf))
        a.add(base + ".ra", equals(buf, label + "/" + base + ".ra"))
        dt = ra_numpy_dtype(h)   # the B.npy view's type: bfloat16 as <u2
        kind = "bfloat16" if h["eltype"] == 5 else dt.kind
        add_zarr_and_sidecars(a, base, label, tuple(h["dims"]), data, dt.str, kind,
                              dt.itemsize, dt.str[0], True, zarr_chunk)
        return a


class Entry:
    """kind: 'dir', 'file' (bytes in .data), 'link' (.target) or 'array'
    (an array directory, .array)."""

    def __init__(self, kind, data=None, target=None, array=None):
        self.kind, self.data, self.target, self.array = kind, data, target, array

    def __repr__(self):
        return "Entry(%s)" % self.kind


def classify(path):
    """What arrayfs shows for the file at PATH: 'npy', 'ra', 'npz' or 'file'
    (numpy and zipfile decide what can be parsed)."""
    with open(path, "rb") as f:
        buf = f.read()
    return classify_bytes(buf, path), buf


def classify_bytes(buf, name):
    if name.endswith(".npy"):
        try:
            Npy(buf)
            return "npy"
        except Exception:
            return "file"
    if name.endswith(".ra"):
        try:
            h = ra_header(buf)
            if h["magic"] != RA_MAGIC or len(buf) < h["data_offset"] + h["size"]:
                return "file"
            ra_reference_read(buf)
            return "ra"
        except Exception:
            return "file"
    if name.endswith(".npz"):
        try:
            with zipfile.ZipFile(io.BytesIO(buf)) as z:
                z.infolist()
            return "npz"
        except Exception:
            return "file"
    return "file"


def _add_array(tree, rel, kind, buf, name, zarr_chunk):
    base = name.rsplit(".", 1)[0]
    of = ArrayDir.of_npy if kind == "npy" else ArrayDir.of_ra
    arr = of(buf, base, rel, zarr_chunk)
    tree[rel] = Entry("array", array=arr)


def _add_npz(tree, rel, buf, zarr_chunk):
    tree[rel] = Entry("dir")
    with zipfile.ZipFile(io.BytesIO(buf)) as z:
        members = {}
        for info in z.infolist():  # numpy lets the last duplicate win
            members[info.filename] = z.read(info)
    for name, data in members.items():
        parts = name.split("/")
        for i in range(1, len(parts)):
            tree.setdefault(_join(rel, "/".join(parts[:i])), Entry("dir"))
        mrel = _join(rel, name)
        if name.endswith(".npy"):
            _add_array(tree, mrel, "npy", data, parts[-1], zarr_chunk)
        else:
            tree[mrel] = Entry("file", data=data)


def _join(a, b):
    return b if a == "" else a + "/" + b


def expected_tree(source, zarr_chunk=ZARR_CHUNK):
    """{relpath: Entry} for mounting SOURCE (a folder or one array file),
    with the daemon's -o zarr_chunk=ZARR_CHUNK. For a single file the root
    is what its directory would hold."""
    tree = {}
    if os.path.isdir(source):
        tree[""] = Entry("dir")
        for dirpath, dirnames, filenames in os.walk(source):
            reldir = os.path.relpath(dirpath, source)
            reldir = "" if reldir == "." else reldir
            for name in sorted(dirnames + filenames):
                full = os.path.join(dirpath, name)
                rel = _join(reldir, name)
                if os.path.islink(full):
                    tree[rel] = Entry("link", target=os.readlink(full))
                elif os.path.isdir(full):
                    tree[rel] = Entry("dir")
                else:
                    _add_file(tree, rel, full, name, zarr_chunk)
            dirnames[:] = [d for d in dirnames
                           if not os.path.islink(os.path.join(dirpath, d))]
    else:
        _add_file(tree, "", source, os.path.basename(source), zarr_chunk)
    return tree


def _add_file(tree, rel, full, name, zarr_chunk):
    kind, buf = classify(full)
    if kind in ("npy", "ra"):
        _add_array(tree, rel, kind, buf, name, zarr_chunk)
    elif kind == "npz":
        _add_npz(tree, rel, buf, zarr_chunk)
    else:
        tree[rel] = Entry("file", data=buf)


def flatten(tree):
    """{relpath: 'dir'|'file'|'link'} with array directories expanded."""
    flat = {}
    for rel, e in tree.items():
        if e.kind == "array":
            flat[rel] = "dir"
            for name in e.array.files:
                flat[_join(rel, name)] = "file"
            for name in e.array.dirs:
                flat[_join(rel, name)] = "dir"
        else:
            flat[rel] = e.kind
    return flat


def arrays(tree):
    """[(relpath, ArrayDir)] sorted by path."""
    return sorted((rel, e.array) for rel, e in tree.items() if e.kind == "array")
