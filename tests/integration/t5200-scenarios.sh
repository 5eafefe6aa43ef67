#!/bin/bash
# The end-to-end security scenarios of tests/scenarios/ (attacks from
# threats-and-anchors.md and benign tasks), each run through the real
# `lev run` with the script provider; every tool call's decision and gate
# must be the one its `expect` file names, and the effects it lists (files
# absent or unchanged, strings never leaked) must hold.  One TAP line per
# scenario (tests/scenarios/runner.py prints them).
. "$SRC_DIR/tests/lib.sh"

# not exec: lib.sh's EXIT trap must still clean up after the runner
python3 "$SRC_DIR/tests/scenarios/runner.py" --lev "$LEV" --tap
exit $?
