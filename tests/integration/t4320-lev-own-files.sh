#!/bin/bash
# Issue 13, also found: lev's own files (the data root with config.toml,
# policy.toml, rules/, credentials) are never writable by tools, whatever the
# workdir.  The workdir here is the (scratch) home itself: the file tools
# refuse .leviath/, the namespace sandbox masks it, and kind none refuses
# such a workdir.  Every refusal is checked from the outside (file contents)
# and has a benign twin in the same workdir.
. "$SRC_DIR/tests/lib.sh"

# The home lives outside /tmp: the namespace sandbox's private /tmp would
# hide it, and the shell tests would pass for the wrong reason.
SHOME=$(mktemp -d /var/tmp/lev-t4320-home.XXXXXX)
chmod 755 "$SHOME"
cleanup_t4320() {
	rm -rf "$SHOME"
	_lev_cleanup
}
trap cleanup_t4320 EXIT
export HOME="$SHOME"
ROOT="$HOME/.leviath"
mkdir -p "$ROOT/rules" && chmod 700 "$ROOT"
echo "# the user's policy" >"$ROOT/policy.toml"
chmod 600 "$ROOT/policy.toml"

config() {
	cat >"$ROOT/config.toml" && chmod 600 "$ROOT/config.toml"
}

mkdir -p "$TRASH/owner"
cat >"$TRASH/owner/agent.leviath" <<'EOF'
[agent]
name = "owner"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["write_file", "edit_file", "shell", "read_file"]
EOF
cat >"$TRASH/owner/turns.toml" <<'EOF'
[[turn]]
text = "rewriting lev"
[[turn.call]]
tool = "write_file"
args = { path = ".leviath/policy.toml", content = "[[allow]]\nhost = \"*\"\n" }
[[turn.call]]
tool = "write_file"
args = { path = ".leviath/rules/evil.lua", content = "return true\n" }
[[turn.call]]
tool = "edit_file"
args = { path = ".leviath/config.toml", old_str = "namespace", new_str = "none" }
[[turn.call]]
tool = "write_file"
args = { path = "notes.txt", content = "benign\n" }
[[turn.call]]
tool = "shell"
args = { command = "echo x >> .leviath/policy.toml" }
[[turn.call]]
tool = "shell"
args = { command = "echo y >> notes.txt" }
[[turn.call]]
tool = "read_file"
args = { path = ".leviath/credentials.toml" }
[[turn.call]]
tool = "read_file"
args = { path = "readme-here.txt" }
[[turn]]
text = "done"
EOF
# a key in the data root, and a plain file beside it (the benign read)
printf '[providers.openai]\napi_key = "sk-t4320-CANARY-not-a-key"\n' >"$ROOT/credentials.toml"
chmod 600 "$ROOT/credentials.toml"
echo "plain text in the home" >"$HOME/readme-here.txt"

# results: "tool ok|error" per tool_result, in order
results() {
	python3 - "$1" <<-'PY'
	import json, sys
	for line in open(sys.argv[1]):
	    e = json.loads(line)
	    if e.get("event") == "tool_result":
	        print(e["tool"], "ok" if e["ok"] else "error", e["text"].splitlines()[0] if e["text"] else "")
	PY
}

