#!/bin/bash
# [limits] max_concurrent_inferences: at most N model requests at once
# across the daemon, the rest queued in the order they asked (Leviath's
# inference pool, daemon/pool.h).  Six runs against a model that holds each
# request until the test lets it go, with N = 2: two are in flight and four
# queued (`lev ps --json` health), the model never sees more than two at once
# (mock-model counts them as they arrive), and the daemon lets the queued
# through in the order they queued (its log).  Benign twin: without the key
# all six reach the model at once, every run completes, nothing is queued.
. "$SRC_DIR/tests/lib.sh"

. "$SRC_DIR/tests/daemon-lib.sh"

mkdir -p work slow
cat >slow.json <<EOF2
{"responses": [{"match": "TASK-POOL", "repeat": true, "fault": "hold",
                "until_file": "$TRASH/go", "text": "pooled"}]}
EOF2
cat >slow/agent.leviath <<'EOF2'
[agent]
name = "slow"
[stages.main]
model = { provider = "mockoa", model = "mock-1" }
available_tools = []
EOF2

mock_daemon slow.json
cp "$ROOT/config.toml" config.plain

submit_six() {
	rm -f ids &&
	for i in 1 2 3 4 5 6; do
		(cd work && setsid -w "$LEV" run ../slow --task "TASK-POOL-$i" --detach >>../ids 2>/dev/null) ||
			return 1
	done
}

# health_is MAX: lev ps --json says the pool has MAX and nothing in flight or queued
health_is() {
	"$LEV" ps --json | python3 -c "
import json, sys
h = json.load(sys.stdin)[\"health\"][\"inferences\"]
assert h == {\"max\": $1, \"in_flight\": 0, \"queued\": 0}, h"
}

# pool_is IN_FLIGHT QUEUED: what lev ps --json says now
pool_is() {
	"$LEV" ps --json | python3 -c "
import json, sys
h = json.load(sys.stdin)[\"health\"][\"inferences\"]
assert (h[\"in_flight\"], h[\"queued\"]) == ($1, $2), h"
}

# arrived N: the model got N requests past the first $mark lines of its record
arrived() {
	test "$(($(wc -l <requests.jsonl) - mark))" = "$1"
}

all_complete() {
	local id
	for id in $(cat ids); do
		wait_for status_is "$id" complete || return 1
	done
}

# the most model requests the mock saw at once, and how many it got, past
# the first $1 lines of its record
peak() {
	python3 -c '
import json, sys
n = [json.loads(l)["in_flight"] for l in open("requests.jsonl").readlines()[int(sys.argv[1]):]
     if json.loads(l)["path"] == "/v1/chat/completions"]
print(max(n), len(n))' "$1"
}

test_expect_success 'with max_concurrent_inferences = 2 the model never sees more than two at once' '
	printf "\n[limits]\nmax_concurrent_inferences = 2\n" >>"$ROOT/config.toml" &&
	"$LEV" daemon start >/dev/null &&
	health_is 2 &&
	mark=$(cat requests.jsonl 2>/dev/null | wc -l) &&
	rm -f go &&
	submit_six &&
	wait_for pool_is 2 4 &&
	: >go &&
	all_complete &&
	peak "$mark" >got &&
	read most count <got &&
	test "$count" = 6 &&
	test "$most" -le 2 &&
	test "$most" -ge 1 &&
	for id in $(cat ids); do test "$("$LEV" result "$id")" = pooled || return 1; done
'

test_expect_success 'the queued are let through in the order they queued' '
	grep -o "run [^ ]*: model request queued" "$ROOT/daemon.log" | cut -d" " -f2 >queued &&
	grep -o "run [^ ]*: model request let through" "$ROOT/daemon.log" | cut -d" " -f2 >through &&
	test -s queued &&
	test_cmp queued through &&
	health_is 2
'

test_expect_success 'benign twin: without the key every run completes, none is queued' '
	"$LEV" daemon stop >/dev/null &&
	cp config.plain "$ROOT/config.toml" &&
	: >"$ROOT/daemon.log" &&
	"$LEV" daemon start >/dev/null &&
	mark=$(cat requests.jsonl 2>/dev/null | wc -l) &&
	rm -f go &&
	submit_six &&
	wait_for arrived 6 &&
	: >go &&
	all_complete &&
	peak "$mark" >got &&
	read most count <got &&
	test "$count" = 6 &&
	test "$most" = 6 &&
	! grep -q "model request queued" "$ROOT/daemon.log" &&
	health_is 0
'

test_expect_success 'a limit of 0 is refused, naming the file and line' '
	"$LEV" daemon stop >/dev/null &&
	printf "\n[limits]\nmax_concurrent_inferences = 0\n" >>"$ROOT/config.toml" &&
	test_must_fail "$LEV" list 2>err &&
	grep -q "config.toml:[0-9]*.*max_concurrent_inferences" err
'

# A run's own model requests wait their turn too (run/agent.c agent_infer(),
# the one place that decides when a request may go): with N = 1, picker's
# choice of an edge (its second request) is held by the model, and a second
# run's turn is queued behind it, never let through beside it.
mkdir -p picker
cat >picker/agent.leviath <<'EOF2'
[agent]
name = "picker"
[stages.a]
model = { provider = "mockoa", model = "mock-1" }
allow_complete = true
transition_prompt = "PICK-HOLD: respond with b, or DONE."
[stages.a.transitions.b]
hint = "go on"
[stages.b]
model = { provider = "mockoa", model = "mock-1" }
EOF2
cat >pick.json <<EOF2
{"responses": [{"match": "TASK-PICK", "text": "the answer is 42"},
               {"match": "PICK-HOLD", "fault": "hold", "until_file": "$TRASH/go2", "text": "DONE"},
               {"match": "TASK-SECOND", "text": "second"}]}
EOF2

test_expect_success 'an edge choice holds a place in the pool: the next run waits for it' '
	"$LEV" daemon stop >/dev/null &&
	lev_stop_mock_model &&
	rm -f go2 &&
	mock_daemon pick.json &&
	printf "\n[limits]\nmax_concurrent_inferences = 1\n" >>"$ROOT/config.toml" &&
	"$LEV" daemon start >/dev/null &&
	mark=0 &&
	a=$(cd work && setsid -w "$LEV" run ../picker --task TASK-PICK --detach 2>/dev/null) &&
	wait_for arrived 2 &&
	b=$(cd work && setsid -w "$LEV" run ../slow --task TASK-SECOND --detach 2>/dev/null) &&
	wait_for pool_is 1 1 &&
	arrived 2 &&
	: >go2 &&
	wait_for status_is "$a" complete &&
	wait_for status_is "$b" complete &&
	test "$("$LEV" result "$b")" = second
'

lev_stop_mock_model
test_done
