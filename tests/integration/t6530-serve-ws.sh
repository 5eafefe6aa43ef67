#!/bin/bash
# lev serve's WebSocket stream (/ws/agents/{id}): the token as ?token=,
# compared like the bearer; an Origin other than the server's own or the
# --cors one refused; the run's events, the SSE stream's frames, as text
# messages (libwslay's frames, MHD's upgrade); ping and close answered; a
# client that drops mid-stream costs only its own connection.
. "$SRC_DIR/tests/lib.sh"
. "$SRC_DIR/tests/daemon-lib.sh"
. "$SRC_DIR/tests/serve-lib.sh"

WS="python3 $SRC_DIR/tests/helpers/wsclient.py --timeout 60"
mkdir -p work
approval_agent bp 'all done'

"$LEV" daemon start >/dev/null
serve_start
WSURL=ws://127.0.0.1:$SPORT

test_expect_success 'a run waits for approval (set-up)' '
	test "$(api POST /api/agents -d "{\"blueprint\": \"$TRASH/bp\", \"workdir\": \"$TRASH/work\"}")" = 200 &&
	json out "j[\"run_id\"]" >id &&
	wait_for status_is "$(cat id)" "waiting: tool approval"
'
ID=$(cat id 2>/dev/null)

test_expect_success 'no token, a wrong one: 401, no upgrade' '
	test_expect_code 3 $WS "$WSURL/ws/agents/$ID" >o1 &&
	test "$(head -1 o1)" = "status 401" &&
	test_expect_code 3 $WS "$WSURL/ws/agents/$ID?token=${TOKEN}x" >o2 &&
	test "$(head -1 o2)" = "status 401" &&
	test_expect_code 3 $WS "$WSURL/ws/agents/$ID?token=${TOKEN%?}" >o3 &&
	test "$(head -1 o3)" = "status 401" &&
	! grep -q "^text" o1 o2 o3
'

test_expect_success 'another site page (Origin) is refused, 403, even with the token' '
	test_expect_code 3 $WS --origin https://evil.example "$WSURL/ws/agents/$ID?token=$TOKEN" >o &&
	test "$(head -1 o)" = "status 403" &&
	grep -q "this Origin may not open the stream" o &&
	test_expect_code 3 $WS --origin null "$WSURL/ws/agents/$ID?token=$TOKEN" >o &&
	test "$(head -1 o)" = "status 403"
'

test_expect_success 'the server own origin with the token: 101, the run events (benign twin)' '
	$WS --origin "http://127.0.0.1:$SPORT" --until ask "$WSURL/ws/agents/$ID?token=$TOKEN" >o &&
	test "$(head -1 o)" = "status 101" &&
	grep "^text " o | sed "s/^text //" | tail -1 >ask.json &&
	test "$(json ask.json "j[\"op\"]")" = ask &&
	json ask.json "j[\"question\"][\"call\"]" | grep -q "echo ran >> ml.txt" &&
	test "$(json ask.json "\"v\" in j")" = False
'

test_expect_success 'the same events as the SSE stream' '
	curl -s -N -m 3 -H "Authorization: Bearer $TOKEN" "$URL/api/runs/$ID/events" >sse ;
	sed -n "s/^event: \(.*\)/\1/p" sse >sse.ops &&
	$WS --until ask "$WSURL/ws/agents/$ID?token=$TOKEN" >o &&
	grep "^text " o | sed "s/^text //" | python3 -c "import json,sys; [print(json.loads(l)[\"op\"]) for l in sys.stdin]" >ws.ops &&
	test -s ws.ops &&
	test_cmp sse.ops ws.ops
'

test_expect_success 'a ping is answered with its pong' '
	$WS --ping --until ask "$WSURL/ws/agents/$ID?token=$TOKEN" >o &&
	grep -q "^pong lev-ping$" o
'

test_expect_success 'a close is answered with a close' '
	$WS --close-after 1 "$WSURL/ws/agents/$ID?token=$TOKEN" >o &&
	grep -q "^close 1000" o
'

