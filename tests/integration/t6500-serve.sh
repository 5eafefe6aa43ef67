#!/bin/bash
# lev serve: a token or nothing, the bearer on every request, loopback and
# closed CORS by default; a run spawned, followed (server-sent events) and
# approved over HTTP is the daemon's own decision, bound to the digest of
# the call shown, exactly as `lev respond` makes it.
. "$SRC_DIR/tests/lib.sh"
. "$SRC_DIR/tests/daemon-lib.sh"
. "$SRC_DIR/tests/serve-lib.sh"

mkdir -p work
approval_agent bp 'all done'

test_expect_success 'lev serve refuses to start without a token' '
	test_must_fail env -u LEVIATH_API_TOKEN "$LEV" serve --port 0 2>err &&
	grep -q "lev serve needs a token" err
'

test_expect_success 'lev serve refuses a short token' '
	test_must_fail "$LEV" serve --port 0 --token short 2>err &&
	grep -q "it needs at least 16" err
'

"$LEV" daemon start >/dev/null
serve_start
test_expect_success 'with LEVIATH_API_TOKEN it serves on 127.0.0.1 (benign twin)' '
	test -n "$SPORT" &&
	grep -q "^lev serve: listening on http://127.0.0.1:" serve.log
'

# libmicrohttpd (and GnuTLS behind it) is opened by lev serve alone
# (src/lev/mhdapi.c): no other lev process maps it
test_expect_success 'lev serve loads libmicrohttpd; lev version does not' '
	LD_DEBUG=files "$LEV" version >/dev/null 2>ld.err &&
	grep -q "file=libjansson" ld.err &&
	! grep -q "file=libmicrohttpd" ld.err &&
	test_must_fail env LD_DEBUG=files LEVIATH_API_TOKEN=$TOKEN "$LEV" serve --port "$SPORT" 2>ld.err &&
	grep -q "file=libmicrohttpd" ld.err &&
	grep -q "cannot serve on 127.0.0.1 port $SPORT" ld.err
'

test_expect_success 'no token, a wrong one, or another scheme: 401, nothing served' '
	test "$(curl -s -o out -w "%{http_code}" "$URL/api/runs")" = 401 &&
	grep -q "bearer token is required" out &&
	test "$(curl -s -o out -w "%{http_code}" -H "Authorization: Bearer ${TOKEN}x" "$URL/api/runs")" = 401 &&
	test "$(curl -s -o out -w "%{http_code}" -H "Authorization: Bearer tok-0123456789abcdef-servf" "$URL/api/runs")" = 401 &&
	test "$(curl -s -o out -w "%{http_code}" -H "Authorization: Basic $TOKEN" "$URL/api/runs")" = 401 &&
	! grep -q items out
'

test_expect_success 'the right token lists the runs' '
	test "$(api GET /api/runs)" = 200 &&
	test "$(json out "j[\"items\"]")" = "[]"
'

test_expect_success 'CORS is closed without --cors: no Access-Control header, preflight refused' '
	curl -s -D hdr -o /dev/null -H "Authorization: Bearer $TOKEN" -H "Origin: https://evil.example" "$URL/api/runs" &&
	! grep -qi "^access-control-allow-origin" hdr &&
	test "$(curl -s -o /dev/null -w "%{http_code}" -X OPTIONS -H "Origin: https://evil.example" "$URL/api/runs")" = 403
'

test_expect_success 'spawn: a run over HTTP waits for approval with the whole call and its digest' '
	test "$(api POST /api/agents -d "{\"blueprint\": \"$TRASH/bp\", \"workdir\": \"$TRASH/work\", \"task\": \"@/etc/passwd\"}")" = 200 &&
	json out "j[\"run_id\"]" >id &&
	wait_for status_is "$(cat id)" "waiting: tool approval" &&
	test "$(api GET /api/agents/$(cat id)/interaction)" = 200 &&
	json out "j[\"pending\"][\"call\"]" >call &&
	grep -q "command: echo ran >> ml.txt" call &&
	json out "j[\"pending\"][\"id\"]" >qid &&
	json out "j[\"pending\"][\"digest\"]" >digest &&
	python3 -c "import hashlib,sys; print(hashlib.sha256((\"lev-call-v1\n\" + open(\"call\").read()[:-1]).encode()).hexdigest())" >mine &&
	test_cmp digest mine
