#!/usr/bin/env python3
"""on-pty.py WAIT_FOR ANSWER -- CMD...: run CMD with a new pseudo-terminal as
its controlling terminal (so /dev/tty is there); when its output shows
WAIT_FOR, type ANSWER and a newline ("^C": send Ctrl-C, the terminal's SIGINT;
"-": type nothing).  Prints everything CMD wrote to the terminal; exits with
CMD's status.  Gives up (exit 124) after 60 s ($ON_PTY_TIMEOUT)."""
import os
import pty
import select
import sys
import time

want, answer, cmd = sys.argv[1], sys.argv[2], sys.argv[4:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(cmd[0], cmd)
buf = b""
sent = False
deadline = time.time() + float(os.environ.get("ON_PTY_TIMEOUT", "60"))
while time.time() < deadline:
    r, _, _ = select.select([fd], [], [], 0.5)
    if r:
        try:
            d = os.read(fd, 4096)
        except OSError:
            break
        if not d:
            break
        buf += d
    if not sent and want.encode() in buf:
        sent = True
        if answer == "^C":
            os.write(fd, b"\x03")
        elif answer != "-":
            os.write(fd, answer.encode() + b"\n")
else:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    sys.stdout.write(buf.decode(errors="replace"))
    sys.exit(124)
_, st = os.waitpid(pid, 0)
sys.stdout.write(buf.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(st))
