#!/bin/bash
# The daemon's journal is batched (one commit per turn of its loop), yet a
# call with effects is committed before it runs: while the command is held
# running, its own row is in lev.db, dispatched.  Reads do not wait for
# their row, and every one is in the journal all the same while the daemon
# goes on.  ps --json (passed through unparsed) lists every run.
. "$SRC_DIR/tests/lib.sh"

. "$SRC_DIR/tests/daemon-lib.sh"

# the journal keys a call by lev's id (call_N: its place in the run), not
# by the id the provider gave it ("look-1" below is only its label)

cat >"$ROOT/config.toml" <<'EOF'
[tool_permissions]
shell = "allow"
write_file = "allow"
EOF
chmod 600 "$ROOT/config.toml"

mkdir -p work looker reader
echo "hello" >work/hello.txt
# kind none: the command runs inside the host fence, which masks lev's data
# root and so lev.db (docs/sandbox.md); the test reads the journal from
# outside while the command is held running: it says it started, then waits
# on the fifo 'gate' until the test has looked
mkfifo work/gate
cat >looker/agent.leviath <<'EOF'
[agent]
name = "looker"
[sandbox]
kind = "none"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["read_file", "shell"]
EOF
cat >looker/turns.toml <<EOF
[[turn]]
[[turn.call]]
tool = "read_file"
args = { path = "hello.txt" }
[[turn.call]]
id = "look-1"
tool = "shell"
args = { command = "echo started >started.txt && read -r go <gate && echo \"\$go\" >released.txt" }
[[turn]]
text = "done"
EOF
cat >state.py <<'EOF'
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
row = db.execute("select tool, state from journal where call_id = ?", (sys.argv[2],)).fetchone()
print("%s %s" % row if row else "no row")
EOF

# the benign twin: forty reads, none waiting for its row
{
	for t in 1 2 3 4; do
		echo "[[turn]]"
		for c in 1 2 3 4 5 6 7 8 9 10; do
			printf '[[turn.call]]\nid = "r%s-%s"\ntool = "read_file"\nargs = { path = "hello.txt" }\n' "$t" "$c"
		done
	done
	printf '[[turn]]\ntext = "done"\n'
} >reader/turns.toml
cat >reader/agent.leviath <<'EOF'
[agent]
name = "reader"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["read_file"]
EOF

journal() {
	python3 - "$ROOT/lev.db" "$1" <<-PY
	import sqlite3, sys
	db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
	for r in db.execute("select tool, state, ok from journal where run = ? order by started",
	                    (sys.argv[2],)):
	    print("%s %s %s" % r)
	PY
}

test_expect_success 'a shell call has its journal row committed before it runs (read while it is held)' '
	"$LEV" daemon start >/dev/null &&
	setsid -w "$LEV" run looker --workdir work --detach >id 2>/dev/null &&
	wait_for test -s work/started.txt &&
	{ python3 state.py "$ROOT/lev.db" call_2 >seen.txt; seen=$?; echo go >work/gate; } &&
	test $seen = 0 &&
	test "$(cat seen.txt)" = "shell dispatched" &&
	wait_for status_is "$(cat id)" complete &&
	test "$(cat work/released.txt)" = go &&
	journal "$(cat id)" >rows &&
	printf "read_file done 1\nshell done 1\n" >expect &&
	test_cmp expect rows
'

# RUN has N read_file rows journalled done (asked again at every try of wait_for)
reads_done() {
	test "$(journal "$1" | grep -c "^read_file done 1$")" = "$2"
}

test_expect_success 'forty reads: every one journalled done while the daemon runs on' '
	setsid -w "$LEV" run reader --workdir work --detach >id2 2>/dev/null &&
	wait_for status_is "$(cat id2)" complete &&
	wait_for reads_done "$(cat id2)" 40 &&
	test "$(journal "$(cat id2)" | wc -l)" = 40 &&
	test "$(field "$(cat id2)" tools)" = 40 &&
	"$LEV" daemon status >/dev/null
'

test_expect_success 'ps --json and ps --all --json list every run, as JSON with three keys' '
	for i in 1 2 3 4 5 6 7 8; do
		setsid -w "$LEV" run reader --workdir work --detach >>ids 2>/dev/null || return 1
	done &&
	for i in $(cat ids); do wait_for status_is "$i" complete || return 1; done &&
	"$LEV" ps --json >ps.json &&
	"$LEV" ps --all --json >all.json &&
	python3 - ps.json all.json <<-PY
	import json, sys
	for f in sys.argv[1:]:
	    d = json.load(open(f))
	    assert set(d) == {"runs", "finished", "health"}, d.keys()
	    assert d["runs"] == [] and len(d["finished"]) == 10, len(d["finished"])
	    assert all(r["status"] == "complete" for r in d["finished"])
	    assert d["health"]["runs"] == 0, d["health"]
	PY
'

test_expect_success 'the journal survives a stop and a new start (WAL, committed)' '
	"$LEV" daemon stop >/dev/null &&
	test "$(journal "$(cat id2)" | grep -c "^read_file done 1$")" = 40 &&
	"$LEV" daemon start >/dev/null &&
	"$LEV" ps --all --json | python3 -c "import json,sys; assert len(json.load(sys.stdin)[\"finished\"]) == 10"
'

test_done
