"""DWARF -> canonical BTF, in parallel: units in worker processes, one merge at the end.

The parent opens the ELF and lists the units (cheap), cuts them into size-balanced
batches and forks workers, which inherit the loaded sections copy-on-write. A worker
keeps one `TypePool` for every batch it is given and sends back only the records that
batch added (ids continue its earlier ones), so its dedup spans all of its units while
batches stay small enough to balance the load. The parent concatenates what arrives,
in any order, and hands the union to `canon.canonicalize(dedup=True)`, which merges it
(declarations resolved across units) and puts it in canonical order: the bytes are
independent of -j, of batch boundaries and of completion order.

Functions and variables (docs/ENCODE.md): the parent reads the ELF symbol table before
forking; workers make FUNC candidates and placed VARs from it, and the parent decides on
them around the global dedup (functions.py), so no decision depends on the split either.
With a base BTF (`--base`, a kernel module) the result is split BTF: own types only,
references to equivalent base types by base id.

`CANONBTF_SHUFFLE_SEED=S` permutes the unit order before batching, for tests that prove
exactly that.
"""

from __future__ import annotations

import os
import sys
import time

from ..btf import format as f
from ..btf.model import Btf
from ..errors import InputError
from ..gcpause import paused_gc
from ..spec import kinds as spec
from ..spec.dwarf_numbers import PARAMETER_REGISTERS, TAG_NAMES
from .core import CoreFallback, new_encoder, unit_fields
from .features import DEFAULT as DEFAULT_FEATURES
from .fragment import Fragment, records_btf
from .functions import FunctionReport, decide_functions, place_variables, rebuild, reorder
from .keyed_core import keyed_merge, new_type_pool
from .keys import KeyFragment, KeyPool, PackedEntries
from .numbering import ConvertContext, Skips
from .sections import DwarfFile, Unit, open_dwarf
from .symbols import read_symbols
from .unit_types import DwarfFormatError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (ms per run)
if TYPE_CHECKING:
    from collections.abc import Callable

    from ..canon.dedup import BaseIndex

SHUFFLE_ENV = "CANONBTF_SHUFFLE_SEED"
# Batches per worker: more balance the load better, fewer send fewer repeated types.
BATCHES_PER_JOB = 4
# The keyed merge re-encodes units in the parent when they hold under 1/REDO_HERE of the
# bytes, else in workers.
REDO_HERE = 20


class EncodeStats:
    """What the run did, for the summary line and the benchmarks. A plain class, not a
    dataclass (see elf/read.Section)."""

    def __init__(self, units: int = 0) -> None:
        self.units = units
        self.type_dies = 0
        self.merged_records = 0  # records the parent received (after the workers' dedup)
        # Names a module's keyed merge took as settled and its base defines otherwise.
        self.split_names: frozenset[tuple] = frozenset()
        self.skips: dict[str, int] = {}
        self.seconds_workers = 0.0  # wall time until the last fragment arrived
        self.seconds_merge = 0.0  # parent: concatenation, global dedup, canonical order
        self.functions = FunctionReport()


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def shuffle_seed_from_env() -> int | None:
    value = os.environ.get(SHUFFLE_ENV)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise InputError(None, f"{SHUFFLE_ENV} must be an integer, not {value!r}") from None


def make_batches(units: list[Unit], count: int) -> list[list[Unit]]:
    """Cut `units` (in order) into at most `count` runs of about equal byte size."""
    if not units:
        return []
    total = sum(u.size for u in units)
    count = max(1, min(count, len(units)))
    batches: list[list[Unit]] = [[]]
    done = 0
    for unit in units:
        if batches[-1] and done >= total * len(batches) / count:
            batches.append([])
        batches[-1].append(unit)
        done += unit.size
    return batches


