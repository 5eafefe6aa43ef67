#!/bin/bash
# Parity: for every call a scripted `lev run` makes, `lev check` gives the
# same verdict, gate, rule and reason (allowed calls included: both name the
# gate that approved).  tests/parity/parity.py generates 24 configurations
# (sandbox kind none / namespace, network on / off, no flag / --yolo /
# --allow, read grant present / absent), one run each with 90 calls (every
# tool, both stages, schema errors, symlinks in and out of the workdir,
# shell lines with many constructs, network targets), and replays each run's
# calls through `lev check --calls` with the stage and taint they were
# decided under.  One TAP line per configuration.
. "$SRC_DIR/tests/lib.sh"

kinds=none
if lev sandbox probe --json 2>/dev/null | grep -q '"userns": true'; then
	kinds=none,namespace
elif test -n "$LEV_TEST_MUST_WORK"; then
	echo "not ok 1 - parity: no user namespaces, and LEV_TEST_MUST_WORK is set"
	exit 1
else
	echo "# namespace configurations skipped: no user namespaces here"
fi

# not exec: lib.sh's EXIT trap must still clean up after the driver
python3 "$SRC_DIR/tests/parity/parity.py" --lev "$LEV" --dir "$TRASH" --kinds "$kinds"
exit $?
