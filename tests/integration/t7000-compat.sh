#!/bin/bash
# Coming from Leviath: its blueprints and config.toml load in lev, and every
# key lev does not run is a finding at FILE:LINE:COL, never a silent "valid".
# Our fixtures are in tests/compat/; the real blueprints are read from
# ../shared/reference/leviath/examples when that folder exists.
. "$SRC_DIR/tests/lib.sh"

COMPAT="$SRC_DIR/tests/compat"
# Leviath's own files, beside the project when a checkout has them; without
# them every fixture test still runs and a TAP comment says what was not checked.
REF="$SRC_DIR/../shared/reference/leviath"  # optional reference
[ -d "$REF" ] || REF="$SRC_DIR/../../shared/reference/leviath"  # optional reference

export LEVIATH_HOME="$TRASH/lh"
mkdir -p "$LEVIATH_HOME/.leviath" && chmod 700 "$LEVIATH_HOME" "$LEVIATH_HOME/.leviath"
CONFIG="$LEVIATH_HOME/.leviath/config.toml"

# no controlling terminal: a call that needs an answer is denied, never asked
lev_run() {
	setsid -w "$LEV" run --foreground "$@"
}

# stage_list EVENTS: the stages entered, in order, then the run's status
stage_list() {
	python3 - "$1" <<-'PY'
	import json, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	print(" ".join(e["stage"] for e in ev if e["event"] == "stage_started"))
	print(ev[-1]["status"], ev[-1].get("error") or "")
	PY
}

test_expect_success 'a blueprint with Leviath keys validates, each key a finding at FILE:LINE:COL' '
	lev validate "$COMPAT/leviath-keys" >out &&
	grep -q "^valid: blueprint .compat-keys." out &&
	F="$COMPAT/leviath-keys/agent.leviath" &&
	grep -q "^$F:31:15: warning: stage .scope.: not run by lev: Rhai stage hooks (.stages.scope.hooks.); use Lua rules" out &&
	grep -q "^$F:55:16: warning: stage .work.: not run by lev: worker_query (lev matches no agent types) (.stages.work.worker_query.)" out &&
	! grep -q "^$F:12:[0-9]*: warning: not run by lev: compacting regions" out &&
	grep -q "^$F:29:21: warning: stage .scope.: model entry .claude_code/sonnet-x. is skipped: lev has no provider .claude_code. \[model-entry-skipped\]" out &&
	grep -q "0 error(s), 7 warning(s)" out
'

test_expect_success 'the findings come after the security summary' '
	lev validate "$COMPAT/leviath-keys" >out &&
	summary=$(grep -n "^  regions:" out | cut -d: -f1) &&
	first=$(grep -n "not run by lev" out | head -n 1 | cut -d: -f1) &&
	test "$summary" -lt "$first"
'

test_expect_success 'a tools/*.rhai shadowing web_search names the built-in that runs instead' '
	lev validate "$COMPAT/leviath-keys" >out &&
	grep -q "tools/web_search.rhai:1:1: warning: not run by lev: the Rhai tool .web_search. (.tools/web_search.rhai.); lev.s built-in .web_search. runs instead" out &&
	grep -q "tools/word_count.rhai:1:1: warning: not run by lev: the Rhai tool .word_count.*Lua rule" out
'

test_expect_success '--json gives each finding as an object with file, line, col and key' '
	lev validate --json "$COMPAT/leviath-keys" >out.json &&
	python3 - out.json <<-'"'"'PY'"'"'
	import json, sys
	d = json.load(open(sys.argv[1]))
	assert d["valid"] is True, d
	f = [x for x in d["findings"] if x["code"] == "not-run-by-lev"]
	assert len(f) == 6, len(f)
	hooks = [x for x in f if x["key"] == "stages.scope.hooks"][0]
	assert hooks["line"] == 31 and hooks["col"] == 15, hooks
	assert hooks["file"].endswith("leviath-keys/agent.leviath"), hooks
	assert hooks["stage"] == "scope" and hooks["severity"] == "warning", hooks
	for x in d["findings"]:
	    assert {"severity", "code", "stage", "message", "fix"} <= set(x), x
	PY
'

