#!/usr/bin/env python3
"""The public API of the `mongo-schema` facade as sorted text lines, read from rustdoc's JSON.

    python3 .ci/public_api.py FACADE.json CORE.json > api.txt

One line per public item reachable from the facade's root (re-exports of the core followed to
their items, `#[doc(hidden)]` items left out as rustdoc leaves them out): modules, structs with
their public fields, enums with their variants, traits with their items, functions and methods
with their signatures, constants, type aliases, macros, and the trait impls written in the
crate (not auto traits nor blanket impls). Attributes a user depends on (`#[non_exhaustive]`,
`#[deprecated]`) are part of the line. `.ci/public-api` compares the result with
`docs/public-api.txt`.
"""

import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


class Crate:
    def __init__(self, data):
        self.data = data
        self.index = data["index"]
        self.paths = data["paths"]
        # path of each local item -> id
        self.by_path = {}
        for id_, summary in self.paths.items():
            if summary["crate_id"] == 0:
                self.by_path[tuple(summary["path"])] = id_

    def item(self, id_):
        return self.index.get(str(id_))


def generic_args(args):
    if not args:
        return ""
    if "angle_bracketed" in args:
        ab = args["angle_bracketed"]
        parts = []
        for a in ab["args"]:
            if "type" in a:
                parts.append(ty(a["type"]))
            elif "lifetime" in a:
                parts.append(a["lifetime"])
            elif "const" in a:
                parts.append(a["const"].get("expr", "_"))
            else:
                parts.append("_")
        for c in ab.get("constraints", []):
            binding = c.get("binding", {})
            if "equality" in binding:
                eq = binding["equality"]
                value = ty(eq["type"]) if "type" in eq else str(eq.get("constant", "_"))
                parts.append(f"{c['name']} = {value}")
            else:
                parts.append(f"{c['name']}: {bounds(binding.get('constraint', []))}")
        return f"<{', '.join(parts)}>" if parts else ""
    if "parenthesized" in args:
        p = args["parenthesized"]
        out = f"({', '.join(ty(t) for t in p['inputs'])})"
        if p.get("output"):
            out += f" -> {ty(p['output'])}"
        return out
    return ""


CURRENT = {"crate": None}


def path(p):
    name = p["path"]
    crate = CURRENT["crate"]
    if not name and crate is not None and str(p.get("id")) in crate.paths:
        name = crate.paths[str(p["id"])]["path"][-1]
    return name + generic_args(p.get("args"))


def bounds(bs):
    out = []
    for b in bs:
        if "trait_bound" in b:
            tb = b["trait_bound"]
            modifier = "?" if tb.get("modifier") == "maybe" else ""
            out.append(modifier + path(tb["trait"]))
        elif "outlives" in b:
            out.append(b["outlives"])
        elif "use" in b:
            out.append("use<..>")
    return " + ".join(out)


def ty(t):
    if t is None:
        return "()"
    (kind, v), = t.items()
    if kind == "resolved_path":
        return path(v)
    if kind == "generic":
        return v
    if kind == "primitive":
        return v
    if kind == "borrowed_ref":
        lt = f"{v['lifetime']} " if v.get("lifetime") else ""
        mut = "mut " if v.get("is_mutable") else ""
        return f"&{lt}{mut}{ty(v['type'])}"
    if kind == "raw_pointer":
        return f"*{'mut' if v['is_mutable'] else 'const'} {ty(v['type'])}"
    if kind == "slice":
        return f"[{ty(v)}]"
    if kind == "array":
        return f"[{ty(v['type'])}; {v['len']}]"
    if kind == "tuple":
        return f"({', '.join(ty(x) for x in v)})"
    if kind == "impl_trait":
        return f"impl {bounds(v)}"
    if kind == "dyn_trait":
        traits = [path(p["trait"]) for p in v["traits"]]
        if v.get("lifetime"):
            traits.append(v["lifetime"])
        return f"dyn {' + '.join(traits)}"
    if kind == "qualified_path":
        trait = f" as {path(v['trait'])}" if v.get("trait") else ""
        return f"<{ty(v['self_type'])}{trait}>::{v['name']}"
    if kind == "function_pointer":
        sig = v["sig"]
        inputs = ", ".join(ty(i[1]) for i in sig["inputs"])
        out = f" -> {ty(sig['output'])}" if sig.get("output") else ""
        return f"fn({inputs}){out}"
    if kind == "infer":
        return "_"
    return kind


