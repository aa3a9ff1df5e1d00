"""libbpf's btf__dedup through ctypes: the reference our dedup must never be weaker than."""

from __future__ import annotations

import ctypes
import ctypes.util
import tempfile

import pytest


def _lib() -> ctypes.CDLL:
    name = ctypes.util.find_library("bpf")
    if name is None:
        pytest.skip("libbpf (libbpf1) is not installed")
    lib = ctypes.CDLL(name, use_errno=True)
    lib.btf__new.restype = ctypes.c_void_p
    lib.btf__new.argtypes = [ctypes.c_char_p, ctypes.c_uint32]
    lib.btf__parse_raw_split.restype = ctypes.c_void_p
    lib.btf__parse_raw_split.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    lib.btf__dedup.restype = ctypes.c_int
    lib.btf__dedup.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.btf__type_cnt.restype = ctypes.c_uint32
    lib.btf__type_cnt.argtypes = [ctypes.c_void_p]
    lib.btf__free.argtypes = [ctypes.c_void_p]
    return lib


def libbpf_dedup_count(blob: bytes, base_blob: bytes | None = None) -> int:
    """Own types left after libbpf's btf__dedup of `blob` (split on `base_blob` if given)."""
    lib = _lib()
    base = None
    if base_blob is not None:
        base = lib.btf__new(base_blob, len(base_blob))
        if not base:
            raise OSError(ctypes.get_errno(), "libbpf could not parse the base BTF")
    try:
        if base:
            # This libbpf parses split BTF only from a file.
            with tempfile.NamedTemporaryFile(suffix=".btf") as tmp:
                tmp.write(blob)
                tmp.flush()
                btf = lib.btf__parse_raw_split(tmp.name.encode(), base)
        else:
            btf = lib.btf__new(blob, len(blob))
        if not btf:
            raise OSError(ctypes.get_errno(), "libbpf could not parse the BTF")
        try:
            err = lib.btf__dedup(btf, None)
            if err:
                raise OSError(-err, "btf__dedup failed")
            total = lib.btf__type_cnt(btf) - 1
            return total - (lib.btf__type_cnt(base) - 1 if base else 0)
        finally:
            lib.btf__free(btf)
    finally:
        if base:
            lib.btf__free(base)
