#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
"""librb2 exports exactly what its installed headers declare.

  check_symbols.py LIBRB2_SO HEADER...

Every function or variable that an installed header declares (not static
inline, not a macro) must be exported by the shared library, and nothing
else may be: an internal helper leaking into the ABI fails this test as
surely as a missing API function. Exit 0 with a summary line, or 1 with
each difference named.
"""
import re
import subprocess
import sys


def declared(paths):
    names = set()
    for path in paths:
        text = open(path).read()
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)        # comments
        text = re.sub(r"//[^\n]*", " ", text)
        text = re.sub(r"#ifdef __cplusplus.*?#endif", " ", text, flags=re.S)  # extern "C"
        text = re.sub(r"#(?:[^\n]*\\\n)*[^\n]*", " ", text)       # preprocessor
        # Function bodies of static inline functions: drop them, nested braces
        # included, so that what remains is declarations.
        out, depth = [], 0
        for ch in text:
            if ch == "{":
                depth += 1
                out.append(";" if depth == 1 else "")
            elif ch == "}":
                depth -= 1
            elif depth == 0:
                out.append(ch)
        for decl in " ".join("".join(out).split()).split(";"):
            decl = decl.strip()
            if not decl or re.search(r"\b(static|typedef)\b", decl):
                continue
            m = re.search(r"\b((?:__)?rb2_\w+)\s*\(", decl)        # a function
            if m and not decl.startswith("typedef"):
                names.add(m.group(1))
                continue
            m = re.match(r"extern\s.*?\b((?:__)?rb2_\w+)\s*(?:\[[^\]]*\])?\s*$", decl)  # a variable (or array)
            if m:
                names.add(m.group(1))
    return names


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True,
                         check=True).stdout
    # "ADDR T name@@RB2_0.1"; the version node itself is an absolute symbol.
    return {f[2].split("@")[0] for f in (line.split() for line in out.splitlines())
            if len(f) == 3 and f[1] != "A"}


def main():
    lib, headers = sys.argv[1], sys.argv[2:]
    want, have = declared(headers), exported(lib)
    missing, extra = sorted(want - have), sorted(have - want)
    for n in missing:
        print("declared in an installed header but not exported: " + n)
    for n in extra:
        print("exported but declared in no installed header (internal?): " + n)
    print("librb2 exports %d symbols; its %d installed headers declare %d; %d differ"
          % (len(have), len(headers), len(want), len(missing) + len(extra)))
    return 1 if missing or extra else 0


if __name__ == "__main__":
    sys.exit(main())
