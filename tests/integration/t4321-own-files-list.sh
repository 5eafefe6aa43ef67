#!/bin/bash
# Issue 26, class 3: one list of lev's own files, used alike by the file
# tools' refusal and the sandbox masks.  The cases are generated from the
# list itself (`lev sandbox own-files --json`), so a new entry is covered
# without touching this file.  With workdir = $HOME, for every entry:
#   - write_file and read_file are refused, and the file is unchanged;
#   - a shell command in the namespace sandbox cannot write it, whether it
#     exists or not (it reports from inside what the kernel let it do, and
#     the host checks the file);
# benign twin: an ordinary file next to each entry's guard directory is
# written by both the file tool and the shell, in the same runs.
. "$SRC_DIR/tests/lib.sh"

# The home lives outside /tmp: the namespace sandbox's private /tmp would
# hide it, and the shell half would pass for the wrong reason.
SHOME=$(mktemp -d /var/tmp/lev-t4321-home.XXXXXX)
chmod 755 "$SHOME"
cleanup_t4321() {
	rm -rf "$SHOME"
	_lev_cleanup
}
trap cleanup_t4321 EXIT
export HOME="$SHOME"
unset XDG_CONFIG_HOME
ROOT="$HOME/.leviath"

"$LEV" sandbox own-files --json >own.json || exit 1

# gen.py MODE: the cases from own.json.
#   seed    create every entry (a directory's probe file inside it) holding a canary
#   wipe    remove every entry (and its guard) but the data root and its config
#   snap    record what every entry's target holds (or that it is absent)
#   check   every target still holds what snap recorded
#   turns   the script provider's turns: per entry a write_file and a read_file
#           of it (its probe file for a directory), then the benign writes
#   shell   one shell script: per entry a write attempt and a benign write,
#           each reported from inside
cat >gen.py <<'PY'
import json, os, shutil, sys
home = os.environ["HOME"]
root = os.environ["ROOT"]
own = json.load(open("own.json"))
mode = sys.argv[1]

def target(e):
    return os.path.join(e["path"], "probe.txt") if e["dir"] else e["path"]

def rel(p):
    assert p.startswith(home + "/"), p
    return p[len(home) + 1:]

def benign(i, e):
    g = e["guard"] or e["path"]
    return os.path.join(os.path.dirname(g), "benign-%d.txt" % i)

def q(s):
    return "'" + s.replace("'", "'\\''") + "'"

def keep(e):
    return e["what"] in ("the data root", "the config")

def read(t):
    return open(t, "rb").read().decode("latin-1") if os.path.lexists(t) else None

if mode == "seed":
    for i, e in enumerate(own):
        t = target(e)
        os.makedirs(os.path.dirname(t), mode=0o700, exist_ok=True)
        if e["what"] != "the config":
            fd = os.open(t, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.write(fd, b"# CANARY-%d\n" % i)
            os.close(fd)
elif mode == "wipe":
    for e in sorted(own, key=lambda e: -len(e["path"])):
        if keep(e):
            continue
        p = e["path"]
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p)
        elif os.path.lexists(p):
            os.unlink(p)
        g = e["guard"]
        if g and g != root and os.path.isdir(g):
            shutil.rmtree(g)
elif mode == "snap":
    json.dump({target(e): read(target(e)) for e in own}, open("snap.json", "w"))
elif mode == "check":
    bad = [t for t, was in json.load(open("snap.json")).items() if read(t) != was]
    for t in bad:
        print("CHANGED %s" % t)
    sys.exit(1 if bad else 0)
elif mode == "turns":
    print('[[turn]]\ntext = "touching lev"')
    for i, e in enumerate(own):
        r = json.dumps(rel(target(e)))
        print('[[turn.call]]\ntool = "write_file"\n'
              'args = { path = %s, content = "[[allow]]\\nhost = \\"*\\"\\n" }' % r)
        print('[[turn.call]]\ntool = "read_file"\nargs = { path = %s }' % r)
    for i, e in enumerate(own):
        print('[[turn.call]]\ntool = "write_file"\nargs = { path = %s, content = "tool-%d\\n" }'
              % (json.dumps(rel(benign(i, e))), i))
    print('[[turn]]\ntext = "done"')
elif mode == "shell":
    for i, e in enumerate(own):
        t = target(e)
        print("if (mkdir -p %s && echo SHELL >>%s) 2>/dev/null; then echo WROTE %d %s; "
              "else echo REFUSED %d; fi" % (q(os.path.dirname(t)), q(t), i, q(t), i))
        b = benign(i, e)
        print("if (mkdir -p %s && echo shell-%d >>%s) 2>/dev/null; then echo BENIGN %d; "
              "else echo BENIGN-FAILED %d; fi" % (q(os.path.dirname(b)), i, q(b), i, i))
