"""DWARF -> BTF: ELF sections and units, DIE readers, per-unit conversion, parallel encode.

Workers do everything per unit (read DIEs, convert, dedup within themselves); the parent
only merges and hands the union to canon/ for the global dedup and the canonical order.
"""
