"""Asking the running kernel whether it accepts a BTF blob: bpf(BPF_BTF_LOAD) via ctypes.

The kernel is the final judge of BTF validity, and the one nobody here wrote. Loading
needs CAP_BPF (root); where the syscall is unavailable or not permitted the verdict says
so (accepted is None) instead of guessing.

BPF_BTF_LOAD takes no base BTF (its attributes are the blob, a log buffer and a BPF token),
so split BTF cannot be loaded against a base the caller supplies. Because split type ids and
string offsets continue where the base's end, base and split together form one ordinary
blob: `check_btf` sends that, and says so in the verdict.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import sys
from dataclasses import dataclass

from . import writer
from .model import Btf
from .strings import StringTable

BPF_BTF_LOAD = 18
BPF_LOG_LEVEL1 = 1
LOG_SIZE = 1 << 20
LOG_TAIL_LINES = 8

# bpf(2) syscall numbers by machine.
SYSCALL_BPF = {
    "x86_64": 321,
    "aarch64": 280,
    "arm64": 280,
    "riscv64": 280,
    "loongarch64": 280,
    "s390x": 351,
    "ppc64le": 361,
    "ppc64": 361,
    "i386": 357,
    "i686": 357,
    "armv7l": 386,
}

# Errors that mean the kernel was not asked, rather than that it said no.
_NOT_ASKED = {
    errno.EPERM: "not permitted (needs root or CAP_BPF)",
    errno.EACCES: "access denied",
    errno.ENOSYS: "the bpf syscall is not available",
    errno.ENOMEM: "the kernel ran out of memory",
    errno.EFAULT: "the kernel could not read the request",
    errno.EBADF: "bad file descriptor",
}
_ERRNO_NAMES = {524: "ENOTSUPP"}


class _BtfLoadAttr(ctypes.Structure):
    """The BPF_BTF_LOAD member of union bpf_attr (include/uapi/linux/bpf.h)."""

    _fields_ = [
        ("btf", ctypes.c_uint64),
        ("btf_log_buf", ctypes.c_uint64),
        ("btf_size", ctypes.c_uint32),
        ("btf_log_size", ctypes.c_uint32),
        ("btf_log_level", ctypes.c_uint32),
        ("btf_log_true_size", ctypes.c_uint32),
        ("btf_flags", ctypes.c_uint32),
        ("btf_token_fd", ctypes.c_int32),
    ]


@dataclass
class KernelVerdict:
    """What the kernel said: accepted True/False, or None when it could not be asked."""

    accepted: bool | None
    error: int = 0
    reason: str = ""
    log: str = ""
    note: str = ""

    @property
    def log_tail(self) -> str:
        """The last lines of the kernel's verifier log (empty when the blob was accepted)."""
        lines = [line for line in self.log.splitlines() if line.strip()]
        return "\n".join(lines[-LOG_TAIL_LINES:])

    def summary(self) -> str:
        if self.accepted:
            text = "accepted (BPF_BTF_LOAD)"
        elif self.accepted is None:
            text = f"could not ask: {self.reason}"
        else:
            text = f"rejected ({_errno_name(self.error)}: {self.reason})"
        return f"{text}; {self.note}" if self.note else text


def _errno_name(code: int) -> str:
    return _ERRNO_NAMES.get(code) or errno.errorcode.get(code, f"errno {code}")


def _syscall():
    number = SYSCALL_BPF.get(platform.machine())
    if number is None or not sys.platform.startswith("linux"):
        return None, None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None, None
    func = libc.syscall
    func.restype = ctypes.c_long
    return func, number


def _btf_load(blob: bytes, log_level: int) -> tuple[int, int, str]:
    """One BPF_BTF_LOAD call: (fd or -1, errno, log text)."""
    func, number = _syscall()
    if func is None:
        return -1, errno.ENOSYS, ""
    data = ctypes.create_string_buffer(blob, len(blob))
    log = ctypes.create_string_buffer(LOG_SIZE if log_level else 1)
    attr = _BtfLoadAttr()
    attr.btf = ctypes.addressof(data)
    attr.btf_size = len(blob)
    if log_level:
        attr.btf_log_buf = ctypes.addressof(log)
        attr.btf_log_size = LOG_SIZE
        attr.btf_log_level = log_level
    fd = func(ctypes.c_long(number), ctypes.c_long(BPF_BTF_LOAD), ctypes.byref(attr),
              ctypes.c_long(ctypes.sizeof(attr)))
    err = ctypes.get_errno() if fd < 0 else 0
    text = log.value.decode("latin-1") if log_level else ""
    return int(fd), err, text


def load_btf(blob: bytes) -> KernelVerdict:
    """Load `blob` as it is; close the BTF object again if the kernel accepts it.

    The first attempt runs without a log: a verbose log for a whole vmlinux overflows any
    buffer, and an overflowing log makes the kernel fail the load. Only after a refusal is
    the load repeated with a log, for the kernel's reason.
    """
    fd, err, _ = _btf_load(blob, 0)
    if fd >= 0:
        os.close(fd)
        return KernelVerdict(True)
    if err in _NOT_ASKED:
        return KernelVerdict(None, err, f"{_NOT_ASKED[err]} ({_errno_name(err)})")
    fd, _, log = _btf_load(blob, BPF_LOG_LEVEL1)
    if fd >= 0:  # accepted on the second try: report what the first one said
        os.close(fd)
    return KernelVerdict(False, err, os.strerror(err) if err != 524 else "not supported",
                         log)


def kernel_blob(btf: Btf, raw: bytes | None = None) -> tuple[bytes, str]:
    """The bytes to send for `btf` and a note on how they differ from `raw`, if they do.

    Standalone BTF in host byte order goes as read; other byte orders are rewritten in host
    order (the kernel only reads its own); split BTF is merged with its base.
    """
    host = "<" if sys.byteorder == "little" else ">"
    if btf.base is None:
        if raw is not None and btf.byteorder == host:
            return raw, ""
        note = "" if btf.byteorder == host else "sent in host byte order"
        return writer.write(btf, host), note
    merged = merge_split(btf)
    return writer.write(merged, host), ("split BTF sent merged with its base: BPF_BTF_LOAD "
                                        "takes no base BTF")


def merge_split(btf: Btf) -> Btf:
    """Split BTF and its base (and their bases) as one standalone BTF with the same ids."""
    chain = []
    cur: Btf | None = btf
    while cur is not None:
        chain.append(cur)
        cur = cur.base
    chain.reverse()
    types = [t for part in chain for t in part.types]
    strings = StringTable(b"".join(part.strings.data() for part in chain), 0)
    return Btf(types, strings, None, btf.byteorder)


def check_btf(btf: Btf, raw: bytes | None = None) -> KernelVerdict:
    """Ask the kernel about `btf` (with its base, for split BTF); `raw` is its file bytes."""
    blob, note = kernel_blob(btf, raw)
    verdict = load_btf(blob)
    verdict.note = note
    return verdict
