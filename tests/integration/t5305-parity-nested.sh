#!/bin/bash
# Parity for nested callers (issue 27, class 4): a call made by a spawn_agent
# child and a fan-out worker (each in a process of its own), a tool seed (of
# the run, the child and the worker) and the redirect hop of a web_fetch gets
# the verdict and gate `lev check` gives the same call in the same context
# (stage, taint, integrity; the hop as a web_fetch of where it leads, its URL
# untrusted), as a model's own call does.  Each caller in a trusted context
# (the parent read a plain file) and an untrusted one (a file the [integrity]
# globs mark untrusted): the attack (a post of the code, a write to the
# protected payees.csv, a redirect to a host no entry allows) is refused
# under an untrusted parent, and its benign twin, the same calls under a
# trusted one, goes through.  An MCP tool's call (tests/helpers/mcp-hostile,
# its server trusted by [[sources]]) is refused and let through likewise, and
# `lev check`, which starts the stage's MCP servers as the run does, agrees;
# a server no [[sources]] entry trusts makes the context untrusted in the run
# and in `lev check` alike, and a server the stage names that does not start
# is one clear line and a non-zero exit from `lev check`.  A Lua script
# tool's host functions (write_file, http_post) make the same calls from
# inside one script call, in both contexts (t5300 generates many more, but
# in trusted contexts only).  tests/parity/nested.py drives it; one TAP line
# per caller.
. "$SRC_DIR/tests/lib.sh"

export LEVIATH_HOME="$TRASH/lh"
# not exec: lib.sh's EXIT trap must still clean up after the driver
python3 "$SRC_DIR/tests/parity/nested.py" --lev "$LEV" --dir "$TRASH"
exit $?
