#!/bin/bash
# Leviath's seven bundled agents, end to end: Leviath's originals, from
# ../shared/reference/leviath/examples/bundled when it is there (lev's own
# equivalents, which every clone has, are t7300-bundled.sh), with the same
# conversations and checks.  Each runs from its
# entry stage to its end against tests/helpers/mock-model on loopback, which
# plays the agent's conversation (tests/compat/bundled-mock/NAME.json): real
# tool calls (files in a fixture workdir, shell commands, web search and
# fetch against the mock's pages, context notes, transitions, a checked
# submit_output, an interaction point the person answers on the terminal),
# each through every gate.  Twice: with --model openai/mock-1, and with the
# blueprint's own model lists, where the first provider fails and the stage
# moves on to the mock.
. "$SRC_DIR/tests/lib.sh"

export LEVIATH_HOME="$TRASH/lh"
mkdir -p "$LEVIATH_HOME/.leviath" && chmod 700 "$LEVIATH_HOME" "$LEVIATH_HOME/.leviath"
. "$SRC_DIR/tests/compat/bundled-run.sh"

REF="$SRC_DIR/../shared/reference/leviath/examples/bundled"  # optional reference
[ -d "$REF" ] || REF="$SRC_DIR/../../shared/reference/leviath/examples/bundled"  # optional reference

if [ ! -d "$REF" ]; then
	echo "# Leviath's bundled agents not run: $REF is not there (t7300 runs lev's equivalents)"
fi
for name in coder data-analyst deep-researcher log-analyzer researcher reviewer wide-researcher; do
	[ -d "$REF" ] || break
	for variant in model list; do
		desc="leviath $name ($variant): entry stage to the end, every call through the gates"
		test_expect_success "$desc" "
			bundled_run '$REF/$name' $name $variant && bundled_check $name $variant
		"
	done
done

test_done
