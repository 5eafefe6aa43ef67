#!/bin/bash
# Issue 13, also found: `lev sandbox exec -v` prints the layers; --dry-run
# with the container kind never starts a container (a fake engine on PATH
# records every invocation); a timeout message names the timeout that was
# enforced, for every kind; `lev validate --json` prints a JSON error object
# when the config does not parse.
. "$SRC_DIR/tests/lib.sh"

PROBE=$(lev_helper_path lev-probe)
export LEVIATH_HOME="$TRASH/lh"
mkdir -p "$LEVIATH_HOME/.leviath" && chmod 700 "$LEVIATH_HOME" "$LEVIATH_HOME/.leviath"
CONFIG="$LEVIATH_HOME/.leviath/config.toml"
WD="$TRASH/wd"
mkdir -p "$WD"

config() {
	cat >"$CONFIG" && chmod 600 "$CONFIG"
}
json_get() {
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# --- -v ---

test_expect_success 'sandbox exec -v prints the kind and the layers in force' '
	"$LEV" sandbox exec -v --kind none --network off --workdir "$WD" -- true 2>err &&
	grep -q "^lev: sandbox none, network off$" err &&
	grep -q "^lev: layers in force: seccomp, nnp$" err &&
	grep -q "^lev: layers missing: none$" err
'

test_expect_success 'sandbox exec --verbose, and without -v nothing is printed' '
	"$LEV" sandbox exec --verbose --kind none --workdir "$WD" -- true 2>err &&
	grep -q "^lev: sandbox none, network on$" err &&
	"$LEV" sandbox exec --kind none --workdir "$WD" -- true 2>err &&
	test ! -s err
'

# --- --dry-run never starts a container ---

FAKE="$TRASH/fake-engine"
mkdir -p "$FAKE"
# It logs every call; it knows the image (lev reads the local store, which
# starts nothing) and fails everything else.
cat >"$FAKE/podman" <<EOF
#!/bin/sh
echo "\$*" >>"$TRASH/engine-calls"
case "\$1 \$2" in
"image inspect") echo '["PATH=/bin"]'; exit 0 ;;
esac
exit 1
EOF
chmod 755 "$FAKE/podman"

test_expect_success '--dry-run with the container kind prints the plan and starts nothing (it only reads the image store)' '
	rm -f "$TRASH/engine-calls" &&
	"$LEV" sandbox exec --kind container --engine "$FAKE/podman" --image local/x:1 \
		--workdir "$WD" --dry-run --json -- true >plan.json &&
	test "$(json_get plan.json "d[\"container\"][\"started\"]")" = False &&
	test "$(json_get plan.json "d[\"container\"][\"run_argv\"][1]")" = run &&
	"$LEV" sandbox exec --kind container --engine "$FAKE/podman" --image local/x:1 \
		--workdir "$WD" --dry-run -- true >plan.txt &&
	grep -q "started: no" plan.txt &&
	if [ -e "$TRASH/engine-calls" ]; then ! grep -vqE "^image inspect " "$TRASH/engine-calls"; fi
'

test_expect_success '--dry-run with an engine found on PATH starts nothing either' '
	rm -f "$TRASH/engine-calls" &&
	PATH="$FAKE:/usr/bin:/bin" "$LEV" sandbox exec --kind container --image local/x:1 \
		--workdir "$WD" --dry-run -- true >plan.txt &&
	if [ -e "$TRASH/engine-calls" ]; then ! grep -qE "^(run|create|start|pull|rm)( |$)" "$TRASH/engine-calls"; fi
'

test_expect_success 'positive control: without --dry-run the same command runs the engine' '
	rm -f "$TRASH/engine-calls" &&
	test_expect_code 125 "$LEV" sandbox exec --kind container --engine "$FAKE/podman" \
		--image local/x:1 --workdir "$WD" -- true 2>err &&
	grep -q "^run " "$TRASH/engine-calls"
'

# --- the timeout message names the real timeout ---

mkdir -p "$TRASH/sleeper"
cat >"$TRASH/sleeper/agent.leviath" <<'EOF'
[agent]
name = "sleeper"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
EOF
cat >"$TRASH/sleeper/turns.toml" <<'EOF'
[[turn]]
text = "sleeping"
[[turn.call]]
tool = "shell"
args = { command = "sleep 300" }
[[turn]]
text = "done"
EOF

