#!/usr/bin/env python3
"""Checks docs/architecture.md's module table against Package.swift: a row for every module
(test targets and TestSupport aside), each row's `uses` column naming exactly the module's
direct dependencies (Larder's modules by name, a package's products by the package's name),
and every module below the ones it uses. `--write` rewrites the `uses` column from Package.swift.
Usage: check-module-table.py [--write]"""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "architecture.md")


def dependencies():
    manifest = json.loads(subprocess.run(["swift", "package", "dump-package"], cwd=ROOT, capture_output=True, text=True,
                                         check=True, timeout=300).stdout)
    found = {}
    for target in manifest["targets"]:
        if target["type"] == "test" or target["name"] == "TestSupport":
            continue
        names = []
        for dependency in target["dependencies"]:
            kind, value = next(iter(dependency.items()))
            name = value[1] if kind == "product" else value[0]
            if name not in names:
                names.append(name)
        found[target["name"]] = names
    return found


def rows(lines):
    """(line index, module, uses) for each row of the table under `| module | job | uses |`."""
    start = next(i for i, line in enumerate(lines) if line.startswith("| module | job | uses |")) + 2
    for index in range(start, len(lines)):
        if not lines[index].startswith("|"):
            return
        cells = [cell.strip() for cell in lines[index].strip().strip("|").split(" | ")]
        yield index, cells[0].strip("`"), cells[-1]


def named(uses):
    """The names a `uses` cell lists, a note in parentheses after a name left out."""
    return [re.sub(r"\s*\(.*?\)", "", name).strip() for name in re.split(r",\s*(?![^(]*\))", uses) if name.strip()]


def main():
    expected = dependencies()
    lines = open(DOC).read().split("\n")
    problems, seen = [], []
    for index, module, uses in rows(lines):
        if module not in expected:
            problems.append(f"row `{module}`: no such module in Package.swift")
            continue
        wanted = expected[module]
        if "--write" in sys.argv:
            cells = lines[index].strip().strip("|").split(" | ")
            lines[index] = "| " + " | ".join(cell.strip() for cell in cells[:-1]) + " | " + (", ".join(wanted) + " |" if wanted else "|")
        elif set(named(uses)) != set(wanted):
            problems.append(f"row `{module}`: uses {sorted(named(uses))}, Package.swift says {sorted(wanted)}")
        later = [name for name in wanted if name in expected and name not in seen]
        if later:
            problems.append(f"row `{module}`: uses {later}, listed below it")
        seen.append(module)
    problems += [f"module `{name}` has no row" for name in expected if name not in seen]
    if "--write" in sys.argv:
        open(DOC, "w").write("\n".join(lines))
    if problems:
        print("docs/architecture.md's module table is not Package.swift's:\n  " + "\n  ".join(problems))
        sys.exit(1)
    print(f"module table: {len(seen)} modules, each with Package.swift's dependencies, each below what it uses")


if __name__ == "__main__":
    main()
