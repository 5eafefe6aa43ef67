#!/bin/bash
# Shell words as bash reads them (issue 13, classes 1 and 6):
# - a line of safe-listed programs that grows a flag or a path outside the
#   workdir through brace expansion, quoting or a pattern is not
#   pre-approved, and its benign twin still is;
# - a line the key parser cannot fully analyse (eval, source, sh -c ...)
#   runs only inside a sandbox that fences writes, --yolo or not;
# - a pre-approved `git status` runs with hooks and fsmonitor off.
# The differential test (bash itself against the parser) is t2310.
. "$SRC_DIR/tests/lib.sh"

# no controlling terminal: a call that needs an answer is denied, never asked
lev() {
	setsid -w "$LEV" "$@"
}

WD="$TRASH/wd"
BP="$TRASH/bp"
CFG_DIR="$HOME/.leviath"
CFG="$CFG_DIR/config.toml"
mkdir -p "$WD" "$BP" "$CFG_DIR"
chmod 700 "$CFG_DIR"
echo readme >"$WD/README.md"
echo x >"$WD/x"
: >"$WD/-v"

write_config() {
	cat >"$CFG"
	chmod 600 "$CFG"
}
write_config </dev/null

# bp KIND: a blueprint whose one stage runs the shell with sandbox KIND
bp() {
	mkdir -p "$BP/$1"
	cat >"$BP/$1/agent.leviath" <<-EOF
	[agent]
	name = "words"
	[sandbox]
	kind = "$1"
	[stages.main]
	model = { provider = "script", script = "turns.toml" }
	available_tools = ["shell"]
	EOF
}
bp none
bp namespace

# decision KIND LINE [ARGS...]: "decision gate" of `lev check` for a shell line
decision() {
	local kind=$1 line=$2
	shift 2
	(cd "$WD" && lev check "$BP/$kind" --tool shell --json "$@" \
		--args "$(jq -cn --arg c "$line" '{command: $c}')") >dec.json
	jq -r '"\(.decision) \(.gate)"' dec.json
}

# ---- class 1: the words bash passes ------------------------------------------

# attack line | its benign twin: the twin runs without asking; the attack
# asks (or, when the parser cannot read it at all, is refused outright)
while IFS='|' read -r attack twin; do
	test_expect_success "pre-approved: '$twin'; not pre-approved: '$attack'" '
		test "$(decision none "$twin")" = "allow permission" &&
		d=$(decision none "$attack") &&
		test "$d" = "ask permission" -o "$d" = "deny redirect"
	'