PY

# results: "tool ok|error first-line" per tool_result, in order
results() {
	python3 - "$1" <<-'PY'
	import json, sys
	for line in open(sys.argv[1]):
	    e = json.loads(line)
	    if e.get("event") == "tool_result":
	        print(e["tool"], "ok" if e["ok"] else "error", e["text"].splitlines()[0] if e["text"] else "")
	PY
}

N=$(python3 -c 'import json; print(len(json.load(open("own.json"))))')

test_expect_success 'the list holds the data root, the config, Leviath'"'"'s policy and rules, the unit' '
	grep -q "\"path\": \"$ROOT\"" own.json &&
	grep -q "\"path\": \"$ROOT/config.toml\"" own.json &&
	grep -q "\"path\": \"$HOME/.config/leviath/policy.toml\"" own.json &&
	grep -q "\"path\": \"$HOME/.config/leviath/rules\"" own.json &&
	grep -q "\"path\": \"$HOME/.config/systemd/user/lev.service\"" own.json &&
	grep -q "\"path\": \"$ROOT/lev.db\"" own.json
'

test_expect_success 'LEVIATH_CONFIG_PATH and XDG_CONFIG_HOME move entries of the list' '
	LEVIATH_CONFIG_PATH=$TRASH/elsewhere.toml XDG_CONFIG_HOME=$TRASH/xdg \
		"$LEV" sandbox own-files >moved &&
	grep -q "^$TRASH/elsewhere.toml	the config" moved &&
	grep -q "^$TRASH/xdg/leviath/policy.toml	" moved &&
	grep -q "^$TRASH/xdg/systemd/user/lev.service	" moved
'

mkdir -p "$TRASH/owner"
cat >"$TRASH/owner/agent.leviath" <<'EOF'
[agent]
name = "owner"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["write_file", "read_file"]
EOF
export ROOT
mkdir -p "$ROOT" && chmod 700 "$ROOT"
printf '[sandbox]\nkind = "namespace"\n[tool_permissions]\nwrite_file = "allow"\n' >"$ROOT/config.toml"
chmod 600 "$ROOT/config.toml"
python3 gen.py seed && python3 gen.py snap || exit 1
python3 gen.py turns >"$TRASH/owner/turns.toml"

test_expect_success "file tools, workdir = home: all $N entries refused for write and read" '
	(cd "$HOME" && "$LEV" run --foreground "$TRASH/owner" --workdir "$HOME" --json) >ev 2>err &&
	results ev >res && cat res &&
	test "$(head -n $((2 * N)) res | grep -c "^write_file error .*one of lev.s own files")" = "$N" &&
	test "$(head -n $((2 * N)) res | grep -c "^read_file error .*one of lev.s own files")" = "$N" &&
	! grep -q "CANARY-" ev &&
	python3 gen.py check
'

test_expect_success "benign twin: the same run wrote all $N ordinary files next to them" '
	test "$(tail -n $N res | grep -c "^write_file ok")" = "$N" &&
	for i in $(seq 0 $((N - 1))); do
		grep -rqx "tool-$i" "$HOME" --include="benign-$i.txt" || return 1
	done
'

if "$LEV" sandbox probe --json 2>/dev/null | grep -q '"userns": true'; then
	python3 gen.py shell >probe.sh
	test_expect_success "namespace shell, workdir = home: all $N existing entries unwritable" '
		python3 gen.py snap &&
		"$LEV" sandbox exec --kind namespace --workdir "$HOME" -- sh -c "$(cat probe.sh)" >out 2>err &&
		test "$(grep -c "^REFUSED " out)" = "$N" && ! grep "^WROTE " out &&
		python3 gen.py check
	'
	test_expect_success "benign twin: the same command wrote all $N ordinary files" '
		test "$(grep -c "^BENIGN " out)" = "$N" &&
		for i in $(seq 0 $((N - 1))); do
			grep -rqx "shell-$i" "$HOME" --include="benign-$i.txt" || return 1
		done
	'
	test_expect_success "namespace shell, workdir = home: none of the $N entries can be planted" '
		python3 gen.py wipe && python3 gen.py snap &&
		"$LEV" sandbox exec --kind namespace --workdir "$HOME" -- sh -c "$(cat probe.sh)" >out2 2>err &&
		test "$(grep -c "^REFUSED " out2)" = "$N" && ! grep "^WROTE " out2 &&
		test "$(grep -c "^BENIGN " out2)" = "$N" &&
		python3 gen.py check
	'
else
	test_skip 'the namespace shell over the list' 'no user namespaces here'
fi

test_done