class _Worker:
    """The per-process state: the file (inherited by fork), the core that encodes units
    (compiled or pure, core.py) and the pool their records or keys go to."""

    def __init__(self, dwarf: DwarfFile, reader: str, context: ConvertContext,
                 keyed: bool = False):
        self.dwarf = dwarf
        self.context = context
        self.reader_name = reader
        self.keyed = keyed
        self._reader = None
        self.native = new_encoder(dwarf, context) if reader == "fast" else None
        self.pool = KeyPool() if keyed else new_type_pool()
        # Keyed units the compiled core gave up: a pool of their own, sent as a group
        # of its own (the merge unifies groups by their entries).
        self.fallback_pool: KeyPool | None = None
        self.fallbacks = 0

    @property
    def reader(self):
        """The pure DIE reader, made on first use (the compiled core needs none)."""
        if self._reader is None:
            if self.reader_name == "pyelftools":
                from .reference import ReferenceReader

                self._reader = ReferenceReader(self.dwarf)
            else:
                from .dies import DieReader

                self._reader = DieReader(self.dwarf)
        return self._reader

    def encode_batch(self, units: list[Unit], progress: Callable[[], None] | None = None
                     ) -> list[tuple[int, Fragment]]:
        """Fragments of what `units` added, each with the index of the pool it came from
        (0 the worker's pool, 1 the pool of keyed units the compiled core gave up)."""
        skips = Skips()
        dies = 0
        # A unit's DIEs and records are acyclic garbage: without the collector's rescans
        # a keyed worker runs 9 % fewer instructions (valgrind, 1/40 of the 6.1 kernel).
        with paused_gc():
            for unit in units:
                if not self._native_unit(unit):
                    dies += self._pure_unit(unit, skips)
                if progress is not None:
                    progress()
        outside: list[dict[int, int]] = []  # DIEs of child tags met outside a type
        if self._reader is not None:
            outside.append(dict(self._reader.skipped_tags))
            self._reader.skipped_tags.clear()
        if self.native is not None:
            reasons, tags, native_dies = self.native.take_counts()
            dies += native_dies
            outside.append(tags)
            for reason, count in reasons.items():
                skips.add(reason, count)
        for tags in outside:
            for tag, count in tags.items():
                skips.add(f"DW_TAG_{TAG_NAMES.get(tag, hex(tag))} outside a type", count)
        if self.native is not None and self.keyed:
            packed, unit_keys = self.native.take_fragment()
            out = [(0, KeyFragment(PackedEntries(*packed), unit_keys, len(units), dies,
                                   skips.counts))]
            if self.fallback_pool is not None:
                out.append((1, self.fallback_pool.fragment(0, 0, {})))
            return out
        return [(0, self.pool.fragment(len(units), dies, skips.counts))]

    def _native_unit(self, unit: Unit) -> bool:
        """Encode `unit` with the compiled core; False when it gives the unit up."""
        if self.native is None:
            return False
        try:
            if self.keyed:
                self.native.add_keys(unit_fields(unit))
            else:
                self.pool.add_unit(self.native.records(unit_fields(unit)), unit)
        except CoreFallback:
            self.fallbacks += 1
            return False
        return True

    def _pure_unit(self, unit: Unit, skips: Skips) -> int:
        """Encode `unit` with the pure path; returns its number of type DIEs. (convert.py
        and what it imports: only where the compiled core gives a unit up, or is not
        built; six modules of every module's run otherwise.)"""
        from .convert import convert_unit

        unit_types = self.reader.read_unit(unit)
        pool = self.pool
        if self.native is not None and self.keyed:
            if self.fallback_pool is None:
                self.fallback_pool = KeyPool()
            pool = self.fallback_pool
        pool.add_unit(convert_unit(unit_types, self.dwarf.little_endian, skips, self.context),
                      unit)
        return len(unit_types.types)


def _worker_main(conn, inherited: list, dwarf: DwarfFile, reader: str,
                 context: ConvertContext, keyed: bool) -> None:
    """A forked worker: encode the batches it is sent until told to stop, or until the
    parent is gone (its pipe then ends: nobody is left to report to)."""
    import signal

    # Ctrl-C reaches the whole process group; the parent stops the workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked at the fork
    # The parent's ends of this pipe and of the earlier workers' came along with the
    # fork: while a worker holds them, a parent that died (SIGKILL) leaves no EOF to
    # read and no reader to stop a send, and the worker would wait for ever.
    for end in inherited:
        end.close()
    worker = _Worker(dwarf, reader, context, keyed)
    try:
        while True:
            message = conn.recv()
            if message is None:
                return
            index, units = message

            def unit_done(index: int = index) -> None:
                conn.send(("unit", index, None))

            try:
                fragments = worker.encode_batch(units, unit_done)
            except DwarfFormatError as e:
                conn.send(("error", index, str(e)))
                return
            except (EOFError, OSError):
                raise
            except Exception:  # noqa: BLE001 - the parent reports it and stops the run
                import traceback

                conn.send(("crash", index, traceback.format_exc()))
                return
            conn.send(("done", index, fragments))
    except (EOFError, OSError):
        return


