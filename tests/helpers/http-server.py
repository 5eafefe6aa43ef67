#!/usr/bin/env python3
"""A static web server for tests: http-server.py ADDR PORT-FILE [DIR]

Binds ADDR on a port the kernel picks, then writes that port to PORT-FILE
(atomically: a reader never sees half a number) and serves DIR (default: the
current directory) until killed.  The port goes to a file, not to stdout, so
no test depends on how a child's output is buffered."""
import functools
import http.server
import os
import sys


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    addr, port_file = sys.argv[1], sys.argv[2]
    root = sys.argv[3] if len(sys.argv) == 4 else os.getcwd()
    handler = functools.partial(Quiet, directory=root)
    srv = http.server.ThreadingHTTPServer((addr, 0), handler)
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.replace(tmp, port_file)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
