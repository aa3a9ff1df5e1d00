"""`canonbtf-pahole` doing the job: encode, order, distil, write where pahole writes.

Split from the option parsing (pahole/front.py) so that the front stays a table of
pahole's options; everything here calls the library's public functions.
"""

from __future__ import annotations

import os
import sys
import time

from ..btf import writer
from ..btf.model import Btf
from ..errors import InputError
from ..gcpause import paused_gc

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (ms per run)
if TYPE_CHECKING:
    from ..dwarf.encode import EncodeStats
    from .front import Request

DISTILLED_SECTION = ".BTF.base"
ORDER_ENV = "CANONBTF_PAHOLE_ORDER"


def output_order(req: Request) -> str:
    """`name` where the build sorts by name after us (gen-btf.sh's `-J` with
    `--btf_encode_detached`, kernels since 2026), else `kind`; $CANONBTF_PAHOLE_ORDER
    overrides."""
    forced = os.environ.get(ORDER_ENV)
    if forced:
        if forced not in ("kind", "name"):
            raise InputError(None, f"{ORDER_ENV}={forced!r}: must be kind or name")
        return forced
    return "name" if req.encode_in_place and req.detached else "kind"


def objcopy_command() -> list[str]:
    """pahole runs $LLVM_OBJCOPY (Kbuild sets it to $(OBJCOPY)); else canonbtf's
    usual choice ($OBJCOPY, objcopy, llvm-objcopy)."""
    from ..elf.write import configured_command, find_objcopy

    return configured_command("LLVM_OBJCOPY") or find_objcopy()


def _check_request(req: Request) -> None:
    if req.elf is None:
        raise InputError(None, "no input file: give the ELF to encode (vmlinux, a module)")
    if not (req.encode_in_place or req.detached):
        raise InputError(None, "canonbtf-pahole only encodes BTF: give -J or "
                               "--btf_encode_detached=FILE (pahole's other uses are not "
                               "supported)")
    if req.distilled_base and req.base is None:
        raise InputError(None, "--btf_features=distilled_base needs --btf_base (it "
                               "describes a module's base)")
    if req.distilled_base and req.detached:
        raise InputError(None, "--btf_features=distilled_base with --btf_encode_detached: "
                               "the distilled base is an ELF section (.BTF.base); use -J")
    if not os.path.exists(req.elf):
        raise InputError(req.elf, "no such file")


def _without_languages(dwarf, languages: set[int]) -> None:
    """Drop the units whose DW_AT_language is excluded (pahole's --lang_exclude). Read
    by the compiled core where it is built: dies.unit_attribute parses a unit's
    abbreviations up to its own DIE's, which GCC numbers last (0.1 s of xfs.ko's 1.1 s).
    A unit the core gives up is read by unit_attribute, which has the last word."""
    from ..dwarf.core import CoreFallback, new_encoder, unit_fields
    from ..dwarf.numbering import ConvertContext
    from ..dwarf.unit_types import DwarfFormatError
    from ..spec.dwarf_numbers import AT_language

    encoder = new_encoder(dwarf, ConvertContext())

    def language_of(unit) -> int | None:
        if encoder is not None:
            try:
                return encoder.language(unit_fields(unit))
            except CoreFallback:
                pass
        from ..dwarf.dies import unit_attribute

        return unit_attribute(dwarf, unit, AT_language)

    kept = []
    for unit in dwarf.units:
        try:
            language = language_of(unit)
        except DwarfFormatError as e:
            raise InputError(dwarf.path, f"cannot read a unit's language: {e}") from None
        if language not in languages:
            kept.append(unit)
    dwarf.units = kept


def encode(req: Request, base: Btf | None) -> tuple[Btf, EncodeStats]:
    """The canonical BTF of `req.elf` with the request's features, split over `base`,
    and what the encoder reports."""
    from ..dwarf.encode import encode_dwarf
    from ..dwarf.sections import open_dwarf

    dwarf = open_dwarf(req.elf)
    if not dwarf.units:
        raise InputError(req.elf, ".debug_info has no units")
    if req.languages:
        _without_languages(dwarf, req.languages)
        if not dwarf.units:
            raise InputError(req.elf, "every unit is in an excluded language")
    # A module is encoded in this process whatever -j says: Kbuild runs modules side by
    # side already, and forked workers sending records back made bridge.ko's encode
    # slower, not faster (4.2-6.4 s against 3.4-3.6 s at -j on 2 cores; same bytes).
    jobs = 1 if base is not None else req.jobs
    return encode_dwarf(dwarf, jobs, features=frozenset(req.features), base=base)


def print_verbose(req: Request, stats: EncodeStats, seconds: float) -> None:
    """`--verbose`: on stdout as pahole's, one line per function left out, in pahole
    1.31's words ("NAME : skipping BTF encoding of function due to REASON", what its
    tests/btf_functions.sh greps for), then the phases' times; the notes on stderr."""
    for line in stats.functions.skip_lines():
        print(line)
    print(f"canonbtf-pahole: {req.elf}: {stats.units} units, units "
          f"{stats.seconds_workers:.2f}s, merge {stats.seconds_merge:.2f}s, "
          f"total {seconds:.2f}s")
    for note in req.notes:
        print(f"canonbtf-pahole: note: {note}", file=sys.stderr)


def in_order(btf: Btf, order: str, path: str) -> Btf:
    """`btf` (canonical, kind order) in the order asked for: `canonbtf sort --order`."""
    if order == "kind":
        return btf
    from ..canon import canonicalize, order_hazard

    hazard = order_hazard(btf)
    if hazard:
        raise InputError(path, f"{hazard}: cannot be put in name order")
    return canonicalize(btf, order=order)


def sections_for(req: Request, btf: Btf) -> dict[str, bytes]:
    """Section name -> bytes: `.BTF`, and `.BTF.base` when a distilled base is asked for."""
    try:
        if not req.distilled_base:
            return {".BTF": writer.write(btf)}
        from ..canon.distill import distill_base

        dist, split = distill_base(btf)
        return {".BTF": writer.write(split), DISTILLED_SECTION: writer.write(dist)}
    except ValueError as e:
        raise InputError(req.elf, f"its DWARF gives BTF it cannot hold: {e}") from None


def run(req: Request) -> int:
    """Encode and write as the command line says; 0, or InputError for the caller."""
    if not req.base:
        return _run(req)
    # A module's run makes few cycles; the collector's first passes after each paused
    # step rescanned its types and the base's words (0.1 s of bridge.ko's 1.3 s of CPU).
    with paused_gc():
        return _run(req)


def _run(req: Request) -> int:
    from ..btf import reader
    from ..output import refuse_overwriting_input, write_atomically

    _check_request(req)
    if req.detached is None:
        from ..elf.write import laid_out_here

        if not laid_out_here(req.elf):
            objcopy_command()  # none: fail now, not after the encode
    if req.detached is not None:
        refuse_overwriting_input(req.detached, [req.elf, req.base])
    order = output_order(req)
    start = time.monotonic()
    base = reader.load(req.base) if req.base else None
    btf, stats = encode(req, base)
    btf = in_order(btf, order, req.elf)
    sections = sections_for(req, btf)
    if req.verbose:  # else quiet on success, as pahole
        print_verbose(req, stats, time.monotonic() - start)
    if req.detached is not None:
        write_atomically(req.detached, sections[".BTF"])
        return 0
    from ..elf.write import write_elf_with_sections

    for message in write_elf_with_sections(objcopy_command, req.elf, sections, req.elf):
        print(f"canonbtf-pahole: {req.elf}: objcopy: {message}", file=sys.stderr)
    return 0
