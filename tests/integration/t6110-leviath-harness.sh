#!/bin/bash
# Leviath's benchmark harness, played by our own script (t6110-leviath-harness.py):
# its commands and files (lev run --json --count, runs/<id>/meta.json,
# daemon.pid, pause/resume/cancel, kill -9 of the daemon and a restart).
. "$SRC_DIR/tests/lib.sh"
. "$SRC_DIR/tests/daemon-lib.sh"

AGENTS="$ROOT/agents"
mkdir -p "$AGENTS/quick" "$AGENTS/slow" "$LEVIATH_HOME/work"
cat >"$AGENTS/quick/agent.leviath" <<'EOF2'
[agent]
name = "quick"

[context.regions.task]
seed = "task_input"

[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["read_file"]
system_prompt = "test"
EOF2
cat >"$AGENTS/quick/turns.toml" <<'EOF2'
[[turn]]
text = "looking"
[[turn.call]]
tool = "read_file"
args = { path = "note.txt" }

[[turn]]
text = "quick done"
EOF2
echo note >"$LEVIATH_HOME/work/note.txt"
sed 's/"quick"/"slow"/; s/"read_file"/"shell"/' "$AGENTS/quick/agent.leviath" >"$AGENTS/slow/agent.leviath"
# six turns of a command that takes a moment each, so pause, cancel and a
# crash land mid-run (the waits are bounded, nothing is timed)
for i in 1 2 3 4 5 6; do
	printf '[[turn]]\ntext = "step %s"\n[[turn.call]]\ntool = "shell"\nargs = { command = "sleep 1" }\n\n' $i
done >"$AGENTS/slow/turns.toml"
printf '[[turn]]\ntext = "slow done"\n' >>"$AGENTS/slow/turns.toml"
cat >"$ROOT/config.toml" <<'EOF2'
[sandbox]
kind = "none"
EOF2
chmod 600 "$ROOT/config.toml"

test_expect_success 'the harness: spawn --json --count, poll meta.json, pause/resume/cancel, kill -9 and restart' '
	python3 "$SRC_DIR/tests/integration/t6110-leviath-harness.py" "$LEV" "$LEVIATH_HOME" >log 2>&1 ||
	{ cat log; cat "$ROOT/daemon.log"; false; } &&
	cat log &&
	! grep -q "^not ok" log
'

test_done
