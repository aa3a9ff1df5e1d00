"""Rendering a `DiffResult`: text for people, JSON for tools.

Text: nothing at all when nothing differs; otherwise one summary line, then one section per
kind family ("== struct: 3 changed, 1 added ==") listing removed (`-`), added (`+`) and
changed (`~`) types, each change followed by its indented details.

JSON (format version 1): one object, `{"canonbtf_diff":1,"summary":{...},"by_kind":{...},
"types":[...]}`, with one type per line inside "types", each
`{"kind","name","status"}` plus "old"/"new" (a one-line description) for removed/added
types and "details" for changed ones: a list of `{"change","path","old","new"}` where
change is one of member_added, member_removed, member_retyped, member_moved,
bitfield_changed, value_added, value_removed, value_changed, param_added, param_removed,
param_renamed, param_retyped, return_changed, varargs_changed, linkage_changed,
target_changed, type_changed, size_changed, width_changed, signed_changed,
encoding_changed, bits_changed, bit_offset_changed, fwd_kind_changed, proto_changed,
var_added, var_removed, var_resized, var_moved.
"""

from __future__ import annotations

import json
from typing import TextIO

from .model import ADDED, CHANGED, REMOVED, Detail, DiffResult, TypeChange

DIFF_JSON_VERSION = 1
_MARK = {REMOVED: "-", ADDED: "+", CHANGED: "~"}
# A datasec's variables all move when one grows; list this many names, then count.
_MOVED_SHOWN = 5


def _counts_text(counts: dict[str, int]) -> str:
    parts = [f"{counts[s]} {s}" for s in (CHANGED, ADDED, REMOVED) if counts[s]]
    return ", ".join(parts)


def _offset(bits: int) -> str:
    """A member's place: in bytes where it starts on a byte, else in bits."""
    return f"byte {bits // 8}" if bits % 8 == 0 else f"bit {bits}"


def _member(value: dict) -> str:
    text = f"{value['type']} at {_offset(value['bit_offset'])}"
    if value["bitfield_size"]:
        text += f", {value['bitfield_size']}-bit field"
    return text


def _bitfield(size: int) -> str:
    return f"{size} bits" if size else "not a bitfield"


def _moved(old: int, new: int) -> str:
    if old % 8 == 0 and new % 8 == 0:
        return f"moved byte {old // 8} -> byte {new // 8}"
    return f"moved bit {old} -> bit {new}"


# Changes to one member or parameter that share a line in the text.
_SAME_LINE = {
    "member_retyped": lambda d: f"type {d.old} -> {d.new}",
    "member_moved": lambda d: _moved(d.old, d.new),
    "bitfield_changed": lambda d: f"bitfield {_bitfield(d.old)} -> {_bitfield(d.new)}",
    "param_renamed": lambda d: f"renamed {d.old or '(unnamed)'} -> {d.new or '(unnamed)'}",
    "param_retyped": lambda d: f"type {d.old} -> {d.new}",
}


def _param(p: dict) -> str:
    return f"{p['name'] or '(unnamed)'}: {p['type']}"


def _variable(v: dict) -> str:
    return f"size {v['size']} at {v['offset']}"


_DETAIL_LINE = {
    "member_added": lambda d: f"+ member {d.path}: {_member(d.new)}",
    "member_removed": lambda d: f"- member {d.path}: {_member(d.old)}",
    "value_added": lambda d: f"+ {d.path} = {d.new}",
    "value_removed": lambda d: f"- {d.path} = {d.old}",
    "value_changed": lambda d: f"~ {d.path}: {d.old} -> {d.new}",
    "param_added": lambda d: f"+ param {d.path} {_param(d.new)}",
    "param_removed": lambda d: f"- param {d.path} {_param(d.old)}",
    "return_changed": lambda d: f"~ return type: {d.old} -> {d.new}",
    "var_added": lambda d: f"+ variable {d.path}: {_variable(d.new)}",
    "var_removed": lambda d: f"- variable {d.path}: {_variable(d.old)}",
    "var_resized": lambda d: (f"~ variable {d.path}: size {d.old['size']} -> {d.new['size']} "
                              f"(at {d.old['offset']} -> {d.new['offset']})"),
}


def _detail_line(d: Detail) -> str:
    render = _DETAIL_LINE.get(d.change)
    if render is not None:
        return render(d)
    what = d.change.removesuffix("_changed").replace("_", " ")
    return f"~ {what}: {_plain(d.old)} -> {_plain(d.new)}"


def _detail_lines(details: list[Detail]) -> list[str]:
    """One line per detail, except that the changes to one member or parameter share one."""
    lines: list[str] = []
    held: tuple[str, str] | None = None
    for d in details:
        part = _SAME_LINE.get(d.change)
        if part is None:
            lines.append(_detail_line(d))
            held = None
            continue
        subject = ("member" if d.change.startswith(("member", "bitfield")) else "param", d.path)
        if subject == held:
            lines[-1] += f", {part(d)}"
        else:
            lines.append(f"~ {subject[0]} {d.path}: {part(d)}")
            held = subject
    return lines


def _plain(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "(none)" if value is None else str(value)


def _change_lines(c: TypeChange) -> list[str]:
    if c.status == REMOVED:
        return [f"- {c.title}" + (f": {c.old_brief}" if c.old_brief else "")]
    if c.status == ADDED:
        return [f"+ {c.title}" + (f": {c.new_brief}" if c.new_brief else "")]
    lines = [f"~ {c.title}"]
    moved = [d for d in c.details if d.change == "var_moved"]
    lines += ["    " + line
              for line in _detail_lines([d for d in c.details if d.change != "var_moved"])]
    if moved:
        names = ", ".join(d.path for d in moved[:_MOVED_SHOWN])
        more = f" and {len(moved) - _MOVED_SHOWN} more" if len(moved) > _MOVED_SHOWN else ""
        lines.append(f"    ~ {len(moved)} variables at new offsets: {names}{more}")
    return lines


def render_text(result: DiffResult, out: TextIO) -> None:
    """Write the human-readable report; nothing at all when nothing differs."""
    if not result:
        return
    totals = result.totals()
    counts = result.counts()
    out.write(f"{sum(totals.values())} types differ: {_counts_text(totals)}\n")
    family = None
    lines: list[str] = []
    for c in result.changes:
        if c.family != family:
            family = c.family
            lines.append(f"\n== {family}: {_counts_text(counts[family])} ==\n")
        lines.extend(line + "\n" for line in _change_lines(c))
    out.write("".join(lines))


def _change_object(c: TypeChange) -> dict:
    obj: dict = {"kind": c.family, "name": c.name, "status": c.status}
    if c.status == REMOVED:
        obj["old"] = c.old_brief
    elif c.status == ADDED:
        obj["new"] = c.new_brief
    else:
        obj["details"] = [{"change": d.change, "path": d.path, "old": d.old, "new": d.new}
                          for d in c.details]
    return obj


def render_json(result: DiffResult, out: TextIO) -> None:
    """Write the JSON report (always a complete document, even when nothing differs)."""
    head = {"canonbtf_diff": DIFF_JSON_VERSION, "summary": result.totals(),
            "by_kind": result.counts()}
    text = json.dumps(head, separators=(",", ":"))
    lines = [text[:-1] + ',"types":[\n']
    body = [json.dumps(_change_object(c), separators=(",", ":")) for c in result.changes]
    lines.append(",\n".join(body) + ("\n" if body else ""))
    lines.append("]}\n")
    out.write("".join(lines))
