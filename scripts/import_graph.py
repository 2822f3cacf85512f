#!/usr/bin/env python3
"""The module import graph of src/ and core/src/: which module uses which,
the loops in it, and each file's length without its tests.

    python3 scripts/import_graph.py            the layers, loops and long files; exit 1 on a loop,
                                               on a use of a higher layer of src/ (RANKS), or on
                                               a source, SQL or script file over LIMIT lines
                                               (see below)
    python3 scripts/import_graph.py --edges    also every edge "a -> b"

A module uses another when its code names it: `use crate::a::b`,
`crate::a::b::f()`, `super::x`, or an item the crate root re-exports
(`use crate::Layout` in core is a use of core's `layout`). `mod x;` lines and
`#[cfg(test)]` modules do not count: a parent declaring its children is not a
dependency, and tests may reach anywhere. scripts/test.sh runs this, so a loop
fails the test command.

A file's length is its non-blank lines (comments included) before its tests
(the first line that opens with `#[cfg(test)]`): what a newcomer reads to
know the room. Over LIMIT (450) fails, as a loop does: a room that long
holds more than one responsibility, and is split along them;
over LONG (400) is shown, a warning. A `mod.rs` fails too: every folder module
is `name.rs` beside its folder `name/`, one style in both crates.

The same limit holds for the SQL files a reader takes in as rooms
(SQL_ROOMS: the native install's fragments and the managed edition's
files), counted the same way; update scripts are one file per version step
by PostgreSQL's rule, whatever their length, and are left out.

And for the scripts (SCRIPTS: every *.sh and *.py under scripts/, the
files they source included), non-blank lines counted the same way: a
script that does several jobs is split into files named for each.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The extension's layers, bottom up (docs/architecture.md): a module may use
# its own layer and those below, never one above.
RANKS = {"pg": 1, "settings": 2, "refusal": 2, "shmem": 3, "mark": 3, "service": 4, "worker": 5, "api": 6}
CRATES = {"src": ROOT / "src", "core": ROOT / "core" / "src"}
LONG = 400
LIMIT = 450
SQL_ROOMS = [ROOT / "sql" / "install", ROOT / "sql" / "managed"]
SCRIPTS = ROOT / "scripts"


def module_of(crate_dir, path):
    rel = path.relative_to(crate_dir).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("lib", "mod"):
        parts = parts[:-1]
    return tuple(parts)


def blank_literals(text):
    """Comments, strings and char literals replaced by spaces (newlines kept), so that
    neither a `crate::` in a doc comment nor a brace in a string is read as code."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r"r(#*)\"", text[i:]).group(1)
            j = text.find('"' + hashes, i + 2 + len(hashes))
            j = n if j < 0 else j + 1 + len(hashes)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1 : j]) + '"')
            i = j + 1
        elif c == "'" and re.match(r"'(\\.[^']*|[^\\'])'", text[i:]):
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:])
            out.append(" " * len(m.group(0)))
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip(text):
    """The file's code without comments, literals and #[cfg(test)] modules."""
    text = blank_literals(text)
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\((?:test|any\(test[^)]*\))\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub\s+)?mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i : m.start()])
        depth, j = 1, m.end()
        while depth and j < len(text):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def length(text):
    """Non-blank lines (comments included) before the first line that opens with `#[cfg(test)]`."""
    n = 0
    for line in text.splitlines():
        if line.startswith("#[cfg(test)]"):
            break
        n += 1 if line.strip() else 0
    return n


def expand_use(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e]."""
    tree = re.sub(r"\s+", "", tree)
    m = re.match(r"^(.*?)\{(.*)\}$", tree)
    if not m:
        return [tree]
    prefix, inner = m.groups()
    items, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        cur += ch
    items.append(cur)
    return [p for item in items if item for p in expand_use(prefix + item)]


def paths_in(code, module, modules=()):
    """Absolute paths (tuples) this module's code names inside its crate."""
    found = []
    # `use names::X` or `check::f()` in a module with children `names`, `check`.
    for m in re.finditer(r"(?<![:\w])(\w+)::", code):
        if module + (m.group(1),) in modules:
            found.append("self::" + m.group(1))
    for m in re.finditer(r"\buse\s+((?:crate|super|self)::[^;]+);", code):
        found += expand_use(m.group(1))
    found += re.findall(r"\b((?:crate|super)(?:::\w+)+)", code)
    result = []
    for p in found:
        parts = [x for x in re.split(r"::", p.split(" as ")[0]) if x]
        base = list(module)
        if parts[0] == "crate":
            base, parts = [], parts[1:]
        while parts and parts[0] in ("super", "self"):
            if parts[0] == "super":
                base = base[:-1]
            parts = parts[1:]
        result.append(tuple(base + parts))
    return result


