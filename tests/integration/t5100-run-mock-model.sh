#!/bin/bash
# lev run --follow against a mock model server on loopback: the real HTTP client
# path, both wire formats, and malformed model output (invalid JSON
# arguments, unknown tools, tools not offered, a 10 MB response, HTTP 500
# then success, a timeout, a dropped connection).  Each becomes an error
# result for the model or a clear run error, never a crash, and the record
# stays complete.  The API key never appears in the record, the events or
# the environment of sandboxed commands.
. "$SRC_DIR/tests/lib.sh"

# no controlling terminal: a call that needs an answer is denied, never asked
lev() {
	setsid -w "$LEV" "$@"
}

export LEVIATH_HOME="$TRASH/lh"
mkdir -p "$LEVIATH_HOME/.leviath" && chmod 700 "$LEVIATH_HOME" "$LEVIATH_HOME/.leviath"
RUNS="$LEVIATH_HOME/.leviath/runs"
CONFIG="$LEVIATH_HOME/.leviath/config.toml"
export MOCK_OPENAI_KEY=sk-mock-openai-KEY-0123456789abcdef
export MOCK_ANTHROPIC_KEY=sk-ant-mock-KEY-fedcba9876543210

last_run() {
	ls -d "$RUNS"/* | sort | tail -n 1
}

check_jsonl() {
	python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    assert isinstance(json.loads(line), dict)
    n += 1
assert n > 0' "$1"
}

# start_mock SCRIPT: serve SCRIPT (JSON), recording requests to requests.jsonl;
# sets PORT and MOCK_PID.
start_mock() {
	lev_start_mock_model "$1"
	cat >"$CONFIG" <<-EOF
	[tool_permissions]
	shell = "allow"
	[providers.mockoa]
	kind = "openai"
	base_url = "http://127.0.0.1:$PORT/v1"
	api_key_env = "MOCK_OPENAI_KEY"
	model = "mock-1"
	timeout_secs = 2
	[providers.mockant]
	kind = "anthropic"
	base_url = "http://127.0.0.1:$PORT/v1"
	api_key_env = "MOCK_ANTHROPIC_KEY"
	model = "mock-a"
	timeout_secs = 2
	EOF
	chmod 600 "$CONFIG"
}

stop_mock() {
	lev_stop_mock_model
}

# no_key DIR_OR_FILE...: the keys appear nowhere in them
no_key() {
	! grep -rq "KEY-0123456789abcdef\|KEY-fedcba9876543210" "$@"
}

mkdir -p work agent
echo "workspace file" >work/hello.txt
cat >agent/agent.leviath <<'EOF'
[agent]
name = "mocked"

[stages.main]
model = { provider = "mockoa", model = "mock-1" }
available_tools = ["read_file", "shell"]
system_prompt = "You are tested."
# a text answer ends the stage (nudges are on by default, as in Leviath)
nudge = { enabled = false }
EOF

cat >conversation.json <<'EOF'
{ "responses": [
  { "text": "reading", "calls": [
      { "id": "c1", "name": "read_file", "arguments": { "path": "hello.txt" } },
      { "id": "c2", "name": "shell", "arguments": { "command": "env" } } ] },
  { "text": "the file says hello" }
] }
EOF

for wire in openai anthropic; do
	provider=mockoa
	[ $wire = anthropic ] && provider=mockant
	test_expect_success "$wire wire format: calls run, results go back, run completes" '
		start_mock conversation.json &&
		lev run --foreground agent --model $provider/m --task "read it" --workdir work --json >ev 2>err;
		rc=$?; stop_mock; test $rc = 0 &&
		tail -n 1 ev | grep -q "\"status\":\"complete\"" &&
		tail -n 1 ev | grep -q "the file says hello" &&
		test "$(wc -l <requests.jsonl)" = 2 &&
		python3 - requests.jsonl $wire <<-PY
		import json, sys
		reqs = [json.loads(l) for l in open(sys.argv[1])]
		wire = sys.argv[2]
		first, second = reqs[0], reqs[1]
		if wire == "openai":
		    assert first["path"] == "/v1/chat/completions", first["path"]
		    assert first["headers"]["authorization"].startswith("Bearer sk-mock-openai"), first["headers"]
		    tools = [t["function"]["name"] for t in first["body"]["tools"]]
		    msgs = second["body"]["messages"]
		    results = [m for m in msgs if m["role"] == "tool"]
		    assert [r["tool_call_id"] for r in results] == ["c1", "c2"], results
		    assert "workspace file" in results[0]["content"], results
		else:
		    assert first["path"] == "/v1/messages", first["path"]
		    assert first["headers"]["x-api-key"].startswith("sk-ant-mock"), first["headers"]
		    tools = [t["name"] for t in first["body"]["tools"]]
		    msgs = second["body"]["messages"]
		    assert msgs[0]["role"] == "user", msgs[0]
		    blocks = [b for m in msgs if m["role"] == "user" and isinstance(m["content"], list)
		              for b in m["content"] if b.get("type") == "tool_result"]
		    assert [b["tool_use_id"] for b in blocks] == ["c1", "c2"], blocks
		    assert "workspace file" in blocks[0]["content"], blocks
		assert tools == ["read_file", "shell"], tools
		PY
	'

	test_expect_success "$wire: the key is in no record, no event, no command environment" '
		d=$(last_run) && test "$(cat $d/status)" = complete &&
		no_key "$d" ev err &&
		grep -q "PATH=" "$d/events.jsonl" &&
		! grep -q "MOCK_OPENAI_KEY\|MOCK_ANTHROPIC_KEY" "$d/events.jsonl"
	'
done

test_expect_success 'a run from a path gets no per-agent grants, and the record says why' '
	start_mock conversation.json &&
	printf "[agent_tool_permissions.mocked]\nshell = \"allow\"\n" >>"$CONFIG" &&
	lev run --foreground agent --task t --workdir work --json >ev 2>err; rc=$?; stop_mock; test $rc = 0 &&
	d=$(last_run) &&
	grep -q "\"agent_verified\":false" "$d/events.jsonl" &&
	grep -q "per-agent grants for .mocked. are not applied.*is not the installed agent" \
		"$d/events.jsonl"
'

test_expect_success 'the benign twin: the installed agent run by name gets them' '
	lev add agent >/dev/null &&
	start_mock conversation.json &&
	printf "[agent_tool_permissions.mocked]\nshell = \"allow\"\n" >>"$CONFIG" &&
	lev run --foreground mocked --task t --workdir work --json >ev 2>err; rc=$?; stop_mock;
	lev remove mocked >/dev/null && test $rc = 0 &&
	d=$(last_run) &&
	grep -q "\"agent_verified\":true" "$d/events.jsonl" &&
	! grep -q "are not applied" "$d/events.jsonl"
'

cat >malformed.json <<'EOF'
{ "responses": [
  { "calls": [
      { "id": "bad1", "name": "read_file", "arguments_raw": "{\"path\": \"hello.txt\"" },
      { "id": "bad2", "name": "format_disk", "arguments": {} },
      { "id": "bad3", "name": "write_file", "arguments": { "path": "x", "content": "y" } },
      { "id": "bad4", "name": "read_file", "arguments": { "path": "hello.txt", "mode": "w" } },
      { "id": "ok1", "name": "read_file", "arguments": { "path": "hello.txt" } } ] },
  { "text": "recovered" }
] }
EOF

test_expect_success 'malformed calls become error results for the model; the run goes on' '
	start_mock malformed.json &&
	lev run --foreground agent --task t --workdir work --json >ev 2>err; rc=$?; stop_mock; test $rc = 0 &&
	python3 - ev requests.jsonl <<-PY
	import json, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	calls = {e["label"]: (e["decision"], e["gate"]) for e in ev if e["event"] == "tool_call"}
	# lev numbers the calls itself; the id the provider gave is their label
	ids = [e["id"] for e in ev if e["event"] == "tool_call"]
	assert ids == ["call_%d" % n for n in range(1, 6)], ids
	assert calls == {"bad1": ("deny", "schema"), "bad2": ("deny", "offered"),
	                 "bad3": ("deny", "offered"), "bad4": ("deny", "schema"),
	                 "ok1": ("allow", "permission")}, calls
	assert ev[-1]["status"] == "complete" and ev[-1]["output"] == "recovered"
	reqs = [json.loads(l) for l in open(sys.argv[2])]
	tool_msgs = [m for m in reqs[1]["body"]["messages"] if m["role"] == "tool"]
	assert len(tool_msgs) == 5, tool_msgs
	text = " ".join(m["content"] for m in tool_msgs)
	assert "not a valid JSON object" in text and "[unavailable]" in text, text
	assert "not a parameter" in text and "workspace file" in text, text
	PY
'

cat >dupids.json <<'EOF'
{ "responses": [
  { "calls": [
      { "id": "same", "name": "read_file", "arguments": { "path": "hello.txt" } },
      { "id": "same", "name": "read_file", "arguments": { "path": "hello.txt" } } ] },
  { "text": "two results" }
] }
EOF

test_expect_success 'calls that share an id each get a result of their own' '
	start_mock dupids.json &&
	lev run --foreground agent --task t --workdir work --json >ev 2>err; rc=$?; stop_mock; test $rc = 0 &&
	python3 - requests.jsonl <<-PY
	import json, sys
	reqs = [json.loads(l) for l in open(sys.argv[1])]
	msgs = reqs[1]["body"]["messages"]
	calls = [c["id"] for m in msgs if m["role"] == "assistant" for c in m.get("tool_calls", [])]
	results = [m["tool_call_id"] for m in msgs if m["role"] == "tool"]
	assert len(set(calls)) == 2 and calls == results, (calls, results)
	PY
'

cat >huge.json <<'EOF'
{ "responses": [ { "fault": "huge", "huge_bytes": 10485760 } ] }
EOF

test_expect_success 'a 10 MB response is a clear run error; the record is complete' '
	start_mock huge.json &&
	test_must_fail --code 1 lev run --foreground agent --task t --workdir work >out 2>err; rc=$?;
	stop_mock; test $rc = 0 &&
	grep -q "model request failed" err &&
	d=$(last_run) && test "$(cat $d/status)" = error &&
	check_jsonl "$d/events.jsonl" && test -f "$d/audit.jsonl" && test ! -s "$d/audit.jsonl" &&
	python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r[\"status\"]==\"error\" and r[\"error\"], r" "$d/result.json" &&
	no_key "$d" err
'

cat >retry.json <<'EOF'
{ "responses": [
  { "status": 500, "body": "{\"error\":{\"message\":\"overloaded\"}}" },
  { "text": "fine after a retry" }
] }
EOF

test_expect_success 'HTTP 500 then success: retried, the run completes' '
	start_mock retry.json &&
	lev run --foreground agent --task t --workdir work >out 2>err; rc=$?; stop_mock; test $rc = 0 &&
	test "$(cat out)" = "fine after a retry" &&
	test "$(wc -l <requests.jsonl)" = 2
'

cat >slow.json <<'EOF'
{ "responses": [
  { "fault": "slow", "delay_ms": 6000, "text": "too late" },
  { "fault": "slow", "delay_ms": 6000, "text": "too late" },
  { "fault": "slow", "delay_ms": 6000, "text": "too late" },
  { "fault": "slow", "delay_ms": 6000, "text": "too late" }
] }
EOF

test_expect_success 'a model that does not answer in time is a clear run error' '
	start_mock slow.json &&
	test_must_fail --code 1 lev run --foreground agent --task t --workdir work >out 2>err; rc=$?;
	stop_mock; test $rc = 0 &&
	grep -qi "timed out\|timeout" err &&
	test "$(cat "$(last_run)/status")" = error
'

cat >drop.json <<'EOF'
{ "responses": [
  { "fault": "drop" },
  { "text": "answered after a dropped connection" }
] }
EOF

test_expect_success 'a dropped connection is retried' '
	start_mock drop.json &&
	lev run --foreground agent --task t --workdir work >out 2>err; rc=$?; stop_mock; test $rc = 0 &&
	test "$(cat out)" = "answered after a dropped connection"
'

cat >dropall.json <<'EOF'
{ "responses": [
  { "fault": "drop_mid" }, { "fault": "drop_mid" }, { "fault": "drop_mid" },
  { "fault": "drop_mid" }, { "fault": "drop_mid" }, { "fault": "drop_mid" }
] }
EOF

test_expect_success 'a connection that keeps dropping is a clear run error' '
	start_mock dropall.json &&
	test_must_fail --code 1 lev run --foreground agent --task t --workdir work >out 2>err; rc=$?;
	stop_mock; test $rc = 0 &&
	grep -q "model request failed" err &&
	d=$(last_run) && test "$(cat $d/status)" = error &&
	tail -n 1 "$d/events.jsonl" | grep -q "\"event\":\"run_finished\""
'

test_expect_success 'a missing key is a clear error before the run starts' '
	start_mock conversation.json &&
	MOCK_OPENAI_KEY= test_must_fail --code 1 lev run --foreground agent --task t --workdir work >out 2>err;
	rc=$?; stop_mock; test $rc = 0 &&
	grep -q "MOCK_OPENAI_KEY" err &&
	test ! -s requests.jsonl
'

test_expect_success 'a redirect cannot carry tainted data past the taint gate' '
	cat >redirect.json <<-\EOF &&
	{"routes": {
	  "/go": {"status": 302, "headers": {"Location": "http://localhost:${PORT}/collect?d=hello"}},
	  "/collect": {"content_type": "text/plain", "body": "collected"},
	  "/same": {"status": 302, "headers": {"Location": "/page"}},
	  "/page": {"content_type": "text/plain", "body": "a page"}}}
	EOF
	start_mock redirect.json &&
	cat >>"$CONFIG" <<-EOF &&
	[security]
	allow_local_network = true
	[agent_tool_permissions.redir]
	web_fetch = "allow"
	EOF
	cat >"$LEVIATH_HOME/.leviath/policy.toml" <<-EOF &&
	[[allowlist]]
	tool = "web_fetch"
	to = ["127.0.0.1"]
	max_sensitivity = "internal"
	# the first fetch makes the context untrusted: fetching more from 127.0.0.1 is fine
	[[integrity.allow]]
	tool = "web_fetch"
	target = "127.0.0.1"
	EOF
	mkdir -p redir-src &&
	cat >redir-src/agent.leviath <<-EOF &&
	[agent]
	name = "redir"
	[security]
	taint_tracking = true
	[stages.main]
	model = { provider = "script", script = "turns.toml" }
	available_tools = ["read_file", "web_fetch"]
	EOF
	cat >redir-src/turns.toml <<-EOF &&
	[[turn]]
	[[turn.call]]
	tool = "read_file"
	args = { path = "hello.txt" }
	[[turn]]
	[[turn.call]]
	tool = "web_fetch"
	args = { url = "http://127.0.0.1:$PORT/go" }
	[[turn.call]]
	tool = "web_fetch"
	args = { url = "http://127.0.0.1:$PORT/same" }
	[[turn]]
	text = "done"
	EOF
	lev add --force ./redir-src >/dev/null &&
	lev run --foreground redir --task t --workdir work --json >ev 2>err; rc=$?; stop_mock;
	rm -f "$LEVIATH_HOME/.leviath/policy.toml"; lev remove redir >/dev/null;
	test $rc = 0 &&
	grep -q "\"/go\"" requests.jsonl &&
	! grep -q "/collect" requests.jsonl &&
	grep -q "\"/page\"" requests.jsonl &&
	python3 - ev <<-\PY &&
	import json, sys
	res = [e for e in map(json.loads, open(sys.argv[1])) if e["event"] == "tool_result"]
	assert res[0]["label"] == "internal", res[0]
	assert not res[1]["ok"] and "refused to follow a redirect" in res[1]["text"], res[1]
	assert "localhost" in res[1]["text"] and "taint gate" in res[1]["text"], res[1]
	assert res[2]["ok"] and "a page" in res[2]["text"], res[2]
	PY
	grep "\"gate\":\"taint\"" "$(last_run)/audit.jsonl" | grep "redirect to" | grep -q "\"decision\":\"deny\""
'

test_expect_success 'a bare --model id keeps the stage provider and replaces only the model' '
	cat >one.json <<-\EOF &&
	{ "responses": [ { "text": "fine" } ] }
	EOF
	start_mock one.json &&
	lev run --foreground agent --model other-model-7 --task t --workdir work --json >ev 2>err;
	rc=$?; stop_mock; test $rc = 0 &&
	python3 - requests.jsonl <<-\PY
	import json, sys
	reqs = [json.loads(l) for l in open(sys.argv[1])]
	assert len(reqs) == 1, reqs
	# the stage says mockoa: its wire format, its key, the model named on the command line
	assert reqs[0]["path"] == "/v1/chat/completions", reqs[0]["path"]
	assert reqs[0]["headers"]["authorization"].startswith("Bearer sk-mock-openai"), reqs[0]
	assert reqs[0]["body"]["model"] == "other-model-7", reqs[0]["body"]["model"]
	PY
'

test_done
