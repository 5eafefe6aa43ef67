#!/bin/bash
# lev run AGENT with no task opens the editor on a commented template, as
# Leviath's lev run does: $VISUAL, then $EDITOR; '#' lines are stripped; an
# empty result cancels (non-zero, no run made).  Stdin must be a terminal
# (each run here is on a pseudo-terminal, tests/helpers/on-pty.py); without
# one, whatever $EDITOR says, one line says how to give the task.
. "$SRC_DIR/tests/lib.sh"

lev() {
	setsid -w "$LEV" "$@"
}

. "$SRC_DIR/tests/daemon-lib.sh"

cat >script.json <<'EOF2'
{"responses": [{"match": "count the notes in the drawer", "text": "there are three"}]}
EOF2
mock_daemon script.json
mkdir -p work noask
mock_agent ag
# takes no task: no editor opens for it
sed 's/"ag"/"noask"/; /context.regions.task/d; /seed = "task"/d' ag/agent.leviath >noask/agent.leviath

# the editor: keeps what it was given (the template) and writes the task above it
cat >writer <<'EOF2'
#!/bin/sh
for f; do :; done; cp "$f" "$PWD/template.seen"
{ echo "count the notes in the drawer"; echo "# a comment the user left"; cat "$PWD/template.seen"; } >"$f"
EOF2
# its twin saves the template untouched (only comments and a blank line)
cat >keeper <<'EOF2'
#!/bin/sh
for f; do :; done; cp "$f" "$PWD/template.seen"
EOF2
# one that fails
printf '#!/bin/sh\nexit 3\n' >failer
chmod +x writer keeper failer

# on_tty CMD...: CMD on a pseudo-terminal; what it wrote there in tty.out
on_tty() {
	python3 "$SRC_DIR/tests/helpers/on-pty.py" "never printed" - -- "$@" >tty.out
}

runs() {
	ls "$ROOT/runs" 2>/dev/null | wc -l
}
meta_done() {
	python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["status"] != "complete")' \
		"$ROOT/runs/$1/meta.json"
}

test_expect_success 'EDITOR writes the task: the run gets it, comment lines stripped' '
	on_tty env EDITOR="$PWD/writer" VISUAL= "$LEV" run ./ag --json --workdir work &&
	grep -q "^# " template.seen && grep -q "Lines beginning with" template.seen &&
	grep -o "\"run_id\": *\"[^\"]*\"" tty.out | cut -d\" -f4 >id && test -s id &&
	wait_for meta_done "$(cat id)" &&
	"$LEV" result "$(cat id)" >res && grep -q "there are three" res &&
	grep -q "count the notes in the drawer" requests.jsonl &&
	! grep -q "a comment the user left" requests.jsonl &&
	! grep -q "Lines beginning with" requests.jsonl
'

test_expect_success '$VISUAL comes before $EDITOR, and is split on whitespace' '
	rm -f template.seen && n=$(runs) &&
	test_must_fail --code 1 on_tty env VISUAL="$PWD/keeper --an-arg" EDITOR="$PWD/writer" \
		"$LEV" run ./ag --workdir work &&
	test -f template.seen && test "$(runs)" = "$n"
'

test_expect_success 'an empty task (the template saved as it was) cancels: exit 1, no run made' '
	n=$(runs) &&
	test_must_fail --code 1 on_tty env EDITOR="$PWD/keeper" VISUAL= "$LEV" run ./ag --json \
		--workdir work &&
	grep -q "the task is empty: the run is cancelled" tty.out && assert_one_line tty.out &&
	! grep -q run_id tty.out && test "$(runs)" = "$n"
'

test_expect_success 'an editor that fails cancels too, nothing spawned' '
	n=$(runs) &&
	test_must_fail --code 1 on_tty env EDITOR="$PWD/failer" VISUAL= "$LEV" run ./ag --workdir work &&
	grep -q "did not exit cleanly" tty.out && test "$(runs)" = "$n"
'

test_expect_success 'no terminal: one line saying to give the task with -t, even with an editor set' '
	n=$(runs) && rm -f template.seen &&
	test_must_fail --code 1 env -u VISUAL -u EDITOR "$LEV" run ./ag --workdir work \
		</dev/null >out 2>err &&
	assert_one_line err && grep -q "give it with -t" err && grep -q "not a terminal" err &&
	test_must_fail --code 1 env EDITOR="$PWD/writer" "$LEV" run ./ag --workdir work \
		</dev/null >out 2>err &&
	assert_one_line err && grep -q "not a terminal" err && test ! -f template.seen &&
	test "$(runs)" = "$n"
'

test_expect_success 'the template file is gone after the edit' '
	mkdir -p tmpd &&
	test_must_fail on_tty env TMPDIR="$PWD/tmpd" EDITOR="$PWD/keeper" VISUAL= "$LEV" run ./ag \
		--workdir work && test -f template.seen &&
	test -z "$(ls tmpd)"
'

test_expect_success 'benign twins: -t gives the task and no editor opens; a blueprint that takes no task opens none' '
	rm -f template.seen &&
	on_tty env EDITOR="$PWD/keeper" "$LEV" run ./ag -t "count the notes in the drawer" \
		--workdir work && test ! -f template.seen &&
	on_tty env EDITOR="$PWD/keeper" "$LEV" run ./noask --workdir work && test ! -f template.seen
'

test_done
