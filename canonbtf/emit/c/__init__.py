"""The C header (vmlinux.h, docs/C-HEADER.md): header.py writes it; the speller (spell.py,
with btf/declarator.py), names, placement order and shape checks are its parts; compiled.py calls
its hot parts in C (csrc/cdump.c)."""
