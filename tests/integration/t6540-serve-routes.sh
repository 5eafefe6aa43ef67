#!/bin/bash
# lev serve answers every route of Leviath's API: the ones with a meaning
# for lev show what the lev command shows (models, tools, a run's stages
# and context, decided by the daemon and the command, not the server); the
# mutating admin ones are 403 without --allow-admin; the rest are a 501
# that says why, never a 404.  Bad input changes nothing.
. "$SRC_DIR/tests/lib.sh"
. "$SRC_DIR/tests/daemon-lib.sh"
. "$SRC_DIR/tests/serve-lib.sh"

mkdir -p work
approval_agent bp 'all done'

"$LEV" daemon start >/dev/null
serve_start

# what an admin route would change: the installed agents, the MCP servers
snapshot() {
	"$LEV" list --json && "$LEV" mcp list --json
}

test_expect_success 'models and tools: what lev models list and lev tools show' '
	test "$(api GET /api/models)" = 200 &&
	"$LEV" models list --json >models.json &&
	test "$(json out "j")" = "$(json models.json "j")" &&
	test "$(api GET /api/tools)" = 200 &&
	"$LEV" tools --json >tools.json &&
	test "$(json out "j")" = "$(json tools.json "j")" &&
	json out "[t[\"name\"] for t in j[\"tools\"]]" | grep -q shell
'

test_expect_success 'a run: its stages and context, as lev stages and lev context show them' '
	test "$(api POST /api/agents -d "{\"blueprint\": \"$TRASH/bp\", \"workdir\": \"$TRASH/work\"}")" = 200 &&
	json out "j[\"run_id\"]" >id &&
	wait_for status_is "$(cat id)" "waiting: tool approval" &&
	test "$(api GET /api/agents/$(cat id)/stages)" = 200 &&
	"$LEV" stages "$(cat id)" --json >stages.json &&
	test "$(json out "j[\"stages\"][0][\"stage\"]")" = main &&
	test "$(json out "j[\"run\"]")" = "$(json stages.json "j[\"run\"]")" &&
	test "$(api GET /api/agents/$(cat id)/context)" = 200 &&
	test "$(json out "j[\"run\"]")" = "$(cat id)"
'

test_expect_success 'a run the daemon does not know: 404; an id that would be an option: no route' '
	test "$(api GET /api/agents/nosuchrun/stages)" = 404 &&
	grep -q "no run" out &&
	test "$(api GET /api/agents/nosuchrun/context)" = 404 &&
	test "$(api GET /api/agents/--help/stages)" = 404 &&
	grep -q "no such route" out &&
	test "$(api GET /api/agents/-x/context)" = 404
'

