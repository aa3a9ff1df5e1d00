#!/usr/bin/env python3
"""Extract the vmlinux BTF of a Debian linux-image .deb, for more kernel pairs to compare.

The package holds a compressed bzImage; its payload (zstd, lz4, xz or gzip) decompresses to
the vmlinux ELF, whose .BTF section is copied out with objcopy. Get a package with e.g.
`apt-get download linux-image-6.1.0-53-cloud-amd64-unsigned`.
Usage: tools/kernel_image_btf.py PACKAGE.deb OUT.btf
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

# Payload magic -> command that decompresses it from stdin to stdout.
DECOMPRESSORS = (
    (b"\x28\xb5\x2f\xfd", ["zstd", "-dc"]),
    (b"\x02\x21\x4c\x18", ["lz4", "-dc"]),
    (b"\xfd7zXZ\x00", ["xz", "-dc"]),
    (b"\x1f\x8b\x08", ["gzip", "-dc"]),
)


def vmlinux_from_bzimage(image: bytes) -> bytes:
    """The first payload that decompresses to an ELF file."""
    for magic, command in DECOMPRESSORS:
        start = image.find(magic)
        while start >= 0:
            proc = subprocess.run(command, input=image[start:], capture_output=True)
            if proc.stdout[:4] == b"\x7fELF":
                return proc.stdout
            start = image.find(magic, start + 1)
    sys.exit("kernel_image_btf: no compressed ELF payload found in the kernel image")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("deb", type=Path)
    ap.add_argument("out", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        tar = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(args.deb)], capture_output=True,
                             check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp), "--wildcards", "./boot/vmlinuz-*"],
                       input=tar, check=True)
        images = sorted(tmp.glob("boot/vmlinuz-*"))
        if not images:
            sys.exit(f"kernel_image_btf: no boot/vmlinuz-* in {args.deb}")
        elf = tmp / "vmlinux"
        elf.write_bytes(vmlinux_from_bzimage(images[0].read_bytes()))
        subprocess.run(["objcopy", "-O", "binary", "--only-section=.BTF", str(elf),
                        str(args.out)], check=True)
    if args.out.stat().st_size == 0:
        sys.exit(f"kernel_image_btf: {args.deb} has no .BTF section")
    print(args.out)


if __name__ == "__main__":
    main()
