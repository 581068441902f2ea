#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
"""Embed a text file in a C header as a string constant:
embed_text.py INPUT OUTPUT SYMBOL"""
import sys

src, out, sym = sys.argv[1:4]
text = open(src, encoding="utf-8").read()
with open(out, "w", encoding="utf-8") as f:
    f.write("/* SPDX-License-Identifier: BSD-3-Clause */\n")
    f.write(f"/* Generated from {src.split('/')[-1]} by embed_text.py: do not edit. */\n")
    f.write(f"static const char {sym}[] =\n")
    for line in text.splitlines(keepends=True):
        esc = line.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        f.write(f'\t"{esc}"\n')
    f.write(";\n")