test_expect_success 'a key in no schema is still an error, also inside a Leviath table' '
	mkdir -p typo && sed "s/^on_stage_enter/on_enter/" "$COMPAT/leviath-keys/agent.leviath" >typo/agent.leviath &&
	test_must_fail --code 1 lev validate typo >out 2>err &&
	grep -q "typo/agent.leviath:32:1: unknown key .on_enter. in .stages.scope.hooks. (valid: on_stage_enter" err &&
	mkdir -p typo2 && sed "s/^max_revisits/max_revisit/" "$COMPAT/leviath-keys/agent.leviath" >typo2/agent.leviath &&
	test_must_fail --code 1 lev validate typo2 >out 2>err &&
	grep -q "stage .scope. has unknown key .max_revisit." err &&
	mkdir -p badtype && sed "s/^max_workers = 4/max_workers = \"4\"/" "$COMPAT/leviath-keys/agent.leviath" >badtype/agent.leviath &&
	test_must_fail --code 1 lev validate badtype >out 2>err &&
	grep -q ".stages.work.max_workers." err
'

# lev check exits 3 for "ask"
test_expect_success 'a Leviath blueprint cannot pre-allow a tool: its asks keep lev rules' '
	mkdir -p allow work &&
	sed "s/^available_tools = \[\"read_file\"\]/available_tools = [\"read_file\", \"shell\"]/" \
		"$COMPAT/leviath-keys/agent.leviath" >allow/agent.leviath &&
	printf "\n[tool_permissions]\nshell = \"allow\"\n" >>allow/agent.leviath &&
	lev validate allow >out &&
	grep -q "preapproved-tools" out &&
	test_must_fail --code 3 lev check allow --stage scope --tool shell --args "{\"command\":\"rm -rf x\"}" \
		--workdir work >out &&
	grep -q "^ask (gate: permission)" out &&
	grep -q "shell = \"allow\" cannot loosen it" out
'

test_expect_success 'the same stage without the Leviath keys gets the same answer (benign twin)' '
	cat >plain.leviath <<-\EOF &&
	[agent]
	name = "plain"
	[tool_permissions]
	shell = "allow"
	[stages.scope]
	available_tools = ["read_file", "shell"]
	EOF
	mkdir -p plain && mv plain.leviath plain/agent.leviath &&
	test_must_fail --code 3 lev check plain --stage scope --tool shell --args "{\"command\":\"rm -rf x\"}" \
		--workdir work >out &&
	grep -q "^ask (gate: permission)" out
'

test_expect_success 'Leviath-style config.toml loads: flat [providers], fallback_order, [limits]' '
	cp "$COMPAT/config/config.toml" "$CONFIG" && chmod 600 "$CONFIG" &&
	lev validate "$COMPAT/revisits" >out &&
	! grep -q "anthropic_api_key\|default_provider\|request_timeout_secs\|openai_base_url" out &&
	! grep -q "sk-ant-not-a-real-key" out &&
	grep -q "not run by lev: Leviath.s .limits.max_concurrent_tools." out &&
	! grep -q "mcp_servers" out &&
	! grep -q "config-unknown-key" out &&
	rm -f "$CONFIG"
'

test_expect_success 'a key in no config schema is still reported as unknown (benign twin)' '
	printf "[providers]\nanthropic_api_kee = \"x\"\n" >"$CONFIG" && chmod 600 "$CONFIG" &&
	test_must_fail --code 1 lev validate "$COMPAT/revisits" >out 2>err &&
	grep -q "providers.anthropic_api_kee. must be a table" err &&
	rm -f "$CONFIG"
'

test_expect_success 'max_revisits stops a loop with a clear error' '
	mkdir -p work &&
	test_must_fail --code 1 lev_run "$COMPAT/revisits" --workdir work --json >ev 2>err &&
	stage_list ev >got &&
	printf "%s\n" "check fix check fix" \
		"error stage '"'"'check'"'"' was re-entered 1 time(s), its max_revisits; the run stops here" >want &&
	test_cmp want got
'

test_expect_success 'with room for the revisits the same loop runs to the end of its script' '
	mkdir -p roomy && cp "$COMPAT/revisits/turns.toml" roomy/ &&
	sed "s/^max_revisits = 1/max_revisits = 5/" "$COMPAT/revisits/agent.leviath" >roomy/agent.leviath &&
	lev_run roomy --workdir work --json >ev 2>err &&
	stage_list ev >got &&
	head -n 1 got >stages &&
	echo "check fix check fix check fix check" >want &&
	test_cmp want stages &&
	grep -q "^complete" got
