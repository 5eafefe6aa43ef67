#!/usr/bin/env python3
"""embed-files.py OUT.c FILE...: the web console's files as a C table (console-files.h)."""
import os
import sys

TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".css": "text/css; charset=utf-8"}


def main():
    out, files = sys.argv[1], sys.argv[2:]
    lines = ['#include <string.h>', '', '#include "lev/console-files.h"', '']
    rows = []
    for i, f in enumerate(files):
        data = open(f, "rb").read()
        name = os.path.basename(f)
        ext = os.path.splitext(name)[1]
        if ext not in TYPES:
            sys.exit("%s: no content type for '%s'" % (f, ext))
        body = ",".join(str(b) for b in data)
        lines.append("static const unsigned char f%d[] = {%s};" % (i, body))
        rows.append('\t{ "/%s", "%s", f%d, %d },' % (name, TYPES[ext], i, len(data)))
    lines.append("static const struct lev_console_file files[] = {")
    lines += rows
    lines += ["};", "",
              "const struct lev_console_file *lev_console_find(const char *path)",
              "{",
              "\tfor (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)",
              "\t\tif (!strcmp(files[i].path, path))",
              "\t\t\treturn &files[i];",
              "\treturn NULL;",
              "}", ""]
    with open(out, "w") as o:
        o.write("\n".join(lines))


main()
