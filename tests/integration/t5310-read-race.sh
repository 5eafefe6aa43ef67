#!/bin/bash
# Decided on one object, acted on another (security issue, class 4): a
# racing process swaps a symlink in the workdir between a private file
# outside it and a public one inside, thousands of times while a scripted
# `lev run` reads the link.  The path gate resolves the link once and the
# tool reads the fd it opened, so:
#   granted   every read that returned the private bytes is labelled
#             private, every read of the public file is not (zero mislabels)
#   refused   (no grant) no private byte ever reaches the model, and every
#             refusal is recorded as a refusal
# The benign twin: with no racer, the same run reads the public file every
# time and labels it internal.
. "$SRC_DIR/tests/lib.sh"

lev() {
	setsid -w "$LEV" "$@"
}

TURNS=30
CALLS=100	# per turn (a turn holds at most 128): 3,000 reads per run
PRIV="PRIVATE-BYTES-7f3a9c"
PUB="public-bytes-1b2c"

mkdir -p "$HOME/.leviath" work outside && chmod 700 "$HOME/.leviath"
echo "$PRIV" >outside/private.txt
echo "$PUB" >work/public.txt
ln -s public.txt work/link

mkdir -p bp
cat >bp/agent.leviath <<EOF
[agent]
name = "racer"

[read_paths]
allow = ["$TRASH/outside"]

[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["read_file"]
max_iterations = $((TURNS + 5))
EOF
python3 - "$TURNS" "$CALLS" >bp/turns.toml <<'PY'
import sys
turns, calls = int(sys.argv[1]), int(sys.argv[2])
for t in range(turns):
    print("[[turn]]")
    for c in range(calls):
        print("[[turn.call]]")
        print('tool = "read_file"')
        print('args = { path = "link" }')
print('[[turn]]\ntext = "done"')
PY

grant() {
	cat >"$HOME/.leviath/config.toml" <<-EOF
	[agent_read_paths.racer]
	allow = ["$TRASH/outside"]
	EOF
	chmod 600 "$HOME/.leviath/config.toml"
}

# per-agent grants bind to the installed agent (a blueprint run from a path
# gets none): the runs below use the installed copy of ./bp
lev add --force ./bp >/dev/null || echo "lev add ./bp failed" >&2

# start_racer: swap work/link between the two targets (atomic rename) until killed
cat >racer.py <<'PY'
import os, sys
wd, priv = sys.argv[1], sys.argv[2]
tmp = os.path.join(wd, ".link.tmp")
targets = [priv, "public.txt"]
i = 0
while True:
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    os.symlink(targets[i & 1], tmp)
    os.rename(tmp, os.path.join(wd, "link"))
    i += 1
PY
# the interpreter itself (not a wrapper script), so that $! is the racer
PYTHON=$(python3 -c "import sys; print(sys.executable)")
start_racer() {
	"$PYTHON" racer.py "$TRASH/work" "$TRASH/outside/private.txt" </dev/null &
	RACER=$!
	# wait until it swaps (no timing: until both targets were seen)
	seen=
	while test "${#seen}" -lt 2; do
		case "$(readlink work/link)" in
		public.txt) seen="${seen/a/}a" ;;
		*) seen="${seen/b/}b" ;;
		esac
	done
}

stop_racer() {
	kill "$RACER" 2>/dev/null
	wait "$RACER" 2>/dev/null
	ln -sfn public.txt work/link
}

# judge EVENTS MODE: every read's label against the bytes it returned
judge() {
	python3 - "$1" "$2" "$PRIV" "$PUB" <<-'PY'
	import json, sys
	path, mode, priv, pub = sys.argv[1:]
	calls, res = {}, []
	for line in open(path):
	    e = json.loads(line)
	    if e["event"] == "tool_call":
	        calls[e["id"]] = e
	    elif e["event"] == "tool_result":
	        res.append(e)
	n = {"private": 0, "public": 0, "refused": 0}
	bad = []
	for r in res:
	    d = calls[r["id"]]
	    text = r["text"] or ""
	    if priv in text:
	        n["private"] += 1
	        if mode != "granted" or r["label"] != "private" or d["decision"] != "allow":
	            bad.append(("private bytes", mode, r["label"], d["decision"], d["gate"]))
	    elif pub in text:
	        n["public"] += 1
	        if r["label"] != "internal" or d["decision"] != "allow":
	            bad.append(("public bytes", r["label"], d["decision"]))
	    else:
	        n["refused"] += 1
	        if r["ok"] or d["decision"] != "deny":
	            bad.append(("no bytes but allowed", text[:200], d["decision"]))
	print(n, "mislabels/leaks:", len(bad))
	for b in bad[:10]:
	    print(b)
	assert len(res) >= 3000, len(res)
	assert not bad
	PY
}

test_expect_success 'benign twin: no racer, every read is the public file, labelled internal' '
	grant &&
	lev run --foreground racer --workdir work --json >ev 2>err || { cat err; false; } &&
	judge ev granted >out && cat out &&
	grep -q "public.: 3000" out
'

test_expect_success 'racing symlink, read granted: zero mislabels in 3,000 reads' '
	grant &&
	start_racer &&
	lev run --foreground racer --workdir work --json >ev 2>err; rc=$?
	stop_racer
	test $rc = 0 && judge ev granted >out && cat out &&
	# the race was real: both files were read
	grep -q "private.: [1-9]" out && grep -q "public.: [1-9]" out
'

test_expect_success 'racing symlink, not granted: no private byte reaches the model' '
	rm -f "$HOME/.leviath/config.toml" &&
	start_racer &&
	lev run --foreground racer --workdir work --json >ev 2>err; rc=$?
	stop_racer
	test $rc = 0 && judge ev refused >out && cat out &&
	grep -q "refused.: [1-9]" out && grep -q "\"gate\":\"read_paths\"" ev
'

test_done