'

curl -sN -H "Authorization: Bearer $TOKEN" "$URL/api/runs/$(cat id 2>/dev/null)/events" \
	>events 2>/dev/null </dev/null &
CURL=$!
test_expect_success 'the events stream (SSE) follows the run' '
	wait_for grep -q "^event: ask" events
'

test_expect_success 'an answer bound to another digest is refused; nothing runs' '
	test "$(api POST /api/agents/$(cat id)/interaction -d "{\"request\": \"$(cat qid)\", \"answer\": \"approve\", \"digest\": \"0000000000000000000000000000000000000000000000000000000000000000\"}")" = 409 &&
	grep -q "another call than the one the run asks about" out &&
	test ! -e work/ml.txt &&
	test "$(request_of "$(cat id)")" = "$(cat qid)"
'

test_expect_success 'an approval without the digest is refused (400)' '
	test "$(api POST /api/agents/$(cat id)/interaction -d "{\"request\": \"$(cat qid)\", \"answer\": \"approve\"}")" = 400 &&
	grep -q "field .digest. is required" out &&
	test ! -e work/ml.txt
'

test_expect_success 'the approval with the digest shown runs the call; the run completes (benign twin)' '
	test "$(api POST /api/agents/$(cat id)/interaction -d "{\"request\": \"$(cat qid)\", \"answer\": \"approve\", \"digest\": \"$(cat digest)\"}")" = 200 &&
	wait_for status_is "$(cat id)" complete &&
	test "$(cat work/ml.txt)" = ran &&
	wait_for grep -q "^event: end" events &&
	grep -q "^event: answered" events &&
	test "$(api GET /api/agents/$(cat id)/result)" = 200 &&
	test "$(json out "j[\"result\"]")" = "all done"
'

test_expect_success 'cancel, pause and resume reach the daemon: an ended run is a 409' '
	test "$(api DELETE /api/agents/$(cat id))" = 409 &&
	grep -q "has already ended" out &&
	test "$(api POST /api/agents/nosuchrun/pause)" = 404
'

test_expect_success 'blueprints, validate, doctor and MCP servers show what lev list, validate, doctor, mcp list show' '
	test "$(api GET /api/blueprints)" = 200 &&
	"$LEV" list --json >list.json 2>/dev/null &&
	test "$(json out "sorted(j)")" = "$(json list.json "sorted(j)")" &&
	test "$(api POST /api/blueprints/validate -d "{\"blueprint\": \"$TRASH/bp\"}")" = 200 &&
	test "$(json out "j[\"valid\"]")" = True &&
	test "$(api POST /api/blueprints/validate -d "{\"blueprint\": \"$TRASH/nosuch\"}")" = 200 &&
	test "$(json out "j[\"valid\"]")" = False &&
	test "$(api GET /api/doctor)" = 200 &&
	json out "j[\"checks\"][0][\"name\"]" &&
	test "$(api GET /api/mcp/servers)" = 200 &&
	test "$(json out "j[\"servers\"]")" = "[]"
'

kill "$CURL" 2>/dev/null
serve_start --cors https://console.example
test_expect_success 'with --cors ORIGIN, only that origin gets the header' '
	curl -s -D hdr -o /dev/null -H "Authorization: Bearer $TOKEN" -H "Origin: https://console.example" "$URL/api/runs" &&
	grep -qi "^access-control-allow-origin: https://console.example" hdr &&
	curl -s -D hdr2 -o /dev/null -H "Authorization: Bearer $TOKEN" -H "Origin: https://evil.example" "$URL/api/runs" &&
	! grep -qi "^access-control-allow-origin" hdr2
