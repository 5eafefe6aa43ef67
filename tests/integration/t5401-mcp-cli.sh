#!/bin/bash
# lev mcp add | list | test | approve | remove: config.toml edited as text
# (the user's comments and layout kept byte for byte, an edit that would not
# be valid refused with nothing written, written atomically with its mode
# kept), and approval recorded for later runs.
. "$SRC_DIR/tests/lib.sh"

CONFIG="$HOME/.leviath/config.toml"
mkdir -p "$HOME/.leviath" && chmod 700 "$HOME/.leviath"
SERVER="$SRC_DIR/tests/helpers/mcp-hostile"

cat >"$CONFIG" <<'EOF2'
# my own config: these comments must survive
[sandbox]
kind = "namespace"   # keep me

# about limits
[limits]
EOF2
chmod 640 "$CONFIG"
cp "$CONFIG" orig.toml

test_expect_success 'add appends one block and keeps the rest byte for byte, and its mode' '
	"$LEV" mcp add h --env LOG=warn --timeout 5 -- python3 "$SERVER" echo >out &&
	grep -q "added MCP server .h." out &&
	head -c "$(wc -c <orig.toml)" "$CONFIG" | cmp - orig.toml &&
	test "$(stat -c %a "$CONFIG")" = 640 &&
	grep -qx "\[\[mcp_servers\]\]" "$CONFIG" &&
	grep -qx "env = { LOG = \"warn\" }" "$CONFIG" &&
	grep -qx "timeout_secs = 5" "$CONFIG" &&
	chmod 600 "$CONFIG"
'

test_expect_success 'add an HTTP server with headers; odd characters are quoted' '
	"$LEV" mcp add remote --url https://mcp.example.com/mcp \
		--header "Authorization=Bearer \${TOKEN}" --header "X-A=\"q\"" >out &&
	grep -qx "url = \"https://mcp.example.com/mcp\"" "$CONFIG" &&
	grep -qF "headers = { Authorization = \"Bearer \${TOKEN}\", X-A = \"\\\"q\\\"\" }" "$CONFIG" &&
	"$LEV" mcp list --json >list.json 2>err &&
	python3 -c "