class _Progress:
    """Units done / total and elapsed time on stderr, only when it is a terminal."""

    def __init__(self, total: int, enabled: bool):
        self.total = total
        self.done = 0
        self.enabled = enabled
        self.start = time.monotonic()
        self.last = 0.0

    def unit_done(self) -> None:
        self.done += 1
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last >= 0.2 or self.done == self.total:
            self.last = now
            sys.stderr.write(f"\rcanonbtf: encoding: {self.done}/{self.total} units, "
                             f"{now - self.start:.1f}s")
            sys.stderr.flush()

    def finish(self) -> None:
        if self.enabled and self.done:
            sys.stderr.write("\n")
            sys.stderr.flush()


def encode_fragments(dwarf: DwarfFile, jobs: int, seed: int | None = None,
                     reader: str = "fast", progress: bool = False,
                     context: ConvertContext | None = None, keyed: bool = False
                     ) -> tuple[list[list[Fragment]], EncodeStats]:
    """Fragments of every unit, grouped by the worker that made them (in its order):
    records, or with `keyed` the keys of the records (keys.py)."""
    units = list(dwarf.units)
    if seed is not None:
        import random  # tests' shuffled order only: not imported by a normal run

        random.Random(seed).shuffle(units)
    stats = EncodeStats(units=len(units))
    meter = _Progress(len(units), progress)
    context = context or ConvertContext()
    start = time.monotonic()
    try:
        batches = make_batches(units, jobs * BATCHES_PER_JOB if jobs > 1 else 1)
        if len(batches) == 1:
            worker = _Worker(dwarf, reader, context, keyed)
            fragments = _grouped([worker.encode_batch(units, meter.unit_done)])
        else:
            fragments = _run_workers(dwarf, batches, jobs, reader, meter, context, keyed)
    except DwarfFormatError as e:
        raise InputError(dwarf.path, str(e)) from None
    finally:
        meter.finish()
    stats.seconds_workers = time.monotonic() - start
    for group in fragments:
        for fragment in group:
            stats.type_dies += fragment.dies
            for reason, count in fragment.skips.items():
                stats.skips[reason] = stats.skips.get(reason, 0) + count
    return fragments, stats


def _run_workers(dwarf: DwarfFile, batches: list[list[Unit]], jobs: int, reader: str,
                 meter: _Progress, convert_context: ConvertContext, keyed: bool
                 ) -> list[list[Fragment]]:
    import multiprocessing  # not at start-up: a module's encode runs no workers
    import signal
    from multiprocessing.connection import wait

    context = multiprocessing.get_context("fork")
    jobs = min(jobs, len(batches))
    workers = []
    try:
        # Ctrl-C between a fork and the worker's place in `workers` would leave a worker
        # nobody stops (holding the terminal's stderr open): it waits until all are listed.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            for _ in range(jobs):
                parent_end, child_end = context.Pipe()
                inherited = [end for _, end in workers] + [parent_end]
                process = context.Process(target=_worker_main,
                                          args=(child_end, inherited, dwarf, reader,
                                                convert_context, keyed),
                                          daemon=True)
                process.start()
                child_end.close()
                workers.append((process, parent_end))
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        by_worker: list[list[list[tuple[int, Fragment]]]] = [[] for _ in workers]
        next_batch = 0
        busy = 0
        for _, conn in workers:
            if next_batch < len(batches):
                conn.send((next_batch, batches[next_batch]))
                next_batch += 1
                busy += 1
        conn_index = {id(conn): i for i, (_, conn) in enumerate(workers)}
        conn_of_sentinel = {process.sentinel: conn for process, conn in workers}
        while busy:
            ready = wait([conn for _, conn in workers] + list(conn_of_sentinel))
            for item in ready:
                if isinstance(item, int):
                    if not conn_of_sentinel[item].poll():
                        raise InputError(dwarf.path, "a worker process died unexpectedly "
                                                     "(out of memory?)")
                    continue
                try:
                    kind, index, payload = item.recv()
                except EOFError:
                    raise InputError(dwarf.path, "a worker process died unexpectedly "
                                                 "(out of memory?)") from None
                if kind == "unit":
                    meter.unit_done()
                elif kind == "done":
                    by_worker[conn_index[id(item)]].append(payload)
                    if next_batch < len(batches):
                        item.send((next_batch, batches[next_batch]))
                        next_batch += 1
                    else:
                        busy -= 1
                elif kind == "error":
                    raise DwarfFormatError(payload)
                else:
                    raise RuntimeError(f"worker failed:\n{payload}")
        for _, conn in workers:
            conn.send(None)
        return [group for batches_done in by_worker for group in _grouped(batches_done)]
    finally:
        for process, conn in workers:
            if process.is_alive():
                process.terminate()
            process.join()
            conn.close()


