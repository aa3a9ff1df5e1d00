"""`canonbtf-pahole`: pahole's command line for BTF encoding, done by canonbtf.

Kbuild runs `$(PAHOLE)` three ways (docs/PAHOLE.md has the table of options):

* `scripts/pahole-version.sh` reads `--version` and the build picks flags by it;
* `pahole -J FLAGS vmlinux` (link-vmlinux.sh, 5.15 to 6.18) writes `.BTF` into the
  ELF in place; `pahole -J FLAGS --btf_encode_detached=F vmlinux` (gen-btf.sh, 2026)
  writes raw BTF that resolve_btfids then sorts by name;
* `pahole -J FLAGS --btf_base vmlinux module.ko` encodes a module as split BTF, with
  `--btf_features=distilled_base` for out-of-tree modules also a `.BTF.base` section.

Anything outside that is refused with one line naming the option and exit status 2, so
a build never gets output that silently differs from what it asked for.
"""

from __future__ import annotations

import sys

from ..errors import InputError
from ..gcpause import paused_gc

# The pahole release whose command line this front accepts. Kbuild picks flags by it:
# >= 1.26 gives the --btf_features list of 6.8+ kernels, >= 1.28 distilled_base for
# out-of-tree modules; 1.30 would add `attributes` (arena type tags we do not make) and
# 1.31 `layout`, so 1.29 is the newest whose every flag we honour.
PAHOLE_VERSION = "v1.29"
EXIT_USAGE = 2

# pahole --btf_features name -> (canonbtf feature or None, what we do with it).
# None: accepted without changing the output (see docs/PAHOLE.md for why).
BTF_FEATURES: dict[str, str | None] = {
    "encode_force": None,  # we never stop on a bad symbol: what BTF cannot hold is skipped
    "var": "var",
    "float": "float",
    "enum64": "enum64",
    "decl_tag": "decl_tag",
    "type_tag": "type_tag",
    "consistent_func": "consistent_func",
    "decl_tag_kfuncs": "decl_tag_kfuncs",
    "reproducible_build": None,  # our output is the same for every -j anyway
    "distilled_base": None,  # handled by the writer: .BTF.base next to .BTF
    "global_var": "global_var",
}
# Known to pahole, accepted, but done differently. Noted in Request.notes, never printed on
# success: pahole prints nothing there, and Kbuild runs us once per module (docs/PAHOLE.md).
NOTED_FEATURES = {
    "optimized_func": "optimized_func: canonbtf makes no FUNC for functions that exist only "
                      "as .isra/.constprop clones (docs/ENCODE.md)",
}
# Known to pahole, not done here: an error even without --btf_features_strict.
REFUSED_FEATURES = {
    "attributes": "attributes (arena TYPE_TAGs with kind_flag on kfunc pointers) is not "
                  "implemented; canonbtf-pahole reports " + PAHOLE_VERSION + " so that Kbuild "
                  "does not ask for it",
}
# pahole's features for --btf_features=default (and the order it lists them in).
DEFAULT_SET = ("encode_force", "var", "float", "decl_tag", "type_tag", "enum64",
               "optimized_func", "consistent_func", "decl_tag_kfuncs")
SUPPORTED_LIST = ("encode_force", "var", "float", "decl_tag", "type_tag", "enum64",
                  "consistent_func", "decl_tag_kfuncs", "reproducible_build",
                  "distilled_base", "global_var")

# Legacy flags (pahole < 1.26 style, what 5.15 to 6.6 Kbuild passes): flag -> edit.
LEGACY_FLAGS = {
    "--btf_gen_floats": "+float",
    "--skip_encoding_btf_vars": "-var",
    "--skip_encoding_btf_inconsistent_proto": "+consistent_func",
    "--btf_gen_optimized": "note:optimized_func",
    "--skip_encoding_btf_enum64": "-enum64",
    "--skip_encoding_btf_type_tag": "-type_tag",
    "--skip_encoding_btf_decl_tag": "-decl_tag",
    "--btf_encode_force": "",
}
# Without --btf_features pahole encodes vars, decl/type tags and enum64, not floats,
# not consistent_func, not kfunc tags.
LEGACY_DEFAULT = frozenset({"func", "var", "decl_tag", "type_tag", "enum64"})

