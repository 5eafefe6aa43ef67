#!/bin/bash
# Leviath's seven bundled agents, end to end: lev's own equivalents
# (tests/compat/agents/; Leviath's originals are t7301-bundled-leviath.sh).  Each runs from its
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

OURS="$SRC_DIR/tests/compat/agents"

for name in coder data-analyst deep-researcher log-analyzer researcher reviewer wide-researcher; do
	for variant in model list; do
		desc="ours $name ($variant): entry stage to the end, every call through the gates"
		test_expect_success "$desc" "
			bundled_run '$OURS/$name' $name $variant && bundled_check $name $variant
		"
	done
done

test_expect_success 'our agents are installed with lev add and run by name' '
	lev add --force "$OURS/researcher" >/dev/null &&
	bundled_run researcher researcher model && bundled_check researcher model &&
	grep -q "\"agent_verified\":true" "$run_dir/events.jsonl" &&
	lev remove researcher >/dev/null
'

# [compaction] provider: who writes a compacting region's summaries, whatever
# the stage runs on (Leviath's meaning; its bundled agents name one)
mkdir -p compact cwork
for f in a b c; do echo "the file $f holds forty bytes of text!!" >cwork/$f.txt; done
cat >compact/agent.leviath <<'BP'
[agent]
name = "compact"
[compaction]
provider = "summariser"
model = "summary-model"
[stages.main]
model = { provider = "openai", model = "stage-model" }
max_iterations = 10
available_tools = ["read_file"]
[stages.main.tool_routing]
overrides = { read_file = "codebase" }
[context.regions]
codebase = { kind = "compacting", max_tokens = 25, compact_count = 2 }
BP
cat >compact.json <<'BP'
{ "responses": [
  { "match": "You compact an agent", "repeat": true, "text": "SUMMARY: files a and b were read" },
  { "calls": [ { "name": "read_file", "arguments": { "path": "a.txt" } } ] },
  { "calls": [ { "name": "read_file", "arguments": { "path": "b.txt" } } ] },
  { "calls": [ { "name": "read_file", "arguments": { "path": "c.txt" } } ] },
  { "text": "done" } ] }
BP

export SUMMARY_KEY=sk-summ-4Rt8Yw2Qp6Zx
# compaction_models configured|missing: the models asked for the summaries,
# then those asked for the stage's turns
compaction_models() {
	lev_start_mock_model compact.json &&
	bundled_config model &&
	if [ "$1" = configured ]; then
		printf '[providers.summariser]\nkind = "openai"\nbase_url = "http://127.0.0.1:%s/v1"\napi_key_env = "SUMMARY_KEY"\n' \
			"$PORT" >>"$LEVIATH_HOME/.leviath/config.toml"
	fi &&
	setsid -w "$LEV" run --foreground compact --task t --workdir cwork --json >cev 2>err
	rc=$?
	lev_stop_mock_model
	test $rc = 0 || { cat err; return 1; }
	grep -q '"event":"context_compacted"' cev &&
	python3 - requests.jsonl <<-\PY
	import json, sys
	reqs = [json.loads(l) for l in open(sys.argv[1])]
	def asked(summary):
	    return sorted(set("%s %s" % (r["body"]["model"], r["headers"]["authorization"][7:])
	                      for r in reqs if ("You compact an agent" in json.dumps(r["body"])) == summary))
	print("summary:", " ".join(asked(True)))
	print("stage:", " ".join(asked(False)))
	PY
}

test_expect_success '[compaction] provider writes the summaries when it is configured' '
	lev add --force compact >/dev/null &&
	compaction_models configured >got &&
	grep -qx "summary: summary-model sk-summ-4Rt8Yw2Qp6Zx" got &&
	grep -qx "stage: stage-model $BUNDLED_KEY" got
'

test_expect_success 'not configured: the stage.s provider writes them, and the run says so (benign twin)' '
	compaction_models missing >got &&
	grep -qx "summary: stage-model $BUNDLED_KEY" got &&
	grep -qx "stage: stage-model $BUNDLED_KEY" got &&
	grep -q "\[compaction\] provider .summariser. is not configured here" cev
'

test_done
