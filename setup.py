"""Builds the optional compiled parts; everything else is in pyproject.toml:
- canonbtf.dwarf._core (canonbtf/dwarf/csrc/): the per-unit DWARF encoder;
- canonbtf._btf (canonbtf/csrc/): the type section checked, ordered and renumbered.
Without a C compiler the build goes on without them (pure Python), and canonbtf chooses
the pure path at run time (canonbtf/native.py).

CANONBTF_SANITIZE=1 builds them with -fsanitize=address,undefined (CI runs their tests
once that way); CANONBTF_SANITIZE=fuzzer adds libFuzzer's instrumentation (tools/fuzz_*.py)."""

import os
import platform

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SOURCES = ["module.c", "read.c", "convert.c", "keys.c", "util.c", "reloc.c", "symtab.c",
           "merge.c", "pool.c", "locations.c"]
flags = ["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter",
         "-Wno-missing-field-initializers"]
link = []
SANITIZE = os.environ.get("CANONBTF_SANITIZE")
if SANITIZE in ("1", "fuzzer"):
    # "fuzzer" (with CC=clang) also instruments for libFuzzer: tools/fuzz_core.py, fuzz_btf.py.
    checks = "address,undefined" if SANITIZE == "1" else "fuzzer-no-link,address,undefined"
    flags += ["-O1", "-g", f"-fsanitize={checks}", "-fno-omit-frame-pointer",
              "-fno-sanitize-recover=undefined"]
    link += [f"-fsanitize={checks}"]


class OptionalBuildExt(build_ext):
    """A failing compile leaves the pure path, with one warning line."""

    def run(self):
        try:
            super().run()
        except Exception as e:  # noqa: BLE001 - any build failure means "no core"
            print(f"canonbtf: warning: compiled core not built ({e}); using pure Python")

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as e:  # noqa: BLE001
            print(f"canonbtf: warning: compiled core not built ({e}); using pure Python")


# PyPy runs the pure path faster than a C extension through its CPython emulation.
BUILD_CORE = platform.python_implementation() == "CPython"

BTF_SOURCES = ["module.c", "types.c", "labelsort.c", "partition.c", "renumber.c", "records.c",
               "abstract.c", "cdump.c", "check.c", "diffkeys.c", "rawdump.c",
               "difffacts.c", "diffreport.c", "diffwrite.c", "text.c"]
EXTENSIONS = [
    Extension("canonbtf.dwarf._core", [f"canonbtf/dwarf/csrc/{name}" for name in SOURCES],
              depends=["canonbtf/dwarf/csrc/core.h", "canonbtf/dwarf/csrc/dwarf.h"],
              extra_compile_args=flags, extra_link_args=link),
    Extension("canonbtf._btf", [f"canonbtf/csrc/{name}" for name in BTF_SOURCES],
              depends=["canonbtf/csrc/types.h", "canonbtf/csrc/records.h", "canonbtf/csrc/cdump.h",
                       "canonbtf/csrc/check.h", "canonbtf/csrc/diffkeys.h",
                       "canonbtf/csrc/difffacts.h", "canonbtf/csrc/diffreport.h",
                       "canonbtf/csrc/diffwrite.h", "canonbtf/csrc/text.h",
                       "canonbtf/csrc/rawdump.h"],
              extra_compile_args=flags, extra_link_args=link),
]

setup(
    ext_modules=EXTENSIONS if BUILD_CORE else [],
    cmdclass={"build_ext": OptionalBuildExt},
)
