#!/bin/bash
# A burst of spawns: every spawn the daemon acknowledged (lev run --detach
# printed its id) is in lev.db, listed exactly once by lev ps --all, with
# its own agent and task, also when the daemon is killed with -9 in the
# middle of the burst and started again.  It would catch an acknowledgement
# sent before its run's row is committed (a group commit that answers
# first), a run written twice, a summary of another run.  The benign twin:
# the same burst with no kill, every run acknowledged and listed once.
. "$SRC_DIR/tests/lib.sh"
. "$SRC_DIR/tests/daemon-lib.sh"

N=24
mkdir -p work quick
cat >quick/agent.leviath <<-EOT
[agent]
name = "quick"
[stages.main]
model = { provider = "script", script = "turns.toml" }
EOT
printf '[[turn]]\ntext = "done"\n' >quick/turns.toml

# burst DIR: N lev run --detach at once, each id (when acknowledged) in DIR/i
burst() {
	mkdir -p "$1"
	for i in $(seq "$N"); do
		"$LEV" run ./quick --workdir work --task "task-$i" --detach >"$1/$i" 2>/dev/null &
	done
}

# acked DIR K: at least K spawns of DIR acknowledged so far (read at each call)
acked() {
	test "$(cat "$1"/* 2>/dev/null | wc -l)" -ge "$2"
}

# listed DIR: each acknowledged id of DIR listed once, with its agent and task's title
listed() {
	"$LEV" ps --all --json >ps.json &&
	python3 - "$1" ps.json <<-'PY'
	import json, os, sys
	d, ps = sys.argv[1], json.load(open(sys.argv[2]))
	runs = ps["runs"] + ps["finished"]
	ids = [r["id"] for r in runs]
	assert len(ids) == len(set(ids)), ids
	by = {r["id"]: r for r in runs}
	acked = 0
	for i in os.listdir(d):
	    rid = open(os.path.join(d, i)).read().strip()
	    if not rid:
	        continue
	    acked += 1
	    assert rid in by, (rid, sorted(ids))
	    assert by[rid]["agent"] == "quick", by[rid]
	    assert by[rid]["title"] == "task-" + i, (by[rid].get("title"), i)
	print(acked)
	PY
}

test_expect_success 'a burst with no kill: every spawn acknowledged, each listed once' '
	"$LEV" daemon start >/dev/null &&
	burst calm &&
	wait &&
	test "$(listed calm)" = "$N"
'

test_expect_success 'kill -9 mid-burst: no acknowledged spawn is lost' '
	burst storm &&
	wait_for acked storm 4 &&
	kill -9 "$(daemon_pid)" &&
	wait &&
	"$LEV" daemon start >/dev/null &&
	n=$(listed storm) &&
	echo "acknowledged: $n of $N" &&
	test "$n" -ge 4 &&
	listed calm >/dev/null
'

test_done
