#!/bin/bash
# lev serve's routes beyond t6540: a blueprint's detail (lev list --json's
# entry), a posted config.toml checked by lev's config loader (its findings
# with line and column, nothing written).  Each refusal (wrong types, unknown
# fields, no or a wrong token, a name that is a path) is a clear 4xx with
# nothing changed; each has its benign twin.  GET /api/fs/dirs lists one
# level of subdirectories beneath the home, opened by the kernel beneath it:
# '..', an absolute path elsewhere, a symlink out are 403; lev's data root
# and the credential stores (~/.ssh, ~/.gnupg, ~/.aws) are never listed nor
# opened; a plain directory and a dot-directory with ?hidden=true are.
# An MCP server's status is its entry of lev mcp list --json; testing one
# (lev mcp test NAME --json) starts a process, so it is an admin route: 403
# without --allow-admin, and the server is then never started.  A run's
# context history is lev context RUN --json's, paged by a point index.
. "$SRC_DIR/tests/lib.sh"
. "$SRC_DIR/tests/daemon-lib.sh"
. "$SRC_DIR/tests/serve-lib.sh"

approval_agent bp 'done'
"$LEV" add bp >/dev/null 2>&1 || echo "# lev add bp failed"
serve_start

snapshot() {
	find "$ROOT" \( -name "*.toml" -o -name "*.leviath" \) -exec sha256sum {} + | sort &&
	"$LEV" list --json
}

# dirs_of KEY: the listed directories' KEY (name, path) in out, space-separated
dirs_of() {
	json out "' '.join(d['$1'] for d in j['dirs'])"
}

test_expect_success 'GET /api/blueprints/{name}: the entry lev list --json gives' '
	test "$(api GET /api/blueprints/approve)" = 200 &&
	"$LEV" list --json >list.json 2>/dev/null &&
	python3 - out list.json <<-PY
	import json, sys
	got = json.load(open(sys.argv[1]))
	want = [a for a in json.load(open(sys.argv[2]))["agents"] if a["name"] == "approve"]
	assert want and got == want[0], (got, want)
	PY
'

test_expect_success 'a blueprint lev does not have: 404 that says so; a path as a name: no route' '
	test "$(api GET /api/blueprints/nosuch)" = 404 &&
	grep -q "no installed agent" out &&
	test "$(api GET /api/blueprints/..%2Fetc)" = 404 &&
	! grep -q "\"name\"" out &&
	test "$(api GET /api/blueprints/../agents --path-as-is)" = 404 &&
	test "$(api GET /api/blueprints/-x)" = 404 &&
	grep -q "no such route" out &&
	test "$(api GET /api/blueprints/approve -d "{}")" = 400 &&
	test "$(curl -s -o out -w "%{http_code}" "$URL/api/blueprints/approve")" = 401 &&
	! grep -q approve out &&
	test "$(curl -s -o out -w "%{http_code}" -H "Authorization: Bearer ${TOKEN}x" "$URL/api/blueprints/approve")" = 401 &&
	! grep -q approve out
'

test_expect_success 'POST /api/config/validate: a good config is valid, nothing written' '
	snapshot >before &&
	test "$(api POST /api/config/validate -d "{\"config\": \"[limits]\\nshell_timeout_secs = 5\\n\"}")" = 200 &&
	test "$(json out "j[\"valid\"]")" = True &&
	test "$(json out "j[\"errors\"]")" = "[]" &&
	! test -e "$ROOT/config.toml" &&
	snapshot >after &&
	test_cmp before after
'

test_expect_success 'a bad config: valid false and the loader own error, at its line and column' '
	printf "[limits]\nshell_timeout_secs = \"five\"\n" >bad.toml &&
	python3 -c "import json,sys; print(json.dumps({\"config\": open(sys.argv[1]).read()}))" bad.toml >body &&
	test "$(api POST /api/config/validate --data-binary @body)" = 200 &&
	test "$(json out "j[\"valid\"]")" = False &&
	test "$(json out "j[\"errors\"][0][\"line\"]")" = 2 &&
	json out "j[\"errors\"][0][\"column\"]" >col &&
	test "$(cat col)" -ge 1 &&
	! test -e "$ROOT/config.toml"
