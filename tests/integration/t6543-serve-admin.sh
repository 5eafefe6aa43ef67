#!/bin/bash
# lev serve's mutating admin routes with --allow-admin: install, replace and
# remove a blueprint, add and remove an MCP server, write config.toml; each
# effect checked from the outside (lev list --json, lev mcp list --json, the
# config file's bytes).  Without --allow-admin each is a 403; a traversal
# name, an invalid blueprint, malformed TOML, a bad body are a 4xx; and in
# every refused case nothing on disk changed (bytes and mtimes compared).
. "$SRC_DIR/tests/lib.sh"
. "$SRC_DIR/tests/daemon-lib.sh"
. "$SRC_DIR/tests/serve-lib.sh"

AGENTS="$ROOT/agents"
CONFIG="$ROOT/config.toml"

# a JSON body from KEY VALUE pairs; a VALUE @FILE is that file's text
body() {
	python3 - "$@" <<-'PY'
	import json, sys
	a, o = sys.argv[1:], {}
	for k, v in zip(a[::2], a[1::2]):
	    o[k] = open(v[1:]).read() if v.startswith("@") else v
	print(json.dumps(o))
	PY
}

manifest() {
	cat >"$1" <<-EOT
	[agent]
	name = "$2"
	version = "$3"
	[stages.main]
	model = { provider = "script", script = "turns.toml" }
	EOT
}

# everything an admin route could change: the installed agents, the MCP
# servers, the config's bytes, each file's mode, size and mtime beneath the
# store, the config and the MCP approvals (and no scratch file left there)
state() {
	"$LEV" list --json &&
	"$LEV" mcp list --json &&
	{ cat "$CONFIG" 2>/dev/null || echo "no config"; } &&
	{ find "$AGENTS" "$ROOT/mcp-pins" -mindepth 1 -printf "%p %M %s %T@\n" \
		2>/dev/null; true; } | sort &&
	find "$ROOT" -maxdepth 1 -name "config.toml*" -printf "%p %M %s %T@\n" | sort
}

manifest hello.leviath hello 1.0.0
manifest hello2.leviath hello 2.0.0
manifest other.leviath other 1.0.0
printf '[agent]\nname = "bad"\nversion = "1"\n' >nostage.leviath
printf '[agent]\nname = "bad"\n[stages.main]\nmodel = { provider = "script", script = "t.toml" }\nno_such_key = 1\n' >unknown.leviath
printf 'taint_tracking = true\n\n[limits]\nshell_timeout_secs = 30\n' >good.toml
printf '[limits]\nshell_timeout_secs = \n' >broken.toml
printf '[limits]\nshell_timeout_secs = 0\n' >invalid.toml

"$LEV" daemon start >/dev/null
serve_start

test_expect_success 'without --allow-admin: every admin route a 403 and nothing changed' '
	mkdir -p "$ROOT" && cp good.toml "$CONFIG" &&
	state >before &&
	body name hello manifest @hello.leviath >b.json &&
	test "$(api POST /api/blueprints --data-binary @b.json)" = 403 &&
	grep -q "needs --allow-admin" out &&
	test "$(api PUT /api/blueprints/hello --data-binary @b.json)" = 403 &&
	test "$(api DELETE /api/blueprints/hello)" = 403 &&
	test "$(api POST /api/mcp/servers -d "{\"name\": \"m\", \"command\": \"true\"}")" = 403 &&
	test "$(api DELETE /api/mcp/servers/m)" = 403 &&
	body config @invalid.toml >c.json &&
	test "$(api PUT /api/config --data-binary @c.json)" = 403 &&
	state >after &&
	test_cmp before after
'

serve_start --allow-admin