def graph(crate_dir):
    files = sorted(crate_dir.rglob("*.rs"))
    modules = {module_of(crate_dir, f): f for f in files}
    codes = {m: strip(f.read_text()) for m, f in modules.items()}
    # Names the crate root (or a folder module's file) re-exports: `pub use a::B;` makes `crate::B` mean module a.
    reexports = {}
    for m, code in codes.items():
        for use in re.finditer(r"\bpub\s+use\s+([^;]+);", code):
            for p in expand_use(use.group(1)):
                parts = [x for x in p.split("::") if x and x not in ("crate", "self")]
                if parts and tuple(m + (parts[0],)) in modules:
                    reexports[m + (parts[-1].split(" as ")[-1],)] = m + (parts[0],)
    edges = set()
    for m, code in codes.items():
        for path in paths_in(code, m, modules):
            target = None
            for n in range(len(path), -1, -1):
                prefix = path[:n]
                if prefix in reexports:
                    target = reexports[prefix]
                    break
                if prefix in modules:
                    target = prefix
                    break
            if target is not None and target != m and not (m and target == ()):
                # A parent naming its own child's re-export is not a use of the parent by anyone.
                edges.add((m, target))
        # A folder module's file re-exporting a child uses it.
        for use in re.finditer(r"\bpub\s+use\s+([^;]+);", code):
            for p in expand_use(use.group(1)):
                parts = [x for x in p.split("::") if x and x not in ("crate", "self")]
                if parts and tuple(m + (parts[0],)) in modules:
                    edges.add((m, m + (parts[0],)))
    # The crate root declares everything; it is the top layer, not a module used by others.
    edges = {(a, b) for a, b in edges if b != ()}
    return modules, edges


def loops(nodes, edges):
    """Strongly connected components of more than one module (Tarjan)."""
    succ = {n: sorted(b for a, b in edges if a == n) for n in nodes}
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for n in sorted(nodes):
        if n not in index:
            visit(n)
    return out


def layers(nodes, edges):
    """Each module's height: 0 for one that uses no other, else one above the highest it uses."""
    height = {}

    def h(n, seen=()):
        if n in height:
            return height[n]
        if n in seen:
            return 0
        deps = [b for a, b in edges if a == n]
        height[n] = 1 + max((h(d, seen + (n,)) for d in deps), default=-1)
        return height[n]

    return {n: h(n) for n in nodes}


def name(crate, m):
    return f"{crate}:" + ("::".join(m) if m else "(root)")


def main():
    show_edges = "--edges" in sys.argv
    bad = False
    for crate, crate_dir in CRATES.items():
        modules, edges = graph(crate_dir)
        found = loops(modules, edges)
        print(f"== {crate}: {len(modules)} modules, {len(edges)} imports, {len(found)} loops")
        for comp in found:
            bad = True
            print("   LOOP: " + " <-> ".join(name(crate, m) for m in comp))
        if crate == "src":
            for a, b in sorted(edges):
                ra, rb = RANKS.get(a[0] if a else "", 99), RANKS.get(b[0] if b else "", 99)
                if ra < rb:
                    bad = True
                    print(f"   UP: {name(crate, a)} (layer {ra}) uses {name(crate, b)} (layer {rb})")
            unranked = sorted({m[0] for m in modules if m and m[0] not in RANKS})
            for top in unranked:
                bad = True
                print(f"   UNRANKED: src/{top} is in no layer of RANKS in this script")
        height = layers(modules, edges)
        for level in sorted(set(height.values())):
            mods = sorted("::".join(m) or "(root)" for m, hh in height.items() if hh == level)
            print(f"   layer {level}: {', '.join(mods)}")
        for m, f in sorted(modules.items()):
            # One module style: a folder module is `name.rs` beside `name/`.
            if f.name == "mod.rs":
                bad = True
                print(f"   MOD.RS: {f.relative_to(ROOT)} (a folder module is {f.parent.name}.rs beside {f.parent.name}/)")
            n = length(f.read_text())
            if n > LIMIT:
                bad = True
                print(f"   TOO LONG: {f.relative_to(ROOT)} has {n} non-blank lines before its tests (limit {LIMIT})")
            elif n > LONG:
                print(f"   long: {f.relative_to(ROOT)} has {n} non-blank lines before its tests (over {LONG})")
        if show_edges:
            for a, b in sorted(edges):
                print(f"   {name(crate, a)} -> {name(crate, b)}")
    files = sorted(f for d in SQL_ROOMS for f in d.glob("*.sql"))
    print(f"== sql: {len(files)} install and managed-edition files")
    for f in files:
        n = sum(1 for line in f.read_text().splitlines() if line.strip())
        if n > LIMIT:
            bad = True
            print(f"   TOO LONG: {f.relative_to(ROOT)} has {n} non-blank lines (limit {LIMIT})")
        elif n > LONG:
            print(f"   long: {f.relative_to(ROOT)} has {n} non-blank lines (over {LONG})")
    files = sorted(f for ext in ("*.sh", "*.py") for f in SCRIPTS.rglob(ext))
    print(f"== scripts: {len(files)} shell and Python files")
    for f in files:
        n = sum(1 for line in f.read_text().splitlines() if line.strip())
        rel = f.relative_to(ROOT).as_posix()
        if n > LIMIT:
            bad = True
            print(f"   TOO LONG: {rel} has {n} non-blank lines (limit {LIMIT})")
        elif n > LONG:
            print(f"   long: {rel} has {n} non-blank lines (over {LONG})")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
