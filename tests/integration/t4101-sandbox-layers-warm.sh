#!/bin/bash
# t4100's missing-layer checks again, each command in a cell of the warm
# helper (`lev sandbox exec --warm`), as a run's shell commands start.
export T_SBX_WARM=1
. "$SRC_DIR/tests/integration/t4100-sandbox-layers.sh"
