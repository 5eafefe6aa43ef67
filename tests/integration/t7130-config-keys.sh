#!/bin/bash
# Leviath's config keys lev used to read without running: [limits]
# inference_retry_attempts / inference_retry_base_ms shape a model
# request's retries; [title] gives a run a title (the task's first line),
# enabled = false none; title.provider/model and the keys still not run
# keep their "not run by lev" warning with the reason.
. "$SRC_DIR/tests/lib.sh"

lev() {
	setsid -w "$LEV" "$@"
}

. "$SRC_DIR/tests/daemon-lib.sh"

# each marker's request fails with a 500 twice, then is answered
cat >script.json <<'EOF2'
{"responses": [
 {"match": "retry-two", "status": 500, "body": "{\"error\":{\"message\":\"busy\"}}"},
 {"match": "retry-two", "status": 500, "body": "{\"error\":{\"message\":\"busy\"}}"},
 {"match": "retry-two", "text": "answered after two failures"},
 {"match": "retry-three", "status": 500, "body": "{\"error\":{\"message\":\"busy\"}}"},
 {"match": "retry-three", "status": 500, "body": "{\"error\":{\"message\":\"busy\"}}"},
 {"match": "retry-three", "text": "answered after two failures"},
 {"match": "titled", "repeat": true, "text": "ok"}
]}
EOF2
mock_daemon script.json
keep_config_base
mkdir -p work
mock_agent ag

requests_for() {
	grep -c "$1" requests.jsonl
}
meta() {
	python3 -c 'import json, sys; v = json.load(open(sys.argv[1]))[sys.argv[2]]; print("null" if v is None else v)' \
		"$ROOT/runs/$1/meta.json" "$2"
}
meta_done() {
	test "$(meta "$1" status)" = complete
}
spawn() {
	lev run ./ag --json --workdir work "$@" >out 2>err &&
	python3 -c 'import json; print(json.load(open("out"))["run_id"])'
}

test_expect_success '[limits] inference_retry_attempts = 2: two tries in all, then the run fails' '
	config <<-EOF &&
	[limits]
	inference_retry_attempts = 2
	inference_retry_base_ms = 1
	EOF
	"$LEV" validate ./ag >v 2>verr &&
	! grep -q "inference_retry" verr &&
	test_must_fail lev run --foreground ./ag -t "retry-two" --workdir work >out 2>err &&
	test "$(requests_for retry-two)" = 2
'

test_expect_success 'benign twin: inference_retry_attempts = 3 gets the answer on the third try' '
	config <<-EOF &&
	[limits]
	inference_retry_attempts = 3
	inference_retry_base_ms = 1
	EOF
	lev run --foreground ./ag -t "retry-three" --workdir work >out 2>err &&
	test "$(requests_for retry-three)" = 3 &&
	grep -q "answered after two failures" out
'

test_expect_success 'a bad value is an error naming the key and its line' '
	config <<-EOF &&
	[limits]
	inference_retry_attempts = 0
	EOF
	test_must_fail "$LEV" validate ./ag >out 2>err &&
	grep -q "config.toml:[0-9]*" err && grep -q "inference_retry_attempts" err
'

test_expect_success '[title]: a run is titled by its task first line, in meta.json and lev ps --json' '
	config </dev/null &&
	id=$(spawn -t "titled: sort the invoices
and then file them") &&
	test "$(meta "$id" title)" = "titled: sort the invoices" &&
	wait_for meta_done "$id" &&
	"$LEV" ps --all --json >ps &&
	python3 - ps "$id" <<-PY
	import json, sys
	d = json.load(open(sys.argv[1]))
	r = [r for r in d["runs"] + d.get("finished", []) if r["run_id"] == sys.argv[2]][0]
	assert r["title"] == "titled: sort the invoices", r
	PY
'

test_expect_success '[title] enabled = false: no title; provider and model warn with the reason' '
	config <<-EOF &&
	[title]
	enabled = false
	provider = "anthropic"
	model = "claude-sonnet-5"
	EOF
	id=$(spawn -t "titled: untitled one") &&
	test "$(meta "$id" title)" = null &&
	grep -q "not run by lev: Leviath.s .title.model.; the title is the task.s first line" err &&
	grep -q "title.provider" err && ! grep -q "title.enabled" err
'

test_expect_success 'keys still not run keep their warning, with what lev has instead' '
	config <<-EOF &&
	[model_capabilities."mock-1"]
	supports_streaming = true
	[limits]
	stall_timeout_secs = 60
	[sandbox]
	persist = false
	EOF
	"$LEV" validate ./ag >out 2>&1 &&
	grep -q "not run by lev: Leviath.s .model_capabilities.supports_streaming.; use lev.s order" out &&
	grep -q "not run by lev: Leviath.s .limits.stall_timeout_secs.; use the request.s timeout_secs" out &&
	grep -q "not run by lev: Leviath.s .sandbox.persist" out &&
	! grep -q "no retries" out
'

test_done
