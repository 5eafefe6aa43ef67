#!/bin/bash
# Caller inputs other than the task: a region seeded with seed = "KEY" (or
# Leviath's { caller = "KEY" }) takes its text from `lev run --follow --KEY TEXT`,
# `--KEY=TEXT` or `--input KEY=TEXT`, @FILE reading a file (Leviath's
# `--<input>` flags, e.g. its reviewer's --diff).  A flag that names no
# input of the agent is an unknown option; a required input not given
# stops the run before the model is asked.
. "$SRC_DIR/tests/lib.sh"

export LEVIATH_HOME="$TRASH/lh"
mkdir -p "$LEVIATH_HOME/.leviath" && chmod 700 "$LEVIATH_HOME" "$LEVIATH_HOME/.leviath"
RUNS="$LEVIATH_HOME/.leviath/runs"

lev() {
	setsid -w "$LEV" "$@"
}

# the text the seed event of REGION put in the newest run's context, as bytes
seeded() {
	python3 - "$(ls -d "$RUNS"/* | sort | tail -n 1)/events.jsonl" "$1" <<-'PY'
	import json, sys
	for l in open(sys.argv[1]):
	    e = json.loads(l)
	    if e["event"] == "seed" and e["region"] == sys.argv[2]:
	        print("%s %s" % (e["ok"], e["bytes"]))
	PY
}

mkdir -p work rev
cat >rev/agent.leviath <<'EOF'
[agent]
name = "rev"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["read_file"]
[context.regions]
task = { kind = "pinned", seed = "task" }
diff = { kind = "pinned", required = true, seed = "diff", required_message = "give the change with --diff" }
notes = { kind = "pinned", seed = { caller = "remarks" } }
EOF
cat >rev/turns.toml <<'EOF'
[[turn]]
text = "reviewed"
EOF
printf 'line one\nline two\n' >change.diff

test_expect_success '--diff TEXT fills the region it seeds' '
	(cd work && lev run --foreground ../rev --task review --diff "+added") >out 2>&1 &&
	test "$(seeded diff)" = "True 6"
'

test_expect_success '--diff=TEXT and --input diff=@FILE too' '
	(cd work && lev run --foreground ../rev --task review --diff=abc) >out 2>&1 &&
	test "$(seeded diff)" = "True 3" &&
	(cd work && lev run --foreground ../rev --task review --input diff=@../change.diff) >out 2>&1 &&
	test "$(seeded diff)" = "True 18"
'

test_expect_success 'an input is matched on its key or on its region name (--notes for caller = "remarks")' '
	(cd work && lev run --foreground ../rev --task review --diff x --notes "be brief") >out 2>&1 &&
	test "$(seeded notes)" = "True 8"
'

test_expect_success 'a required input not given stops the run, naming it' '
	test_expect_code 1 lev run --foreground rev --task review --workdir work 2>err &&
	grep -q "required region .diff.: give the change with --diff" err
'

test_expect_success 'a flag that names no input of the agent is an unknown option (exit 2)' '
	test_expect_code 2 lev run --foreground rev --task review --diff x --colour red \
		--workdir work 2>err &&
	grep -q "unknown option .--colour.: agent .rev. has no input .colour." err &&
	test_expect_code 2 lev run --foreground rev --task review --input task=x --workdir work 2>err &&
	grep -q "the task is given with --task" err &&
	test_expect_code 2 lev run --foreground rev --task review --input novalue --workdir work 2>err &&
	grep -q "input takes KEY=VALUE" err &&
	test_expect_code 2 lev run --foreground rev --task review --workdir work --diff 2>err &&
	grep -q "needs a value" err
'

test_expect_success 'an input the file of @FILE cannot give fails, naming the flag' '
	test_expect_code 1 lev run --foreground rev --task review --diff @nope --workdir work 2>err &&
	grep -q "^lev: error: --diff: " err
'

test_expect_success 'a daemon run gets its inputs too' '
	(cd work && lev run --follow ../rev --task review --diff "+daemon") >out 2>&1 &&
	test "$(seeded diff)" = "True 7" &&
	"$LEV" daemon stop >/dev/null
'

test_done
