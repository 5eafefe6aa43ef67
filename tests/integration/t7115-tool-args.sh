#!/bin/bash
# Tool arguments under the names Leviath's tools.md gives them (submit_output
# content, ask_user_* prompt/options, edit_document content/prompt, web_search
# count/freshness, context_write/append/read key), lev's earlier names still accepted: a run's call is
# decided and runs the same under either name, the schema the model reads
# names Leviath's, and one argument sent under both names is refused.
. "$SRC_DIR/tests/lib.sh"

mkdir -p work "$HOME/.leviath"

# bp DIR ARGS: an agent whose one turn calls submit_output with ARGS (TOML inline table)
bp() {
	mkdir -p "$1"
	cat >"$1/agent.leviath" <<-EOF
	[agent]
	name = "$1"
	[stages.a]
	model = { provider = "script", script = "turns.toml" }
	available_tools = ["submit_output", "ask_user_text", "ask_user_choice", "ask_user_confirm",
	                   "edit_document", "web_search", "context_write", "context_read"]
	[context.regions.notes]
	kind = "clearable"
	EOF
	printf '[[turn]]\n[[turn.call]]\ntool = "submit_output"\nargs = %s\n' "$2" >"$1/turns.toml"
}
bp leviath '{ content = "the answer" }'
bp levname '{ output = "the answer" }'
bp both '{ content = "one", output = "two" }'

# chk TOOL ARGS: lev check's decision on one call (JSON), and its exit status
chk() {
	lev check leviath --tool "$1" --args "$2" --workdir work --json
	echo "exit $?"
}

test_expect_success 'submit_output content (Leviath) ends the run with that output' '
	setsid -w "$LEV" run --foreground leviath --task t --workdir work >out 2>err &&
	test "$(cat out)" = "the answer"
'

test_expect_success 'submit_output output (lev'"'"'s earlier name) still works, same output' '
	setsid -w "$LEV" run --foreground levname --task t --workdir work >out 2>err &&
	test "$(cat out)" = "the answer"
'

test_expect_success 'one argument under both names is refused by the schema gate, naming both' '
	test_must_fail --code 1 lev check leviath --tool submit_output \
		--args "{\"content\": \"a\", \"output\": \"b\"}" --workdir work >out &&
	grep -q "deny (gate: schema)" out &&
	grep -q "'"'"'output'"'"' and '"'"'content'"'"' are two names" out &&
	{ setsid -w "$LEV" run --foreground both --task t --workdir work >out 2>err || :; } &&
	grep -q "submit_output.*DENIED by schema" err &&
	! grep -q "one\|two" out
'

# every Leviath spelling and its lev twin: the same decision, never a schema refusal
while read -r tool leviath levname; do
test_expect_success "$tool: Leviath's arguments and lev's earlier ones decide alike" '
	chk '"$tool"' '"'$leviath'"' >a &&
	chk '"$tool"' '"'$levname'"' >b &&
	! grep -q "\"gate\": \"schema\"" a &&
	test_cmp a b
'
done <<'EOF'
ask_user_text {"prompt":"Ready?"} {"question":"Ready?"}
ask_user_confirm {"prompt":"Ready?"} {"question":"Ready?"}
ask_user_choice {"prompt":"Colour?","options":["red","blue"]} {"question":"Colour?","choices":["red","blue"]}
edit_document {"content":"draft","prompt":"Fixit"} {"content":"draft","title":"Fixit"}
web_search {"query":"lev","count":3,"freshness":"pw"} {"query":"lev","max_results":3,"freshness":"pw"}
EOF

test_expect_success 'web_search freshness outside pd/pw/pm/py is a schema refusal; pd is not' '
	chk web_search "{\"query\": \"q\", \"freshness\": \"2024-01-01to2024-02-01\"}" >out &&
	grep -q "\"gate\": \"schema\"" out && grep -q "^exit 1$" out &&
	chk web_search "{\"query\": \"q\", \"freshness\": \"pd\"}" >out &&
	grep -q "\"gate\": \"permission\"" out && grep -q "^exit 3$" out
'