# timeout_text KIND [EXTRA CONFIG]: the shell call's result text with
# shell_timeout_secs = 2
timeout_text() {
	printf "[limits]\nshell_timeout_secs = 2\n[tool_permissions]\nshell = \"allow\"\n[sandbox]\nkind = \"%s\"\n%s\n" "$1" "${2:-}" | config &&
	setsid -w "$LEV" run --foreground "$TRASH/sleeper" --workdir "$WD" --json >ev 2>err &&
	python3 - ev <<-'PY'
	import json, sys
	for line in open(sys.argv[1]):
	    e = json.loads(line)
	    if e.get("event") == "tool_result" and e.get("tool") == "shell":
	        print(e["text"].splitlines()[0])
	PY
}

test_expect_success 'kind none: the timeout message names shell_timeout_secs' '
	t=$(timeout_text none) && echo "$t" &&
	test "$t" = "[timed out] Command exceeded 2s: sleep 300"
'

if lev sandbox probe --json 2>/dev/null | grep -q '"userns": true'; then
	test_expect_success 'namespace: the timeout message names shell_timeout_secs' '
		t=$(timeout_text namespace) && echo "$t" &&
		test "$t" = "[timed out] Command exceeded 2s: sleep 300"
	'
else
	test_skip 'namespace timeout message' 'no user namespaces here'
fi

ENGINE=${LEV_TEST_ENGINE:-podman}
IMAGE="localhost/lev-test-t4310:$$"
if command -v "$ENGINE" >/dev/null &&
   out=$("$SRC_DIR/tests/helpers/oci-test-image.sh" "$ENGINE" "$IMAGE" "$PROBE" 2>&1); then
	test_expect_success 'container: the timeout message names shell_timeout_secs' '
		t=$(timeout_text container "image = \"$IMAGE\"
engine = \"$ENGINE\"") && echo "$t" &&
		test "$t" = "[timed out] Command exceeded 2s: sleep 300"
	'
	"$ENGINE" rmi -f "$IMAGE" >/dev/null 2>&1
else
	test_skip 'container timeout message' "no usable '$ENGINE' or test image here"
fi

# --- lev validate --json with a broken config ---

mkdir -p "$TRASH/ok"
printf '[agent]\nname = "ok"\n[stages.main]\n' >"$TRASH/ok/agent.leviath"

test_expect_success 'validate --json: a config that does not parse is a JSON error object' '
	printf "[sandbox]\nkind = \"bogus\"\n" | config &&
	test_expect_code 1 "$LEV" validate --json "$TRASH/ok" >out.json 2>err &&
	test "$(json_get out.json "d[\"valid\"]")" = False &&
	test "$(json_get out.json "d[\"error\"][\"source\"]")" = config &&
	test "$(json_get out.json "d[\"error\"][\"file\"]")" = "$CONFIG" &&
	test "$(json_get out.json "d[\"error\"][\"line\"]")" = 2 &&
	test "$(json_get out.json "d[\"error\"][\"column\"]")" = 8 &&
	json_get out.json "d[\"error\"][\"message\"]" | grep -q "bogus" &&
	grep -q "^lev: error: .*config.toml:2:8:" err
'

test_expect_success 'validate --json: a config with a TOML syntax error too' '
	printf "x = [\n" | config &&
	test_expect_code 1 "$LEV" validate --json "$TRASH/ok" >out.json 2>/dev/null &&
	test "$(json_get out.json "d[\"valid\"]")" = False &&
	test "$(json_get out.json "d[\"error\"][\"line\"]")" = 2
'

test_expect_success 'validate --json: a blueprint that does not parse names file, line and column' '
	rm -f "$CONFIG" &&
	mkdir -p "$TRASH/bad" && printf "[agent]\nname =\n" >"$TRASH/bad/agent.leviath" &&
	test_expect_code 1 "$LEV" validate --json "$TRASH/bad" >out.json 2>/dev/null &&
	test "$(json_get out.json "d[\"error\"][\"source\"]")" = blueprint &&
	test "$(json_get out.json "d[\"error\"][\"line\"]")" = 2 &&
	json_get out.json "d[\"error\"][\"file\"]" | grep -q "bad/agent.leviath"
'

test_expect_success 'benign twin: a valid config and blueprint give error null, exit 0' '
	printf "[sandbox]\nkind = \"none\"\n" | config &&
	"$LEV" validate --json "$TRASH/ok" >out.json &&
	test "$(json_get out.json "d[\"valid\"]")" = True &&
	test "$(json_get out.json "d[\"error\"]")" = None
'

test_done
