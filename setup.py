"""Builds the optional compiled parts; everything else is in pyproject.toml:
- canonbtf.dwarf._core (canonbtf/dwarf/csrc/): the per-unit DWARF encoder;
- canonbtf._btf (the csrc/ folders of native/, btf/, check/, canon/, emit/, emit/c/, diff/):
  the type section checked, ordered, renumbered, dumped and diffed.
Without a C compiler the build goes on without them (pure Python), and canonbtf chooses
the pure path at run time (canonbtf/native/).

CANONBTF_SANITIZE=1 builds them with -fsanitize=address,undefined (CI runs their tests
once that way); CANONBTF_SANITIZE=fuzzer adds libFuzzer's instrumentation (tools/fuzz_*.py)."""

import os
import platform
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
# Man pages and bash completion, written at build time from the argument parsers by
# canonbtf/clidocs.py (the one source), installed under <prefix>/share.
SHARE = os.path.join("build", "share")
SHARE_FILES = {
    "share/man/man1": ["man/man1/canonbtf.1", "man/man1/canonbtf-pahole.1"],
    "share/bash-completion/completions": ["bash-completion/completions/canonbtf",
                                          "bash-completion/completions/canonbtf-pahole"],
}


class BuildPyWithDocs(build_py):
    """build_py, then the generated man pages and completion (python -m canonbtf.clidocs)."""

    def run(self):
        super().run()
        env = dict(os.environ, PYTHONPATH=HERE, CANONBTF_PURE="1")
        subprocess.run([sys.executable, "-m", "canonbtf.clidocs", os.path.join(HERE, SHARE)],
                       cwd=HERE, env=env, check=True, stdout=subprocess.DEVNULL)

SOURCES = ["encoder.c", "read.c", "convert.c", "keys.c", "reloc.c", "symtab.c", "merge.c",
           "pool.c", "locations.c"]
# Its binding files (native/csrc/): the Python face of the plain C above.
CORE_BINDINGS = ["encoder_bindings.c", "merge_bindings.c", "pool_bindings.c"]
# The runtime both extensions share (native/csrc/): growing arrays, the hash, the id map,
# the intern, the sort and partition refinement.
RUNTIME_C = ["grow.c", "hash.c", "idmap.c", "intern.c", "sort.c", "refine.c"]
RUNTIME = [f"canonbtf/native/csrc/{name}" for name in RUNTIME_C]
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
    """The spec's C headers written (canonbtf/spec/gen_c.py), then the extensions; a
    failing compile leaves the pure path, with one warning line."""

    def run(self):
        env = dict(os.environ, PYTHONPATH=HERE)
        subprocess.run([sys.executable, "-m", "canonbtf.spec.gen_c"], cwd=HERE, env=env,
                       check=True)
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

# canonbtf._btf's C lives beside the Python it mirrors (native/csrc/ binds it); every
# directory is on the include path, so a file includes another by its name alone.
BTF_CSRC = {
    "native/csrc": ["btf_bindings.c", "records_bindings.c", "diff_bindings.c",
                    "cdump_bindings.c", "text.c",
                    *RUNTIME_C],
    "btf/csrc": ["types.c"],
    "check/csrc": ["check.c"],
    "canon/csrc": ["labelsort.c", "order.c", "renumber.c", "abstract.c", "basekeys.c",
                   "refined.c"],
    "emit/csrc": ["rawdump.c"],
    "emit/c/csrc": ["cdump.c"],
    "diff/csrc": ["diffkeys.c", "difffacts.c", "diffreport.c", "diffwrite.c", "diffjoint.c",
                  "diffspell.c"],
}
BTF_SOURCES = [f"canonbtf/{folder}/{name}" for folder, names in BTF_CSRC.items()
               for name in names]
BTF_INCLUDES = [f"canonbtf/{folder}" for folder in BTF_CSRC]


def headers(folder: str) -> list[str]:
    """The C headers and generated tables in `folder`: what a rebuild depends on."""
    return [os.path.join(folder, name) for name in sorted(os.listdir(os.path.join(HERE, folder)))
            if name.endswith((".h", ".def"))]


EXTENSIONS = [
    Extension("canonbtf.dwarf._core",
              [*(f"canonbtf/dwarf/csrc/{name}" for name in SOURCES),
               *(f"canonbtf/native/csrc/{name}" for name in CORE_BINDINGS), *RUNTIME],
              include_dirs=["canonbtf/native/csrc", "canonbtf/dwarf/csrc"],
              depends=[*headers("canonbtf/dwarf/csrc"), *headers("canonbtf/native/csrc")],
              extra_compile_args=flags, extra_link_args=link),
    Extension("canonbtf._btf", BTF_SOURCES, include_dirs=BTF_INCLUDES,
              depends=[name for folder in BTF_INCLUDES for name in headers(folder)],
              extra_compile_args=flags, extra_link_args=link),
]

setup(
    ext_modules=EXTENSIONS if BUILD_CORE else [],
    cmdclass={"build_ext": OptionalBuildExt, "build_py": BuildPyWithDocs},
    scripts=["scripts/canonbtf-pahole"],  # not an entry point: see the script
    data_files=[(target, [os.path.join(SHARE, name) for name in names])
                for target, names in SHARE_FILES.items()],
)