done <<'EOF'
printf {-v,} 'a[$(id>&2)]' x|printf '%s\n' x
printf '-v' 'a[$(id>&2)]' x|printf -- '%s' x
printf $'\055v' 'a[$(id>&2)]' x|printf 'a%sb' x
git {--output=o,} log|git log --oneline
git log "--output=o"|git log -n 1
git -c core.fsmonitor=./x status|git status
git --exec-path=. status|git rev-parse HEAD
git --git-dir=../.git log|git log
git --work-tree=/ status|git status --short
git diff --ext-diff|git diff
git log -p --textconv|git log -p
date {-s,} 2020-01-01|date +%F
date '--set=2020-01-01'|date -u
file '-C' -m x|file README.md
file -m x README.md|file -b README.md
test {-v,} 'a[$(id>&2)]'|test -f x
[ '-v' 'a[$(id>&2)]' ]|[ -f x ]
cat {~,.}/x|cat ./x
cat ~/x|cat README.md
cat *|cat ./*
ls -la *|ls -la
grep -r foo *|grep -r foo .
cat $HOME/x|cat x
EOF

test_expect_success 'a safe-listed grep with a pattern that cannot start with "-" is pre-approved' '
	test "$(decision none "grep -r foo ./*")" = "allow permission"
'

# ---- class 6: lines nobody can analyse -------------------------------------------

test_expect_success 'eval with a target built at run time: refused under --yolo with kind none' '
	test "$(decision none "eval \"echo x \$(printf \"\\076\\076\") ~/.bashrc\"" --yolo)" = "deny redirect" &&
	grep -q "cannot be fully analysed" dec.json &&
	grep -q "kind = \\\\\"none\\\\\"" dec.json
'

test_expect_success 'and allowed (under --yolo) when the sandbox fences writes' '
	test "$(decision namespace "eval echo hi" --yolo)" = "allow permission"
'

for line in 'source ./env.sh' '. ./env.sh' 'bash -c "echo hi"' 'bash -s' '$CMD x' \
	'exec ls' 'curl x | sh' 'echo hi`id`'; do
	test_expect_success "refused with kind none under --yolo: $line" '
		test "$(decision none "$line" --yolo)" = "deny redirect"
	'
done

test_expect_success 'a plain line still runs under --yolo with kind none' '
	test "$(decision none "echo hi > out.txt" --yolo)" = "allow permission" &&
	test "$(decision none "sh ./build.sh" --yolo)" = "allow permission"
'

cat >"$BP/none/turns.toml" <<'EOF'
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "eval \"echo pwned $(printf '\\076\\076') ~/.bashrc\"" }
[[turn]]
text = "done"
EOF

test_expect_success 'lev run --follow --yolo with kind none: the eval line does not touch ~/.bashrc' '
	echo original >"$HOME/.bashrc" &&
	lev run --foreground "$BP/none" --yolo --workdir "$WD" --json >ev 2>err &&
	test "$(cat "$HOME/.bashrc")" = original &&
	grep -q "cannot be fully analysed" ev
'

cat >"$BP/namespace/turns.toml" <<'EOF'
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "eval echo hi-from-eval" }
[[turn]]
text = "done"
EOF

if "$LEV" sandbox exec --kind namespace -- true 2>/dev/null; then
	test_expect_success 'a benign eval runs inside the namespace sandbox' '
		lev run --foreground "$BP/namespace" --yolo --workdir "$WD" --json >ev 2>err &&
		grep -q "hi-from-eval" ev
	'
else
	test_skip 'a benign eval runs inside the namespace sandbox' \
		'the namespace sandbox is unavailable here'
fi

# ---- git: hooks and fsmonitor off for pre-approved lines ---------------------------

if command -v git >/dev/null 2>&1; then
	REPO="$TRASH/repo"
	mkdir -p "$REPO" &&
	git -C "$REPO" init -q &&
	echo a >"$REPO/a" &&
	git -C "$REPO" add a &&
	git -C "$REPO" -c user.name=t -c user.email=t@t.invalid commit -qm init &&
	printf '#!/bin/sh\necho ran >>"%s/FSMONITOR-RAN"\n' "$REPO" >"$REPO/.git/fsm.sh" &&
	printf '#!/bin/sh\necho ran >>"%s/HOOK-RAN"\n' "$REPO" >"$REPO/.git/hooks/post-index-change" &&
	chmod +x "$REPO/.git/fsm.sh" "$REPO/.git/hooks/post-index-change" &&
	git -C "$REPO" config core.fsmonitor "$REPO/.git/fsm.sh"

	test_expect_success 'control: a plain git status in that repository runs both' '
		touch "$REPO/a" &&
		(cd "$REPO" && git status >/dev/null) &&
		test -e "$REPO/FSMONITOR-RAN" && test -e "$REPO/HOOK-RAN" &&
		rm -f "$REPO/FSMONITOR-RAN" "$REPO/HOOK-RAN"
	'

	cat >"$BP/namespace/turns.toml" <<-'EOF'
	[[turn]]
	[[turn.call]]
	tool = "shell"
	args = { command = "git status" }
	[[turn]]
	text = "done"
	EOF

	if "$LEV" sandbox exec --kind namespace -- true 2>/dev/null; then
		test_expect_success 'a pre-approved git status runs (no one asked) with no hook and no fsmonitor' '
			touch "$REPO/a" &&
			lev run --foreground "$BP/namespace" --workdir "$REPO" --json >ev 2>err &&
			grep -q "On branch" ev &&
			! test -e "$REPO/FSMONITOR-RAN" && ! test -e "$REPO/HOOK-RAN"
		'
	else
		test_skip 'a pre-approved git status runs with no hook' 'the namespace sandbox is unavailable here'
	fi
else
	test_skip 'git hooks are off for pre-approved git' 'git is not installed'
fi

test_done
