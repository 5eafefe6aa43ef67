#!/bin/bash
# lev pause / lev resume hold a daemon run at its next step boundary (never
# inside a call) and let it go on; lev msg reaches the model as a user
# message, for a stage that does not set accepts_messages = false.
. "$SRC_DIR/tests/lib.sh"

. "$SRC_DIR/tests/daemon-lib.sh"

open_request() {
	"$LEV" respond --json | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert len(r) == 1, r
print(r[0]["id"])
'
}

mkdir -p work pauser
cat >pauser/agent.leviath <<'EOF2'
[agent]
name = "pauser"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell", "ask_user_confirm"]
EOF2
cat >pauser/turns.toml <<'EOF2'
[[turn]]
[[turn.call]]
tool = "ask_user_confirm"
args = { question = "Go on?" }
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "echo two >> log.txt" }
[[turn]]
text = "pauser done"
EOF2

test_expect_success 'a paused run holds at its next step and shows paused; resume lets it go on' '
	setsid -w "$LEV" run ./pauser --workdir work --allow shell --allow write_file --detach >id 2>/dev/null &&
	id=$(cat id) &&
	wait_for status_is "$id" "waiting: user prompt" &&
	"$LEV" pause "$id" >out &&
	grep -q "pauses at its next step" out &&
	test_must_fail --code 1 "$LEV" pause "$id" 2>err &&
	grep -q "is already paused" err &&
	"$LEV" respond "$(open_request)" --approve &&
	wait_for status_is "$id" paused &&
	test ! -e work/log.txt &&
	"$LEV" logs "$id" | python3 -c "
import json, sys
ev = [e[\"event\"] for e in map(json.loads, sys.stdin)]
# the question was answered (its tool_result) and the next turn not asked
assert ev[-1] == \"tool_result\", ev
" &&
	"$LEV" resume "$id" >out &&
	grep -q "resumed" out &&
	wait_for status_is "$id" complete &&
	test "$(cat work/log.txt)" = two &&
	test "$("$LEV" result "$id")" = "pauser done"
'

test_expect_success 'benign twin: without a pause the same run goes straight through' '
	rm -f work/log.txt &&
	setsid -w "$LEV" run ./pauser --workdir work --allow shell --allow write_file --detach >id 2>/dev/null &&
	wait_for status_is "$(cat id)" "waiting: user prompt" &&
	"$LEV" respond "$(open_request)" --approve &&
	wait_for status_is "$(cat id)" complete &&
	test "$(cat work/log.txt)" = two
'

test_expect_success 'resume of a run that is not paused, and pause of an ended run, are errors' '
	id=$(cat id) &&
	test_must_fail --code 1 "$LEV" pause "$id" 2>err &&
	grep -q "has already ended (complete)" err &&
	test_must_fail --code 1 "$LEV" resume nosuchrun 2>err &&
	grep -q "no run .nosuchrun." err &&
	test_must_fail --code 2 "$LEV" pause 2>err
'

test_expect_success 'a paused run can be cancelled' '
	rm -f work/log.txt &&
	setsid -w "$LEV" run ./pauser --workdir work --allow shell --allow write_file --detach >id 2>/dev/null &&
	id=$(cat id) &&
	wait_for status_is "$id" "waiting: user prompt" &&
	"$LEV" pause "$id" >/dev/null &&
	"$LEV" respond "$(open_request)" --approve &&
	wait_for status_is "$id" paused &&
	"$LEV" cancel "$id" >/dev/null &&
	wait_for status_is "$id" cancelled &&
	test ! -e work/log.txt
'

# lev msg, with a model on loopback that records what it is sent
CONFIG="$ROOT/config.toml"
export MOCK_OPENAI_KEY=sk-mock-openai
mkdir -p talk quiet
for a in talk quiet; do
	cat >$a/agent.leviath <<-EOF2
	[agent]
	name = "$a"
	[stages.chat]
	model = { provider = "mockoa", model = "mock-1" }
	available_tools = ["ask_user_confirm"]
	$([ $a = quiet ] && echo "accepts_messages = false")
	EOF2
done
cat >conversation.json <<'EOF2'
{ "responses": [
  { "text": "asking", "calls": [
      { "id": "c1", "name": "ask_user_confirm", "arguments": { "question": "Ready?" } } ] },
  { "text": "talked" }
] }
EOF2

start_mock() {
	lev_start_mock_model conversation.json
	cat >"$CONFIG" <<-EOF2
	[providers.mockoa]
	kind = "openai"
	base_url = "http://127.0.0.1:$PORT/v1"
	api_key_env = "MOCK_OPENAI_KEY"
	model = "mock-1"
	timeout_secs = 5
	EOF2
	chmod 600 "$CONFIG"
}

test_expect_success 'lev msg to a stage (accepts_messages is true by default): the model gets it as a user message' '
	start_mock &&
	setsid -w "$LEV" run ./talk --workdir work --task t --detach >id 2>/dev/null &&
	id=$(cat id) &&
	wait_for status_is "$id" "waiting: user prompt" &&
	"$LEV" msg "$id" "also check the tests, please" >out &&
	grep -q "message sent to run $id" out &&
	"$LEV" respond "$(open_request)" --approve &&
	wait_for status_is "$id" complete;
	rc=$?; lev_stop_mock_model; test $rc = 0 &&
	python3 -c "
import json, sys
reqs = [json.loads(l) for l in open(\"requests.jsonl\")]
assert len(reqs) == 2, len(reqs)
body = json.loads(reqs[1][\"body\"]) if isinstance(reqs[1][\"body\"], str) else reqs[1][\"body\"]
users = [m for m in body[\"messages\"] if m[\"role\"] == \"user\"]
assert \"also check the tests, please\" in json.dumps(users[-1]), users[-1]
assert \"also check the tests\" not in json.dumps(reqs[0]), reqs[0]
" &&
	"$LEV" logs "$id" | grep -q "\"event\":\"user_message\""
'

test_expect_success 'lev msg to a stage with accepts_messages = false is refused, naming the stage' '
	start_mock &&
	setsid -w "$LEV" run ./quiet --workdir work --task t --detach >id 2>/dev/null &&
	id=$(cat id) &&
	wait_for status_is "$id" "waiting: user prompt" &&
	test_must_fail --code 1 "$LEV" msg "$id" "hello" 2>err;
	rc=$?
	"$LEV" respond "$(open_request)" --approve &&
	wait_for status_is "$id" complete;
	rc2=$?; lev_stop_mock_model; test $rc = 0 && test $rc2 = 0 &&
	grep -q "stage .chat. of run .$id. does not accept messages" err &&
	! grep -q "hello" requests.jsonl
'

test_expect_success 'usage: lev msg, and lev run --detach with --foreground' '
	test_must_fail --code 2 "$LEV" run ./pauser --detach --foreground 2>err &&
	grep -q "do not go together" err &&
	test_must_fail --code 2 "$LEV" msg 2>err &&
	test_must_fail --code 2 "$LEV" msg somerun 2>err &&
	grep -q "what message" err
'

test_done
