"""The encoder's features (dwarf/features.py) as the bits the compiled core tests."""

FEATURE_BITS = {"func": 1, "var": 2, "global_var": 4, "float": 8, "enum64": 16,
                "decl_tag": 32, "type_tag": 64, "decl_tag_kfuncs": 128}
