#!/bin/bash
# runs/<id>/meta.json is there when lev run --json returns (status
# "starting" or later, as Leviath names it), is rewritten whole as the run
# goes (every read parses), and carries the provider's cache tokens
# (OpenAI's prompt_tokens_details.cached_tokens, Anthropic's
# cache_read_input_tokens and cache_creation_input_tokens).
. "$SRC_DIR/tests/lib.sh"

lev() {
	setsid -w "$LEV" "$@"
}

. "$SRC_DIR/tests/daemon-lib.sh"

# the OpenAI answer's usage as a real server writes it (raw body), and
# Anthropic's; the first answer of the held run waits for the file "go"
cat >script.json <<'EOF2'
{"responses": [
 {"match": "hold me", "fault": "hold", "until_file": "go", "text": "held and done"},
 {"match": "openai cache", "body": "{\"id\":\"c1\",\"object\":\"chat.completion\",\"model\":\"mock-1\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"cached answer\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":9,\"total_tokens\":129,\"prompt_tokens_details\":{\"cached_tokens\":96}}}"},
 {"match": "anthropic cache", "body": "{\"id\":\"m1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"mock-a\",\"content\":[{\"type\":\"text\",\"text\":\"cached answer\"}],\"stop_reason\":\"end_turn\",\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":200,\"cache_creation_input_tokens\":30,\"output_tokens\":5}}"},
 {"match": "no cache", "text": "plain answer"}
]}
EOF2
mock_daemon script.json
cat >>"$ROOT/config.toml" <<EOF2

[providers.mockan]
kind = "anthropic"
base_url = "http://127.0.0.1:$PORT/v1"
model = "mock-a"
timeout_secs = 30
EOF2
printf '[providers.mockan]\napi_key = "sk-mock-anthropic"\n' >>"$ROOT/credentials.toml"
mkdir -p work
mock_agent oa mockoa mock-1
mock_agent an mockan mock-a

meta() {
	python3 -c 'import json, sys; v = json.load(open(sys.argv[1]))[sys.argv[2]]; print("" if v is None else v)' \
		"$ROOT/runs/$1/meta.json" "$2"
}
meta_done() {
	test "$(meta "$1" status)" = complete
}
spawn() {
	lev run "$@" --json --workdir work >out 2>err &&
	python3 -c 'import json; print(json.load(open("out"))["run_id"])'
}

test_expect_success 'meta.json is there as soon as lev run --json returns, before the first answer' '
	id=$(spawn ./oa -t "hold me") &&
	# read at once, no waiting: the daemon wrote it at submission
	test -f "$ROOT/runs/$id/meta.json" &&
	s=$(meta "$id" status) && echo "$s" >status.seen &&
	case "$s" in starting|running) ;; *) false ;; esac &&
	test "$(meta "$id" run_id)" = "$id" &&
	test "$(meta "$id" completion_tokens)" = 0 &&
	echo "$id" >held
'

test_expect_success 'rewritten whole as the run goes: every read while it runs parses' '
	id=$(cat held) &&
	python3 - "$ROOT/runs/$id/meta.json" <<-PY &&
	import json, sys, os
	p = sys.argv[1]
	reads = 0
	seen = set()
	while True:
	    m = json.load(open(p))    # a half-written file would fail here
	    reads += 1
	    seen.add(m["status"])
	    if reads == 50:
	        open("go", "w").close()
	    if m["status"] == "complete":
	        break
	assert reads >= 50 and "complete" in seen, (reads, seen)
	PY
	test "$(meta "$id" completion_tokens)" = 7 &&
	test -z "$(ls -A "$ROOT/runs/$id" | grep tmp)"
'

test_expect_success 'OpenAI prompt_tokens_details.cached_tokens reaches cached_tokens' '
	id=$(spawn ./oa -t "openai cache") &&
	wait_for meta_done "$id" &&
	test "$(meta "$id" prompt_tokens)" = 120 &&
	test "$(meta "$id" cached_tokens)" = 96 &&
	test "$(meta "$id" cache_write_tokens)" = 0
'

test_expect_success 'Anthropic cache reads and writes: cached_tokens and cache_write_tokens' '
	id=$(spawn ./an -t "anthropic cache") &&
	wait_for meta_done "$id" &&
	test "$(meta "$id" prompt_tokens)" = 240 &&
	test "$(meta "$id" cached_tokens)" = 200 &&
	test "$(meta "$id" cache_write_tokens)" = 30
'

test_expect_success 'benign twin: an answer with no cache fields gives zero, not a guess' '
	id=$(spawn ./oa -t "no cache") &&
	wait_for meta_done "$id" &&
	test "$(meta "$id" cached_tokens)" = 0 &&
	test "$(meta "$id" cache_write_tokens)" = 0 &&
	test "$(meta "$id" prompt_tokens)" -gt 0
'

test_done
