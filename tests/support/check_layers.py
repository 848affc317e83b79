#!/usr/bin/env python3
"""Checks that the parts of src/ depend on each other one way (ARCHITECTURE.md):

    main/cli -> {http, mcp} -> api -> app -> {schedule, report, notify, alerts, agent, eval}
             -> {llm, tools} -> analyze -> integrations -> {config, store, telemetry, text}

A part may use parts below it and, without cycles, parts on its own level. Also checks that
no two files of one folder import each other in a cycle. Reads `use`/paths as text
(`crate::part::...`, `super::name`), leaving out `#[cfg(test)] mod tests` blocks and
the files of `#[cfg(test)] mod x;` declarations.
Prints each violation and exits 1 when there is any.

Usage: python3 tests/support/check_layers.py [SRC_DIR]
"""
import collections
import os
import re
import sys

LAYERS = [
    ["main", "cli"],
    ["http", "mcp"],
    ["api"],
    ["app"],
    ["schedule", "report", "notify", "alerts", "agent", "eval"],
    ["llm", "tools"],
    ["analyze"],
    ["integrations"],
    ["config", "store", "telemetry", "text"],
]
LEVEL = {part: i for i, parts in enumerate(LAYERS) for part in parts}
# Items lib.rs defines at the crate root (not parts).
ROOT_ITEMS = {"install_crypto_provider", "App", "AppState"}


def production_text(path):
    text = open(path, encoding="utf-8").read()
    cut = re.search(r"^#\[cfg\(test\)\]\s*\nmod tests", text, re.M)
    return text[: cut.start()] if cut else text


def test_only_files(root):
    """Files declared `#[cfg(test)] mod x;` by their parent (their own file, test code only)."""
    found = set()
    for d, _, names in os.walk(root):
        for name in names:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(d, name)
            text = open(path, encoding="utf-8").read()
            # a.rs declares a/x.rs; mod.rs and lib.rs declare x.rs beside them
            base = d if name in ("mod.rs", "lib.rs") else os.path.join(d, name[:-3])
            for m in re.finditer(r"^#\[cfg\(test\)\]\s*\n\s*mod (\w+);", text, re.M):
                for candidate in (os.path.join(base, m.group(1) + ".rs"), os.path.join(base, m.group(1), "mod.rs")):
                    found.add(os.path.normpath(candidate))
    return found


def module_of(root, path):
    """('part', ['sub', 'mods']) of a source file."""
    rel = os.path.relpath(path, root)[:-3].split(os.sep)
    if rel[-1] == "mod":
        rel = rel[:-1]
    return rel[0], rel


def find_cycle(graph):
    color, stack = {}, []

    def visit(n):
        color[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if color.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in color:
                found = visit(m)
                if found:
                    return found
        color[n] = 2
        stack.pop()
        return None

    for n in sorted(graph):
        if n not in color:
            found = visit(n)
            if found:
                return found
    return None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "src"
    problems = []
    parts = collections.defaultdict(set)  # part -> parts it uses
    files = collections.defaultdict(lambda: collections.defaultdict(set))  # dir -> file graph
    tests_only = test_only_files(root)
    for d, _, names in os.walk(root):
        for name in names:
            if not name.endswith(".rs") or (d == root and name == "lib.rs"):
                continue
            path = os.path.join(d, name)
            if os.path.normpath(path) in tests_only:
                continue
            part, mod = module_of(root, path)
            text = production_text(path)
            for m in re.finditer(r"\b(?:crate|sre_agent)::(\w+)", text):
                dst = m.group(1)
                if dst == part or dst in ROOT_ITEMS:
                    continue
                if dst not in LEVEL or part not in LEVEL:
                    problems.append(f"{path}: unknown part in {part} -> {dst}")
                    continue
                parts[part].add(dst)
                if LEVEL[dst] < LEVEL[part]:
                    problems.append(f"{path}: {part} uses {dst}, a part above it")
            # Sibling files of one folder: `super::x` from a file, `self::x`/`x::` from mod.rs.
            folder = os.path.dirname(path) if name != "mod.rs" else os.path.dirname(os.path.dirname(path))
            me = mod[-1] if mod else part
            named = [m.group(1) for m in re.finditer(r"\bsuper::(\w+)", text)]
            for group in re.finditer(r"\bsuper::\{([^}]*)\}", text):
                named += re.findall(r"(?:^|,)\s*(\w+)", group.group(1))
            for sib in named:
                if name == "mod.rs":
                    continue
                if os.path.exists(os.path.join(folder, sib + ".rs")) or os.path.isdir(os.path.join(folder, sib)):
                    if sib != me:
                        files[folder][me].add(sib)
    cycle = find_cycle({p: set(ds) for p, ds in parts.items()})
    if cycle:
        problems.append("cycle between parts: " + " -> ".join(cycle))
    for folder, graph in sorted(files.items()):
        cycle = find_cycle(graph)
        if cycle:
            problems.append(f"cycle between files of {folder}: " + " -> ".join(cycle))
    for p in problems:
        print(p)
    print(f"{len(problems)} layering violations in {root}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
