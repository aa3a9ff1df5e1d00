"""What `canonbtf encode` puts into BTF beyond plain types, named like pahole's
`--btf_features` where pahole has the same thing (docs/ENCODE.md).

`--features LIST` edits the default set from left to right: `name` or `+name` turns a
feature on, `-name` off, `all`, `none` and `default` replace the whole set. So a kernel
older than 5.18 (no TYPE_TAG) asks for `--features=-type_tag`, and one older than 6.0
(no ENUM64) for `--features=-enum64`.
"""

from __future__ import annotations

from ..errors import InputError
from ..tuples import named_tuple


class Feature(named_tuple("Feature", "name default summary")):
    """A feature's name, whether it is on by default, and what it does (a named tuple, not
    a dataclass: see elf/read.Section)."""

    __slots__ = ()


FEATURES = (
    Feature("func", True, "FUNC and FUNC_PROTO for each function definition whose name is "
            "an STT_FUNC symbol and whose parameters are all named"),
    Feature("consistent_func", True, "drop a function name whose definitions have "
            "prototypes differing in more than parameter names (decided on all units)"),
    Feature("var", True, "VAR for each per-CPU variable and one DATASEC '.data..percpu'"),
    Feature("global_var", False, "VAR and a DATASEC per section for every variable an "
            "STT_OBJECT symbol confirms, not only per-CPU ones"),
    Feature("float", True, "FLOAT for floating-point base types (off: INT of that size)"),
    Feature("enum64", True, "ENUM64 for enums over 4 bytes (off: ENUM, values truncated "
            "to 32 bits, none signed)"),
    Feature("decl_tag", True, "DECL_TAG from btf_decl_tag annotations (clang -g)"),
    Feature("type_tag", True, "TYPE_TAG from btf_type_tag annotations on pointers "
            "(clang -g)"),
    Feature("decl_tag_kfuncs", True, "DECL_TAG 'bpf_kfunc' on functions listed in .BTF_ids "
            "set8s flagged BTF_SET8_KFUNCS (kernels 6.9 and later)"),
)
BY_NAME = {feature.name: feature for feature in FEATURES}
DEFAULT = frozenset(feature.name for feature in FEATURES if feature.default)
ALL = frozenset(BY_NAME)


def parse_features(text: str | None) -> frozenset[str]:
    """The feature set that `--features text` asks for (the defaults when None)."""
    enabled = set(DEFAULT)
    if text is None:
        return frozenset(enabled)
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        if item in ("all", "none", "default"):
            enabled = set({"all": ALL, "none": (), "default": DEFAULT}[item])
            continue
        turn_on = not item.startswith("-")
        name = item.lstrip("+-")
        if name not in BY_NAME:
            known = ", ".join(feature.name for feature in FEATURES)
            raise InputError(None, f"unknown feature {name!r} in --features (known: {known}; "
                                   f"also all, none, default)")
        if turn_on:
            enabled.add(name)
        else:
            enabled.discard(name)
    return frozenset(enabled)


def describe() -> str:
    """One line per feature: name, on or off by default, what it does (for scripts)."""
    width = max(len(feature.name) for feature in FEATURES)
    return "".join(f"{feature.name:<{width}}  {'default' if feature.default else 'optional':<8}"
                   f"  {feature.summary}\n" for feature in FEATURES)