import json, sys
s = {x[\"name\"]: x for x in json.load(open(\"list.json\"))}
assert s[\"remote\"][\"transport\"] == \"http\" and not s[\"remote\"][\"reachable\"], s
"
'

test_expect_success 'a name used twice or an invalid name is refused; nothing is written' '
	cp "$CONFIG" before.toml &&
	test_must_fail "$LEV" mcp add h -- true 2>err &&
	grep -q "MCP server .h. is already in" err &&
	test_must_fail "$LEV" mcp add "a__b" -- true 2>err &&
	grep -q "not a valid MCP server name" err &&
	test_must_fail "$LEV" mcp add x --timeout 0 -- true 2>err &&
	test_must_fail "$LEV" mcp add x 2>err &&
	cmp before.toml "$CONFIG"
'

test_expect_success 'an edit that would not be valid TOML is refused with nothing written' '
	cp "$CONFIG" before.toml &&
	printf "[broken\n" >>"$CONFIG" && cp "$CONFIG" broken.toml &&
	test_must_fail "$LEV" mcp add y -- true 2>err &&
	cmp broken.toml "$CONFIG" &&
	cp before.toml "$CONFIG" &&
	printf "[[mcp_servers]]\nname = \"z\"\ncommand = \"true\"\n[mcp_servers.env]\nA = \"b\"\n" >>"$CONFIG" &&
	cp "$CONFIG" odd.toml &&
	"$LEV" mcp list --json >/dev/null &&
	test_must_fail "$LEV" mcp remove z 2>err &&
	grep -q "nothing was written" err &&
	cmp odd.toml "$CONFIG" &&
	cp before.toml "$CONFIG"
'

HAVE_NS=
if "$LEV" sandbox probe --json >probe.json 2>&1 && grep -q '"userns": true' probe.json &&
   grep -q '"mount_api": true' probe.json; then
	HAVE_NS=1
fi

if [ -n "$HAVE_NS" ]; then
test_expect_success 'test starts the server in its sandbox and lists its tools' '
	"$LEV" mcp test h >out 2>err &&
	grep -q "MCP server .h. (mcp-hostile 1, protocol 2025-06-18): 3 tools" out &&
	grep -q "h__echo: not approved: the server has no approved tools yet" out
'

test_expect_success 'approve records the tools; list shows them approved' '
	"$LEV" mcp approve h >out 2>err &&
	grep -q "approved the 3 tools MCP server .h. lists now" out &&
	test "$(stat -c %a "$HOME/.leviath/mcp-pins/h.json")" = 600 &&
	"$LEV" mcp list >out 2>err &&
	grep -q "^h: stdio python3, 3 tools approved" out &&
	grep -q "^  h__send: approved" out
'

test_expect_success 'a changed server: test names the change, approve accepts it' '
	sed -i "s/\"echo\"\]/\"desc2\"]/" "$CONFIG" &&
	"$LEV" mcp test h >out 2>err &&
	grep -q "h__echo: not approved: its description changed" out &&
	grep -q "h__send: approved" out &&
	"$LEV" mcp approve h >out 2>err &&
	"$LEV" mcp test h >out 2>err &&
	grep -q "h__echo: approved" out
'

test_expect_success 'list, test, approve typed in ~: the server runs in an empty scratch dir, never ~' '
	"$LEV" mcp add cw -- python3 "$SERVER" cwdwrite >out &&
	(cd "$HOME" && "$LEV" mcp list --json) >cw-list.json 2>err &&
	(cd "$HOME" && "$LEV" mcp test cw) >cw-test.out 2>err &&
	(cd "$HOME" && "$LEV" mcp approve cw) >cw-approve.out 2>err &&
	! test -e "$HOME/.bashrc" &&
	python3 - "$HOME" <<-\PY
	import json, os, re, sys
	home = os.path.realpath(sys.argv[1])
	s = {x["name"]: x for x in json.load(open("cw-list.json"))}["cw"]
	descs = [t["description"] for t in s["tools"] if t["name"] == "cw__echo"]
	for f in ("cw-test.out", "cw-approve.out"):
	    descs += re.findall(r"cwd=[^\n]*", open(f).read())
	assert len(descs) == 3, descs
	for d in descs:
	    cwd = re.search(r"cwd=([^;]*);", d).group(1)
	    assert os.path.realpath(cwd) != home and not cwd.startswith(home + "/"), d
	    assert "/lev-mcp-" in cwd, d
	    # the scratch held the server only while it ran
	    assert not os.path.exists(cwd), cwd
	PY
'

test_expect_success 'benign twin: the server works there; --workdir DIR is still honoured' '
	grep -q "MCP server .cw. (mcp-hostile 1, protocol 2025-06-18): 3 tools" cw-test.out &&
	grep -q "approved the 3 tools MCP server .cw. lists now" cw-approve.out &&
	grep -q "bashrc: wrote" cw-test.out &&
	mkdir -p "$TRASH/proj" &&
	"$LEV" mcp test cw --workdir "$TRASH/proj" >out 2>err &&
	grep -q "cwd=$(cd "$TRASH/proj" && pwd -P); bashrc: wrote" out &&
	grep -q "planted by an MCP server" "$TRASH/proj/.bashrc" &&
	"$LEV" mcp remove cw >out
'

test_expect_success 'a server that does not start: test fails and says why' '
	"$LEV" mcp add nope -- /nonexistent/server >out &&
	test_must_fail "$LEV" mcp test nope 2>err &&
	{ grep -q "MCP server .nope. did not start" err || { cat err; false; }; } &&
	# a server gone before lev writes to it: EPIPE, never a SIGPIPE death (exit 141)
	for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
		st=0 && "$LEV" mcp test nope >/dev/null 2>&1 || st=$?
		test "$st" = 1 || { echo "run $i: exit $st"; return 1; }
	done &&
	"$LEV" mcp remove nope >out
'
else
	test_skip 'mcp test, approve and list with tools' "no namespace sandbox here: $(cat probe.json)"
fi

test_expect_success 'remove cuts exactly the block and forgets the approval; round trip' '
	"$LEV" mcp remove h >out &&
	grep -q "removed MCP server .h." out &&
	! test -e "$HOME/.leviath/mcp-pins/h.json" &&
	"$LEV" mcp remove remote >out &&
	cmp orig.toml "$CONFIG" &&
	"$LEV" mcp list >out &&
	grep -q "no MCP servers configured" out &&
	test_must_fail "$LEV" mcp remove h 2>err &&
	grep -q "has no MCP server .h." err
'

test_expect_success 'usage errors' '
	test_expect_code 2 "$LEV" mcp &&
	test_expect_code 2 "$LEV" mcp frob &&
	test_expect_code 2 "$LEV" mcp add h --sandbox weak -- true &&
	test_expect_code 2 "$LEV" mcp add h --header A=b -- true &&
	test_expect_code 2 "$LEV" mcp test
'

test_done
