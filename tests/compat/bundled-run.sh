# Sourced by tests/integration/t7300-bundled.sh and bench/compat-report.sh
# (after tests/lib.sh, with LEVIATH_HOME set): runs one of Leviath's bundled
# agents, or lev's equivalent in tests/compat/agents/, from its entry stage
# to its end against tests/helpers/mock-model, which plays the agent's
# conversation from tests/compat/bundled-mock/NAME.json.  The script's
# "expect" says what the run must show: the stages visited, the output, a
# file written, how many tool calls, and the answer to an interaction point.
#
#   bundled_run DIR NAME VARIANT    VARIANT "model": --model openai/mock-1;
#                                   "list": the blueprint's own model lists,
#                                   anthropic configured but failing (HTTP
#                                   429), openai at the mock, google and
#                                   openrouter not configured (no key)
#   bundled_check NAME VARIANT      assert on the run record (run_dir)

BUNDLED_MOCK="$SRC_DIR/tests/compat/bundled-mock"

# the keys and endpoints of the environment would decide which providers are
# configured: the config alone does here
unset ANTHROPIC_API_KEY OPENAI_API_KEY GOOGLE_API_KEY OPENROUTER_API_KEY OLLAMA_HOST \
	OPENAI_BASE_URL ANTHROPIC_BASE_URL GOOGLE_BASE_URL OPENROUTER_BASE_URL
export BUNDLED_KEY=sk-mock-7Qz4Kp9Xw2Lr5Vn8
# (a key shares no 8 characters with a path here: the record redacts any word that does)

# bundled_config VARIANT: the config for a mock on $PORT.  Under "list"
# anthropic answers every request with 429 (Retry-After: 0: retried at once,
# then given up): the stage moves down its model list to openai.
bundled_config() {
	{
		# the scripted conversations answer each text stage once: Leviath's
		# default nudge (a text answer before any tool call is asked again)
		# is turned off the way a Leviath user would, in the config
		cat <<-EOF
		[nudge]
		enabled = false
		[security]
		allow_local_network = true
		[tools.web_search]
		endpoint = "http://127.0.0.1:$PORT/search"
		[providers.openai]
		kind = "openai"
		base_url = "http://127.0.0.1:$PORT/v1"
		api_key_env = "BUNDLED_KEY"
		timeout_secs = 30
		EOF
		if [ "$1" = list ]; then
			cat <<-EOF
			[providers.anthropic]
			kind = "anthropic"
			base_url = "http://127.0.0.1:$PORT/overloaded/v1"
			api_key_env = "BUNDLED_KEY"
			timeout_secs = 30
			EOF
		fi
	} >"$LEVIATH_HOME/.leviath/config.toml"
	chmod 600 "$LEVIATH_HOME/.leviath/config.toml"
}

# bundled_expect NAME: the script's "expect" as shell variables (one python
# run: it is slow to start on a loaded machine): exp_task, exp_fixture,
# exp_install (a list), exp_wait and exp_key (the interaction point's answer)
bundled_expect() {
	eval "$(python3 - "$BUNDLED_MOCK/$1.json" <<-'PY'
	import json, shlex, sys
	e = json.load(open(sys.argv[1]))["expect"]
	wait, key = e.get("answer", ["", ""])
	for k, v in (("task", e["task"]), ("fixture", e.get("fixture", "")),
	             ("install", " ".join(e.get("install", []))), ("wait", wait), ("key", key)):
	    print("exp_%s=%s" % (k, shlex.quote(v)))
	PY
	)"
}

