#!/bin/sh
# lev create: a new blueprint from each template, which validates with no
# finding and runs end to end against the mock model; a name that exists,
# an invalid name or an unknown template creates nothing.
# lev doctor: Leviath's checks in order (config, credentials, resolve, inference,
# daemon), the first failure stopping the rest, plus the machine's rows;
# --json, and a non-zero exit on a failed check.

test_description='lev create and lev doctor'
. "$SRC_DIR/tests/lib.sh"

COMPAT="$SRC_DIR/tests/compat"
. "$COMPAT/mock-providers.sh"
export LEVIATH_HOME="$TRASH/lh"
mkdir -p "$LEVIATH_HOME/.leviath" work && chmod 700 "$LEVIATH_HOME" "$LEVIATH_HOME/.leviath"
CONFIG="$LEVIATH_HOME/.leviath/config.toml"
export MOCK_KEY=sk-mock-doctor-0123456789

echo '{ "responses": [ { "text": "PONG" } ] }' >pong.json

# the mock as the default provider (after lev_start_mock_model: its port)
doctor_config() {
	{ echo "default_provider = \"mock\""; echo "default_model = \"mock-1\""; mock_providers; } >"$CONFIG" &&
	chmod 600 "$CONFIG"
}

test_expect_success 'lev create makes a blueprint that validates with no finding' '
	lev create mine >out &&
	grep -q "created mine/agent.leviath (template .default.)" out &&
	lev validate mine >val &&
	grep -q "^valid: blueprint .mine." val &&
	grep -q "0 error(s), 0 warning(s), 0 note(s)" val
'

test_expect_success 'the coder template has its three stages and validates too' '
	lev create --template coder code >out &&
	lev validate code >val &&
	grep -q "stages: 3 (plan, implement, verify)" val &&
	grep -q "0 error(s), 0 warning(s), 0 note(s)" val
'

test_expect_success 'a created agent runs end to end (the mock model answers)' '
	lev_start_mock_model pong.json &&
	# the mock answers once, in text: the nudge of Leviath (on by default) would
	# ask it again for a tool call it has no answer for
	{ mock_providers && printf "[nudge]\nenabled = false\n"; } >"$CONFIG" && chmod 600 "$CONFIG" &&
	setsid -w "$LEV" run --follow mine --model mock/mock-1 --task "say pong" --workdir work --json >ev 2>err;
	rc=$?; lev_stop_mock_model; rm -f "$CONFIG"; test $rc = 0 &&
	tail -n 1 ev | grep -q "\"status\":\"complete\"" &&
	tail -n 1 ev | grep -q "PONG"
'

test_expect_success 'an existing name, a bad name or an unknown template creates nothing' '
	echo keep >mine/extra &&
	test_must_fail lev create mine 2>err &&
	grep -q "already exists" err &&
	test "$(cat mine/extra)" = keep &&
	test_must_fail lev create "../escape" 2>err &&
	grep -q "not a valid agent name" err &&
	test_must_fail lev create other --template nope 2>err &&
	grep -q "no template .nope." err &&
	test ! -e other && test ! -e ../escape &&
	test -z "$(ls -A | grep "^\.mine\|^\.other")"
'

test_expect_success 'doctor passes with a default provider that answers (--no-daemon)' '
	lev_start_mock_model pong.json && doctor_config &&
	lev doctor --no-daemon >out; rc=$?; lev_stop_mock_model; test $rc = 0 &&
	grep -q "^  config  *OK" out &&
	grep -q "^  resolve  *OK  *mock / mock-1" out &&
	grep -q "^  inference  *OK .*replied PONG" out &&
	grep -q "^  daemon  *SKIP  *--no-daemon" out &&
	grep -q "^  userns " out && grep -q "^  landlock " out &&
	grep -q "^doctor passed" out &&
	test "$(wc -l <requests.jsonl)" = 1
'

test_expect_success 'doctor --json gives the checks and passed' '
	lev_start_mock_model pong.json && doctor_config &&
	lev doctor --no-daemon --json >out; rc=$?; lev_stop_mock_model; test $rc = 0 &&
	python3 - out <<-\PY
	import json, sys
	d = json.load(open(sys.argv[1]))
	names = [c["name"] for c in d["checks"]]
	assert names[:5] == ["config", "credentials", "resolve", "inference", "daemon"], names
	assert d["passed"] is True, d
	assert all({"name", "status", "detail"} <= set(c) for c in d["checks"]), d
	PY
'

test_expect_success 'a provider that refuses the key fails inference, exit 1, the daemon row skipped' '
	echo "{ \"responses\": [ { \"status\": 401, \"body\": \"{\\\"error\\\": {\\\"message\\\": \\\"bad key\\\"}}\" } ] }" >deny.json &&
	lev_start_mock_model deny.json && doctor_config &&
	test_must_fail lev doctor >out; lev_stop_mock_model &&
	grep -q "^  inference  *FAIL" out &&
	grep -q "^  daemon  *SKIP  *an earlier check failed" out &&
	grep -q "^doctor failed: 1 check" out
'

test_expect_success 'no usable default: resolve fails and says what to set' '
	rm -f "$CONFIG" &&
	test_must_fail lev doctor --no-daemon --json >out &&
	python3 - out <<-\PY
	import json, sys
	d = json.load(open(sys.argv[1]))
	r = {c["name"]: c for c in d["checks"]}
	assert r["resolve"]["status"] == "fail" and "default_provider" in r["resolve"]["fix"], r
	assert r["inference"]["status"] == "skip", r
	assert d["passed"] is False
	PY
'

test_done