test_expect_success 'the model reads Leviath'"'"'s argument names in the schemas' '
	lev tools --json >tools.json &&
	python3 - <<-PY
	import json
	t = {x["name"]: x for x in json.load(open("tools.json"))["tools"]}
	def props(n): return set(t[n]["parameters"]["properties"])
	assert props("submit_output") == {"content"}, props("submit_output")
	assert props("ask_user_text") == {"prompt"}
	assert props("ask_user_confirm") == {"prompt"}
	assert props("ask_user_choice") == {"prompt", "options"}
	assert props("edit_document") == {"content", "prompt"}
	assert {"query", "count", "freshness"} <= props("web_search")
	assert "max_results" not in props("web_search")
	assert t["submit_output"]["argument_aliases"] == {"output": "content"}
	assert t["shell"]["aliases"] == ["bash"] and t["shell"]["default"] == "ask"
	PY
'

# kb DIR TURNS-FILE: an agent with a clearable notes region, its turns from the file
kb() {
	mkdir -p "$1"
	cat >"$1/agent.leviath" <<-EOF
	[agent]
	name = "$1"
	[context.regions.notes]
	kind = "clearable"
	[stages.a]
	model = { provider = "script", script = "turns.toml" }
	available_tools = ["context_write", "context_append", "context_read", "context_delete",
	                   "submit_output"]
	EOF
	cat >"$1/turns.toml"
}
# results DIR: each tool_result text of DIR's run, one JSON string a line
results() {
	rec=$(sed -n "s/.*(record: \(.*\))$/\1/p" "$1.err") &&
	python3 -c "
import json, sys
for l in open(sys.argv[1] + \"/events.jsonl\"):
    e = json.loads(l)
    if e[\"event\"] == \"tool_result\":
        print(json.dumps(e[\"text\"]))
" "$rec"
}
kb keyed <<'EOF'
[[turn]]
[[turn.call]]
tool = "context_write"
args = { region = "notes", key = "a", content = "one" }
[[turn.call]]
tool = "context_append"
args = { region = "notes", key = "b", content = "two" }
[[turn.call]]
tool = "context_write"
args = { region = "notes", key = "a", content = "three" }
[[turn]]
[[turn.call]]
tool = "context_read"
args = { region = "notes", key = "a" }
[[turn.call]]
tool = "context_read"
args = { region = "notes" }
[[turn.call]]
tool = "context_read"
args = { region = "notes", key = "zz" }
[[turn]]
[[turn.call]]
tool = "context_delete"
args = { region = "notes", key = "b" }
[[turn.call]]
tool = "context_read"
args = { region = "notes" }
[[turn]]
[[turn.call]]
tool = "submit_output"
args = { content = "done" }
EOF
kb unkeyed <<'EOF'
[[turn]]
[[turn.call]]
tool = "context_write"
args = { region = "notes", content = "one" }
[[turn.call]]
tool = "context_append"
args = { region = "notes", content = "two" }
[[turn.call]]
tool = "context_write"
args = { region = "notes", content = "three" }
[[turn]]
[[turn.call]]
tool = "context_read"
args = { region = "notes" }
[[turn]]
[[turn.call]]
tool = "submit_output"
args = { content = "done" }
EOF

test_expect_success 'context_write with a key replaces that note alone; context_read with a key reads it' '
	setsid -w "$LEV" run --foreground ./keyed --task t --workdir work >keyed.out 2>keyed.err &&
	results keyed >r &&
	sed -n 4p r | grep -qx "\"three\"" &&
	sed -n 5p r | grep -qx "\"two\\\\n\\\\nthree\"" &&
	sed -n 6p r | grep -q "no entry keyed .zz." &&
	sed -n 7p r | grep -q "released 1 entry" &&
	sed -n 8p r | grep -qx "\"three\""
'

test_expect_success 'the twin: without a key context_write still replaces the whole region' '
	setsid -w "$LEV" run --foreground ./unkeyed --task t --workdir work >u.out 2>unkeyed.err &&
	results unkeyed >r &&
	sed -n 4p r | grep -qx "\"three\""
'

test_done
