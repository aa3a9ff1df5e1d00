"""The facts both implementations read: data only, importing nothing else of canonbtf.

kinds.py is every BTF kind as one row of one table (its number, name, wire words, field
roles and the named kind sets it belongs to); features.py the encoder's feature bits.
gen_c.py writes them as the C headers both extensions include (canonbtf/native/csrc/
kinds.def, features.def): the build runs it, and tests/test_spec.py checks that the
committed files are what it writes.
"""
