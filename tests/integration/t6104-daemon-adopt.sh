#!/bin/bash
# A worker outlives its daemon, and a new daemon adopts it (daemon/adopt.h):
# after kill -9 of the daemon alone, a run held in its model request (the
# mock holds the answer until work/go exists) goes on in the same worker
# process (the same pid, seen from outside) and the model is asked exactly
# once; a run waiting on an approval is asked again by the same worker and
# answered with `lev respond` (the same call, the same digest); nothing ran
# twice.  Twin: the worker killed too, the run is resumed from its record
# in a new worker.  Attacks: a process that is not our worker, named by the
# record and listening where adoption looks, is not adopted and is never
# sent the run's secret; a client that does not know the secret cannot
# take over a waiting worker (its approval is not taken).
. "$SRC_DIR/tests/lib.sh"

lev() {
	setsid -w "$LEV" "$@"
}

. "$SRC_DIR/tests/daemon-lib.sh"
export LEV_DAEMON_OLD_WORKER_GRACE=1

mkdir -p work holder asker
python3 - "$PWD/work/go" >script.json <<'EOF'
import json, sys
print(json.dumps({"responses": [
    {"match": "HOLD-ME", "fault": "hold", "until_file": sys.argv[1], "text": "held done"}]}))
EOF
mock_daemon script.json
# the held request outlives a loaded machine's slow steps (never timed)
sed -i "s/^timeout_secs = .*/timeout_secs = 600/" "$ROOT/config.toml"
cat >holder/agent.leviath <<'EOF'
[agent]
name = "holder"
[stages.main]
model = { provider = "mockoa", model = "mock-1" }
system_prompt = "test"
EOF
cat >asker/agent.leviath <<'EOF'
[agent]
name = "asker"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
system_prompt = "test"
EOF
cat >asker/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "echo ran >> approved.txt" }
[[turn]]
text = "asked done"
EOF

requests() {
	if [ -e requests.jsonl ]; then wc -l <requests.jsonl; else echo 0; fi
}

requests_are() {
	test "$(requests)" = "$1"
}

# the open request's digest of RUN
digest_of() {
	"$LEV" respond --json | python3 -c '
import json, sys
print([q for q in json.load(sys.stdin) if q["run"] == sys.argv[1]][0]["digest"])' "$1"
}

test_expect_success 'a run held in its model request, another waiting on an approval' '
	"$LEV" daemon start >/dev/null &&
	lev run holder --task HOLD-ME --workdir work --detach >h &&
	wait_for requests_are 1 &&
	lev run asker --task go --workdir work --detach >q &&
	wait_for status_is "$(cat q)" "waiting: tool approval" &&
	field "$(cat h)" pid >hpid && field "$(cat q)" pid >qpid &&
	test -s hpid && test -s qpid &&
	digest_of "$(cat q)" >digest1 && test -s digest1
'

test_expect_success 'kill -9 of the daemon alone: both workers go on living' '
	crash_daemon &&
	sleep 0.5 &&
	kill -0 "$(cat hpid)" && kill -0 "$(cat qpid)"
'

test_expect_success 'a new daemon adopts them: the same worker processes, not resumed' '
	"$LEV" daemon start >/dev/null &&
	wait_for status_is "$(cat q)" "waiting: tool approval" &&
	test "$(field "$(cat h)" pid)" = "$(cat hpid)" &&
	test "$(field "$(cat q)" pid)" = "$(cat qpid)" &&
	test -z "$(field "$(cat h)" restarts)" &&
	test -z "$(field "$(cat q)" restarts)"
'

test_expect_success 'the held run completes in its worker, the model asked exactly once' '
	touch work/go &&
	wait_for status_is "$(cat h)" complete &&
	test "$("$LEV" result "$(cat h)")" = "held done" &&
	test "$(requests)" = 1 &&
	! grep -q "\"event\":\"run_resumed\"" "$ROOT/runs/$(cat h)/events.jsonl" ||
	{ date; ls -la --time-style=full-iso work; cat mock.err; cat "$ROOT"/daemon.log; cut -c1-300 "$ROOT/runs/$(cat h)/events.jsonl"; false; }
'

test_expect_success 'the approval is asked again for the same call and answered with lev respond' '
	test "$(digest_of "$(cat q)")" = "$(cat digest1)" &&
	"$LEV" respond "$(request_of "$(cat q)")" --approve &&
	wait_for status_is "$(cat q)" complete &&
	test "$("$LEV" result "$(cat q)")" = "asked done" &&
	test "$(cat work/approved.txt)" = ran
'

test_expect_success 'twin: the worker killed too, the run is resumed from its record' '
	rm -f work/approved.txt &&
	lev run asker --task go --workdir work --detach >q2 &&
	wait_for status_is "$(cat q2)" "waiting: tool approval" &&
	field "$(cat q2)" pid >q2pid &&
	crash "$(cat q2)" &&
	"$LEV" daemon start >/dev/null &&
	wait_for status_is "$(cat q2)" "waiting: tool approval" &&
	test "$(field "$(cat q2)" restarts)" = 1 &&
	test "$(field "$(cat q2)" pid)" != "$(cat q2pid)" &&
	"$LEV" respond "$(request_of "$(cat q2)")" --approve &&
	wait_for status_is "$(cat q2)" complete &&
	test "$(cat work/approved.txt)" = ran
