#!/bin/bash
# lev agent-client: the Agent Client Protocol on stdio, driven by a scripted
# host (tests/helpers/acp-host.py).  A prompt becomes a daemon run whose
# events come back as session/update; a question the run asks comes to the
# host as session/request_permission carrying the whole call, and the host's
# choice is the answer (checked from outside: the file the call writes);
# --yolo asks nothing; bad lines get JSON-RPC errors and the session goes on;
# a daemon killed -9 mid-turn is started again and the turn goes on;
# session/load replays a finished run's events and the session goes on, an
# id that is no run's is an error and starts nothing.
. "$SRC_DIR/tests/lib.sh"

. "$SRC_DIR/tests/daemon-lib.sh"

HOST="$SRC_DIR/tests/helpers/acp-host.py"

host() {
	python3 "$HOST" --timeout 120 "$@"
}

mkdir -p work talker asker
cat >talker/agent.leviath <<'EOF2'
[agent]
name = "talker"
[stages.main]
model = { provider = "script", script = "turns.toml" }
EOF2
cat >talker/turns.toml <<'EOF2'
[[turn]]
text = "hello from the talker"
EOF2
cat >asker/agent.leviath <<'EOF2'
[agent]
name = "asker"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
EOF2
cat >asker/turns.toml <<'EOF2'
[[turn]]
text = "writing the file"
[[turn.call]]
tool = "shell"
args = { command = "echo first >> ran.txt\necho second-line-ran >> ran.txt # \u202eevil" }
[[turn]]
text = "done"
EOF2

test_expect_success 'a prompt streams the run and ends the turn with end_turn' '
	host --cwd work --log talk.log -- "$LEV" agent-client "$PWD/talker" >out &&
	grep -qx "stopReason: end_turn" out &&
	grep -qx "asked 0" out &&
	python3 - talk.log <<-PY
	import json, sys
	msgs = [json.loads(l) for l in open(sys.argv[1])]
	ups = [m["params"]["update"] for m in msgs if m.get("method") == "session/update"]
	said = [u["content"]["text"] for u in ups if u["sessionUpdate"] == "agent_message_chunk"]
	# the answer once: the final output is the last text, not said again
	assert said == ["hello from the talker"], said
	assert any(u["sessionUpdate"] == "plan" for u in ups), ups
	PY
'

# the runs lev ps --all knows
nruns() {
	"$LEV" ps --all --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
print(len(j.get("runs", [])) + len(j.get("finished", [])))'
}

test_expect_success 'session/load replays a finished run'"'"'s events, then a prompt goes on in it' '
	"$LEV" ps --all --json | python3 -c "