# DW_LANG codes by the names pahole's --lang_exclude takes.
LANGUAGES = {
    "c89": 0x01, "c": 0x02, "ada83": 0x03, "c_plus_plus": 0x04, "cobol74": 0x05,
    "cobol85": 0x06, "fortran77": 0x07, "fortran90": 0x08, "pascal83": 0x09,
    "modula2": 0x0A, "java": 0x0B, "c99": 0x0C, "ada95": 0x0D, "fortran95": 0x0E,
    "pli": 0x0F, "objc": 0x10, "objc_plus_plus": 0x11, "upc": 0x12, "d": 0x13,
    "python": 0x14, "opencl": 0x15, "go": 0x16, "modula3": 0x17, "haskell": 0x18,
    "c_plus_plus_03": 0x19, "c_plus_plus_11": 0x1A, "ocaml": 0x1B, "rust": 0x1C,
    "c11": 0x1D, "swift": 0x1E, "julia": 0x1F, "dylan": 0x20, "c_plus_plus_14": 0x21,
    "fortran03": 0x22, "fortran08": 0x23, "renderscript": 0x24, "bliss": 0x25,
    "mips_assembler": 0x8001,
}


class Request:
    """What one pahole command line asks for. A plain class, not a dataclass: importing
    dataclasses and making the classes was ~15 ms of every module's run."""

    def __init__(self) -> None:
        self.elf: str | None = None
        self.encode_in_place = False  # -J
        self.detached: str | None = None  # --btf_encode_detached=FILE
        self.base: str | None = None  # --btf_base FILE
        self.jobs = 1
        self.features: set[str] = set(LEGACY_DEFAULT)
        self.btf_features: list[str] | None = None  # names from every --btf_features
        self.strict = False
        self.legacy: list[str] = []
        self.languages: set[int] = set()
        self.notes: list[str] = []
        self.distilled_base = False
        self.verbose = False  # -V / --verbose: what was skipped and why, phase timings
        self.action = "encode"  # or "version", "supported_btf_features"


def _usage(message: str) -> InputError:
    return InputError(None, message)


def _parse_jobs(value: str) -> int:
    from ..dwarf.encode import default_jobs

    if value == "":
        return default_jobs()
    if not value.isdigit() or int(value) < 1:
        raise _usage(f"-j: {value!r} is not a number of jobs")
    return int(value)


def _take_value(arg: str, rest: list[str], name: str) -> str:
    """The value of a long option given as `--name=V` or `--name V`."""
    if arg.startswith(name + "="):
        return arg[len(name) + 1:]
    if not rest:
        raise _usage(f"option {name} needs a value")
    return rest.pop(0)


def _add_btf_features(req: Request, text: str, strict: bool) -> None:
    """`--btf_features[_strict]=LIST`: pahole's names; unknown ones are skipped (strict:
    refused), as pahole does."""
    req.btf_features = req.btf_features or []
    req.strict = req.strict or strict
    for raw in text.split(","):
        name = raw.strip().lstrip("+")
        if not name:
            continue
        if name in ("default", "all"):
            req.btf_features.extend(DEFAULT_SET)
        elif name in REFUSED_FEATURES:
            raise _usage(f"--btf_features: {REFUSED_FEATURES[name]}")
        elif name in BTF_FEATURES or (name in NOTED_FEATURES and not strict):
            req.btf_features.append(name)
        elif strict:
            raise _usage(f"--btf_features_strict: feature {name!r} is not supported "
                         f"(supported: {','.join(SUPPORTED_LIST)})")
        else:
            req.notes.append(f"--btf_features: unknown feature {name!r} ignored, as "
                             f"pahole {PAHOLE_VERSION} ignores it")


