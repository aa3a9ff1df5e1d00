"""How every violation the validator finds is worded: one template per message key.

Both validators report a violation as a message key and its raw values; canonbtf/check/
words.py words them with this table alone, so the Python passes (check/validator.py,
check/records.py, check/resolve.py) and the compiled pass (canonbtf/check/csrc/check.c)
cannot drift apart: gen_c.py writes the keys as C (native/csrc/check_keys.def), which
check.c names its findings by. A template (printf-style: `%` is the fastest way to a
million messages) has one field per value; the value's kind, a letter of its entry's spec,
says how it is shown:

  i  an int, as the template's field formats it
  n  a name (str), quoted
  t  a type as (id, kind or None where the id does not exist, name): described
  m  a member as (name or None where it has no name offset, index): its label
  k  a kind, by name; l the same in lower case
  c  a chain of type ids (a tuple), joined by arrows
  L  a FUNC linkage, by name where it has one
"""

from __future__ import annotations

MAX_RESOLVE_DEPTH = 32

# key -> (rule, spec, template)
MESSAGES: dict[str, tuple[str, str, str]] = {
    # the blob (validator._check_blob)
    "header": ("header", "i", "the header is %s bytes with non-zero fields past byte 24 (a "
               "layout section); kernels that do not know these fields reject the blob"),
    "blob-size": ("blob-size", "ii", "the blob would be %s bytes, more than the kernel's "
                  "limit of %s"),
    "no-types": ("no-types", "", "there are no types"),
    "strings-empty": ("strings", "", "the string section is empty"),
    "strings-end": ("strings", "", "the string section does not end with NUL"),
    "strings-size": ("strings", "ii", "the string section is %s bytes, more than the "
                     "kernel's limit of %s"),
    "strings-start": ("strings", "", "the string section does not start with NUL"),
    "too-many-types": ("too-many-types", "ii", "the last type id is %s; the kernel takes ids "
                       "up to %s"),
    # each record (check/records.py)
    "kind": ("kind", "i", "unknown kind %s"),
    "vlen": ("vlen", "i", "vlen %s does not fit the kernel's 16 bits"),
    "vlen-items": ("vlen", "i", "has %s items; vlen must be 0 for this kind"),
    "name-offset": ("name-offset", "ii", "name offset %s is past the end of the string "
                    "section (%s)"),
    "name-missing": ("name", "k", "a %s must have a name"),
    "name-identifier": ("name", "k", "name is not a valid identifier for a %s"),
    "name-forbidden": ("name", "k", "a %s must not have a name"),
    "name-array": ("name", "", "an ARRAY must not have a name"),
    "name-type-tag": ("name", "", "a TYPE_TAG must have a value (name)"),
    "name-decl-tag": ("name", "", "a DECL_TAG must have a value (name)"),
    "name-datasec": ("name", "", "a DATASEC needs a name of printable characters"),
    "kind-flag": ("kind-flag", "k", "kind_flag must be 0 for %s"),
    "int-data": ("int", "i", "INT data 0x%08x has bits set above the encoding"),
    "int-128": ("int", "ii", "bit offset %s + bits %s exceed 128"),
    "int-size": ("int", "iii", "bit offset %s + bits %s exceed the size %s bytes"),
    "int-encoding": ("int", "i", "encoding 0x%x is not one of none, SIGNED, CHAR, BOOL"),
    "type-id-max": ("type-id", "i", "type id %s is above the kernel's maximum"),
    "fwd": ("fwd", "i", "type field is %s; FWD must have 0"),
    "array-size": ("array", "i", "size field is %s; ARRAY must have 0"),
    "array-elem-id": ("array", "i", "element type %s is void or out of range"),
    "array-index-id": ("array", "i", "index type %s is void or out of range"),
    "member-name-offset": ("name-offset", "iii", "member %s name offset %s is past the end "
                           "of the string section (%s)"),
    "member-name": ("name", "in", "member %s name %s is not a valid identifier"),
    "member-type-id": ("member-type", "mi", "member %s has type %s (void or out of range)"),
    "union-member-offset": ("union-member-offset", "mi", "member %s is at bit offset %s; "
                            "union members must be at 0"),
    "member-order": ("member-offset", "mii", "member %s at bit offset %s comes before the "
                     "previous member's offset %s"),
    "member-past": ("member-offset", "mili", "member %s at bit offset %s is past the %s "
                    "size %s"),
    "enum-size": ("enum-size", "i", "size %s is not 1, 2, 4 or 8"),
    "value-name-offset": ("name-offset", "iii", "value %s name offset %s is past the end of "
                          "the string section (%s)"),
    "value-no-name": ("name", "i", "value %s has no name"),
    "value-name": ("name", "in", "value %s name %s is not a valid identifier"),
    "func-linkage": ("func-linkage", "L", "linkage %s is not static or global"),
    "var-type-id": ("var", "i", "type %s is void or out of range"),
    "var-linkage": ("var", "i", "linkage %s is not static (0) or global allocated (1)"),
    "datasec-size": ("datasec", "", "size is 0"),
    "datasec-type-id": ("datasec", "ii", "entry %s has type %s (void or out of range)"),
    "datasec-order": ("datasec", "iii", "entry %s at offset %s overlaps or precedes the "
                      "previous entry (ends at %s); entries must be sorted by offset"),
    "datasec-offset": ("datasec", "iii", "entry %s at offset %s is past the section size %s"),
    "datasec-entry-size": ("datasec", "ii", "entry %s has size %s"),
    "datasec-end": ("datasec", "iii", "entry %s ends at %s, past the section size %s"),
    "datasec-total": ("datasec", "ii", "entry sizes add up to %s, more than the size %s"),
    "float-size": ("float-size", "i", "size %s is not 2, 4, 8, 12 or 16"),
    "decl-tag-index": ("decl-tag", "i", "component_idx %s is below -1"),
    # the resolve walk (check/env.py, check/resolve.py)
    "resolve-depth": ("resolve-depth", "ci", "resolving it needs more than "
                      f"{MAX_RESOLVE_DEPTH} nested types (%s -> %s); the kernel's limit "
                      f"is {MAX_RESOLVE_DEPTH}"),
    "loop": ("loop", "ci", "loop of by-value references: %s -> %s"),
    "resolve-state": ("resolve-state", "", "the kernel's consistency check after resolving "
                      "fails"),
    "resolve-kind": ("resolve-state", "", "the kernel cannot resolve this kind"),
    "member-unresolved": ("resolve-state", "i", "member %s is not resolved after its walk"),
    "refers-missing": ("type-id", "t", "refers to %s"),
    "refers-source": ("type-id", "tk", "refers to %s; a %s cannot refer to a VAR, DATASEC or "
                      "DECL_TAG"),
    "refers-unsized": ("type-id", "t", "refers to %s, which has no size and is not void, a "
                       "FWD or a FUNC_PROTO"),
    "var-unsized": ("var", "t", "its type, %s, has no size"),
    "array-index-kind": ("array", "t", "index type is %s"),
    "array-elem-kind": ("array", "t", "element type is %s"),
    "array-index-int": ("array", "t", "index type %s is not a regular int"),
    "array-elem-unsized": ("array", "t", "element type %s has no size"),
    "array-elem-int": ("array", "t", "element type %s is an int with a bit offset or an odd "
                       "bit count"),
    "array-overflow": ("array", "ii", "%s elements of %s bytes overflow 32 bits"),
    "member-unsized": ("member-type", "mt", "member %s has %s as its type, which has no size"),
    "member-kind": ("member-type", "mt", "member %s has %s as its type, which cannot be a "
                    "member"),
    "member-float-0": ("member-type", "mt", "member %s has %s of size 0 as its type"),
    "member-bitfield": ("bitfield", "mt", "member %s is a bitfield of %s; only ints and "
                        "enums can be"),
    "member-overflow": ("member-offset", "m", "member %s bit offset overflows"),
    "member-128": ("bitfield", "m", "member %s spans more than 128 bits"),
    "member-bits-past": ("member-size", "miili", "member %s at bit offset %s (%s bits) runs "
                         "past the %s size %s"),
    "member-bytes-past": ("member-size", "miili", "member %s at bit offset %s (%s bytes) "
                          "runs past the %s size %s"),
    "member-end-past": ("member-size", "mili", "member %s ends at byte %s, past the %s "
                        "size %s"),
    "member-byte-align": ("member-alignment", "mi", "member %s at bit offset %s is not "
                          "byte-aligned"),
    "member-float-align": ("member-alignment", "mi", "member %s at bit offset %s is not "
                           "aligned to its float size"),
    "member-kflag-int": ("bitfield", "mt", "member %s has %s as its type; with kind_flag set "
                         "it must be a plain 1/2/4/8/16-byte int"),
    "member-int-bits": ("bitfield", "mii", "member %s is a %s-bit bitfield of a %s-bit int"),
    "member-enum-bits": ("bitfield", "mi", "member %s is a %s-bit bitfield of an enum; the "
                         "kernel allows at most 32"),
    "datasec-not-var": ("datasec", "it", "entry %s is %s, not a VAR"),
    "datasec-unsized": ("datasec", "ii", "entry %s: the type of VAR %s has no size"),
    "datasec-small": ("datasec", "iii", "entry %s has size %s, smaller than its VAR's type "
                      "(%s bytes)"),
    "func-not-proto": ("func", "t", "refers to %s, not a FUNC_PROTO"),
    "func-param-name": ("func", "ii", "parameter %s of its FUNC_PROTO %s has no name"),
    "decl-tag-target": ("decl-tag", "t", "targets %s; it must be a FUNC, STRUCT, UNION, VAR "
                        "or TYPEDEF"),
    "decl-tag-none": ("decl-tag", "ik", "component_idx %s on a %s, which has no components"),
    "decl-tag-range": ("decl-tag", "iti", "component_idx %s is out of range for %s with %s "
                       "components"),
    "proto-return": ("func-proto", "t", "return type is %s"),
    "proto-return-unsized": ("func-proto", "t", "return type %s has no size"),
    "proto-vararg": ("func-proto", "", "the trailing vararg entry (type 0) has a name"),
    "proto-param": ("func-proto", "it", "parameter %s is %s"),
    "proto-param-name": ("name", "in", "parameter %s name %s is not a valid identifier"),
    "proto-param-unsized": ("func-proto", "it", "parameter %s type %s has no size"),
    # type tags (validator._check_type_tags)
    "modifier-chain": ("modifier-chain", "", "its chain of modifiers is longer than "
                       f"{MAX_RESOLVE_DEPTH}"),
    "type-tag-order": ("type-tag-order", "i", "TYPE_TAG %s comes after another modifier in "
                       "its chain; type tags must come first"),
}
