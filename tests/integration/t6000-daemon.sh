#!/bin/bash
# The daemon: lev daemon start|status|stop, lev run --detach, ps, respond
# from a second process, result, logs, cancel; a worker killed with -9; the
# control socket's checks (SO_PEERCRED, the size limit, malformed frames).
. "$SRC_DIR/tests/lib.sh"

# no controlling terminal, as every run test
lev() {
	setsid -w "$LEV" "$@"
}

. "$SRC_DIR/tests/daemon-lib.sh"

# raw PYTHON: run PYTHON with `frame(obj_or_bytes)`, `conn()` and `recv(s)` defined
raw() {
	python3 -c '
import json, os, socket, struct, sys
SOCK = os.environ["SOCK"]
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(SOCK)
    s.settimeout(30)
    return s
def frame(o):
    b = o if isinstance(o, bytes) else json.dumps(o).encode()
    return struct.pack(">I", len(b)) + b
def recv(s):
    h = b""
    while len(h) < 4:
        c = s.recv(4 - len(h))
        if not c:
            return None
        h += c
    n = struct.unpack(">I", h)[0]
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            return None
        b += c
    return json.loads(b)
'"$1"
}
export SOCK

mkdir -p work
echo "hello" >work/hello.txt

# an agent that reads a file, then appends a line with the shell (asks)
mkdir -p asker
cat >asker/agent.leviath <<'EOF'
[agent]
name = "asker"