def _grouped(batches: list[list[tuple[int, Fragment]]]) -> list[list[Fragment]]:
    """One worker's fragments (per batch, each with its pool index) as one group per
    pool, in batch order: a group's ids continue from fragment to fragment."""
    groups: dict[int, list[Fragment]] = {}
    for batch in batches:
        for pool, fragment in batch:
            groups.setdefault(pool, []).append(fragment)
    return [groups[pool] for pool in sorted(groups)]


def merge_fragments(groups: list[list[Fragment]], base: Btf | None = None) -> Btf:
    """One Btf holding every worker's records (each worker's ids continue across its
    fragments); names become a string table. Nothing is merged yet. With `base`, split
    BTF over it (ids and string offsets after the base's), so that the dedup can merge
    types into equivalent base types: made so at once, not remapped after (ext4.ko's
    9 k types: about 0.05 s)."""
    shift = base.last_id if base is not None else 0
    records: list[tuple[tuple, list[int]]] = []
    for group in groups:
        global_id = [0]  # this worker's pool id -> id in the merged Btf
        for fragment in group:
            first = len(records) + 1 + shift
            global_id.extend(range(first, first + len(fragment.records)))
            records.extend([(record, global_id) for record in fragment.records])
    return records_btf(records, base)


def merge_keyed(dwarf: DwarfFile, groups: list, jobs: int, reader: str,
                context: ConvertContext, base: Btf | None = None,
                split: frozenset[tuple] = frozenset()) -> Btf:
    """The Btf the keyed fragments stand for: one type per safe key, plus the records of
    the units that hold an unsafe one, encoded again (keys.py); split BTF over `base`
    when given, whose names `split` count as ambiguous."""
    keyed = keyed_merge(groups, split)
    again = set(keyed.redo_units())
    record_groups: list[list[Fragment]] = []
    if again:
        import copy

        subset = copy.copy(dwarf)
        subset.units = [unit for unit in dwarf.units if unit.offset in again]
        # A few units are encoded faster here than in fresh workers forked from a parent
        # that holds the merge: the 6.1 kernel's 17 (0.9 % of the bytes) took 0.39 s
        # here, 0.61 s at -j2.
        small = sum(u.size for u in subset.units) * REDO_HERE < sum(u.size for u in dwarf.units)
        record_groups, _ = encode_fragments(subset, 1 if small else jobs, None, reader,
                                            False, context)
    return keyed.build(record_groups, base)


def encode_file(path: str, jobs: int | None = None, seed: int | None = None,
                reader: str = "fast", progress: bool = False, *,
                features: frozenset[str] = DEFAULT_FEATURES, base: Btf | None = None
                ) -> tuple[Btf, EncodeStats]:
    """Encode the DWARF of the ELF file `path` as canonical, deduplicated BTF: types and
    what `features` asks for; split BTF over `base` when given."""
    dwarf = open_dwarf(path, for_reference=reader == "pyelftools")
    if not dwarf.units:
        raise InputError(path, ".debug_info has no units")
    return encode_dwarf(dwarf, jobs, seed, reader, progress, features=features, base=base)


def context_for(dwarf: DwarfFile, features: frozenset[str]) -> ConvertContext:
    """What the workers need besides the DWARF: the features and the file's symbols."""
    symbols = None
    if features & {"func", "var", "global_var"}:
        symbols = read_symbols(dwarf.path)
    return ConvertContext(features, symbols, PARAMETER_REGISTERS.get(dwarf.machine, ()))


