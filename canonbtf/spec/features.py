"""The encoder's features (dwarf/features.py) as the bits the compiled core tests, and
the flags a FUNC candidate carries."""

FEATURE_BITS = {"func": 1, "var": 2, "global_var": 4, "float": 8, "enum64": 16,
                "decl_tag": 32, "type_tag": 64, "decl_tag_kfuncs": 128}

# A FUNC candidate's flags, in its linkage field until the parent has seen every unit
# (the converters, dwarf/convert.py and dwarf/csrc/convert.c, set them; dwarf/functions.py
# reads them). CANDIDATE is never a valid linkage (so it never merges into a base BTF's
# FUNC), LINKED says the definition's code is at an address of its symbol, NOCALL that
# the function was marked DW_CC_nocall (its ABI changed), MOVED that a parameter of it or
# of a copy of its code is in another register than the calling convention's
# (locations.py). PIECE marks the prototype of an out-of-line copy (a `.part` piece, a
# clone) that lists the parameters otherwise than the definition: never kept, it is there
# for the parent to compare prototypes the way pahole 1.31 does (functions.py).
FUNC_LINKED = 1
FUNC_NOCALL = 2
FUNC_CANDIDATE = 4
FUNC_MOVED = 8
FUNC_PIECE = 16
FUNC_FLAGS = {"LINKED": FUNC_LINKED, "NOCALL": FUNC_NOCALL, "CANDIDATE": FUNC_CANDIDATE,
              "MOVED": FUNC_MOVED, "PIECE": FUNC_PIECE}