'

# The mock model server (tests/helpers/mock-model) answers on loopback; the
# provider 'down' points at a port nobody listens on.
. "$COMPAT/mock-providers.sh"
start_mock() {
	lev_start_mock_model "$1"
	mock_providers >"$CONFIG" && chmod 600 "$CONFIG"
}

stop_mock() {
	lev_stop_mock_model
	rm -f "$CONFIG"
}
export MOCK_KEY=sk-mock-failover-0123456789

test_expect_success 'a model list fails over: the first provider is down, the next answers' '
	mkdir -p work &&
	start_mock "$COMPAT/failover/conversation.json" &&
	lev validate "$COMPAT/failover" >val &&
	grep -q "model entry .nosuch/x. is skipped" val &&
	lev_run "$COMPAT/failover" --task t --workdir work --json >ev 2>err;
	rc=$?; stop_mock; test $rc = 0 &&
	python3 - ev requests.jsonl <<-'"'"'PY'"'"'
	import json, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	warn = [e["message"] for e in ev if e["event"] == "warning"]
	assert any("nosuch" in w and "skipped" in w for w in warn), warn
	moved = [w for w in warn if "provider \x27down\x27 failed" in w]
	assert len(moved) == 1 and "moving to \x27mock/mock-1\x27" in moved[0], warn
	assert ev[-1]["status"] == "complete", ev[-1]
	assert ev[-1]["output"] == "answered by the second entry", ev[-1]
	reqs = [json.loads(l) for l in open(sys.argv[2])]
	assert len(reqs) == 1 and reqs[0]["body"]["model"] == "mock-1", reqs
	PY
'

test_expect_success 'with --model the list is not used: the same run fails on the down provider' '
	start_mock "$COMPAT/failover/conversation.json" &&
	lev_run "$COMPAT/failover" --model down/m-down --task t --workdir work --json >ev 2>err;
	rc=$?; stop_mock; test $rc = 1 &&
	tail -n 1 ev | grep -q "\"error\":\"model request failed in stage .main.: provider .down." &&
	! grep -q "moving to" ev &&
	test ! -s requests.jsonl
'

test_expect_success 'a model list with no usable entry is an error at validate time' '
	mkdir -p nomodel &&
	sed "s/provider = \"mock\"/provider = \"nosuch2\"/; s/provider = \"down\"/provider = \"nosuch3\"/" \
		"$COMPAT/failover/agent.leviath" >nomodel/agent.leviath &&
	test_must_fail --code 1 lev validate nomodel >out &&
	grep -q "error: stage .main.: no entry of the stage.s model list names a provider lev has \[no-usable-model\]" out
'

if [ -d "$REF/examples" ]; then
	# the providers they name that lev has no built-in for, defined as a user would
	test_expect_success "every Leviath example blueprint validates ($REF/examples)" '
		n=0 &&
		for d in "$REF"/examples/*/*/; do
			LEVIATH_CONFIG_PATH="$COMPAT/config/providers.toml" lev validate "$d" >out 2>err ||
				{ cat out err; false; } || return 1
			n=$((n + 1))
		done &&
		echo "$n" >"$TRASH/examples-valid" &&
		test "$n" -gt 0
	'
	echo "# example blueprints that validate: $(cat "$TRASH/examples-valid" 2>/dev/null || echo none)"
	test_expect_success "Leviath's own config.example.toml loads" '
		cp "$REF/schema/config.example.toml" "$CONFIG" && chmod 600 "$CONFIG" &&
		lev validate "$COMPAT/revisits" >out &&
		grep -q "^valid" out &&
		! grep -q "config-unknown-key" out &&
		rm -f "$CONFIG"
	'
	test_expect_success "every key of Leviath's blueprint schema is accepted or warned" '
		python3 "$COMPAT/count-keys.py" "$LEV" "$REF/schema/blueprint.schema.json" >counts &&
		cp counts "$TRASH/schema-counts" &&
		grep -q "rejected 0$" counts
	'
	echo "# Leviath blueprint schema keys: $(cat "$TRASH/schema-counts" 2>/dev/null || echo "not counted")"
else
	echo "# no Leviath reference at $REF: the real blueprints and schema are not checked"
fi

test_done
