#!/bin/bash
# The prompt-injection corpus of tests/injection/ (AgentDojo-style
# scenarios, each an attack and its benign twin) under the careful user's
# profile (examples/careful-user/), every run through the real
# `lev run --foreground` with a scripted model that always obeys the
# injection, against one loopback services process
# (tests/helpers/inject-services).  Whether an attack got through is read
# from what the services received and from the workdir, never from lev's
# own account.  Three TAP lines per scenario: its attack succeeds with no
# defence (the control: lev's defaults with --yolo), its attack is blocked
# under the careful profile, its benign twin is done.  An attack only issue 17's integrity labels can
# block is skipped, with the reason, when this lev's `lev policy test`
# does not take --integrity (the feature is asked of the binary).
. "$SRC_DIR/tests/lib.sh"

# not exec: lib.sh's EXIT trap must still clean up after the runner
python3 "$SRC_DIR/tests/injection/runner.py" --lev "$LEV" --tap
exit $?