def encode_dwarf(dwarf: DwarfFile, jobs: int | None = None, seed: int | None = None,
                 reader: str = "fast", progress: bool = False, *,
                 features: frozenset[str] = DEFAULT_FEATURES, base: Btf | None = None,
                 merge: str = "keyed") -> tuple[Btf, EncodeStats]:
    """Encode the units listed in `dwarf.units` (tests pass a sample of a kernel's).
    `merge="records"` sends every unit's records instead of keys (the tests' reference
    for the keyed merge)."""
    from ..canon import canonicalize, renumbered
    from ..canon.dedup import BaseSplitsNames

    context = context_for(dwarf, features)
    jobs = jobs or default_jobs()
    keyed = merge == "keyed"
    groups, stats = encode_fragments(dwarf, jobs, seed, reader, progress, context, keyed)
    start = time.monotonic()
    # The merge makes about 100 k records and types and keeps them: the collector's
    # rescans were 1.3 of 4.3 s of the parent's CPU time on 1/4 of the 6.1 kernel's units.
    with paused_gc():
        try:
            btf, alone = _deduplicated(dwarf, groups, keyed, base, jobs, reader, context,
                                       stats)
        except BaseSplitsNames as e:
            # Names the module defines once and its base otherwise (btrfs.ko's `struct
            # dir_entry`, vmlinux's in init/initramfs.c): merged again with them ambiguous,
            # the units reaching them sent as records. The check is not made again: its
            # answer depends on the names' definitions only, which are the same.
            stats.split_names = e.tokens
            btf, alone = _deduplicated(dwarf, groups, keyed, base, jobs, reader, context,
                                       stats, e.tokens)
        ambiguous = context.symbols.ambiguous if context.symbols else frozenset()
        choice, stats.functions = decide_functions(btf, "consistent_func" in features,
                                                   ambiguous)
        if stats.functions.candidates or stats.functions.overlapping_variables:
            btf = reorder(btf, choice, alone) or canonicalize(rebuild(btf, choice))
        else:
            btf = renumbered(btf, range(btf.first_id, btf.last_id + 1))
    stats.seconds_merge = time.monotonic() - start
    return btf, stats


def _deduplicated(dwarf: DwarfFile, groups: list, keyed: bool, base: Btf | None, jobs: int,
                  reader: str, context: ConvertContext, stats: EncodeStats,
                  split: frozenset[tuple] | None = None) -> tuple[Btf, bool]:
    """The fragments merged, deduplicated (over `base` when given) and in canonical
    order, strings not yet canonical; whether that order broke no tie (canon).
    Choosing functions needs the merged types in canonical order; the strings are made
    canonical once, at the end. `split`: names of a module's that its base has already
    been found to define otherwise (None: not looked at yet)."""
    from ..canon import canonicalize_checked

    if keyed:
        merged = merge_keyed(dwarf, groups, jobs, reader, context, base, split or frozenset())
    else:
        merged = merge_fragments(groups, base)
    stats.merged_records = len(merged)  # a packed Btf stays packed
    if not stats.merged_records:
        raise InputError(dwarf.path, "no types to encode in its DWARF")
    # The base's index is made only where the reference dedups.
    index = None if base is None else (lambda: _base_index(base))
    return canonicalize_checked(place_variables(merged), dedup=True, strings=False,
                                index=index,
                                premerged=keyed and base is not None and split is None)


def _base_index(base: Btf) -> BaseIndex:
    """basecache.base_index, imported only when the pure dedup asks for it (hashlib and
    pathlib were 10 ms of a module's start-up)."""
    from ..canon.basecache import base_index

    return base_index(base)


def kind_counts(btf: Btf) -> dict[str, int]:
    """How many types of each kind `btf` holds (its own), by kind name, in kind order."""
    from ..canon.accel import own_kinds

    counts: dict[str, int] = {}
    kinds = own_kinds(btf)  # an encoded kernel stays packed: no 95 k Types for a count
    for kind in kinds if kinds is not None else (t.kind for t in btf.types):
        name = f.kind_name(kind)
        counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: spec.KIND_BY_NAME.get(kv[0], 99)))