def generics(g, split=False):
    params = []
    for p in g.get("params", []):
        kind = p["kind"]
        if "lifetime" in kind:
            params.append(p["name"])
        elif "type" in kind:
            if kind["type"].get("is_synthetic"):
                continue
            b = bounds(kind["type"].get("bounds", []))
            params.append(p["name"] + (f": {b}" if b else ""))
        elif "const" in kind:
            params.append(f"const {p['name']}: {ty(kind['const']['type'])}")
    preds = []
    for w in g.get("where_predicates", []):
        if "bound_predicate" in w:
            bp = w["bound_predicate"]
            preds.append(f"{ty(bp['type'])}: {bounds(bp['bounds'])}")
    out = f"<{', '.join(params)}>" if params else ""
    if preds and not split:
        out += f" where {', '.join(preds)}"
    return (out, f" where {', '.join(preds)}" if preds else "") if split else out


def signature(name, f):
    sig = f["sig"]
    header = f.get("header", {})
    prefix = ""
    if header.get("is_const"):
        prefix += "const "
    if header.get("is_async"):
        prefix += "async "
    if header.get("is_unsafe"):
        prefix += "unsafe "
    inputs = ", ".join(f"{n}: {ty(t)}" if n != "self" else ty(t) for n, t in sig["inputs"])
    out = f" -> {ty(sig['output'])}" if sig.get("output") else ""
    params, where = generics(f["generics"], split=True)
    return f"{prefix}fn {name}{params}({inputs}){out}{where}"


def attrs(item):
    out = []
    for a in item.get("attrs", []):
        text = a if isinstance(a, str) else json.dumps(a, sort_keys=True)
        if "non_exhaustive" in text:
            out.append("#[non_exhaustive] ")
    if item.get("deprecation"):
        out.append("#[deprecated] ")
    return "".join(out)