if "$LEV" sandbox probe --json 2>/dev/null | grep -q '"userns": true'; then
	test_expect_success 'workdir = home, namespace: no tool rewrites lev'"'"'s files' '
		printf "[sandbox]\nkind = \"namespace\"\n[tool_permissions]\nwrite_file = \"allow\"\nedit_file = \"allow\"\nshell = \"allow\"\n" | config &&
		cp "$ROOT/config.toml" config.before &&
		(cd "$HOME" && setsid -w "$LEV" run --foreground "$TRASH/owner" --workdir "$HOME" --json) >ev 2>err &&
		results ev >res && cat res &&
		sed -n 1p res | grep -q "^write_file error .*one of lev.s own files" &&
		sed -n 2p res | grep -q "^write_file error .*one of lev.s own files" &&
		sed -n 3p res | grep -q "^edit_file error .*one of lev.s own files" &&
		sed -n 5p res | grep -q "^shell error" &&
		test "$(cat "$ROOT/policy.toml")" = "# the user'"'"'s policy" &&
		test ! -e "$ROOT/rules/evil.lua" &&
		test_cmp config.before "$ROOT/config.toml"
	'
	test_expect_success 'benign twin: the same run wrote notes.txt with both tools' '
		sed -n 4p res | grep -q "^write_file ok" &&
		sed -n 6p res | grep -q "^shell ok" &&
		test "$(cat "$HOME/notes.txt")" = "$(printf "benign\ny")"
	'
	test_expect_success 'read_file of the data root (credentials.toml) is refused; its key reaches nothing' '
		sed -n 7p res | grep -q "^read_file error .*one of lev.s own files" &&
		! grep -q "sk-t4320-CANARY" ev &&
		! grep -rq "sk-t4320-CANARY" "$ROOT/runs"
	'
	test_expect_success 'benign twin: a plain file in the same workdir is read' '
		sed -n 8p res | grep -q "^read_file ok" &&
		grep -q "plain text in the home" ev
	'
	test_expect_success 'sandbox exec: a shell cannot plant a data root that does not exist yet' '
		mv "$ROOT" "$TRASH/root.saved" &&
		"$LEV" sandbox exec --workdir "$HOME" -- sh -c "mkdir -p .leviath; echo x >.leviath/config.toml" 2>err;
		rc=$?; test ! -e "$ROOT/config.toml"; ok=$?;
		rm -rf "$ROOT"; mv "$TRASH/root.saved" "$ROOT" &&
		test $rc != 0 && test $ok = 0
	'
else
	test_skip 'file tools and the namespace mask with workdir = home' 'no user namespaces here'
fi

ENGINE=${LEV_TEST_ENGINE:-podman}
IMAGE="localhost/lev-test-t4320:$$"
PROBE=$(lev_helper_path lev-probe)
if command -v "$ENGINE" >/dev/null &&
   out=$("$SRC_DIR/tests/helpers/oci-test-image.sh" "$ENGINE" "$IMAGE" "$PROBE" 2>&1); then
	cbx() {
		"$LEV" sandbox exec --kind container --engine "$ENGINE" --image "$IMAGE" \
			--network off --workdir "$HOME" "$@"
	}
	# As root, container commands run as the workdir's owner, never root
	# (root's workdir: nobody).  Give the home to nobody and, for the attack
	# only, open the data root to it: then only the mask stands in the way.
	if [ "$(id -u)" = 0 ]; then
		chown 65534:65534 "$HOME"
	fi
	test_expect_success 'container, workdir = home: a shell cannot write the data root' '
		rm -f "$ROOT/config.toml" &&
		chmod o+rwx "$ROOT" && chmod o+rw "$ROOT/policy.toml" &&
		cbx -- sh -c "echo x >> .leviath/policy.toml" 2>err;
		cbx -- sh -c "cat .leviath/policy.toml" >out 2>err;
		chmod o-rwx "$ROOT" "$ROOT/policy.toml" &&
		test "$(cat "$ROOT/policy.toml")" = "# the user'"'"'s policy" &&
		! grep -q "policy" out
	'
	test_expect_success 'benign twin: the container writes notes2.txt in the same workdir' '
		cbx -- sh -c "echo c >> notes2.txt" &&
		test "$(cat "$HOME/notes2.txt")" = c
	'
	"$ENGINE" rmi -f "$IMAGE" >/dev/null 2>&1
else
	test_skip 'the container mask with workdir = home' "no usable '$ENGINE' or test image here"
fi

test_expect_success 'kind none refuses a workdir that contains the data root' '
	printf "[sandbox]\nkind = \"none\"\n" | config &&
	test_expect_code 125 "$LEV" sandbox exec --workdir "$HOME" -- sh -c "echo x >> .leviath/policy.toml" 2>err &&
	grep -q "contains lev.s own files" err &&
	test "$(cat "$ROOT/policy.toml")" = "# the user'"'"'s policy" &&
	test_must_fail setsid -w "$LEV" run --foreground "$TRASH/owner" --workdir "$HOME" >out 2>err &&
	grep -q "contains lev.s own files" err &&
	test "$(cat "$ROOT/policy.toml")" = "# the user'"'"'s policy"
'

test_expect_success 'benign twin: kind none runs in a project directory beside it' '
	printf "[sandbox]\nkind = \"none\"\n" | config &&
	mkdir -p "$HOME/project" &&
	"$LEV" sandbox exec --workdir "$HOME/project" -- sh -c "echo z >> notes.txt" &&
	test "$(cat "$HOME/project/notes.txt")" = z
'

test_done
