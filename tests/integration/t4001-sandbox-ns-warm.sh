#!/bin/bash
# t4000's probes again, each command in a cell of the warm helper
# (`lev sandbox exec --warm`), as a run's shell commands start: both ways a
# namespace command can start are proven from inside.
export T_SBX_WARM=1
. "$SRC_DIR/tests/integration/t4000-sandbox-ns.sh"
