#!/bin/bash
# [model_capabilities."MODEL"]: max_output_tokens caps the max_tokens every
# request to that model sends (seen in the mock model's request log),
# max_context_tokens is the window the run's context is fitted to; a
# misspelled key is refused (Leviath's rule), and the supports_* flags lev
# does not run keep their "not run by lev" warning with the reason.
. "$SRC_DIR/tests/lib.sh"

cat >script.json <<'EOF'
{"responses": [
 {"match": "mc-window-a", "calls": [{"name": "runtime_info", "id": "c1", "arguments": {}}]},
 {"match": "mc-window-a", "text": "done"},
 {"match": "mc-window-b", "calls": [{"name": "runtime_info", "id": "c1", "arguments": {}}]},
 {"match": "mc-window-b", "text": "done"},
 {"match": "mc-", "repeat": true, "text": "ok"}
]}
EOF
. "$SRC_DIR/tests/daemon-lib.sh"
mock_daemon script.json
keep_config_base
mkdir -p work ag
cat >ag/agent.leviath <<'EOF'
[agent]
name = "ag"

[context.regions.task]
seed = "task"

[stages.main]
model = { provider = "mockoa", model = "mock-1", max_tokens = 5000 }
available_tools = []
system_prompt = "test"
EOF

sed -e 's/name = "ag"/name = "info"/' -e 's/available_tools = \[\]/available_tools = ["runtime_info"]/' \
	<ag/agent.leviath >info.leviath && mkdir -p info && mv info.leviath info/agent.leviath

# max_tokens_of MARKER: the max_tokens (or max_completion_tokens) the request sent
max_tokens_of() {
	python3 -c '
import json, sys
for l in open("requests.jsonl"):
    r = json.loads(l)
    b = r.get("body")
    b = json.loads(b) if isinstance(b, str) else b
    if sys.argv[1] in json.dumps(b):
        print(b.get("max_tokens", b.get("max_completion_tokens")))
' "$1"
}

test_expect_success 'max_output_tokens = 123 caps the stage max_tokens of 5000 sent to the model' '
	config <<-EOF &&
	[model_capabilities."mock-1"]
	max_output_tokens = 123
	max_context_tokens = 50000
	EOF
	"$LEV" validate ./ag >v 2>verr &&
	! grep -q "model_capabilities" verr &&
	"$LEV" run --foreground ./ag -t "mc-capped" --workdir work >out 2>err &&
	test "$(max_tokens_of mc-capped)" = 123
'

test_expect_success 'benign twin: an entry for another model leaves the stage max_tokens as it is' '
	config <<-EOF &&
	[model_capabilities."other-model"]
	max_output_tokens = 123
	EOF
	"$LEV" run --foreground ./ag -t "mc-other" --workdir work >out 2>err &&
	test "$(max_tokens_of mc-other)" = 5000
'

test_expect_success 'max_context_tokens is the window the run reports (runtime_info, seen by the model)' '
	config <<-EOF &&
	[model_capabilities."mock-1"]
	max_context_tokens = 54321
	EOF
	"$LEV" run --foreground ./info -t "mc-window-a" --workdir work >out 2>err &&
	grep "mc-window-a" requests.jsonl | grep -q "of 54321 tokens"
'

test_expect_success 'benign twin: without the entry the window is the default one' '
	config </dev/null &&
	"$LEV" run --foreground ./info -t "mc-window-b" --workdir work >out 2>err &&
	grep "mc-window-b" requests.jsonl | grep -q "context: [0-9]* of [0-9]* tokens" &&
	! grep "mc-window-b" requests.jsonl | grep -q "of 54321 tokens"
'

test_expect_success 'a misspelled key is refused, naming it' '
	config <<-EOF &&
	[model_capabilities."mock-1"]
	max_output_token = 123
	EOF
	test_must_fail "$LEV" run --foreground ./ag -t "mc-typo" --workdir work >out 2>err &&
	grep -q "max_output_token" err &&
	test -z "$(max_tokens_of mc-typo)"
'

test_expect_success 'supports_tools = false: a stage offering that model tools is refused at validate' '
	config <<-EOF &&
	[model_capabilities."mock-1"]
	supports_tools = false
	EOF
	test_must_fail "$LEV" validate ./info >out 2>&1 &&
	grep -q "model-without-tools" out
'

test_expect_success 'benign twin: supports_tools = false, a stage with no tools still runs' '
	"$LEV" validate ./ag >out 2>&1 &&
	! grep -q "model-without-tools" out &&
	"$LEV" run --foreground ./ag -t "mc-notools-ok" --workdir work >out 2>err &&
	test "$(max_tokens_of mc-notools-ok)" = 5000
'

test_expect_success 'supports_* flags lev does not run keep their warning with the reason' '
	config <<-EOF &&
	[model_capabilities."mock-1"]
	supports_vision = true
	supports_streaming = true
	EOF
	"$LEV" validate ./ag >out 2>&1 &&
	grep -q "not run by lev: Leviath.s .model_capabilities.supports_vision.; use lev sends text only" out &&
	grep -q "not run by lev: Leviath.s .model_capabilities.supports_streaming." out
'

test_done
