#!/bin/sh
# Leviath's model selection (docs/providers.md): default_provider and
# default_model lead a stage's chain, allow_user_default = false opts out,
# fallback_order comes last; Leviath's flat [providers] keys are used:
# NAME_api_key (config before variable, only from a file nobody else can
# read) and NAME_base_url.  Each shown by which model the mock server was
# asked for, and with what key.

test_description='model selection and Leviath provider keys'
. "$SRC_DIR/tests/lib.sh"

COMPAT="$SRC_DIR/tests/compat"
export LEVIATH_HOME="$TRASH/lh"
mkdir -p "$LEVIATH_HOME/.leviath" work && chmod 700 "$LEVIATH_HOME" "$LEVIATH_HOME/.leviath"
CONFIG="$LEVIATH_HOME/.leviath/config.toml"
export MOCK_KEY=sk-mock-models-0123456789

. "$COMPAT/mock-providers.sh"

# config LINE...: the lines (top-level keys first), then the two providers
config() {
	{ printf '%s\n' "$@"; mock_providers; } >"$CONFIG" && chmod 600 "$CONFIG"
}

# run BLUEPRINT_DIR: one run against the mock; prints the models asked for, then the warnings
run_models() {
	setsid -w "$LEV" run --follow "$1" --task t --workdir work --json >ev 2>err
	rc=$?
	lev_stop_mock_model
	test $rc = 0 || { cat err; return 1; }
	python3 - ev requests.jsonl <<-'PY'
	import json, sys
	reqs = [json.loads(l) for l in open(sys.argv[2])]
	print(" ".join(r["body"]["model"] for r in reqs))
	ev = [json.loads(l) for l in open(sys.argv[1])]
	assert ev[-1]["status"] == "complete", ev[-1]
	for e in ev:
	    if e["event"] == "warning":
	        print("warning:", e["message"])
	PY
}

test_expect_success 'without a default the chain is the blueprint order: down fails, mock answers' '
	lev_start_mock_model "$COMPAT/models/conversation.json" &&
	config && run_models "$COMPAT/models" >got &&
	head -n 1 got | grep -qx "mock-1" &&
	grep -q "provider .down. failed" got
'

test_expect_success 'default_provider moves its entries to the front: no failover needed' '
	lev_start_mock_model "$COMPAT/models/conversation.json" &&
	config "default_provider = \"mock\"" && run_models "$COMPAT/models" >got &&
	head -n 1 got | grep -qx "mock-1" &&
	! grep -q "failed" got
'

test_expect_success 'default_model leads on default_provider (a leading provider/ is dropped)' '
	lev_start_mock_model "$COMPAT/models/conversation.json" &&
	config "default_provider = \"mock\"" "default_model = \"mock/mock-7\"" &&
	lev validate "$COMPAT/models" >val &&
	grep -q "default_model .mock/mock-7. is read as .mock-7." val &&
	run_models "$COMPAT/models" >got &&
	head -n 1 got | grep -qx "mock-7"
'

test_expect_success 'allow_user_default = false keeps the blueprint order (benign twin of the above)' '
	mkdir -p optout &&
	sed "s/^model = { models = \(.*\) }$/model = { models = \1, allow_user_default = false }/" \
		"$COMPAT/models/agent.leviath" >optout/agent.leviath &&
	grep -q "allow_user_default = false" optout/agent.leviath &&
	lev_start_mock_model "$COMPAT/models/conversation.json" &&
	config "default_provider = \"mock\"" "default_model = \"mock-7\"" &&
	run_models optout >got &&
	head -n 1 got | grep -qx "mock-1" &&
	grep -q "provider .down. failed" got
'

test_expect_success 'fallback_order serves a stage whose own entries are all unusable' '
	mkdir -p fb &&
	sed "s/provider = \"mock\", model = \"mock-1\"/provider = \"nosuch\", model = \"x\"/; s/provider = \"down\"/provider = \"nosuch2\"/" \
		"$COMPAT/models/agent.leviath" >fb/agent.leviath &&
	lev_start_mock_model "$COMPAT/models/conversation.json" &&
	config "[providers]" "fallback_order = [\"mock/mock-fb\"]" &&
	run_models fb >got &&
	head -n 1 got | grep -qx "mock-fb" &&
	grep -q "model entry .nosuch/x. skipped: lev has no provider" got
'

# The built-in openai provider, moved by Leviath's flat keys.
flat_bp() {
	mkdir -p flat && cat >flat/agent.leviath <<-\EOF
	[agent]
	name = "flat"
	[stages.main]
	model = { provider = "openai", model = "gpt-flat" }
	system_prompt = "You are tested."
	EOF
}

test_expect_success 'flat openai_api_key and openai_base_url: the key is sent, the record has none of it' '
	flat_bp && lev_start_mock_model "$COMPAT/models/conversation.json" &&
	printf "[providers]\nopenai_api_key = \"sk-flat-config-0123456789\"\nopenai_base_url = \"http://127.0.0.1:%s/v1\"\n" "$PORT" >"$CONFIG" &&
	chmod 600 "$CONFIG" &&
	OPENAI_API_KEY=sk-flat-env-0123456789 run_models flat >got &&
	head -n 1 got | grep -qx "gpt-flat" &&
	python3 -c "import json,sys; r=[json.loads(l) for l in open(\"requests.jsonl\")]; h={k.lower():v for k,v in r[0][\"headers\"].items()}; assert h[\"authorization\"]==\"Bearer sk-flat-config-0123456789\", h" &&
	! grep -rq "sk-flat-config" "$LEVIATH_HOME/.leviath/runs" ev err
'

test_expect_success 'the variable serves when the config has no key (benign twin)' '
	flat_bp && lev_start_mock_model "$COMPAT/models/conversation.json" &&
	printf "[providers]\nopenai_base_url = \"http://127.0.0.1:%s/v1\"\n" "$PORT" >"$CONFIG" && chmod 600 "$CONFIG" &&
	OPENAI_API_KEY=sk-flat-env-0123456789 run_models flat >got &&
	python3 -c "import json,sys; r=[json.loads(l) for l in open(\"requests.jsonl\")]; h={k.lower():v for k,v in r[0][\"headers\"].items()}; assert h[\"authorization\"]==\"Bearer sk-flat-env-0123456789\", h"
'

test_expect_success 'a config holding a key that others can read is refused, with the fix' '
	flat_bp &&
	printf "[providers]\nopenai_api_key = \"sk-flat-config-0123456789\"\n" >"$CONFIG" && chmod 644 "$CONFIG" &&
	test_must_fail lev validate flat >out 2>err &&
	grep -q "holds an API key (.openai_api_key.) and its mode 0644 lets others read it; run .chmod 600" err &&
	! grep -q "sk-flat" out err &&
	chmod 600 "$CONFIG" && lev validate flat >out
'

test_expect_success 'OPENAI_BASE_URL moves the built-in endpoint; the run never sees the key' '
	flat_bp && lev_start_mock_model "$COMPAT/models/conversation.json" && rm -f "$CONFIG" &&
	OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" OPENAI_API_KEY=sk-flat-env-0123456789 run_models flat >got &&
	head -n 1 got | grep -qx "gpt-flat"
'

test_done
