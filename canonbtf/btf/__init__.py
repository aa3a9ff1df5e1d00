"""BTF itself: the binary format, an in-memory model, reader, writer and validator.

This package knows nothing of DWARF or of the canonical order.
"""
