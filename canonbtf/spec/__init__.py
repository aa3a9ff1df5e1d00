"""The facts both implementations read: data only, importing nothing else of canonbtf.

kinds.py is every BTF kind as one row of one table (its number, name, wire words, field
roles and the named kind sets it belongs to); features.py the encoder's feature bits;
dwarf_numbers.py the DWARF numbers the encoder reads; messages.py every `check` finding's
key and wording. gen_c.py writes them as the C headers the extensions include
(canonbtf/native/csrc/*.def): the build runs it, and tests/test_spec.py checks that the
committed files are what it writes.
"""
