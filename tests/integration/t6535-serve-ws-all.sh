#!/bin/bash
# lev serve's stream of every run (GET /ws over WebSocket, GET /api/events
# as server-sent events): the daemon's `watch`, each run's frames tagged
# with its run_id and agent_id; a run started after the client connected
# appears; the same token (?token=, in constant time) and Origin checks as
# /ws/agents/{id}; clients that drop mid-stream cost only their connections.
. "$SRC_DIR/tests/lib.sh"
. "$SRC_DIR/tests/daemon-lib.sh"
. "$SRC_DIR/tests/serve-lib.sh"

WS="python3 $SRC_DIR/tests/helpers/wsclient.py --timeout 120"
mkdir -p work1 work2
approval_agent bp 'all done'

"$LEV" daemon start >/dev/null
serve_start
WSURL=ws://127.0.0.1:$SPORT

spawn() {
	test "$(api POST /api/agents -d "{\"blueprint\": \"$TRASH/bp\", \"workdir\": \"$TRASH/$1\"}")" = 200 &&
	json out "j[\"run_id\"]"
}

test_expect_success 'run A waits for approval before anybody watches (set-up)' '
	spawn work1 >a &&
	wait_for status_is "$(cat a)" "waiting: tool approval"
'
A=$(cat a 2>/dev/null)

test_expect_success 'no token, a wrong one: 401, no frame' '
	test_expect_code 3 $WS "$WSURL/ws" >o1 &&
	test "$(head -1 o1)" = "status 401" &&
	test_expect_code 3 $WS "$WSURL/ws?token=${TOKEN}x" >o2 &&
	test "$(head -1 o2)" = "status 401" &&
	test_expect_code 3 $WS "$WSURL/ws?token=${TOKEN%?}" >o3 &&
	test "$(head -1 o3)" = "status 401" &&
	! grep -q "^text" o1 o2 o3 &&
	test "$(curl -s -o out -w "%{http_code}" -m 30 "$URL/api/events")" = 401 &&
	! grep -q "^event:" out
'

test_expect_success 'another site page (Origin) is refused, 403, even with the token' '
	test_expect_code 3 $WS --origin https://evil.example "$WSURL/ws?token=$TOKEN" >o &&
	test "$(head -1 o)" = "status 403" &&
	! grep -q "^text" o &&
	test_expect_code 3 $WS --origin null "$WSURL/ws?token=$TOKEN" >o &&
	test "$(head -1 o)" = "status 403"
'

# the benign twin: the server own origin and the token, watching before run B starts
$WS --origin "http://127.0.0.1:$SPORT" --until end "$WSURL/ws?token=$TOKEN" >live 2>&1 &
WSPID=$!
curl -s -N -m 300 -H "Authorization: Bearer $TOKEN" "$URL/api/events" >sse 2>/dev/null </dev/null &
SSEPID=$!
# four clients that go away mid-stream, after their first frame
for i in 1 2 3 4; do
	$WS --drop-after 1 "$WSURL/ws?token=$TOKEN" >drop.$i 2>&1 &
done

test_expect_success 'the watcher is upgraded (101)' '
	wait_for grep -q "^status 101" live &&
	wait_for grep -q "^status 101" drop.4
'

test_expect_success 'run B, started while connected, appears with its run id' '
	spawn work2 >b &&
	wait_for grep -q "\"op\":\"ask\".*\"run_id\":\"$(cat b)\"" live &&
	grep -q "\"op\":\"spawned\".*\"run_id\":\"$(cat b)\"" live &&
	for i in 1 2 3 4; do wait_for grep -q "^dropped$" drop.$i || return 1; done
'

test_expect_success 'run A, started before, is seen too: its approval and its end, tagged' '
	api GET /api/agents/$A/interaction >/dev/null &&
	json out "j[\"pending\"][\"id\"]" >qid &&
	json out "j[\"pending\"][\"digest\"]" >digest &&
	test "$(api POST /api/agents/$A/interaction -d "{\"request\": \"$(cat qid)\", \"answer\": \"approve\", \"digest\": \"$(cat digest)\"}")" = 200 &&
	wait_for grep -q "\"op\":\"end\".*\"run_id\":\"$A\"" live &&
	grep -q "\"op\":\"answered\".*\"run_id\":\"$A\"" live &&
	test "$(cat work1/ml.txt)" = ran
'
wait "$WSPID"

test_expect_success 'every frame names its run, agent_id as run_id; one run end is not the stream end' '
	grep "^text " live | sed "s/^text //" | python3 -c "
import json, sys
runs = set()
for l in sys.stdin:
    j = json.loads(l)
    assert j[\"run_id\"] == j[\"agent_id\"], j
    assert \"v\" not in j, j
    runs.add(j[\"run_id\"])
assert runs == {\"$A\", \"$(cat b)\"}, runs
" &&
	! grep -q "^close" live
'

test_expect_success 'the same stream as server-sent events (GET /api/events)' '
	wait_for grep -q "\"op\":\"end\".*\"run_id\":\"$A\"" sse &&
	grep -q "^event: spawned" sse &&
	grep -q "^data: .*\"op\":\"ask\".*\"run_id\":\"$(cat b)\"" sse &&
	grep -q "^event: end" sse
'
kill "$SSEPID" 2>/dev/null
wait "$SSEPID" 2>/dev/null

test_expect_success 'the dropped clients cost nothing else: server and daemon answer' '
	test "$(api GET /api/runs)" = 200 &&
	kill -0 "$SERVE_PID" &&
	"$LEV" ps >/dev/null
'

test_expect_success 'no token in the server log' '
	! grep -q "$TOKEN" serve.log &&
	grep -q "^lev serve: /ws\$" serve.log
'

test_done
