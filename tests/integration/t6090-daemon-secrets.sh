#!/bin/bash
# lev.db keeps each unfinished run's request to resume it after a crash,
# but not the credential-shaped variables of the client's environment
# (the shell_env filter's rule): the key's bytes are nowhere in lev.db or
# its WAL, while a plain variable is there (the twin: the search could
# find it).  A run resumed after kill -9
# that needs the key it lost fails with a message naming the variable and
# how to go on; a run that needs no key is resumed and finishes.
. "$SRC_DIR/tests/lib.sh"

. "$SRC_DIR/tests/daemon-lib.sh"

SECRET=sk-levtest-SECRET-5f3a9c1e7d2b4a68
PLAIN=levtest-plain-value-93e1b7
export LEVTEST_SECRET_KEY=$SECRET LEVTEST_PLAIN=$PLAIN

# do the bytes $1 occur in lev.db or its WAL?
in_db() {
	python3 - "$ROOT" "$1" <<-PY
	import os, sys
	found = False
	for f in ("lev.db", "lev.db-wal"):
	    p = os.path.join(sys.argv[1], f)
	    if os.path.exists(p):
	        found |= sys.argv[2].encode() in open(p, "rb").read()
	sys.exit(0 if found else 1)
	PY
}

# RUN's kept request, through SQLite: its env names and withheld_env
kept_request() {
	python3 - "$ROOT/lev.db" "$1" <<-PY
	import json, sqlite3, sys
	db = sqlite3.connect(sys.argv[1])
	row = db.execute("select request from requests where run = ?", (sys.argv[2],)).fetchone()
	r = json.loads(row[0])
	for e in r["env"]:
	    print("env " + e.split("=", 1)[0])
	for n in r.get("withheld_env", []):
	    print("withheld " + n)
	PY
}

cat >"$ROOT/config.toml" <<'EOF'
[providers.keyed]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "LEVTEST_SECRET_KEY"
model = "m-1"
EOF
chmod 600 "$ROOT/config.toml"

# keyed: its first stage is a script that waits for approval; its second
# stage's provider needs LEVTEST_SECRET_KEY, resolved when the run is built
mkdir -p work keyed plain
cat >keyed/agent.leviath <<'EOF'
[agent]
name = "keyed"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
[stages.later]
model = { provider = "keyed", model = "m-1" }
EOF
cat >keyed/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "echo ran >> keyed.txt" }
[[turn]]
text = "done"
EOF
mkdir -p plain
sed -e 's/"keyed"/"plain"/' -e '/^\[stages.later\]/,$d' keyed/agent.leviath >plain/agent.leviath
sed 's/keyed.txt/plain.txt/' keyed/turns.toml >plain/turns.toml

test_expect_success 'a run submitted with a key in its environment' '
	"$LEV" daemon start >/dev/null &&
	(cd work && setsid -w "$LEV" run ../keyed --detach >../k 2>/dev/null) &&
	(cd work && setsid -w "$LEV" run ../plain --detach >../p 2>/dev/null) &&
	wait_for status_is "$(cat k)" "waiting: tool approval" &&
	wait_for status_is "$(cat p)" "waiting: tool approval"
'

test_expect_success 'lev.db holds no byte of the key; the plain variable is there (the twin)' '
	! in_db "$SECRET" &&
	in_db "$PLAIN" &&
	kept_request "$(cat k)" >kept &&
	grep -qx "env LEVTEST_PLAIN" kept &&
	grep -qx "env LEVIATH_HOME" kept &&
	! grep -qx "env LEVTEST_SECRET_KEY" kept &&
	grep -qx "withheld LEVTEST_SECRET_KEY" kept
'

test_expect_success 'kill -9 of the daemon and a restart without the key' '
	dpid=$(daemon_pid) && kp=$(field "$(cat k)" pid) && pp=$(field "$(cat p)" pid) &&
	kill -9 "$dpid" && wait_for gone "$dpid" && wait_for gone "$kp" && wait_for gone "$pp" &&
	! in_db "$SECRET" &&
	(unset LEVTEST_SECRET_KEY; "$LEV" daemon start >/dev/null)
'

test_expect_success 'the resumed run that needs the key fails, naming it and how to go on' '
	wait_for status_is "$(cat k)" error &&
	field "$(cat k)" error >why &&
	grep -q "LEVTEST_SECRET_KEY" why &&
	grep -q "resumed after the daemon stopped" why &&
	grep -q "credentials.toml" why &&
	grep -q "submit the run again" why &&
	grep -q "run $(cat k): resumed without \[\"LEVTEST_SECRET_KEY\"\]" "$ROOT/daemon.log" &&
	test ! -e work/keyed.txt
'

test_expect_success 'the twin: the resumed run that needs no key goes on and finishes' '
	wait_for status_is "$(cat p)" "waiting: tool approval" &&
	"$LEV" respond "$(request_of "$(cat p)")" --approve &&
	wait_for status_is "$(cat p)" complete &&
	test "$(cat work/plain.txt)" = ran
'

test_done