class Walker:
    def __init__(self, facade, core):
        self.crates = [facade, core]
        self.lines = set()
        self.seen = set()
        self.found = {}  # (crate, id) -> {path: lines}
        self.sink = None
        self.modules = set()  # (crate, id) of the modules walked

    def resolve(self, crate, id_):
        """The crate and item an id of `crate` names, following into the core by path."""
        item = crate.item(id_)
        if item is not None:
            return crate, item
        summary = crate.paths.get(str(id_))
        if summary is None:
            return None, None
        for other in self.crates:
            if other is crate:
                continue
            target = other.by_path.get(tuple(summary["path"]))
            if target is not None and other.item(target) is not None:
                return other, other.item(target)
        return None, None

    def emit(self, line):
        if self.sink is not None:
            self.sink.append(line)
        else:
            self.lines.add(line)

    def finish(self):
        for (_, _), by_path in self.found.items():
            canonical = min(by_path, key=lambda p: (p.count("::"), p))
            self.lines.update(by_path[canonical])
            for other in by_path:
                if other != canonical:
                    self.lines.add(f"pub use {other} = {canonical}")

    def module(self, crate, item, prefix):
        key = (id(crate), item["id"], prefix)
        if key in self.seen:
            return
        self.seen.add(key)
        for child_id in item["inner"]["module"]["items"]:
            child = crate.item(child_id)
            if child is None or child.get("visibility") != "public":
                continue
            self.item(crate, child, prefix)

    def item(self, crate, item, prefix, name=None):
        (kind, inner), = item["inner"].items()
        name = name or item.get("name")
        here = f"{prefix}::{name}" if name else prefix
        if kind not in ("use", "module"):
            CURRENT["crate"] = crate
            key = (self.crates.index(crate), item["id"])
            by_path = self.found.setdefault(key, {})
            if here in by_path:
                return
            outer = self.sink
            self.sink = by_path[here] = []
            try:
                self.render(crate, item, kind, inner, prefix, here)
            finally:
                self.sink = outer
            return
        if kind == "module":
            self.modules.add((self.crates.index(crate), item["id"]))
        self.render(crate, item, kind, inner, prefix, here)

    def render(self, crate, item, kind, inner, prefix, here):
        a = attrs(item)
        if kind == "use":
            target_crate, target = self.resolve(crate, inner["id"]) if inner.get("id") is not None else (None, None)
            if inner["is_glob"]:
                if target is not None and "module" in target["inner"]:
                    self.module(target_crate, target, prefix)
                return
            if target is None:
                self.emit(f"pub use {prefix}::{inner['name']} = {inner['source']}")
                return
            self.item(target_crate, target, prefix, inner["name"])
        elif kind == "module":
            self.emit(f"{a}pub mod {here}")
            self.module(crate, item, here)
        elif kind == "struct":
            self.emit(f"{a}pub struct {here}{generics(inner['generics'])}")
            st = inner["kind"]
            if isinstance(st, dict) and "plain" in st:
                for fid in st["plain"]["fields"]:
                    field = crate.item(fid)
                    if field and field.get("visibility") == "public":
                        self.emit(f"{attrs(field)}pub {here}.{field['name']}: {ty(field['inner']['struct_field'])}")
            elif isinstance(st, dict) and "tuple" in st:
                for i, fid in enumerate(st["tuple"]):
                    field = crate.item(fid) if fid is not None else None
                    if field and field.get("visibility") == "public":
                        self.emit(f"pub {here}.{i}: {ty(field['inner']['struct_field'])}")
            self.impls(crate, inner["impls"], here)
        elif kind == "enum":
            self.emit(f"{a}pub enum {here}{generics(inner['generics'])}")
            for vid in inner["variants"]:
                variant = crate.item(vid)
                self.variant(crate, variant, here)
            self.impls(crate, inner["impls"], here)
        elif kind == "trait":
            unsafe = "unsafe " if inner.get("is_unsafe") else ""
            sup = bounds(inner.get("bounds", []))
            self.emit(f"{a}pub {unsafe}trait {here}{generics(inner['generics'])}" + (f": {sup}" if sup else ""))
            for tid in inner["items"]:
                t = crate.item(tid)
                if t is not None:
                    self.assoc(crate, t, f"{here}")
        elif kind == "function":
            self.emit(f"{a}pub {signature(here, inner)}")
        elif kind == "constant":
            self.emit(f"{a}pub const {here}: {ty(inner['type'])}")
        elif kind == "static":
            self.emit(f"{a}pub static {here}: {ty(inner['type'])}")
        elif kind == "type_alias":
            self.emit(f"{a}pub type {here}{generics(inner['generics'])} = {ty(inner['type'])}")
        elif kind == "macro":
            self.emit(f"pub macro {here}!")
        elif kind == "proc_macro":
            self.emit(f"pub derive {here}")
        elif kind == "union":
            self.emit(f"{a}pub union {here}")
        else:
            self.emit(f"{a}pub {kind} {here}")

    def variant(self, crate, variant, enum_path):
        inner = variant["inner"]["variant"]
        vk = inner["kind"]
        here = f"{enum_path}::{variant['name']}"
        a = attrs(variant)
        if vk == "plain":
            self.emit(f"{a}{here}")
        elif "tuple" in vk:
            fields = [crate.item(f) for f in vk["tuple"] if f is not None]
            self.emit(f"{a}{here}({', '.join(ty(f['inner']['struct_field']) for f in fields)})")
        elif "struct" in vk:
            self.emit(f"{a}{here} {{ .. }}")
            for fid in vk["struct"]["fields"]:
                field = crate.item(fid)
                self.emit(f"{here}.{field['name']}: {ty(field['inner']['struct_field'])}")

    def assoc(self, crate, t, owner):
        (kind, inner), = t["inner"].items()
        a = attrs(t)
        if kind == "function":
            self.emit(f"{a}{signature(owner + '::' + t['name'], inner)}")
        elif kind == "assoc_type":
            self.emit(f"{a}type {owner}::{t['name']}")
        elif kind == "assoc_const":
            self.emit(f"{a}const {owner}::{t['name']}: {ty(inner['type'])}")

    def impls(self, crate, impl_ids, owner):
        for iid in impl_ids:
            impl = crate.item(iid)
            if impl is None:
                continue
            inner = impl["inner"]["impl"]
            if inner.get("is_synthetic") or inner.get("blanket_impl") is not None:
                continue
            if inner.get("trait") is None:
                for mid in inner["items"]:
                    m = crate.item(mid)
                    if m is not None and m.get("visibility") == "public":
                        self.assoc(crate, m, owner)
            else:
                negative = "!" if inner.get("is_negative") else ""
                self.emit(f"impl{generics(inner['generics'])} {negative}{path(inner['trait'])} for {ty(inner['for'])}")


def main():
    facade = Crate(load(sys.argv[1]))
    core = Crate(load(sys.argv[2]))
    walker = Walker(facade, core)
    root = facade.item(facade.data["root"])
    walker.emit(f"pub mod {root['name']}")
    walker.module(facade, root, root["name"])
    walker.finish()
    # every public item of the core's root has a documented home in the facade (the facade's
    # flat re-export of the core is hidden: an item reachable only through it is undocumented)
    homeless = []
    core_root = core.item(core.data["root"])
    for child_id in core_root["inner"]["module"]["items"]:
        child = core.item(child_id)
        if child is None or child.get("visibility") != "public":
            continue
        (kind, inner), = child["inner"].items()
        name = child.get("name")
        target = child
        if kind == "use":
            name = inner["name"]
            target = core.item(inner["id"]) if inner.get("id") is not None else None
            if target is None:
                continue
        if "macro" in target["inner"] or name == "query":
            continue
        if (1, target["id"]) not in walker.found and (1, target["id"]) not in walker.modules:
            homeless.append(name)
    if homeless:
        sys.exit("no documented home in the facade (add each to a module of src/lib.rs): "
                 + ", ".join(sorted(homeless)))
    for line in sorted(walker.lines):
        print(line)


if __name__ == "__main__":
    main()
