#!/bin/bash
# The one reader of a run's record (src/lev/runevents.c, which lev stages,
# lev context, lev dash and lev agent-client's replay and session/load go
# through), proven with lev stages from outside: an event line over its bound
# (8 MiB) is skipped and every other line still read, where the same record
# without it reads the same (the twin); an events.jsonl that is a symbolic
# link is refused, never followed, where the real file reads (the twin); an
# id that is not a run id names no path.
. "$SRC_DIR/tests/lib.sh"
. "$SRC_DIR/tests/daemon-lib.sh"

mkdir -p work two
cat >two/agent.leviath <<'EOF'
[agent]
name = "two"
[stages.a]
model = { provider = "script", script = "turns.toml" }
[stages.a.transitions.b]
hint = "next"
[stages.b]
model = { provider = "script", script = "turns.toml" }
EOF
cat >two/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "transition"
args = { target = "b" }
[[turn]]
text = "done in b"
EOF

# stages_of RUN: the stages lev stages --json lists, one line
stages_of() {
	"$LEV" stages --json "$1" | python3 -c '
import json, sys
print(" ".join(r["stage"] + ":" + r["status"] for r in json.load(sys.stdin)["stages"]))'
}

test_expect_success 'set-up: a finished two-stage run and its ledger' '
	setsid -w "$LEV" run --foreground ./two --task t --workdir work >out 2>err &&
	run=$(sed -n "s/^lev: run \([^ ]*\) complete.*/\1/p" err) && test -n "$run" &&
	echo "$run" >runid &&
	test -f "$ROOT/runs/$run/events.jsonl" &&
	stages_of "$run" >want &&
	test "$(cat want)" = "a:complete b:complete"
'

test_expect_success 'a copy of the record reads the same (the twin of the long line)' '
	run=$(cat runid) &&
	mkdir "$ROOT/runs/copy-1" &&
	cp "$ROOT/runs/$run/events.jsonl" "$ROOT/runs/copy-1/events.jsonl" &&
	test "$(stages_of copy-1)" = "$(cat want)"
'

test_expect_success 'an event line over the bound is skipped; every line around it is read' '
	run=$(cat runid) &&
	mkdir "$ROOT/runs/long-1" &&
	python3 - "$ROOT/runs/$run/events.jsonl" "$ROOT/runs/long-1/events.jsonl" <<-PY &&
	import json, sys
	lines = open(sys.argv[1]).read().splitlines(True)
	# a stage_started for a stage that never ran, 9 MiB long, in the middle
	big = json.dumps({"event": "stage_started", "stage": "x" * (9 << 20)}) + "\n"
	open(sys.argv[2], "w").write("".join(lines[:2] + [big] + lines[2:]))
	PY
	test "$(stages_of long-1)" = "$(cat want)"
'

test_expect_success 'an events.jsonl that is a symbolic link is refused, not followed' '
	run=$(cat runid) &&
	mkdir "$ROOT/runs/link-1" &&
	ln -s "$ROOT/runs/$run/events.jsonl" "$ROOT/runs/link-1/events.jsonl" &&
	test_must_fail "$LEV" stages link-1 >out 2>err &&
	test ! -s out &&
	test "$(wc -l <err)" = 1 &&
	grep -q "cannot read the record of run .link-1." err
'

test_expect_success 'an id that is not a run id names no path; an unknown one says so' '
	test_must_fail "$LEV" stages ../link-1 2>err &&
	grep -q "^lev: error: .\.\./link-1. is not a run id" err &&
	test_must_fail "$LEV" stages no-such-run 2>err &&
	grep -q "no run .no-such-run. here" err
'

test_done