def _parse_long(req: Request, arg: str, rest: list[str]) -> None:
    name = arg.split("=", 1)[0]
    if name == "--btf_encode":
        req.encode_in_place = True
    elif name == "--btf_encode_detached":
        req.detached = _take_value(arg, rest, name)
    elif name == "--btf_base":
        req.base = _take_value(arg, rest, name)
    elif name == "--jobs":
        req.jobs = _parse_jobs(arg[len(name) + 1:] if "=" in arg else "")
    elif name in ("--btf_features", "--btf_features_strict"):
        _add_btf_features(req, _take_value(arg, rest, name), name.endswith("_strict"))
    elif name == "--lang_exclude":
        for lang in _take_value(arg, rest, name).split(","):
            if lang.strip() not in LANGUAGES:
                raise _usage(f"--lang_exclude: unknown language {lang.strip()!r}")
            req.languages.add(LANGUAGES[lang.strip()])
    elif name in LEGACY_FLAGS and "=" not in arg:
        req.legacy.append(name)
    elif name == "--verbose" and "=" not in arg:
        req.verbose = True
    elif name == "--version" and "=" not in arg:
        req.action = "version"
    elif name == "--supported_btf_features" and "=" not in arg:
        req.action = "supported_btf_features"
    else:
        raise _usage(f"option {name} is not supported by canonbtf-pahole (it encodes BTF "
                     f"for kernel builds only; see docs/PAHOLE.md)")


def parse_args(argv: list[str]) -> Request:
    """pahole's argp syntax for the options Kbuild uses: `-J`, `-j[N]`, long options
    with `=V` or a separate value, one input file."""
    req = Request()
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            files = rest
            rest = []
        elif arg.startswith("--"):
            _parse_long(req, arg, rest)
            continue
        elif arg.startswith("-") and len(arg) > 1:
            if arg == "-J":
                req.encode_in_place = True
            elif arg == "-V":
                req.verbose = True
            elif arg.startswith("-j"):
                req.jobs = _parse_jobs(arg[2:])
            else:
                raise _usage(f"option {arg} is not supported by canonbtf-pahole "
                             f"(see docs/PAHOLE.md)")
            continue
        else:
            files = [arg]
        for name in files:
            if req.elf is not None:
                raise _usage(f"one input file only, not {req.elf!r} and {name!r}")
            req.elf = name
    _resolve_features(req)
    return req


def _resolve_features(req: Request) -> None:
    """The canonbtf feature set: from --btf_features (exactly those, as pahole resets
    the others), else from the legacy flags over pahole's legacy defaults."""
    if req.btf_features is not None and req.legacy:
        raise _usage(f"{req.legacy[0]} together with --btf_features: pahole's result "
                     f"depends on their order; give one style")
    if req.btf_features is not None:
        req.features = {"func"}
        for name in req.btf_features:
            if name in NOTED_FEATURES:
                req.notes.append(NOTED_FEATURES[name])
            elif name == "distilled_base":
                req.distilled_base = True
            elif BTF_FEATURES.get(name):
                req.features.add(BTF_FEATURES[name])
        return
    for flag in req.legacy:
        edit = LEGACY_FLAGS[flag]
        if edit.startswith("note:"):
            req.notes.append(NOTED_FEATURES[edit[5:]])
        elif edit.startswith("+"):
            req.features.add(edit[1:])
        elif edit.startswith("-"):
            req.features.discard(edit[1:])


def main(argv: list[str] | None = None) -> int:
    req = None
    try:
        # Parsing -j and then the run import the encoder and what it needs; the
        # collector's passes over what imports make were 3.5 % of a small kernel
        # module's run, and find no cycles worth it.
        with paused_gc():
            req = parse_args(sys.argv[1:] if argv is None else argv)
        if req.action == "version":
            print(PAHOLE_VERSION)
            return 0
        if req.action == "supported_btf_features":
            print(",".join(SUPPORTED_LIST))
            return 0
        with paused_gc():
            from .run import run
        return run(req)
    except InputError as e:
        print(f"canonbtf-pahole: {e}", file=sys.stderr)
        return EXIT_USAGE
    except MemoryError:  # as `canonbtf` says it: one line, the input left as it was
        where = f"{req.elf}: " if req is not None and req.elf else ""
        print(f"canonbtf-pahole: {where}out of memory", file=sys.stderr)
        return EXIT_USAGE
