#!/bin/bash
# lev auth and [security] credential_store = "keychain" against a real
# Secret Service: gnome-keyring-daemon on a private D-Bus session bus
# (dbus-run-session), its keyring in this file's scratch HOME.  A key stored
# with `lev auth set` reaches the provider (the mock model sees it in the
# Authorization header) and appears in no output, no run record and no
# command's environment; with no Secret Service a run that needs a key
# fails at start naming the fix, and never falls back to credentials.toml.
# Migration moves keys both ways, keeps the files' comments, and undoes
# itself when a step fails.

# a private session bus for the whole file (it goes away with the file)
if [ -z "${_LEV_T1300_BUS:-}" ] && command -v dbus-run-session >/dev/null 2>&1; then
	export _LEV_T1300_BUS=1
	exec dbus-run-session -- bash "$0" "$@"
fi

. "$SRC_DIR/tests/lib.sh"

export LEVIATH_HOME="$TRASH/lh"
mkdir -p "$LEVIATH_HOME/.leviath" && chmod 700 "$LEVIATH_HOME" "$LEVIATH_HOME/.leviath"
export XDG_RUNTIME_DIR="$TRASH/run"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
export LEVIATH_CONFIG_PATH="$TRASH/cfg/config.toml"
mkdir -p "$TRASH/cfg"
CONFIG=$LEVIATH_CONFIG_PATH
CREDS="$LEVIATH_HOME/.leviath/credentials.toml"
RUNS="$LEVIATH_HOME/.leviath/runs"
KEY=sk-keychain-KEY-0123456789abcdef
FILEKEY=sk-file-KEY-fedcba9876543210

missing=""
for p in dbus-run-session gnome-keyring-daemon secret-tool; do
	command -v $p >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ] || [ -z "${DBUS_SESSION_BUS_ADDRESS:-}" ]; then
	test_skip "lev auth against a Secret Service" \
		"no${missing:- session bus}: install gnome-keyring dbus-daemon libsecret-tools (scripts/install-deps)"
	test_done
fi

# the keyring daemon, its login keyring unlocked with an empty password
printf '\n' | gnome-keyring-daemon --foreground --unlock --components=secrets \
	>"$TRASH/gkd.out" 2>&1 &
GKD_PID=$!
trap 'kill $GKD_PID 2>/dev/null; wait $GKD_PID 2>/dev/null; _lev_cleanup' EXIT

keychain_config() {
	cat >"$CONFIG" <<-EOF
	# my settings
	[security]
	credential_store = "keychain"   # keys in the OS keychain
	$1
	EOF
	chmod 600 "$CONFIG"
}

keychain_config ""

test_control keychain 'the keyring answers: lev auth status names the keychain' '
	for _ in $(seq 100); do
		lev auth status >out 2>err && break
		sleep 0.1
	done &&
	grep -q "credential store: keychain (Secret Service), 0 key(s)" out &&
	grep -q "openai  *no key" out
'

test_expect_success keychain 'lev auth set reads the key from a pipe and stores it in the keychain' '
	printf "%s\n" "$KEY" | lev auth set openai >out 2>err &&
	grep -q "stored the key for .openai. in the keychain" out &&
	! grep -q "$KEY" out err &&
	test "$(secret-tool lookup provider openai)" = "$KEY" &&
	test "$(lev auth list)" = openai &&
	! test -e "$CREDS"
'

test_expect_success keychain 'a key on the command line is refused and stored nowhere' '
	test_must_fail --code 2 lev auth set anthropic sk-argv-KEY-000000000 2>err &&
	grep -q "never from the command line" err &&
	test -z "$(secret-tool lookup provider anthropic)" &&
	test "$(lev auth list)" = openai
'

test_expect_success keychain 'a key that is not one printable line is refused' '
	printf "two words\n" | test_must_fail lev auth set anthropic 2>err &&
	grep -q "no key read from stdin" err &&
	printf "" | test_must_fail lev auth set anthropic 2>err &&
	test "$(lev auth list)" = openai
'

test_expect_success keychain 'lev auth status says where each key comes from, never the key' '
	lev auth status >out 2>err &&
	grep -q "keychain (Secret Service), 1 key(s)" out &&
	grep -q "openai  *key in keychain" out &&
	ANTHROPIC_API_KEY=sk-env-KEY-1111111111 lev auth status >out2 2>>err &&
	grep -q "anthropic  *key from \$ANTHROPIC_API_KEY" out2 &&
	! grep -q "$KEY\|sk-env-KEY" out out2 err
'

# ---- a run takes its key from the keychain ---------------------------------

mkdir -p work agent
cat >agent/agent.leviath <<'EOF'
[agent]
name = "keyed"

[stages.main]
model = { provider = "mockoa", model = "mock-1" }
available_tools = ["shell"]
system_prompt = "You are tested."
EOF
cat >conversation.json <<'EOF'
{ "responses": [
  { "text": "looking", "calls": [ { "id": "c1", "name": "shell", "arguments": { "command": "env" } } ] },
  { "text": "done" }
] }
EOF

