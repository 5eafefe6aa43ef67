#!/bin/bash
# lev result RUN --raw: the answer alone, byte for byte (Leviath's flag for a
# pipeline); the plain form adds the newline a terminal wants.  A run with no
# answer fails either way.
. "$SRC_DIR/tests/lib.sh"
. "$SRC_DIR/tests/daemon-lib.sh"

mkdir -p work
# bp DIR ARGS: one turn calling submit_output with ARGS (TOML inline table)
bp() {
	mkdir -p "$1"
	cat >"$1/agent.leviath" <<-EOF
	[agent]
	name = "$1"
	[stages.main]
	model = { provider = "script", script = "turns.toml" }
	available_tools = ["submit_output"]
	EOF
	printf '[[turn]]\n[[turn.call]]\ntool = "submit_output"\nargs = %s\n' "$2" >"$1/turns.toml"
}
bp answer '{ content = "two\nlines" }'
bp silent '{ content = "" }'

test_expect_success 'a run that answers: result --raw is the answer, with no newline added' '
	lev run ./answer --task t --workdir work --detach >id 2>/dev/null &&
	id=$(tail -n 1 id) &&
	wait_for "$LEV" result "$id" &&
	"$LEV" result "$id" --raw >raw &&
	printf "two\nlines" >want && cmp raw want &&
	"$LEV" result "$id" >plain &&
	printf "two\nlines\n" >want2 && cmp plain want2
'

test_expect_success 'result --raw of a run without an answer exits 1 and writes nothing' '
	lev run ./silent --task t --workdir work --detach >id 2>/dev/null &&
	id=$(tail -n 1 id) &&
	wait_for status_is "$id" complete &&
	test_must_fail --code 1 "$LEV" result "$id" --raw >out 2>err &&
	test ! -s out && grep -q "without output" err
'

test_expect_success 'result --json --raw is a usage error' '
	test_must_fail --code 2 "$LEV" result x --json --raw 2>err &&
	grep -q "give one" err
'

test_done