# bundled_workdir: a fresh workdir with the agent's fixture (work/)
bundled_workdir() {
	rm -rf work && mkdir work
	if [ "$exp_fixture" = logs ]; then
		cp "$BUNDLED_MOCK"/logs/* work/
	elif [ "$exp_fixture" = project ]; then
		cp -r "$BUNDLED_MOCK/project/." work/ &&
		(cd work && git init -q && git add . &&
		 git -c user.email=t@example.invalid -c user.name=t commit -qm fixture)
	fi
}

bundled_run() {
	local dir=$1 name=$2 variant=$3 model="" child input
	local -a inputs
	bundled_expect "$name" && bundled_workdir || return 1
	# a fan_out stage's worker_agent: the agent beside this one, installed
	for child in $exp_install; do
		"$LEV" add --force "$(dirname "$dir")/$child" >/dev/null || return 1
	done
	lev_start_mock_model "$BUNDLED_MOCK/$name.json"
	bundled_config "$variant"
	[ "$variant" = model ] && model="--model openai/mock-1"
	# the agent's required caller inputs other than the task (Leviath's
	# --<input> flags: the reviewer's --diff) get the task's text
	inputs=()
	for input in $(grep -s "required = true" "$dir/agent.leviath" |
		       grep -oE 'seed = "[a-z_]+"' | grep -v '"task"' |
		       sed 's/seed = "\(.*\)"/\1/' | sort -u); do
		inputs+=(--input "$input=$exp_task")
	done
	rm -rf "$LEVIATH_HOME/.leviath/runs"
	if [ -n "$exp_wait" ]; then
		# an interaction point: the person answers it on the terminal
		ON_PTY_TIMEOUT=300 python3 "$SRC_DIR/tests/helpers/on-pty.py" "$exp_wait" "$exp_key" -- \
			"$LEV" run --foreground "$dir" $model --task "$exp_task" "${inputs[@]}" \
			--workdir work --allow write_file --allow shell >out 2>&1
	else
		setsid -w "$LEV" run --foreground "$dir" $model --task "$exp_task" "${inputs[@]}" \
			--workdir work --allow write_file --allow shell >out 2>&1
	fi
	BUNDLED_RC=$?
	lev_stop_mock_model
	run_dir=$(ls -d "$LEVIATH_HOME"/.leviath/runs/* 2>/dev/null | tail -n 1)
	[ "$BUNDLED_RC" = 0 ] || { tail -n 20 out; return 1; }
}

bundled_check() {
	python3 - "$BUNDLED_MOCK/$1.json" "$2" "$run_dir" work requests.jsonl <<-'PY'
	import json, os, sys
	exp = json.load(open(sys.argv[1]))["expect"]
	variant, run, work = sys.argv[2], sys.argv[3], sys.argv[4]
	ev = [json.loads(l) for l in open(os.path.join(run, "events.jsonl"))]
	reqs = [json.loads(l) for l in open(sys.argv[5])]
	fin = ev[-1]
	assert fin["event"] == "run_finished" and fin["status"] == "complete", fin
	assert exp["output"] in fin["output"], fin["output"]
	stages = [e["stage"] for e in ev if e["event"] == "stage_started"]
	assert stages == exp["stages"], stages
	# every tool call, the run's and its fan-out workers' (records of their
	# own), went through the gate chain: audit lines name it, and none was
	# refused
	def calls_of(rec):
	    rev = [json.loads(l) for l in open(os.path.join(rec, "events.jsonl"))]
	    audit = [json.loads(l) for l in open(os.path.join(rec, "audit.jsonl"))]
	    assert rev[-1]["event"] == "run_finished" and rev[-1]["status"] == "complete", rev[-1]
	    calls = [e for e in rev if e["event"] == "tool_call"]
	    results = {e["id"]: e for e in rev if e["event"] == "tool_result"}
	    for c in calls:
	        steps = [a for a in audit if a.get("call") == c["id"] and a.get("stage") == c["stage"]]
	        gates = [a["gate"] for a in steps]
	        assert "offered" in gates and "permission" in gates, (c["tool"], gates)
	        assert c["decision"] == "allow", (c["tool"], c["reason"])
	        assert all(a["decision"] != "deny" for a in steps), steps
	        assert results[c["id"]]["ok"] or c["tool"] == "shell", results[c["id"]]
	    out = [c["tool"] for c in calls]
	    for e in rev:
	        if e["event"] == "child_finished":
	            assert e["ok"], e
	            out += calls_of(e["record"])
	    return out
	calls = calls_of(run)
	assert len(calls) == exp["calls"], calls
	children = [e for e in ev if e["event"] == "child_finished"]
	assert len(children) == exp.get("workers", 0), children
	f, text = exp["file"]
	assert text in open(os.path.join(work, f)).read(), f
	models = [r["body"]["model"] for r in reqs if r["path"] == "/v1/chat/completions"]
	started = [e for e in ev if e["event"] == "stage_started"]
	warned = [e["message"] for e in ev if e["event"] == "warning"]
	if variant == "model":
	    assert set(models) == {"mock-1"}, set(models)
	    assert all(s["provider"] == "openai" and s["model"] == "mock-1" for s in started), started
	else:
	    # the stage's own list: anthropic failed, openai (the mock) took over
	    assert all(m.startswith("gpt-") for m in models), set(models)
	    failed = [w for w in warned if "provider 'anthropic' failed" in w and "moving to 'openai/gpt-" in w]
	    assert len(failed) == len(stages), warned
	    down = [r for r in json.load(open(sys.argv[1]))["routes"] if r.startswith("/overloaded/")]
	    assert down, "the script has no /overloaded/ route"
	PY
}