'

mkdir -p pauser
cat >pauser/agent.leviath <<'EOF'
[agent]
name = "pauser"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell", "ask_user_confirm"]
EOF
cat >pauser/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "ask_user_confirm"
args = { question = "Go on?" }
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "echo paused-run >> paused.txt" }
[[turn]]
text = "pauser done"
EOF

test_expect_success 'a paused run: adopted paused, lev resume goes on in the same worker' '
	lev run pauser --task go --workdir work --detach --allow shell --allow write_file >p &&
	wait_for status_is "$(cat p)" "waiting: user prompt" &&
	"$LEV" pause "$(cat p)" >/dev/null &&
	"$LEV" respond "$(request_of "$(cat p)")" --approve &&
	wait_for status_is "$(cat p)" paused &&
	field "$(cat p)" pid >ppid &&
	crash_daemon &&
	"$LEV" daemon start >/dev/null &&
	wait_for status_is "$(cat p)" paused &&
	test "$(field "$(cat p)" pid)" = "$(cat ppid)" &&
	test ! -e work/paused.txt &&
	"$LEV" resume "$(cat p)" >/dev/null &&
	wait_for status_is "$(cat p)" complete &&
	test "$(cat work/paused.txt)" = paused-run &&
	test -z "$(field "$(cat p)" restarts)" ||
	{ grep "$(cat p)" "$ROOT"/daemon.log; cut -c1-150 "$ROOT/runs/$(cat p)/events.jsonl"; false; }
'

# a frame of the daemon's protocol: 4 bytes of length, then the JSON
cat >frame.py <<'EOF'
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
try:
    for m in sys.argv[2:]:
        b = m.encode()
        s.sendall(struct.pack(">I", len(b)) + b)
    s.settimeout(1)
    print("got", s.recv(100) or "nothing")
except OSError:
    print("nothing")
EOF

test_expect_success 'attack: a client without the secret cannot take a waiting worker over' '
	rm -f work/approved.txt &&
	lev run asker --task go --workdir work --detach >q3 &&
	wait_for status_is "$(cat q3)" "waiting: tool approval" &&
	crash_daemon &&
	wait_for test -S "$ROOT/adopt/$(cat q3)" &&
	python3 frame.py "$ROOT/adopt/$(cat q3)" \
		"{\"v\":1,\"op\":\"adopt\",\"secret\":\"00000000000000000000000000000000\"}" \
		"{\"v\":1,\"op\":\"answer\",\"answer\":\"once\"}" >stranger &&
	grep -q "^nothing\$" stranger && ! grep -q "^got" stranger &&
	test ! -e work/approved.txt &&
	"$LEV" daemon start >/dev/null &&
	wait_for status_is "$(cat q3)" "waiting: tool approval" &&
	test -z "$(field "$(cat q3)" restarts)" &&
	test ! -e work/approved.txt &&
	"$LEV" respond "$(request_of "$(cat q3)")" --approve &&
	wait_for status_is "$(cat q3)" complete &&
	test "$(cat work/approved.txt)" = ran
'

# a stranger listening where adoption looks, named by the record: a python
# process (not lev's executable) whose command line says __worker
cat >fake.py <<'EOF'
import os, socket, sys
path, log = sys.argv[1], sys.argv[2]
try:
    os.unlink(path)
except OSError:
    pass
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(4)
open(log + ".ready", "w").close()
while True:
    c, _ = s.accept()
    c.settimeout(2)
    try:
        data = c.recv(4096)
    except OSError:
        data = b""
    with open(log, "ab") as f:
        f.write(b"conn " + data + b"\n")
EOF

test_expect_success 'attack: a process that is not our worker is not adopted nor sent the secret' '
	rm -f work/approved.txt fake.log fake.log.ready &&
	lev run asker --task go --workdir work --detach >q4 &&
	wait_for status_is "$(cat q4)" "waiting: tool approval" &&
	field "$(cat q4)" pid >q4pid &&
	crash "$(cat q4)" &&
	{ python3 fake.py "$ROOT/adopt/$(cat q4)" "$PWD/fake.log" __worker & } &&
	fake=$! && echo "$fake" >fakepid &&
	wait_for test -e fake.log.ready &&
	python3 - "$ROOT/lev.db" "$(cat q4)" "$fake" <<-PY &&
	import json, sqlite3, sys
	db = sqlite3.connect(sys.argv[1])
	doc = json.loads(db.execute("select doc from runs where id = ?", (sys.argv[2],)).fetchone()[0])
	doc["pid"] = int(sys.argv[3])
	db.execute("update runs set doc = ? where id = ?", (json.dumps(doc), sys.argv[2]))
	db.commit()
	PY
	"$LEV" daemon start >/dev/null &&
	wait_for status_is "$(cat q4)" "waiting: tool approval" &&
	test "$(field "$(cat q4)" restarts)" = 1 &&
	test "$(field "$(cat q4)" pid)" != "$fake" &&
	! grep -q secret fake.log 2>/dev/null &&
	"$LEV" respond "$(request_of "$(cat q4)")" --approve &&
	wait_for status_is "$(cat q4)" complete &&
	test "$(cat work/approved.txt)" = ran
'
test -s fakepid && kill "$(cat fakepid)" 2>/dev/null

test_done
