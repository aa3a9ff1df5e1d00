"""DWARF -> canonical BTF, in parallel: units in worker processes, one merge at the end.

The parent opens the ELF and lists the units (cheap), cuts them into size-balanced
batches and forks workers, which inherit the loaded sections copy-on-write. A worker
keeps one `TypePool` for every batch it is given and sends back only the records that
batch added (ids continue its earlier ones), so its dedup spans all of its units while
batches stay small enough to balance the load. The parent concatenates what arrives,
in any order, and hands the union to `canon.canonicalize(dedup=True)`, which merges it
(declarations resolved across units) and puts it in canonical order: the bytes are
independent of -j, of batch boundaries and of completion order.

`CANONBTF_SHUFFLE_SEED=S` permutes the unit order before batching, for tests that prove
exactly that.
"""

from __future__ import annotations

import os
import random
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import wait

from ..btf import format as f
from ..btf.model import Btf, Type
from ..btf.strings import StringTable
from ..errors import InputError
from .constants import TAG_NAMES
from .convert import Skips, convert_unit
from .fragment import Fragment, TypePool, remap_record
from .sections import DwarfFile, Unit, open_dwarf
from .unit_types import DwarfFormatError

SHUFFLE_ENV = "CANONBTF_SHUFFLE_SEED"
READERS = ("fast", "pyelftools")
# Batches per worker: more balance the load better, fewer send fewer repeated types.
BATCHES_PER_JOB = 4


@dataclass
class EncodeStats:
    """What the run did, for the summary line and the benchmarks."""

    units: int = 0
    type_dies: int = 0
    merged_records: int = 0  # records the parent received (after the workers' dedup)
    skips: dict[str, int] = field(default_factory=dict)
    seconds_workers: float = 0.0  # wall time until the last fragment arrived
    seconds_merge: float = 0.0  # parent: concatenation, global dedup, canonical order


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
    """The per-process state: the file (inherited by fork), a DIE reader and the pool."""

    def __init__(self, dwarf: DwarfFile, reader: str):
        self.dwarf = dwarf
        if reader == "pyelftools":
            from .reference import ReferenceReader

            self.reader = ReferenceReader(dwarf)
        else:
            from .dies import DieReader

            self.reader = DieReader(dwarf)
        self.pool = TypePool()
        self.sent = 1  # pool records [1, sent) were already sent

    def encode_batch(self, units: list[Unit], progress: Callable[[], None] | None = None
                     ) -> Fragment:
        skips = Skips()
        dies = 0
        reader = self.reader
        little = self.dwarf.little_endian
        for unit in units:
            unit_types = reader.read_unit(unit)
            dies += len(unit_types.types)
            self.pool.add_unit(convert_unit(unit_types, little, skips))
            if progress is not None:
                progress()
        for tag, count in reader.skipped_tags.items():
            skips.add(f"DW_TAG_{TAG_NAMES.get(tag, hex(tag))} outside a type", count)
        reader.skipped_tags.clear()
        records = self.pool.records[self.sent:]
        self.sent = len(self.pool.records)
        return Fragment(records, len(units), dies, skips.counts)