test_expect_success 'a bad handshake: 426 for another version, 400 for a bad key, 404 for no run' '
	test "$(curl -s -o out -w "%{http_code}" -H "Upgrade: websocket" -H "Connection: Upgrade" -H "Sec-WebSocket-Version: 8" -H "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==" "$URL/ws/agents/$ID?token=$TOKEN")" = 426 &&
	test "$(curl -s -o out -w "%{http_code}" -H "Upgrade: websocket" -H "Connection: Upgrade" -H "Sec-WebSocket-Version: 13" -H "Sec-WebSocket-Key: short" "$URL/ws/agents/$ID?token=$TOKEN")" = 400 &&
	grep -q "Sec-WebSocket-Key" out &&
	test "$(curl -s -o out -w "%{http_code}" "$URL/ws/agents/$ID?token=$TOKEN")" = 400 &&
	test_expect_code 3 $WS "$WSURL/ws/agents/nosuchrun?token=$TOKEN" >o &&
	test "$(head -1 o)" = "status 404" &&
	test_expect_code 3 $WS "$WSURL/ws/agents/$ID/x?token=$TOKEN" >o &&
	test "$(head -1 o)" = "status 404"
'

test_expect_success 'clients that drop mid-stream cost only their connections' '
	for i in 1 2 3 4 5 6 7 8; do
		$WS --drop-after 1 "$WSURL/ws/agents/$ID?token=$TOKEN" >drop.$i || return 1
		grep -q "^dropped$" drop.$i || return 1
	done &&
	$WS --until ask "$WSURL/ws/agents/$ID?token=$TOKEN" >o &&
	grep -q "^text .*\"op\":\"ask\"" o &&
	test "$(api GET /api/runs)" = 200 &&
	kill -0 "$SERVE_PID"
'

$WS --until end "$WSURL/ws/agents/$ID?token=$TOKEN" >live 2>&1 &
WSPID=$!
test_expect_success 'a follower sees the approval and the end, then a close 1000' '
	wait_for grep -q "\"op\":\"ask\"" live &&
	api GET /api/agents/$ID/interaction >/dev/null &&
	json out "j[\"pending\"][\"id\"]" >qid &&
	json out "j[\"pending\"][\"digest\"]" >digest &&
	test "$(api POST /api/agents/$ID/interaction -d "{\"request\": \"$(cat qid)\", \"answer\": \"approve\", \"digest\": \"$(cat digest)\"}")" = 200 &&
	wait_for grep -q "\"op\":\"end\"" live &&
	grep -q "\"op\":\"answered\"" live &&
	grep -q "\"op\":\"end\"" live &&
	test "$(cat work/ml.txt)" = ran
'
wait "$WSPID"

test_expect_success 'an ended run stream: the last events, then a close 1000' '
	$WS "$WSURL/ws/agents/$ID?token=$TOKEN" >o &&
	grep -q "\"op\":\"end\"" o &&
	grep -q "^close 1000" o
'

serve_start --cors https://console.example
test_expect_success 'with --cors ORIGIN, that page may open the stream; others still not' '
	$WS --origin https://console.example "ws://127.0.0.1:$SPORT/ws/agents/$ID?token=$TOKEN" >o &&
	test "$(head -1 o)" = "status 101" &&
	test_expect_code 3 $WS --origin https://evil.example "ws://127.0.0.1:$SPORT/ws/agents/$ID?token=$TOKEN" >o &&
	test "$(head -1 o)" = "status 403"
'

test_expect_success 'no token in the server log' '
	! grep -q "$TOKEN" serve.log &&
	grep -q "^lev serve: /ws/agents/$ID\$" serve.log
'

if command -v openssl >/dev/null; then
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -keyout key.pem -out cert.pem \
		-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1
	serve_start --tls-cert cert.pem --tls-key key.pem
	test_expect_success 'over TLS (wss://), the same stream; the https origin is its own' '
		$WS --cacert cert.pem --origin "https://127.0.0.1:$SPORT" "wss://127.0.0.1:$SPORT/ws/agents/$ID?token=$TOKEN" >o &&
		test "$(head -1 o)" = "status 101" &&
		grep -q "\"op\":\"end\"" o &&
		test_expect_code 3 $WS --cacert cert.pem --origin "http://127.0.0.1:$SPORT" "wss://127.0.0.1:$SPORT/ws/agents/$ID?token=$TOKEN" >o &&
		test "$(head -1 o)" = "status 403"
	'
else
	test_skip 'over TLS (wss://)' 'openssl is not installed'
fi

test_done