'

test_expect_success 'the OpenAPI document is served and in lockstep with the routes' '
	test "$(api GET /api/openapi.json)" = 200 &&
	cp out openapi.json &&
	python3 - openapi.json "$SRC_DIR/docs/serve.md" "$URL" "$TOKEN" <<-PY
	import json, re, sys, urllib.request, urllib.error
	doc = json.load(open(sys.argv[1]))
	ops = {(m.upper(), p) for p, item in doc["paths"].items() for m in item}
	# the routes docs/serve.md lists are exactly the document s
	listed = set(re.findall(r"^\| \x60(GET|POST|PUT|DELETE) (/[^\x60]*)\x60", open(sys.argv[2]).read(), re.M))
	assert listed == ops, (sorted(listed ^ ops))
	# every documented route is mounted: the server never says 404/405 to it
	for m, p in sorted(ops):
	    if p.endswith("/events"):
	        continue
	    req = urllib.request.Request(sys.argv[3] + re.sub(r"\{[a-z]+\}", "nosuchrun", p), method=m,
	        headers={"Authorization": "Bearer " + sys.argv[4]}, data=b"{}" if m == "POST" else None)
	    try:
	        code = urllib.request.urlopen(req).status
	    except urllib.error.HTTPError as e:
	        code = e.code
	        body = e.read().decode()
	        assert code != 405 and (code != 404 or "no such route" not in body), (m, p, code, body)
	# and a route it does not list is not served
	try:
	    urllib.request.urlopen(urllib.request.Request(sys.argv[3] + "/api/nosuch",
	        headers={"Authorization": "Bearer " + sys.argv[4]}))
	    assert False
	except urllib.error.HTTPError as e:
	    assert e.code == 404
	PY
'

test_expect_success 'no token in the server log' '
	! grep -q "$TOKEN" serve.log &&
	grep -q "^lev serve: /api/runs\$" serve.log
'

test_expect_success 'a daemon a spawn starts blocks what one started by hand blocks, no more' '
	"$LEV" daemon stop >/dev/null && "$LEV" daemon start >/dev/null &&
	pid=$(daemon_pid) && test -n "$pid" &&
	grep "^SigBlk:" /proc/$pid/status >blk.hand &&
	"$LEV" daemon stop >/dev/null && wait_for gone "$pid" &&
	test "$(api POST /api/agents -d "{\"blueprint\": \"$TRASH/bp\", \"workdir\": \"$TRASH/work\"}")" = 200 &&
	pid=$(daemon_pid) && test -n "$pid" &&
	grep "^SigBlk:" /proc/$pid/status >blk.serve &&
	test_cmp blk.hand blk.serve &&
	"$LEV" daemon stop >/dev/null &&
	wait_for gone "$pid" &&
	"$LEV" daemon start >/dev/null
'

test_expect_success '--tls-cert goes with --tls-key' '
	test_expect_code 2 "$LEV" serve --token "$TOKEN" --tls-cert x.pem 2>err &&
	grep -q "go together" err
'

if command -v openssl >/dev/null; then
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -keyout key.pem -out cert.pem \
		-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1
	serve_start --tls-cert cert.pem --tls-key key.pem
	test_expect_success 'with --tls-cert and --tls-key it serves HTTPS, the same routes' '
		grep -q "^lev serve: listening on https://127.0.0.1:" serve.log &&
		test "$(api GET /api/runs --cacert cert.pem)" = 200 &&
		test "$(curl -s -o /dev/null -w "%{http_code}" --cacert cert.pem "$URL/api/runs")" = 401 &&
		test_must_fail curl -s -o /dev/null "http://127.0.0.1:$SPORT/api/runs"
	'
else
	test_skip 'with --tls-cert and --tls-key it serves HTTPS' 'openssl is not installed'
fi

test_done
