#!/bin/bash
# lev.db keeps each unfinished run's request to resume it after a crash,
# but not the credential-shaped variables of the client's environment
# (the shell_env filter's rule): the key's bytes are nowhere in lev.db or
# its WAL, while a plain variable is there (the twin: the search could
# find it).  A run resumed after kill -9
# that needs the key it lost fails with a message naming the variable and
# how to go on; a run that needs no key is resumed and finishes.
#
# Secrets by role (issue 26): a variable is secret because a provider's
# api_key_env or an MCP server's ${VAR} names it, not because of its name
# (OPENAI_CREDS, MCP_HDR).  A hostile model echoes both keys into a tool's
# arguments, its own text and (through the command) a tool result: no 8
# bytes of either reach any exit (lev run --follow --json through the daemon and in
# the foreground, the terminal, events.jsonl, audit.jsonl, result.json,
# lev.db as sqlite3 dumps it and its files, daemon.log), the command's
# environment lacks both (even with allow_env_vars naming them), and the
# twin, LEVTEST_TOKEN_COUNT (a secret-looking name, no secret role, in
# allow_env_vars), reaches the command and is shown unredacted.  (The copies
# of lev below a daemon worker, its namespace helper and cells, are not
# proven free of the key here: an outside scan found one copy in each cell
# in some environments; docs/providers.md names it as open.  t4600 proves it
# for lev run --foreground.)
. "$SRC_DIR/tests/lib.sh"

. "$SRC_DIR/tests/daemon-lib.sh"

SECRET=sk-levtest-SECRET-5f3a9c1e7d2b4a68
PLAIN=plain-value-93e1b7-twin
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
	kill -9 "$dpid" && wait_for gone "$dpid" && kill -9 "$kp" "$pp" && wait_for gone "$kp" && wait_for gone "$pp" &&
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

# ---- secrets by role ----------------------------------------------------------
ROLEKEY=rk-ROLE-7c1d9e3a5b2f4680q
HDRKEY=hk-HDR-0a9b8c7d6e5f4321z
TWIN=twin-visible-5e6f7a8b
export OPENAI_CREDS=$ROLEKEY MCP_HDR=$HDRKEY LEVTEST_TOKEN_COUNT=$TWIN

# leaks FILE...: does any 8 consecutive bytes of either key occur in a FILE?
leaks() {
	python3 - "$ROLEKEY" "$HDRKEY" "$@" <<-PY
	import sys
	keys = [k.encode() for k in sys.argv[1:3]]
	wins = {k[i:i + 8] for k in keys for i in range(len(k) - 7)}
	hit = False
	for f in sys.argv[3:]:
	    data = open(f, "rb").read()
	    for w in wins:
	        if w in data:
	            print("%s holds %r" % (f, w), file=sys.stderr)
	            hit = True
	sys.exit(0 if hit else 1)
	PY
}

cat >"$ROOT/config.toml" <<'EOF'
[security]
allow_env_vars = ["LEVTEST_TOKEN_COUNT", "OPENAI_CREDS", "MCP_HDR"]
[tool_permissions]
shell = "allow"
write_file = "allow"
[providers.creds]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "OPENAI_CREDS"
model = "m-1"
[[mcp_servers]]
name = "remote"
url = "http://127.0.0.1:9/mcp"
headers = { Authorization = "Bearer ${MCP_HDR}" }
EOF
chmod 600 "$ROOT/config.toml"
mkdir -p hostile work2
cat >hostile/agent.leviath <<'EOF'
[agent]
name = "hostile"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
[stages.later]
model = { provider = "creds", model = "m-1" }
EOF
cat >hostile/turns.toml <<EOF
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "echo got $ROLEKEY and $HDRKEY; echo twin \$LEVTEST_TOKEN_COUNT; env >seen.txt" }
[[turn]]
text = "the keys are $ROLEKEY and Bearer $HDRKEY"
EOF

test_expect_success 'secret by role: a hostile model echoes the keys (daemon, --json)' '
	(cd work2 && "$LEV" run --follow ../hostile --json >../json.out 2>../json.err;
	 test -s ../json.out) &&
	grep -q "\"event\": *\"tool_result\"" json.out &&
	grep -q "\[redacted\]" json.out
'

test_expect_success 'secret by role: the terminal, and the foreground run' '
	(cd work2 && "$LEV" run --follow ../hostile >../term.out 2>../term.err;
	 "$LEV" run --foreground ../hostile --json >../fg.out 2>../fg.err;
	 "$LEV" run --foreground ../hostile >../fgterm.out 2>../fgterm.err;
	 test -s ../fg.out) &&
	grep -q "\[redacted\]" fg.out
'

test_expect_success 'secret by role: no 8 bytes of either key at any exit' '
	sqlite3 "$ROOT/lev.db" .dump >db.dump &&
	test -s db.dump &&
	! leaks json.out json.err term.out term.err fg.out fg.err fgterm.out fgterm.err \
		db.dump "$ROOT"/lev.db* "$ROOT/daemon.log" \
		$(find "$ROOT/runs" -type f)
'

test_expect_success 'secret by role: lev.db keeps neither variable, names both as withheld' '
	cat >>"$ROOT/config.toml" <<-EOF &&
	[agent_tool_permissions.waiter]
	shell = "ask"
	EOF
	mkdir -p waiter &&
	sed "s/\"hostile\"/\"waiter\"/" hostile/agent.leviath >waiter/agent.leviath &&
	cp hostile/turns.toml waiter/ &&
	(cd work2 && setsid -w "$LEV" run ../waiter --detach >../w 2>/dev/null) &&
	wait_for status_is "$(cat w)" "waiting: tool approval" &&
	kept_request "$(cat w)" >kept &&
	grep -q "^env LEVIATH_HOME$" kept &&
	! grep -q "^env OPENAI_CREDS$" kept &&
	! grep -q "^env MCP_HDR$" kept &&
	grep -q "^withheld OPENAI_CREDS$" kept &&
	grep -q "^withheld MCP_HDR$" kept &&
	! leaks "$ROOT"/lev.db*
'

test_expect_success 'secret by role: commands never inherit them, even allowed; the twin passes' '
	test -s work2/seen.txt &&
	! grep -q "^OPENAI_CREDS=" work2/seen.txt &&
	! grep -q "^MCP_HDR=" work2/seen.txt &&
	! leaks work2/seen.txt &&
	grep -qx "LEVTEST_TOKEN_COUNT=$TWIN" work2/seen.txt &&
	grep -q "twin $TWIN" json.out &&
	grep -q "twin $TWIN" fg.out
'

test_done
