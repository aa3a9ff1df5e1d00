"""canonbtf: canonical, reproducible BTF."""

__version__ = "0.1.0"

# The canonical order's version (docs/ORDER.md). Output written in one order version is
# byte-identical for every later release that keeps this number.
ORDER_VERSION = 1