import json, sys
j = json.load(sys.stdin)
print([r[\"id\"] for r in j.get(\"runs\", []) + j.get(\"finished\", [])
       if r[\"agent\"] == \"talker\"][0])" >talker.id &&
	host --load "$(cat talker.id)" --cwd work --log load.log -- "$LEV" agent-client \
		"$PWD/talker" >out &&
	grep -q "^loaded: [1-9][0-9]* updates" out &&
	grep -qx "stopReason: end_turn" out &&
	python3 - load.log "$(cat talker.id)" <<-PY
	import json, sys
	msgs = [json.loads(l) for l in open(sys.argv[1])]
	load = [m for m in msgs if m.get("id") == 2][0]
	at = msgs.index(load)
	assert load["result"] is None, load
	ups = [m["params"] for m in msgs[:at] if m.get("method") == "session/update"]
	assert ups and all(u["sessionId"] == sys.argv[2] for u in ups), ups
	said = [u["update"]["content"]["text"] for u in ups
	        if u["update"]["sessionUpdate"] == "agent_message_chunk"]
	assert said == ["hello from the talker"], said
	# the prompt after it: a turn of the same session
	later = [m["params"]["sessionId"] for m in msgs[at:] if m.get("method") == "session/update"]
	assert later and set(later) == {sys.argv[2]}, later
	PY
'

test_expect_success 'session/load of an unknown or invalid id: a JSON-RPC error, nothing started' '
	n0=$(nruns) &&
	host --load 20990101-000000-000-abcdef --cwd work -- "$LEV" agent-client \
		"$PWD/talker" >out &&
	grep -q "^error -32602: invalid params: no session .20990101-000000-000-abcdef.: no run" out &&
	host --load "../../etc" --cwd work -- "$LEV" agent-client "$PWD/talker" >out &&
	grep -q "^error -32602: invalid params: no session .*is not a run id" out &&
	host --load "" --cwd work -- "$LEV" agent-client "$PWD/talker" >out &&
	grep -q "^error -32602: " out &&
	test "$(nruns)" = "$n0"
'

test_expect_success 'a question is a request_permission with the whole call; allow runs it' '
	rm -f work/ran.txt &&
	host --cwd work --answer allow_once --log allow.log -- "$LEV" agent-client "$PWD/asker" \
		>out &&
	grep -qx "stopReason: end_turn" out &&
	grep -qx "asked 1" out &&
	grep -qx "second-line-ran" work/ran.txt &&
	python3 - allow.log <<-PY
	import json, sys
	msgs = [json.loads(l) for l in open(sys.argv[1])]
	ask = [m for m in msgs if m.get("method") == "session/request_permission"][0]
	text = ask["params"]["toolCall"]["content"][0]["content"]["text"]
	# every line of the call, the bidi control made visible, as lev respond shows it
	assert "the call, in full:" in text, text
	assert "| echo first >> ran.txt" in text, text
	assert "| echo second-line-ran >> ran.txt # \\\\u202eevil" in text, text
	assert "\u202e" not in text, text
	assert ask["params"]["toolCall"]["kind"] == "execute", ask
	kinds = {o["optionId"]: o["kind"] for o in ask["params"]["options"]}
	assert kinds == {"allow_once": "allow_once", "allow_stage": "allow_always",
	                 "allow_run": "allow_always", "reject_once": "reject_once"}, kinds
	ups = [m["params"]["update"] for m in msgs if m.get("method") == "session/update"]
	assert any(u["sessionUpdate"] == "tool_call_update" and u["status"] == "completed"
	           for u in ups), ups
	PY
'

test_expect_success 'reject_once: the call does not run, the turn still ends' '
	rm -f work/ran.txt &&
	host --cwd work --answer reject_once --log reject.log -- "$LEV" agent-client \
		"$PWD/asker" >out &&
	grep -qx "stopReason: end_turn" out &&
	grep -qx "asked 1" out &&
	test ! -e work/ran.txt &&
	grep -q "\"status\": \"failed\"" reject.log
'

test_expect_success '--yolo: the run asks nothing and the call runs' '
	rm -f work/ran.txt &&
	host --cwd work --log yolo.log -- "$LEV" agent-client --yolo "$PWD/asker" >out &&
	grep -qx "stopReason: end_turn" out &&
	grep -qx "asked 0" out &&
	! grep -q request_permission yolo.log &&
	grep -qx "second-line-ran" work/ran.txt
'

test_expect_success '--yolo: a call the config denies stays denied' '
	rm -f work/ran.txt &&
	printf "[tool_permissions]\nshell = \"deny\"\n" >"$ROOT/config.toml" &&
	chmod 600 "$ROOT/config.toml" &&
	host --cwd work --log yolodeny.log -- "$LEV" agent-client --yolo "$PWD/asker" >out &&
	rm -f "$ROOT/config.toml" &&
	grep -qx "stopReason: end_turn" out &&
	grep -qx "asked 0" out &&
	test ! -e work/ran.txt &&
	grep -q "\"status\": \"failed\".*denied by permission" yolodeny.log
'

test_expect_success 'a host with no capabilities: the question is said with the whole call; lev respond answers it' '
	rm -f work/ran.txt &&
	host --no-caps --respond-outside --cwd work --log nocaps.log -- "$LEV" agent-client \
		"$PWD/asker" >out &&
	grep -qx "asked 0" out &&
	grep -q "^answered q[0-9]* outside\$" out &&
	grep -qx "stopReason: end_turn" out &&
	grep -q "the call, in full:.*echo second-line-ran" nocaps.log &&
	grep -qx "second-line-ran" work/ran.txt
'

test_expect_success 'a prompt while the run goes on is a message into it; both end with the run' '
	rm -f work/ran.txt &&
	host --cwd work --second-prompt "also this, please" --log msg.log -- "$LEV" agent-client \
		"$PWD/asker" >out &&
	grep -qx "stopReason: end_turn" out &&
	grep -qx "second prompt: {.stopReason.: .end_turn.}" out &&
	grep -q "\"user_message_chunk\".*also this, please" msg.log &&
	test "$(grep -c "\"stopReason\"" msg.log)" -eq 2
'

test_expect_success 'bad lines get JSON-RPC errors and the session still works after' '
	rm -f work/ran.txt &&
	host --garbage --cwd work --log bad.log -- "$LEV" agent-client "$PWD/asker" >out &&
	test "$(grep -c "^error -32" out)" -eq 12 &&
	grep -q "^error -32600: invalid request: a line over" out &&
	grep -qx "stopReason: end_turn" out &&
	grep -qx "second-line-ran" work/ran.txt
'

test_expect_success 'session/cancel during a question cancels the run: nothing runs' '
	rm -f work/ran.txt &&
	host --cancel-on-ask --cwd work --log cancel.log -- "$LEV" agent-client "$PWD/asker" \
		>out &&
	grep -qx "stopReason: cancelled" out &&
	test ! -e work/ran.txt
'

test_expect_success 'the daemon killed -9 mid-turn: the turn follows the run again and ends' '
	rm -f work/ran.txt &&
	host --kill-daemon-on-ask --cwd work --log crash.log -- "$LEV" agent-client \
		"$PWD/asker" >out 2>err &&
	grep -qx "killed the daemon" out &&
	grep -qx "asked 2" out &&
	grep -qx "stopReason: end_turn" out &&
	grep -qx "second-line-ran" work/ran.txt &&
	grep -q "lost the daemon.s stream" err
'

test_expect_success 'no daemon can come back: the turn ends with an error naming the run, no hang' '
	rm -f work/ran.txt &&
	host --kill-daemon-on-ask --break-root "$ROOT" --cwd work --log gone.log -- \
		"$LEV" agent-client "$PWD/asker" >out 2>err;
	rc=$? &&
	chmod 700 "$ROOT" &&
	test $rc -eq 0 &&
	grep -qx "killed the daemon" out &&
	grep -q "^error: lost run [0-9a-f-]*: .*lev attach" out &&
	test ! -e work/ran.txt
'

test_expect_success 'usage: no agent is a usage error, and nothing is written to stdout' '
	test_expect_code 2 "$LEV" agent-client </dev/null >out 2>err &&
	test ! -s out &&
	grep -q "which agent" err
'

test_done
