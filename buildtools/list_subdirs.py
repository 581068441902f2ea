#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
"""Print, one per line and sorted, the subfolders of DIR that hold a
meson.build: how drivers/meson.build finds the drivers of a class, so that
adding a driver needs no edit outside its own folder."""
import os
import sys

d = sys.argv[1]
for name in sorted(os.listdir(d)):
    if os.path.isfile(os.path.join(d, name, "meson.build")):
        print(name)