'

test_expect_success 'a TOML syntax error: its line and column too' '
	test "$(api POST /api/config/validate -d "{\"config\": \"[limits\\n\"}")" = 200 &&
	test "$(json out "j[\"valid\"]")" = False &&
	test "$(json out "j[\"errors\"][0][\"line\"]")" = 1 &&
	json out "j[\"errors\"][0][\"message\"]" | grep -q "^config.toml:1:"
'

test_expect_success 'an unknown key is a warning with its line, the config still valid' '
	test "$(api POST /api/config/validate -d "{\"config\": \"[limits]\\nnosuchkey = 1\\n\"}")" = 200 &&
	test "$(json out "j[\"valid\"]")" = True &&
	test "$(json out "j[\"warnings\"][0][\"line\"]")" = 2 &&
	json out "j[\"warnings\"][0][\"message\"]" | grep -q nosuchkey
'

test_expect_success 'config/validate: wrong types, unknown fields, no body, no token: 4xx, nothing written' '
	snapshot >before &&
	test "$(api POST /api/config/validate -d "{\"config\": 5}")" = 400 &&
	grep -q "config" out &&
	test "$(api POST /api/config/validate -d "{\"config\": \"\", \"path\": \"/etc/x\"}")" = 400 &&
	grep -q "path" out &&
	test "$(api POST /api/config/validate -d "{}")" = 400 &&
	test "$(api POST /api/config/validate -d "[")" = 400 &&
	test "$(curl -s -o out -w "%{http_code}" -X POST -d "{\"config\": \"\"}" "$URL/api/config/validate")" = 401 &&
	test "$(curl -s -o out -w "%{http_code}" -X POST -H "Authorization: Bearer ${TOKEN}x" -d "{\"config\": \"\"}" "$URL/api/config/validate")" = 401 &&
	! grep -q valid out &&
	snapshot >after &&
	test_cmp before after &&
	test "$(api POST /api/config/validate -d "{\"config\": \"\"}")" = 200 &&
	test "$(json out "j[\"valid\"]")" = True
'

mkdir -p "$HOME/proj/sub" "$HOME/.ssh/keys" "$HOME/.gnupg" "$HOME/.aws" "$HOME/.cache/x" &&
ln -s /etc "$HOME/etclink" &&
ln -s proj "$HOME/projlink" &&
echo key >"$HOME/.ssh/id_x" &&
mkdir -p "$ROOT/agents" "$LEVIATH_HOME/.notlev"

test_expect_success 'fs/dirs: the home one level, subdirectories only, sorted; a dot-dir only with hidden' '
	test "$(api GET /api/fs/dirs)" = 200 &&
	test "$(json out "j[\"path\"]")" = "$HOME" &&
	test "$(json out "j[\"parent\"]")" = None &&
	test "$(dirs_of name)" = "proj" &&
	test "$(api GET "/api/fs/dirs?path=$HOME/proj")" = 200 &&
	test "$(dirs_of path)" = "$HOME/proj/sub" &&
	test "$(json out "j[\"parent\"]")" = "$HOME" &&
	test "$(api GET "/api/fs/dirs?path=proj")" = 200 &&
	test "$(api GET "/api/fs/dirs?hidden=true")" = 200 &&
	test "$(dirs_of name)" = ".cache proj"
'

test_expect_success 'fs/dirs: credential stores are neither listed nor opened' '
	test "$(api GET "/api/fs/dirs?hidden=true")" = 200 &&
	! grep -q "\.ssh\|\.gnupg\|\.aws" out &&
	for p in "$HOME/.ssh" .ssh .ssh/keys "$HOME/.gnupg" .aws "proj/../.ssh"; do
		test "$(api GET "/api/fs/dirs?path=$p")" = 403 || return 1
		grep -q "never listed" out || return 1
		! grep -q "keys\|id_x" out || return 1
	done
'

test_expect_success 'fs/dirs: traversal, a path elsewhere, a symlink out: 403, nothing listed' '
	for p in /etc .. ../.. "$HOME/../.." "$HOME/proj/../../.." etclink etclink/ssl \
		 /proc/self/root /proc/self/cwd; do
		test "$(api GET "/api/fs/dirs?path=$p")" = 403 || { echo "$p: $(cat out)"; return 1; }
		! grep -q "\"dirs\"" out || return 1
	done &&
	test "$(api GET "/api/fs/dirs?path=projlink")" = 200 &&
	test "$(json out "j[\"path\"]")" = "$HOME/proj"
'

test_expect_success 'fs/dirs: bad queries are 4xx; no token is 401' '
	test "$(api GET "/api/fs/dirs?hidden=yes")" = 400 &&
	grep -q hidden out &&
	test "$(api GET "/api/fs/dirs?path=nosuch")" = 404 &&
	echo x >"$HOME/proj/f" &&
	test "$(api GET "/api/fs/dirs?path=proj/f")" = 400 &&
	test "$(api GET /api/fs/dirs -d "{}")" = 400 &&
	test "$(curl -s -o out -w "%{http_code}" "$URL/api/fs/dirs")" = 401 &&
	! grep -q proj out &&
	test "$(curl -s -o out -w "%{http_code}" -H "Authorization: Bearer ${TOKEN}x" "$URL/api/fs/dirs")" = 401 &&
	! grep -q proj out
'

# the data root beneath the home: lev's own files are never listed
HOME=$TRASH serve_start
test_expect_success 'fs/dirs: lev data root is neither listed nor opened; its twin is' '
	test "$(api GET "/api/fs/dirs?path=lh&hidden=true")" = 200 &&
	test "$(dirs_of name)" = ".notlev" &&
	test "$(api GET "/api/fs/dirs?path=lh/.leviath")" = 403 &&
	test "$(api GET "/api/fs/dirs?path=lh/.leviath/agents")" = 403 &&
	! grep -q approve out
'

# MCP servers: "echo" (a benign server, its start marked in started.log) and
# "broken" (exits at once)
cat >starter <<EOT
#!/bin/sh
echo started >>"$TRASH/started.log"
exec python3 "$SRC_DIR/tests/helpers/mcp-hostile" echo
EOT
chmod +x starter
cat >"$ROOT/config.toml" <<EOT
[[mcp_servers]]
name = "echo"
command = "$TRASH/starter"
timeout_secs = 30
sandbox = "none"
[[mcp_servers]]
name = "broken"
command = "false"
sandbox = "none"
EOT
chmod 600 "$ROOT/config.toml"
serve_start

test_expect_success 'MCP status: the server entry of lev mcp list --json' '
	test "$(api GET /api/mcp/servers/echo/status)" = 200 &&
	"$LEV" mcp list --json >list.json &&
	python3 - out list.json <<-PY
	import json, sys
	got = json.load(open(sys.argv[1]))
	want = [s for s in json.load(open(sys.argv[2])) if s["name"] == "echo"][0]
	assert got["reachable"] is True and want["reachable"] is True, (got, want)
	assert [t["name"] for t in got["tools"]] == [t["name"] for t in want["tools"]], (got, want)
	assert {k for k in got} == {k for k in want}, (got, want)
	PY
	test "$(api GET /api/mcp/servers/broken/status)" = 200 &&
	test "$(json out "j[\"reachable\"]")" = False &&
	test "$(api GET /api/mcp/servers/nosuch/status)" = 404 &&
	grep -q "no MCP server" out
'

test_expect_success 'MCP test without --allow-admin: 403, the server never started' '
	rm -f started.log &&
	test "$(api POST /api/mcp/servers/echo/test)" = 403 &&
	grep -q "needs --allow-admin" out &&
	! test -e started.log
'

serve_start --allow-admin
test_expect_success 'MCP test with --allow-admin: the server started, as lev mcp test --json shows it' '
	rm -f started.log &&
	test "$(api POST /api/mcp/servers/echo/test)" = 200 &&
	test "$(json out "j[\"reachable\"]")" = True &&
	test "$(json out "[t[\"name\"] for t in j[\"tools\"]][0]")" = "echo__echo" &&
	test "$(cat started.log)" = started &&
	"$LEV" mcp test echo --json >test.json &&
	test "$(json out "sorted(j)")" = "$(json test.json "sorted(j)")" &&
	test "$(api POST /api/mcp/servers/broken/test)" = 200 &&
	test "$(json out "j[\"reachable\"]")" = False &&
	json out "j[\"error\"]"
'

test_expect_success 'MCP test: no such server 404, a body 400, a name as an option no route, no token 401' '
	rm -f started.log &&
	test "$(api POST /api/mcp/servers/nosuch/test)" = 404 &&
	grep -q "no MCP server" out &&
	test "$(api POST /api/mcp/servers/echo/test -d "{\"command\": \"sh\"}")" = 400 &&
	test "$(api POST /api/mcp/servers/--help/test)" = 404 &&
	test "$(api POST /api/mcp/servers/..%2F..%2Fx/test)" = 404 &&
	test "$(curl -s -o out -w "%{http_code}" -X POST "$URL/api/mcp/servers/echo/test")" = 401 &&
	test "$(curl -s -o out -w "%{http_code}" -X POST -H "Authorization: Bearer ${TOKEN}x" "$URL/api/mcp/servers/echo/test")" = 401 &&
	! test -e started.log
'

mkdir -p work
"$LEV" daemon start >/dev/null
test_expect_success 'context/history: lev context --json history, paged by point index' '
	test "$(api POST /api/agents -d "{\"blueprint\": \"$TRASH/bp\", \"workdir\": \"$TRASH/work\"}")" = 200 &&
	json out "j[\"run_id\"]" >id &&
	wait_for status_is "$(cat id)" "waiting: tool approval" &&
	"$LEV" context "$(cat id)" --json >ctx.json &&
	test "$(json ctx.json "len(j[\"history\"]) >= 2")" = True &&
	test "$(api GET "/api/agents/$(cat id)/context/history?limit=100")" = 200 &&
	test "$(json out "j[\"items\"]")" = "$(json ctx.json "j[\"history\"]")" &&
	test "$(json out "j[\"next_cursor\"]")" = None &&
	test "$(api GET "/api/agents/$(cat id)/context/history?limit=1")" = 200 &&
	test "$(json out "j[\"items\"]")" = "$(json ctx.json "j[\"history\"][:1]")" &&
	test "$(json out "j[\"next_cursor\"]")" = 1 &&
	test "$(api GET "/api/agents/$(cat id)/context/history?limit=1&cursor=1")" = 200 &&
	test "$(json out "j[\"items\"]")" = "$(json ctx.json "j[\"history\"][1:2]")" &&
	test "$(api GET "/api/agents/$(cat id)/context/history?cursor=18446744073709551615")" = 200 &&
	test "$(json out "j[\"items\"]")" = "[]"
'

test_expect_success 'context/history: bad paging 400, an unknown run 404' '
	for q in limit=0 limit=101 limit=x cursor=-1 cursor=x; do
		test "$(api GET "/api/agents/$(cat id)/context/history?$q")" = 400 || return 1
		! grep -q items out || return 1
	done &&
	test "$(api GET /api/agents/nosuchrun/context/history)" = 404 &&
	grep -q "no run" out &&
	test "$(curl -s -o out -w "%{http_code}" "$URL/api/agents/$(cat id)/context/history")" = 401
'

test_done