test_expect_success 'every route of Leviath is in lev served document and never a 404 or 405' '
	test "$(api GET /api/openapi.json)" = 200 &&
	python3 - out "$URL" "$TOKEN" <<-PY
	import json, re, sys, urllib.request, urllib.error
	doc = json.load(open(sys.argv[1]))
	ops = {(m.upper(), p) for p, item in doc["paths"].items() for m in item}
	# Leviath API: its 49 operations, written down here (schema/openapi.json)
	leviath = """GET /api/blueprints|POST /api/blueprints|POST /api/blueprints/validate
	GET /api/blueprints/{name}|PUT /api/blueprints/{name}|DELETE /api/blueprints/{name}
	GET /api/runs|DELETE /api/runs|DELETE /api/runs/{id}|GET /api/agents|POST /api/agents
	GET /api/agents/tree|GET /api/agents/{id}|DELETE /api/agents/{id}|GET /api/agents/{id}/children
	GET /api/agents/{id}/context|GET /api/agents/{id}/context/history|GET /api/agents/{id}/files
	GET /api/agents/{id}/logs|GET /api/agents/{id}/result|GET /api/agents/{id}/tree-status
	POST /api/agents/{id}/pause|POST /api/agents/{id}/resume|POST /api/agents/{id}/message
	GET /api/agents/{id}/interaction|POST /api/agents/{id}/interaction|GET /api/mcp/servers
	POST /api/mcp/servers|DELETE /api/mcp/servers/{name}|GET /api/mcp/servers/{name}/status
	POST /api/mcp/servers/{name}/login|POST /api/mcp/servers/{name}/test|GET /api/doctor
	GET /api/fs/dirs|POST /api/fs/dirs|GET /api/config|PUT /api/config|POST /api/config/validate
	GET /api/models|GET /ws|GET /ws/agents/{id}|GET /api/agents/{id}/stages|GET /api/tools
	GET /api/scripts|POST /api/scripts/validate|GET /api/scripts/{kind}/{name}
	PUT /api/scripts/{kind}/{name}|DELETE /api/scripts/{kind}/{name}"""
	want = {tuple(op.strip().split(" ")) for op in re.split(r"[|\n]", leviath) if op.strip()}
	assert len(want) == 48, len(want)   # and GET /, the console
	assert want <= ops, sorted(want - ops)
	for m, p in sorted(want):
	    if p.startswith("/ws"):
	        continue
	    req = urllib.request.Request(sys.argv[2] + re.sub(r"\{[a-z]+\}", "nosuchrun", p), method=m,
	        headers={"Authorization": "Bearer " + sys.argv[3]})
	    try:
	        code, body = urllib.request.urlopen(req).status, ""
	    except urllib.error.HTTPError as e:
	        code, body = e.code, e.read().decode()
	    assert code not in (404, 405) or "no run" in body or "no installed agent" in body or "no MCP server" in body, (m, p, code, body)
	    if code == 501:
	        assert json.loads(body)["error"], (m, p)
	        refused = doc["paths"][p][m.lower()]["responses"]["501"]["description"]
	        assert refused == json.loads(body)["error"], (m, p)
	PY
'

test_expect_success 'a run its logs: the events lev logs prints, through lev logs itself' '
	test "$(api GET /api/agents/$(cat id)/logs)" = 200 &&
	test "$(json out "j[\"run\"]")" = "$(cat id)" &&
	"$LEV" logs "$(cat id)" >logs.jsonl &&
	python3 - out logs.jsonl <<-PY
	import json, sys
	got = json.load(open(sys.argv[1]))["events"]
	want = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
	assert got, "no events"
	assert got == want[:len(got)], (got, want)
	PY
'

test_expect_success 'logs of a run the daemon does not know: 404, no lev logs output' '
	test "$(api GET /api/agents/nosuchrun/logs)" = 404 &&
	grep -q "no run" out
'

# the run's workdir: a file, a subfolder, a link inside; beside it a secret
# and a folder out of it, and links that point there
test_expect_success 'files: set up the workdir and what lies outside it' '
	echo "hello from the workdir" >work/hello.txt &&
	mkdir -p work/sub outside &&
	echo "in sub" >work/sub/inner.txt &&
	ln -s hello.txt work/alias.txt &&
	echo "SECRET-outside-7f3a" >secret.txt &&
	echo "SECRET-outside-7f3a" >outside/secret.txt &&
	ln -s ../outside work/out &&
	ln -s ../secret.txt work/leak.txt &&
	ln -s "$TRASH/secret.txt" work/abs.txt &&
	ln -s /proc/self/root work/magic &&
	mkfifo work/pipe
'

