# SPDX-License-Identifier: MIT
"""The raw entry types of a listing: readdir(3)'s d_type, which os.scandir
hides (its is_dir() stats a DT_UNKNOWN entry)."""
import ctypes
import ctypes.util
import os

DT_UNKNOWN, DT_DIR, DT_REG = 0, 4, 8


class Dirent64(ctypes.Structure):
    _fields_ = [("d_ino", ctypes.c_uint64), ("d_off", ctypes.c_int64),
                ("d_reclen", ctypes.c_ushort), ("d_type", ctypes.c_ubyte),
                ("d_name", ctypes.c_char * 256)]


def listing_types(path):
    """{name: d_type} from readdir(3): a names-only listing, no stat."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.opendir.restype = ctypes.c_void_p
    libc.opendir.argtypes = [ctypes.c_char_p]
    libc.readdir64.restype = ctypes.POINTER(Dirent64)
    libc.readdir64.argtypes = [ctypes.c_void_p]
    libc.closedir.argtypes = [ctypes.c_void_p]
    d = libc.opendir(os.fsencode(path))
    if not d:
        raise OSError(ctypes.get_errno(), "opendir " + path)
    out = {}
    try:
        while True:
            ctypes.set_errno(0)
            e = libc.readdir64(d)
            if not e:
                if ctypes.get_errno():
                    raise OSError(ctypes.get_errno(), "readdir " + path)
                return out
            n = e.contents.d_name.decode()
            if n not in (".", ".."):
                out[n] = e.contents.d_type
    finally:
        libc.closedir(d)