run_config() {
	keychain_config "shell_env = \"inherit\"
[tool_permissions]
shell = \"allow\"
[providers.mockoa]
kind = \"openai\"
base_url = \"http://127.0.0.1:$PORT/v1\"
api_key_env = \"MOCKOA_KEY\"
model = \"mock-1\"
timeout_secs = 5"
}

last_run() {
	ls -d "$RUNS"/* | sort | tail -n 1
}

# a different key in credentials.toml: it must never be the one sent
printf '[providers.mockoa]\napi_key = "%s"\n' "$FILEKEY" >"$CREDS"
chmod 600 "$CREDS"

test_expect_success keychain 'with credential_store = "keychain" a key left in credentials.toml is named, not read' '
	lev auth status >out 2>err &&
	grep -q "credentials.toml. holds key(s) lev does not read" err &&
	grep -q "lev auth migrate" err &&
	! grep -q "$FILEKEY" out err &&
	lev doctor --no-daemon --json >doc 2>&1;
	python3 - doc <<-PY
	import json, sys
	rows = {r["name"]: r for r in json.load(open(sys.argv[1]))["checks"]}
	c = rows["credentials"]
	assert c["status"] == "warn" and "keychain" in c["detail"], c
	assert "lev auth migrate" in c["fix"], c
	PY
'

for mode in daemon foreground; do
	fg=""
	[ $mode = foreground ] && fg=--foreground
	test_expect_success keychain "$mode run: the keychain's key reaches the provider, and nothing else" '
		unset MOCKOA_KEY;
		printf "%s\n" "$KEY" | lev auth set mockoa >/dev/null &&
		lev_start_mock_model conversation.json && run_config &&
		setsid -w "$LEV" run --follow $fg agent --task t --workdir work --json >ev 2>err;
		rc=$?; lev_stop_mock_model; test $rc = 0 &&
		tail -n 1 ev | grep -q "\"status\":\"complete\"" &&
		test "$(wc -l <requests.jsonl)" = 2 &&
		python3 - requests.jsonl "$KEY" <<-PY &&
		import json, sys
		for line in open(sys.argv[1]):
		    h = json.loads(line)["headers"]
		    assert h["authorization"] == "Bearer " + sys.argv[2], h.get("authorization")
		PY
		d=$(last_run) && test "$(cat $d/status)" = complete &&
		grep -q "PATH=" "$d/events.jsonl" &&
		! grep -rq "$KEY\|$FILEKEY" "$d" ev err &&
		! grep -q "DBUS_SESSION_BUS_ADDRESS" "$d/events.jsonl"
	'
done

test_expect_success keychain 'benign twin: with no session bus a key in the environment still works' '
	lev_start_mock_model conversation.json && run_config &&
	env -u DBUS_SESSION_BUS_ADDRESS MOCKOA_KEY=sk-env-KEY-2222222222 \
		setsid -w "$LEV" run --foreground agent --task t --workdir work --json >ev 2>err;
	rc=$?; lev_stop_mock_model; test $rc = 0 &&
	grep -q "Bearer sk-env-KEY-2222222222" requests.jsonl
'

test_expect_success keychain 'no session bus: a run that needs the keychain fails at start naming the fix' '
	lev_start_mock_model conversation.json && run_config &&
	env -u DBUS_SESSION_BUS_ADDRESS -u MOCKOA_KEY \
		setsid -w "$LEV" run --foreground agent --task t --workdir work >out 2>err;
	rc=$?; lev_stop_mock_model; test $rc != 0 &&
	grep -q "no D-Bus session bus" err &&
	grep -q "gnome-keyring-daemon" err &&
	grep -q "credential_store = \"file\"" err &&
	! test -s requests.jsonl &&
	! grep -q "$FILEKEY\|$KEY" out err &&
	(unset DBUS_SESSION_BUS_ADDRESS; test_must_fail lev auth list 2>err) &&
	test "$(wc -l <err)" = 1 && grep -q "no D-Bus session bus" err &&
	(unset DBUS_SESSION_BUS_ADDRESS; lev doctor --no-daemon --json >doc 2>&1;
	 python3 - doc <<-PY
	import json, sys
	c = {r["name"]: r for r in json.load(open(sys.argv[1]))["checks"]}["credentials"]
	assert c["status"] == "fail" and "no D-Bus session bus" in c["detail"], c
	PY
	)
'

cat >"$TRASH/bare-bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir=$XDG_RUNTIME_DIR</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
EOF

test_expect_success keychain 'a session bus with no Secret Service on it: a one-line error naming the fix' '
	dbus-run-session --config-file="$TRASH/bare-bus.conf" -- "$LEV" auth list >out 2>err;
	test $? = 1 &&
	grep -q "lev: error: cannot search the keychain (Secret Service)" err &&
	grep -q "gnome-keyring-daemon" err &&
	test "$(grep -c "lev: error" err)" = 1 && ! test -s out
'

test_expect_success keychain 'lev auth remove deletes the key; a second remove fails' '
	lev auth remove openai >out 2>err &&
	grep -q "removed the key for .openai." out &&
	test -z "$(secret-tool lookup provider openai)" &&
	test_must_fail lev auth remove openai 2>err &&
	grep -q "holds no key for .openai." err &&
	lev auth remove mockoa >/dev/null &&
	test -z "$(lev auth list)"
'

# ---- migration ----------------------------------------------------------------

migrate_files() {
	keychain_config "
# my providers
[providers]
google_api_key = \"sk-google-KEY-33333333\"   # the flat form
fallback_order = [\"openai/gpt-5\"]"
	cat >"$CREDS" <<-'EOF'
	# keys kept by hand
	[providers.anthropic]
	api_key = "sk-ant-KEY-44444444"
	model = "kept"
	EOF
	chmod 600 "$CREDS"
	cp "$CONFIG" config.before && cp "$CREDS" creds.before
}

test_expect_success keychain 'migrate --dry-run lists the keys and changes nothing' '
	migrate_files &&
	lev auth migrate --dry-run >out 2>err &&
	grep -q "would move google: from $CONFIG to the keychain" out &&
	grep -q "would move anthropic: from $CREDS to the keychain" out &&
	cmp "$CONFIG" config.before && cmp "$CREDS" creds.before &&
	test -z "$(lev auth list)" &&
	! grep -q "KEY-3333\|KEY-4444" out err
'

test_expect_success keychain 'migrate refuses when credential_store does not name the destination' '
	test_must_fail lev auth migrate --to-file 2>err &&
	grep -q "set \[security\] credential_store = \"file\"" err &&
	cmp "$CONFIG" config.before && cmp "$CREDS" creds.before
'

test_expect_success keychain 'a failed step undoes the migration: keychain and files as they were' '
	printf "%s\n" "sk-earlier-KEY-5555555" | lev auth set anthropic >/dev/null &&
	unshare -m sh -c "mount --bind -o ro \"$TRASH/cfg\" \"$TRASH/cfg\" && \"$LEV\" auth migrate" >out 2>err;
	test $? = 1 &&
	grep -q "nothing was moved" err &&
	cmp "$CONFIG" config.before && cmp "$CREDS" creds.before &&
	test "$(secret-tool lookup provider anthropic)" = sk-earlier-KEY-5555555 &&
	test -z "$(secret-tool lookup provider google)" &&
	test "$(lev auth list)" = anthropic
'

test_expect_success keychain 'migrate moves the files'"'"' keys into the keychain and keeps their comments' '
	lev auth migrate >out 2>err &&
	grep -q "moved google" out && grep -q "moved anthropic" out &&
	test "$(secret-tool lookup provider google)" = sk-google-KEY-33333333 &&
	test "$(secret-tool lookup provider anthropic)" = sk-ant-KEY-44444444 &&
	! grep -q "KEY-" "$CONFIG" "$CREDS" &&
	grep -q "# my providers" "$CONFIG" && grep -q "fallback_order" "$CONFIG" &&
	grep -q "# my settings" "$CONFIG" &&
	grep -q "# keys kept by hand" "$CREDS" && grep -q "model = \"kept\"" "$CREDS" &&
	lev auth status >out 2>err && ! grep -q "does not read" err &&
	grep -q "google  *key in keychain" out
'

test_expect_success keychain 'migrate --to-file moves them back into credentials.toml (0600)' '
	sed -i "s/credential_store = \"keychain\"/credential_store = \"file\"/" "$CONFIG" &&
	lev auth migrate --to-file >out 2>err &&
	grep -q "moved anthropic: from keychain" out &&
	test -z "$(secret-tool lookup provider anthropic)" &&
	test -z "$(secret-tool lookup provider google)" &&
	test "$(stat -c %a "$CREDS")" = 600 &&
	grep -q "# keys kept by hand" "$CREDS" &&
	test "$(lev auth list | tr "\n" " ")" = "anthropic google " &&
	lev auth status >out 2>err &&
	grep -q "anthropic  *key in credentials.toml" out &&
	! grep -q "KEY-" out err
'

test_expect_success 'the file store: set, list and remove edit credentials.toml atomically, 0600' '
	printf "%s\n" sk-openai-KEY-666666 | lev auth set openai >out &&
	grep -q "in .$CREDS." out &&
	grep -q "^api_key = \"sk-openai-KEY-666666\"" "$CREDS" &&
	test "$(stat -c %a "$CREDS")" = 600 &&
	printf "%s\n" sk-openai-KEY-777777 | lev auth set openai >/dev/null &&
	test "$(grep -c "sk-openai" "$CREDS")" = 1 &&
	lev auth list >out && grep -qx openai out &&
	lev auth remove openai >/dev/null &&
	! grep -q "sk-openai" "$CREDS" &&
	grep -q "# keys kept by hand" "$CREDS"
'

test_expect_success 'a credentials.toml others can read is refused, not rewritten' '
	chmod 644 "$CREDS" && cp "$CREDS" creds.644 &&
	printf "%s\n" sk-x-KEY-888888 | test_must_fail lev auth set openai 2>err &&
	grep -q "chmod 600" err && cmp "$CREDS" creds.644 &&
	chmod 600 "$CREDS"
'

test_done