def _worker_main(conn, dwarf: DwarfFile, reader: str) -> None:
    """A forked worker: encode the batches it is sent until told to stop."""
    import signal

    # Ctrl-C reaches the whole process group; the parent stops the workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    worker = _Worker(dwarf, reader)
    while True:
        message = conn.recv()
        if message is None:
            return
        index, units = message

        def unit_done(index: int = index) -> None:
            conn.send(("unit", index, None))

        try:
            fragment = worker.encode_batch(units, unit_done)
        except DwarfFormatError as e:
            conn.send(("error", index, str(e)))
            return
        except Exception:  # noqa: BLE001 - the parent reports it and stops the run
            conn.send(("crash", index, traceback.format_exc()))
            return
        conn.send(("done", index, fragment))


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
                     reader: str = "fast", progress: bool = False
                     ) -> tuple[list[list[Fragment]], EncodeStats]:
    """Fragments of every unit, grouped by the worker that made them (in its order)."""
    units = list(dwarf.units)
    if seed is not None:
        random.Random(seed).shuffle(units)
    stats = EncodeStats(units=len(units))
    meter = _Progress(len(units), progress)
    start = time.monotonic()
    try:
        batches = make_batches(units, jobs * BATCHES_PER_JOB if jobs > 1 else 1)
        if len(batches) == 1:
            worker = _Worker(dwarf, reader)
            fragments = [[worker.encode_batch(units, meter.unit_done)]]
        else:
            fragments = _run_workers(dwarf, batches, jobs, reader, meter)
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
                 meter: _Progress) -> list[list[Fragment]]:
    import multiprocessing

    context = multiprocessing.get_context("fork")
    jobs = min(jobs, len(batches))
    workers = []
    try:
        for _ in range(jobs):
            parent_end, child_end = context.Pipe()
            process = context.Process(target=_worker_main, args=(child_end, dwarf, reader),
                                      daemon=True)
            process.start()
            child_end.close()
            workers.append((process, parent_end))
        by_worker: list[list[Fragment]] = [[] for _ in workers]
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
        return by_worker
    finally:
        for process, conn in workers:
            if process.is_alive():
                process.terminate()
            process.join()
            conn.close()


def merge_fragments(groups: list[list[Fragment]]) -> Btf:
    """One Btf holding every worker's records (each worker's ids continue across its
    fragments); names become a string table. Nothing is merged yet."""
    names: set[str] = set()
    total = 0
    for group in groups:
        for fragment in group:
            total += len(fragment.records)
            for record in fragment.records:
                names.add(record[1])
                if record[5] and record[0] != f.DATASEC:
                    names.update(item[0] for item in record[5])
    names.discard("")
    strings, offset_of = StringTable.build(sorted(names))
    types: list[Type] = []
    for group in groups:
        global_id = [0]  # this worker's pool id -> id in the merged Btf
        for fragment in group:
            first = len(types) + 1
            global_id.extend(range(first, first + len(fragment.records)))
            for record in fragment.records:
                kind, name, kflag, sot, extra, items = remap_record(record, global_id)
                if items and kind != f.DATASEC:
                    items = [(offset_of[i[0]], *i[1:]) for i in items]
                types.append(Type(kind, offset_of[name], kflag, sot, extra, list(items)))
    return Btf(types, strings)


def encode_file(path: str, jobs: int | None = None, seed: int | None = None,
                reader: str = "fast", progress: bool = False) -> tuple[Btf, EncodeStats]:
    """Encode the DWARF types of the ELF file `path` as canonical, deduplicated BTF."""
    dwarf = open_dwarf(path, for_reference=reader == "pyelftools")
    if not dwarf.units:
        raise InputError(path, ".debug_info has no units")
    return encode_dwarf(dwarf, jobs, seed, reader, progress)


def encode_dwarf(dwarf: DwarfFile, jobs: int | None = None, seed: int | None = None,
                 reader: str = "fast", progress: bool = False) -> tuple[Btf, EncodeStats]:
    """Encode the units listed in `dwarf.units` (tests pass a sample of a kernel's)."""
    from ..canon import canonicalize

    groups, stats = encode_fragments(dwarf, jobs or default_jobs(), seed, reader, progress)
    start = time.monotonic()
    merged = merge_fragments(groups)
    stats.merged_records = len(merged.types)
    if not merged.types:
        raise InputError(dwarf.path, "no types to encode in its DWARF")
    btf = canonicalize(merged, dedup=True)
    stats.seconds_merge = time.monotonic() - start
    return btf, stats


def kind_counts(btf: Btf) -> dict[str, int]:
    counts: dict[str, int] = {}
    for t in btf.types:
        name = f.kind_name(t.kind)
        counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: f.KIND_BY_NAME.get(kv[0], 99)))