test_expect_success 'files: a listing and a read of a real file in the workdir (benign twin)' '
	test "$(api GET /api/agents/$(cat id)/files)" = 200 &&
	json out "[e[\"name\"] for e in j[\"entries\"]]" | grep -q "hello.txt" &&
	test "$(json out "[e[\"type\"] for e in j[\"entries\"] if e[\"name\"] == \"sub\"][0]")" = dir &&
	test "$(api GET "/api/agents/$(cat id)/files?path=hello.txt")" = 200 &&
	test "$(json out "j[\"content\"]")" = "hello from the workdir" &&
	test "$(api GET "/api/agents/$(cat id)/files?path=sub/inner.txt")" = 200 &&
	test "$(json out "j[\"content\"]")" = "in sub" &&
	test "$(api GET "/api/agents/$(cat id)/files?path=sub/../alias.txt")" = 200 &&
	test "$(json out "j[\"content\"]")" = "hello from the workdir" &&
	test "$(api GET "/api/agents/$(cat id)/files?path=sub")" = 200 &&
	json out "[e[\"name\"] for e in j[\"entries\"]]" | grep -q inner.txt
'

test_expect_success 'files: .., an absolute path, a symlink out, a magic link: 403, no byte of it' '
	for p in ../secret.txt sub/../../secret.txt "$TRASH/secret.txt" /etc/passwd \
		 leak.txt abs.txt out/secret.txt out magic/etc/passwd; do
		test "$(api GET "/api/agents/$(cat id)/files" -G --data-urlencode "path=$p")" = 403 ||
			{ echo "path $p: $(cat out)"; return 1; }
		grep -q "leaves the run.s workdir" out || return 1
		! grep -q SECRET out || return 1
		! grep -q root: out || return 1
	done
'

test_expect_success 'files: a FIFO a 400 (never opened), a missing file or run a 404' '
	test "$(api GET "/api/agents/$(cat id)/files?path=pipe")" = 400 &&
	grep -q "neither a file nor a directory" out &&
	test "$(api GET "/api/agents/$(cat id)/files?path=nosuch.txt")" = 404 &&
	grep -q "no such file" out &&
	test "$(api GET "/api/agents/nosuchrun/files?path=hello.txt")" = 404 &&
	grep -q "no run" out
'

test_expect_success 'a route lev refuses: 501 with its reason, nothing done' '
	test "$(api DELETE /api/runs/$(cat id))" = 501 &&
	grep -q "keeps every ended run" out &&
	test "$(api GET /api/agents/$(cat id))" = 200
'

test_expect_success 'mutating admin routes: 403 without --allow-admin, nothing changed' '
	snapshot >before &&
	for r in "POST /api/blueprints" "PUT /api/blueprints/x" "DELETE /api/blueprints/x" \
		 "POST /api/mcp/servers" "DELETE /api/mcp/servers/x" "PUT /api/config" \
		 "PUT /api/scripts/a/b" "DELETE /api/scripts/a/b"; do
		test "$(api ${r% *} ${r#* } -d "{\"name\": \"x\", \"command\": \"true\"}")" = 403 || return 1
		grep -q "needs --allow-admin" out || return 1
	done &&
	snapshot >after &&
	test_cmp before after &&
	test "$(api GET /api/mcp/servers)" = 200 &&
	test "$(json out "j[\"servers\"]")" = "[]"
'

test_expect_success 'bad input on the new routes: a body, a wrong token: 4xx, nothing served' '
	test "$(api GET /api/models -d "{}")" = 400 &&
	grep -q "takes no body" out &&
	test "$(curl -s -o out -w "%{http_code}" "$URL/api/tools")" = 401 &&
	test "$(curl -s -o out -w "%{http_code}" -H "Authorization: Bearer ${TOKEN}x" "$URL/api/agents/$(cat id)/stages")" = 401 &&
	! grep -q stages out
'

serve_start --allow-admin
test_expect_success 'with --allow-admin, every admin route answers itself: a bad body a 400, none a 501' '
	snapshot >before &&
	for r in "POST /api/blueprints" "PUT /api/blueprints/x" "POST /api/mcp/servers" \
		 "PUT /api/config"; do
		test "$(api ${r% *} ${r#* } -d "{}")" = 400 || { echo "$r: $(cat out)"; return 1; }
	done &&
	test "$(api DELETE /api/blueprints/x)" = 404 &&
	grep -q "not installed" out &&
	test "$(api DELETE /api/mcp/servers/x)" = 404 &&
	test "$(api PUT /api/scripts/a/b -d "{}")" = 501 &&
	snapshot >after &&
	test_cmp before after &&
	test "$(api GET /api/mcp/servers)" = 200
'

test_done