test_expect_success 'POST /api/blueprints installs the manifest, as lev add does' '
	body name hello manifest @hello.leviath >b.json &&
	test "$(api POST /api/blueprints --data-binary @b.json)" = 200 &&
	test "$(json out "j[\"ok\"]")" = True &&
	"$LEV" list --json >list.json &&
	test "$(json list.json "[(a[\"name\"], a[\"version\"], a[\"files\"]) for a in j[\"agents\"]]")" = "[('"'"'hello'"'"', '"'"'1.0.0'"'"', '"'"'verified'"'"')]" &&
	cmp hello.leviath "$AGENTS/hello/agent.leviath" &&
	test "$(stat -c %a "$AGENTS/hello/agent.leviath")" = 600 &&
	"$LEV" validate hello >/dev/null
'

test_expect_success 'POST of an installed name: 409, the install untouched' '
	state >before &&
	body name hello manifest @hello2.leviath >b.json &&
	test "$(api POST /api/blueprints --data-binary @b.json)" = 409 &&
	grep -q "already installed" out &&
	state >after &&
	test_cmp before after
'

test_expect_success 'a traversal or invalid name, a manifest naming another agent: 400, nothing written' '
	state >before &&
	for n in ../x .. ../../.leviath/agents/evil /tmp/x .hidden "a/b" ""; do
		body name "$n" manifest @hello.leviath >b.json &&
		test "$(api POST /api/blueprints --data-binary @b.json)" = 400 ||
			{ echo "name $n: $(cat out)"; return 1; }
	done &&
	grep -q "field .name. is required\|not a valid agent name" out &&
	body name other manifest @hello.leviath >b.json &&
	test "$(api POST /api/blueprints --data-binary @b.json)" = 400 &&
	grep -q "names agent .hello., not .other." out &&
	state >after &&
	test_cmp before after &&
	test ! -e "$TRASH/x" && test ! -e "$HOME/x" && test ! -e "$AGENTS/evil"
'

test_expect_success 'an invalid blueprint: 400 with what lev add says, nothing installed or left behind' '
	state >before &&
	body name bad manifest @nostage.leviath >b.json &&
	test "$(api POST /api/blueprints --data-binary @b.json)" = 400 &&
	grep -q "does not load: agent.leviath:1:1: no stages" out &&
	! grep -q "tmp-" out &&
	mkdir -p srcbad && cp nostage.leviath srcbad/agent.leviath &&
	test_must_fail "$LEV" add srcbad 2>add.err &&
	grep -q "no stages" add.err &&
	body name bad manifest @unknown.leviath >b.json &&
	test "$(api POST /api/blueprints --data-binary @b.json)" = 400 &&
	grep -q "no_such_key" out &&
	state >after &&
	test_cmp before after &&
	test -z "$(ls -A "$AGENTS" | grep -v "^hello$")"
'

test_expect_success 'bad bodies: unknown field, wrong type, missing manifest, oversized: 4xx, nothing changed' '
	state >before &&
	test "$(api POST /api/blueprints -d "{\"name\": \"x\", \"manifest\": \"m\", \"dir\": \"/etc\"}")" = 400 &&
	grep -q "dir" out &&
	test "$(api POST /api/blueprints -d "{\"name\": \"x\", \"manifest\": 7}")" = 400 &&
	test "$(api POST /api/blueprints -d "{\"name\": \"x\"}")" = 400 &&
	test "$(api POST /api/blueprints -d "not json")" = 400 &&
	python3 -c "import json; print(json.dumps({\"name\": \"big\", \"manifest\": \"#\" * 70000}))" >big.json &&
	test "$(api POST /api/blueprints --data-binary @big.json)" = 413 &&
	state >after &&
	test_cmp before after
'

test_expect_success 'PUT /api/blueprints/{name} replaces the manifest, its other files kept' '
	echo "[[turn]]" >"$AGENTS/hello/turns.toml" &&
	body manifest @hello2.leviath >b.json &&
	test "$(api PUT /api/blueprints/hello --data-binary @b.json)" = 200 &&
	"$LEV" list --json >list.json &&
	test "$(json list.json "[(a[\"name\"], a[\"version\"], a[\"files\"]) for a in j[\"agents\"]]")" = "[('"'"'hello'"'"', '"'"'2.0.0'"'"', '"'"'verified'"'"')]" &&
	cmp hello2.leviath "$AGENTS/hello/agent.leviath" &&
	test "$(cat "$AGENTS/hello/turns.toml")" = "[[turn]]"
'

test_expect_success 'PUT of a name not installed: 404; an invalid replacement: 400, the old one kept' '
	state >before &&
	body manifest @other.leviath >b.json &&
	test "$(api PUT /api/blueprints/other --data-binary @b.json)" = 404 &&
	body manifest @other.leviath >b.json &&
	test "$(api PUT /api/blueprints/hello --data-binary @b.json)" = 400 &&
	grep -q "names agent .other., not .hello." out &&
	body manifest @unknown.leviath >b.json &&
	test "$(api PUT /api/blueprints/hello --data-binary @b.json)" = 400 &&
	body name other manifest @hello2.leviath >b.json &&
	test "$(api PUT /api/blueprints/hello --data-binary @b.json)" = 400 &&
	state >after &&
	test_cmp before after
'

test_expect_success 'DELETE /api/blueprints/{name}: removed as lev remove does; again a 404' '
	test "$(api DELETE /api/blueprints/hello)" = 200 &&
	"$LEV" list --json >list.json &&
	test "$(json list.json "j[\"agents\"]")" = "[]" &&
	test ! -e "$AGENTS/hello" &&
	state >before &&
	test "$(api DELETE /api/blueprints/hello)" = 404 &&
	test "$(api DELETE /api/blueprints/..)" = 404 &&
	test "$(api DELETE /api/blueprints/%2e%2e)" = 404 &&
	state >after &&
	test_cmp before after
'

test_expect_success 'POST /api/mcp/servers adds the block lev mcp add writes, the rest kept' '
	chmod 600 "$CONFIG" &&
	cp -p "$CONFIG" config.before &&
	test "$(api POST /api/mcp/servers -d "{\"name\": \"m1\", \"command\": \"true\", \"args\": [\"a b\"], \"env\": [\"K=V\"], \"timeout_secs\": 5}")" = 200 &&
	head -c "$(stat -c %s config.before)" "$CONFIG" | cmp - config.before &&
	"$LEV" mcp list --json >mcp.json &&
	test "$(json mcp.json "[s[\"name\"] for s in j]")" = "['"'"'m1'"'"']" &&
	cp "$CONFIG" via-api.toml &&
	cp config.before "$CONFIG" &&
	"$LEV" mcp add m1 --env K=V --timeout 5 -- true "a b" >/dev/null &&
	cmp "$CONFIG" via-api.toml &&
	test "$(stat -c %a "$CONFIG")" = "$(stat -c %a config.before)"
'

test_expect_success 'MCP: a duplicate 409, a command with a url, a bad pair, a bad name: 4xx, nothing changed' '
	state >before &&
	test "$(api POST /api/mcp/servers -d "{\"name\": \"m1\", \"command\": \"true\"}")" = 409 &&
	test "$(api POST /api/mcp/servers -d "{\"name\": \"m2\", \"command\": \"true\", \"url\": \"https://x.invalid/\"}")" = 400 &&
	grep -q "not both" out &&
	test "$(api POST /api/mcp/servers -d "{\"name\": \"m2\", \"url\": \"https://x.invalid/\", \"env\": [\"K=V\"]}")" = 400 &&
	test "$(api POST /api/mcp/servers -d "{\"name\": \"m2\", \"command\": \"true\", \"env\": [\"noequals\"]}")" = 400 &&
	grep -q "NAME=value" out &&
	test "$(api POST /api/mcp/servers -d "{\"name\": \"../m\", \"command\": \"true\"}")" = 400 &&
	test "$(api POST /api/mcp/servers -d "{\"name\": \"m2\", \"command\": \"true\", \"sandbox\": \"off\"}")" = 400 &&
	test "$(api POST /api/mcp/servers -d "{\"name\": \"m2\", \"command\": true}")" = 400 &&
	test "$(api POST /api/mcp/servers -d "{\"name\": \"m2\", \"command\": \"true\", \"timeout_secs\": 0}")" = 400 &&
	test "$(api POST /api/mcp/servers -d "{\"name\": \"m2\", \"command\": \"true\", \"timeout_secs\": 86401}")" = 400 &&
	test "$(api POST /api/mcp/servers -d "{\"name\": \"m2\", \"command\": \"true\", \"shell\": \"x\"}")" = 400 &&
	test "$(api DELETE /api/mcp/servers/nosuch)" = 404 &&
	state >after &&
	test_cmp before after
'

test_expect_success 'DELETE /api/mcp/servers/{name}: its block cut, its approvals dropped' '
	mkdir -p "$ROOT/mcp-pins" &&
	echo "{}" >"$ROOT/mcp-pins/m1.json" &&
	test "$(api DELETE /api/mcp/servers/m1)" = 200 &&
	"$LEV" mcp list --json >mcp.json &&
	test "$(json mcp.json "j")" = "[]" &&
	cmp "$CONFIG" config.before &&
	test ! -e "$ROOT/mcp-pins/m1.json"
'

test_expect_success 'PUT /api/config writes the text, atomically, its mode kept' '
	chmod 640 "$CONFIG" &&
	ino=$(stat -c %i "$CONFIG") &&
	printf "taint_tracking = false\n" >new.toml &&
	body config @new.toml >c.json &&
	test "$(api PUT /api/config --data-binary @c.json)" = 200 &&
	cmp "$CONFIG" new.toml &&
	test "$(stat -c %a "$CONFIG")" = 640 &&
	test "$(stat -c %i "$CONFIG")" != "$ino" &&
	test "$(api GET /api/config)" = 200 &&
	test "$(json out "j[\"taint_tracking\"]")" = False &&
	test "$(ls -A "$ROOT" | grep "config")" = config.toml
'

test_expect_success 'PUT /api/config: malformed or invalid TOML a 400 naming line and column, not a byte written' '
	state >before &&
	body config @broken.toml >c.json &&
	test "$(api PUT /api/config --data-binary @c.json)" = 400 &&
	grep -q "config.toml:2:[0-9]*: " out &&
	body config @invalid.toml >c.json &&
	test "$(api PUT /api/config --data-binary @c.json)" = 400 &&
	grep -q "config.toml:2:[0-9]*: .*shell_timeout_secs" out &&
	test "$(api PUT /api/config -d "{\"config\": 1}")" = 400 &&
	test "$(api PUT /api/config -d "{}")" = 400 &&
	state >after &&
	test_cmp before after
'

test_expect_success 'PUT /api/config of the redacted document GET gives: refused, nothing written' '
	test "$(api GET /api/config)" = 200 &&
	cp out redacted.json &&
	state >before &&
	test "$(api PUT /api/config --data-binary @redacted.json)" = 400 &&
	python3 -c "import json; print(json.dumps({\"config\": json.load(open(\"redacted.json\"))}))" >c.json &&
	test "$(api PUT /api/config --data-binary @c.json)" = 400 &&
	state >after &&
	test_cmp before after
'

test_done