[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["read_file", "shell"]
system_prompt = "test"
EOF
cat >asker/turns.toml <<'EOF'
[[turn]]
text = "looking"
[[turn.call]]
tool = "read_file"
args = { path = "hello.txt" }
[[turn.call]]
tool = "shell"
args = { command = "echo \"line [$DAEMON_ONLY_VAR][$CLIENT_VAR]\" >> appended.txt" }

[[turn]]
text = "all done"
EOF

test_expect_success 'no daemon: status says so and exits 1, ps fails with a clear message' '
	test_expect_code 1 "$LEV" daemon status >out &&
	grep -q "^not running" out &&
	test_must_fail "$LEV" ps 2>err &&
	grep -q "no daemon is running" err
'

test_control DAEMON 'daemon start: the socket answers, 0600 in a 0700 data root' '
	DAEMON_ONLY_VAR=from-daemon "$LEV" daemon start >out &&
	grep -q "daemon started" out &&
	"$LEV" daemon status >out &&
	grep -q "^running: pid [0-9]*, 0 run(s)" out &&
	test -S "$SOCK" && test "$(stat -c %a "$SOCK")" = 600 &&
	test "$(stat -c %a "$ROOT")" = 700
'

test_expect_success DAEMON 'a second daemon is refused while one runs' '
	"$LEV" daemon start >out && grep -q "already running" out &&
	test_must_fail "$LEV" daemon 2>err &&
	grep -q "a daemon is already running (pid [0-9]*)" err &&
	"$LEV" daemon status
'

test_expect_success DAEMON 'run --detach prints the id and returns; the run waits for an approval' '
	CLIENT_VAR=from-client lev run asker --task go --workdir work --detach >id 2>err &&
	assert_one_line id &&
	id=$(cat id) &&
	wait_for status_is "$id" "waiting: tool approval" &&
	"$LEV" ps >ps &&
	grep -q "^RUN  *AGENT  *STATUS  *STAGE  *ITER  *TOOLS  *READS  *AGE$" ps &&
	grep -q "^$id  *asker  *waiting: tool approval  *main  *1  *1  *-  *[0-9]*s$" ps &&
	grep -q "^1 run needs an answer: lev respond$" ps &&
	test ! -e work/appended.txt
'

test_expect_success DAEMON 'ps --json has runs, finished and health' '
	"$LEV" ps --json >ps.json &&
	python3 - ps.json "$(cat id)" <<-PY
	import json, sys
	d = json.load(open(sys.argv[1]))
	assert set(d) == {"runs", "finished", "health"}, d.keys()
	r = [r for r in d["runs"] if r["id"] == sys.argv[2]][0]
	assert r["status"] == "waiting: tool approval" and r["agent"] == "asker", r
	assert r["read_paths"] == {"granted": 0, "declared": 0, "grants": []}, r
	assert d["health"]["waiting"] == 1 and d["health"]["runs"] == 1, d["health"]
	PY
'

test_expect_success DAEMON 'respond from a second process lists the request and approves it' '
	id=$(cat id) &&
	"$LEV" respond >list &&
	grep -q "^q[0-9]*  run $id (agent .asker.), stage .main.$" list &&
	grep -q "tool approval: Allow tool call: .shell." list &&
	q=$(sed -n "s/^\(q[0-9]*\) .*/\1/p" list) &&
	"$LEV" respond --json | python3 -c "import json,sys; r=json.load(sys.stdin); assert len(r)==1 and r[0][\"lev_kind\"]==\"permission\" and r[0][\"kind\"]==\"tool_approval\", r" &&
	test_must_fail "$LEV" respond "$q" --choice 1 2>err &&
	grep -q "a tool approval takes --approve or --deny" err &&
	"$LEV" respond "$q" --approve &&
	wait_for status_is "$id" complete &&
	"$LEV" result "$id" >out &&
	test "$(cat out)" = "all done"
'

test_expect_success DAEMON 'the approved command ran once, with the client environment, not the daemon one' '
	test "$(cat work/appended.txt)" = "line [][from-client]"
'

test_expect_success DAEMON 'the journal in lev.db (WAL) holds both calls, done' '
	python3 - "$ROOT/lev.db" "$(cat id)" <<-PY
	import sqlite3, sys
	db = sqlite3.connect(sys.argv[1])
	assert db.execute("pragma journal_mode").fetchone()[0] == "wal"
	rows = db.execute("select tool, state, ok from journal where run = ? order by started",
	                  (sys.argv[2],)).fetchall()
	assert rows == [("read_file", "done", 1), ("shell", "done", 1)], rows
	st = db.execute("select status, tools from runs where id = ?", (sys.argv[2],)).fetchone()
	assert st == ("complete", 2), st
	PY
'

test_expect_success DAEMON 'logs prints the run events (its record is named as the run); result --json' '
	id=$(cat id) &&
	test "$(field "$id" record)" = "$ROOT/runs/$id" &&
	"$LEV" logs "$id" >events &&
	head -n 1 events | grep -q "\"event\":\"run_started\"" &&
	tail -n 1 events | grep -q "\"event\":\"run_finished\"" &&
	"$LEV" logs -f "$id" >events2 && test_cmp events events2 &&
	"$LEV" result --json "$id" >res &&
	python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r[\"status\"]==\"complete\" and r[\"result\"]==\"all done\", r" res
'

test_expect_success DAEMON 'a denial through respond: the command never runs' '
	rm -f work/appended.txt &&
	lev run asker --task go --workdir work --detach >id2 2>/dev/null &&
	id=$(cat id2) &&
	wait_for status_is "$id" "waiting: tool approval" &&
	q=$("$LEV" respond --json | python3 -c "import json,sys; print(json.load(sys.stdin)[0][\"id\"])") &&
	"$LEV" respond "$q" --deny &&
	wait_for status_is "$id" complete &&
	test ! -e work/appended.txt &&
	test_must_fail "$LEV" respond "$q" --approve 2>err &&
	grep -q "no open request" err
'

test_expect_success DAEMON 'cancel: a waiting run ends cancelled; result says so and exits 1' '
	lev run asker --task go --workdir work --detach >id3 2>/dev/null &&
	id=$(cat id3) &&
	wait_for status_is "$id" "waiting: tool approval" &&
	"$LEV" cancel "$id" >out && grep -q "cancelling run $id" out &&
	wait_for status_is "$id" cancelled &&
	test_must_fail "$LEV" result "$id" 2>err &&
	grep -q "run $id was cancelled" err &&
	test_must_fail "$LEV" cancel "$id" 2>err &&
	grep -q "has already ended (cancelled)" err &&
	test ! -e work/appended.txt
'

test_expect_success DAEMON 'kill -9 of a worker: its run is marked failed, the daemon goes on' '
	lev run asker --task go --workdir work --detach >id4 2>/dev/null &&
	id=$(cat id4) &&
	wait_for status_is "$id" "waiting: tool approval" &&
	pid=$(field "$id" pid) && test -n "$pid" &&
	kill -9 "$pid" &&
	wait_for status_is "$id" "error: the run.s worker was killed by signal 9" &&
	test "$(field "$id" error)" = "the run'"'"'s worker was killed by signal 9 (Killed)" &&
	"$LEV" daemon status >out && grep -q "^running: pid" out &&
	"$LEV" ps >ps && grep -q "^$id  *asker  *error: the run" ps &&
	"$LEV" respond >list && grep -q "^no open requests$" list
'

mkdir -p big
cat >big/agent.leviath <<'EOF'
[agent]
name = "big"

[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["write_file"]
system_prompt = "test"
EOF
{
	printf '[[turn]]\n[[turn.call]]\ntool = "write_file"\n'
	printf 'args = { path = "big.txt", content = "%s" }\n' "$(head -c 1500000 /dev/zero | tr "\0" a)"
	printf '[[turn]]\ntext = "big done"\n'
} >big/turns.toml

test_expect_success DAEMON 'an event larger than a frame: the record has it whole, the daemon cut' '
	lev run big --task go --workdir work --detach --allow write_file >idb 2>/dev/null &&
	id=$(cat idb) &&
	wait_for status_is "$id" complete &&
	test "$("$LEV" result "$id")" = "big done" &&
	test "$(wc -c <work/big.txt)" = 1500000 &&
	python3 - "$ROOT/lev.db" "$id" "$ROOT/runs/$id/events.jsonl" <<-PY
	import json, sqlite3, sys
	db = sqlite3.connect(sys.argv[1])
	(state, ok, args), = db.execute("select state, ok, args from journal where run = ?",
	                                (sys.argv[2],)).fetchall()
	assert state == "done" and ok == 1, (state, ok)
	assert args == "\"(cut: too long)\"", args
	ev = [json.loads(l) for l in open(sys.argv[3])]
	c = [e for e in ev if e["event"] == "tool_call"][0]
	assert len(c["args"]["content"]) == 1500000, len(c["args"]["content"])
	PY
'

test_expect_success DAEMON 'a good frame gets its answer (the twin of the refusals below)' '
	raw "
s = conn()
s.sendall(frame({\"v\": 1, \"op\": \"ping\"}))
r = recv(s)
assert r[\"ok\"] is True and r[\"pid\"] > 0, r
"
'

test_expect_success DAEMON 'a 10 MiB message is refused: that connection closes, others are served' '
	raw "
a = conn()
a.sendall(frame({\"v\": 1, \"op\": \"ping\"}))
assert recv(a)[\"ok\"]
b = conn()
big = b\"{\\\"v\\\":1,\\\"op\\\":\\\"ping\\\",\\\"x\\\":\\\"\" + b\"x\" * (10 << 20) + b\"\\\"}\"
try:
    b.sendall(frame(big))
except (BrokenPipeError, ConnectionResetError):
    pass
try:
    assert recv(b) is None
except ConnectionResetError:
    pass
a.sendall(frame({\"v\": 1, \"op\": \"ping\"}))
assert recv(a)[\"ok\"]
" &&
	grep -q "closed a connection: a message of 10485[0-9]* bytes is over the limit of 1048576" "$ROOT/daemon.log" &&
	"$LEV" daemon status
'

test_expect_success DAEMON 'malformed frames close only their own connection' '
	raw "
a = conn()
for bad in [b\"nojso\", b\"[1, 2]\", frame({\"v\": 2, \"op\": \"ping\"})[4:], frame({\"op\": \"ping\"})[4:]]:
    b = conn()
    b.sendall(frame(bad))
    assert recv(b) is None, bad
    a.sendall(frame({\"v\": 1, \"op\": \"ping\"}))
    assert recv(a)[\"ok\"], bad
" &&
	grep -q "closed a connection: a message is not JSON" "$ROOT/daemon.log" &&
	grep -q "closed a connection: a message is not a JSON object" "$ROOT/daemon.log" &&
	grep -q "closed a connection: protocol version 2 is not 1" "$ROOT/daemon.log" &&
	grep -q "closed a connection: a message without a protocol version" "$ROOT/daemon.log"
'

if [ "$(id -u)" != 0 ]; then
	test_skip "another uid is refused by SO_PEERCRED" "needs root to run a client as another uid"
elif ! command -v setpriv >/dev/null; then
	test_skip "another uid is refused by SO_PEERCRED" "setpriv (util-linux) is not installed"
else
	mkdir -p "$TRASH/bin" && cp "$LEV" "$TRASH/bin/lev" && chmod 755 "$TRASH/bin" "$TRASH/bin/lev"
	# a ping by hand (lev itself refuses a data root opened up: t6097)
	ping_as() {
		"$@" /usr/bin/python3 -c '
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
b = json.dumps({"v": 1, "op": "ping"}).encode()
try:
    s.sendall(struct.pack(">I", len(b)) + b)
    h = s.recv(4)
except OSError:
    h = b""
sys.exit(0 if len(h) == 4 else 3)
' "$SOCK"
	}
	test_expect_success DAEMON 'with the socket opened up, our own uid is still served (the twin)' '
		chmod 711 "$TRASH" "$LEVIATH_HOME" "$ROOT" && chmod 666 "$SOCK" &&
		ping_as env &&
		test_must_fail "$TRASH/bin/lev" ps --json 2>err &&
		grep -q "the data root .* is open to other users (mode 711)" err
	'
	test_expect_success DAEMON 'another uid is refused by SO_PEERCRED itself, and logged' '
		test_expect_code 3 ping_as setpriv --reuid=65534 --regid=65534 --clear-groups &&
		grep -q "refused a connection from uid 65534 (pid [0-9]*): not our uid 0" "$ROOT/daemon.log"
	'
	chmod 700 "$TRASH" "$LEVIATH_HOME" "$ROOT" && chmod 600 "$SOCK"
fi

test_expect_success DAEMON 'daemon stop: the socket is gone, status says not running' '
	"$LEV" daemon stop >out && grep -q "daemon stopped" out &&
	test ! -e "$SOCK" &&
	test_expect_code 1 "$LEV" daemon status >out && grep -q "^not running" out
'

test_expect_success DAEMON 'run --detach with no daemon starts one; the ended runs are still there' '
	rm -f work/appended.txt &&
	lev run asker --task go --workdir work --detach --allow shell --allow write_file >id5 2>err &&
	"$LEV" daemon status >out && grep -q "^running: pid" out &&
	wait_for status_is "$(cat id5)" complete &&
	test "$(cat work/appended.txt)" = "line [][]" &&
	status_is "$(cat id)" complete &&
	status_is "$(cat id3)" cancelled &&
	status_is "$(cat id4)" "error: the run.s worker was killed by signal 9"
'

stop_daemon

test_expect_success 'a socket path longer than sun_path is a clear error, never truncated' '
	long="$TRASH/$(printf "d%.0s" $(seq 120))" &&
	mkdir -p "$long/.leviath" && chmod 700 "$long" "$long/.leviath" &&
	LEVIATH_HOME="$long" test_must_fail "$LEV" daemon 2>err &&
	grep -q "the socket path .* is [0-9]* bytes, longer than the 107 a unix socket allows" err &&
	test -z "$(find "$TRASH" -type s)"
'

test_expect_success 'a data root open to other users is refused' '
	mkdir -p "$TRASH/open/.leviath" && chmod 755 "$TRASH/open/.leviath" &&
	LEVIATH_HOME="$TRASH/open" test_must_fail "$LEV" daemon 2>err &&
	grep -q "is open to other users (mode 755)" err &&
	LEVIATH_HOME="$TRASH/open" test_must_fail "$LEV" daemon start 2>err &&
	grep -q "^lev: error: .*open/.leviath. is open to other users (mode 755)" err &&
	test ! -e "$TRASH/open/.leviath/daemon.sock"
'

test_done
