#!/bin/bash
# lev serve: signed completion webhooks as Leviath documents them.  A spawn
# with callback_url and callback_secret gets, when its run ends, one POST of
# the agent_completed payload, signed "X-Leviath-Signature: sha256=HEX"
# (HMAC-SHA256 of the exact body bytes) with a stable X-Leviath-Delivery.
# A stdlib-only receiver answers 500 to the first attempt: the retry carries
# the same body and id; a redirect is not followed.  The signature verifies
# with the shared secret and not with another (the check can fail).  A URL
# the network policy refuses is refused at spawn (403), its benign twin (the
# same loopback receiver with allow_local_network) is delivered to; no byte
# of the secret is in any log or in the run's record.
. "$SRC_DIR/tests/lib.sh"
. "$SRC_DIR/tests/daemon-lib.sh"
. "$SRC_DIR/tests/serve-lib.sh"

SECRET=whsec-Zq81-webhook-secret-7f3e

mkdir -p bp work
cat >bp/agent.leviath <<-EOT
[agent]
name = "fin"
[stages.main]
model = { provider = "script", script = "turns.toml" }
EOT
cat >bp/turns.toml <<-EOT
[[turn]]
text = '''the answer is 42'''
EOT

# The receiver: answers 500 to the first POST (FAIL_FIRST), 200 after; each
# POST is one JSON line in hooks.jsonl (its headers and the body's bytes).
cat >receiver.py <<-'PY'
import http.server, json, sys
fails = int(sys.argv[2])
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        global fails
        body = self.rfile.read(int(self.headers["Content-Length"]))
        rec = {"headers": {k.lower(): v for k, v in self.headers.items()},
               "path": self.path, "body": body.decode("latin-1")}
        with open(sys.argv[1], "a") as f:
            f.write(json.dumps(rec) + "\n")
        if self.path.startswith("/redirect"):
            self.send_response(302)
            self.send_header("Location", "/followed")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        st = 500 if fails > 0 else 200
        fails -= 1
        self.send_response(st)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[3], "w").write(str(s.server_address[1]))
s.serve_forever()
PY

# verify.py LINE SECRET: the POST on line LINE of hooks.jsonl is signed with SECRET
cat >verify.py <<-'PY'
import hashlib, hmac, json, sys
rec = [json.loads(l) for l in open("hooks.jsonl")][int(sys.argv[1])]
sig = rec["headers"]["x-leviath-signature"]
assert sig.startswith("sha256="), sig
mine = hmac.new(sys.argv[2].encode(), rec["body"].encode("latin-1"), hashlib.sha256).hexdigest()
sys.exit(0 if hmac.compare_digest(sig[7:], mine) else 1)
PY

python3 receiver.py hooks.jsonl 1 rport &
RPID=$!
trap 'kill $RPID 2>/dev/null; serve_stop; stop_daemon; _lev_cleanup' EXIT
wait_for test -s rport
HOOK="http://127.0.0.1:$(cat rport)/hook?x=1"

printf '[security]\nallow_local_network = true\n' >"$ROOT/config.toml"
"$LEV" daemon start >/dev/null
serve_start

spawn() {
	api POST /api/agents -d "{\"blueprint\": \"$TRASH/bp\", \"workdir\": \"$TRASH/work\", \"task\": \"go\", \"callback_url\": \"$1\", \"callback_secret\": \"$SECRET\"}"
}

test_expect_success 'a spawn with a webhook starts its run' '
	test "$(spawn "$HOOK")" = 200 &&
	json out "j[\"run_id\"]" >id &&
	test -s id
'

test_expect_success 'the completion is retried after a 500 and then delivered' '
	wait_for grep -q "delivered" "$ROOT/daemon.log" &&
	test "$(wc -l <hooks.jsonl)" = 2 &&
	grep -q "webhook for run $(cat id): delivered (attempt 2, HTTP 200)" "$ROOT/daemon.log"
'

test_expect_success 'both attempts: the same body, the same delivery id, the path as given' '
	python3 - "$(cat id)" <<-PY
	import json, sys
	a, b = [json.loads(l) for l in open("hooks.jsonl")]
	assert a["body"] == b["body"], (a, b)
	for r in (a, b):
	    assert r["headers"]["x-leviath-delivery"] == "agent_completed:" + sys.argv[1], r
	    assert r["headers"]["content-type"] == "application/json", r
	    assert r["path"] == "/hook?x=1", r
	PY
'

test_expect_success 'the payload: type, delivery_id, ids, status, final_output' '
	field "$(cat id)" status >st &&
	test "$(cat st)" = complete &&
	python3 - "$(cat id)" "$(cat st)" <<-PY
	import json, sys
	run = sys.argv[1]
	p = json.loads([json.loads(l) for l in open("hooks.jsonl")][1]["body"])
	assert p["type"] == "agent_completed", p
	assert p["delivery_id"] == "agent_completed:" + run, p
	assert p["agent_id"] == run and p["run_id"] == run, p
	assert p["status"] == sys.argv[2], p
	assert p["result"] is None, p
	assert "the answer is 42" in json.dumps(p["final_output"]), p
	assert p["empty_output"] is False, p
	PY
'

test_expect_success 'the signature verifies with the shared secret' '
	python3 verify.py 0 "$SECRET" &&
	python3 verify.py 1 "$SECRET"
'

test_expect_success 'and not with another secret, nor over a changed body (the check can fail)' '
	test_must_fail python3 verify.py 1 "${SECRET}x" &&
	test_must_fail python3 verify.py 1 "" &&
	python3 - <<-PY &&
	import json
	recs = [json.loads(l) for l in open("hooks.jsonl")]
	recs[1]["body"] = recs[1]["body"].replace("42", "43")
	open("hooks.jsonl", "w").write("".join(json.dumps(r) + "\n" for r in recs))
	PY
	test_must_fail python3 verify.py 1 "$SECRET"
'

test_expect_success 'a redirect is never followed (nor retried)' '
	: >hooks.jsonl &&
	test "$(spawn "http://127.0.0.1:$(cat rport)/redirect")" = 200 &&
	json out "j[\"run_id\"]" >id2 &&
	wait_for grep -q "webhook for run $(cat id2): not delivered" "$ROOT/daemon.log" &&
	grep -q "webhook for run $(cat id2): not delivered after 1 attempt: HTTP 302" "$ROOT/daemon.log" &&
	test "$(wc -l <hooks.jsonl)" = 1 &&
	! grep -q followed hooks.jsonl
'

test_expect_success 'a cloud metadata URL is refused at spawn, nothing started' '
	n=$("$LEV" ps --all --json | python3 -c "import json,sys; d=json.load(sys.stdin); print(len(d[\"runs\"]+d[\"finished\"]))") &&
	test "$(spawn http://169.254.169.254/latest)" = 403 &&
	grep -q "callback_url.*169.254.169.254 is a cloud metadata address" out &&
	test "$(spawn ftp://127.0.0.1/x)" = 400 &&
	grep -q "callback_url.*only http and https" out &&
	test "$("$LEV" ps --all --json | python3 -c "import json,sys; d=json.load(sys.stdin); print(len(d[\"runs\"]+d[\"finished\"]))")" = "$n"
'

test_expect_success 'a URL without a secret (or a secret without a URL) is refused' '
	test "$(api POST /api/agents -d "{\"blueprint\": \"$TRASH/bp\", \"callback_url\": \"$HOOK\"}")" = 400 &&
	grep -q "always signed" out &&
	test "$(api POST /api/agents -d "{\"blueprint\": \"$TRASH/bp\", \"callback_secret\": \"s\"}")" = 400
'

approval_agent ab 'approved and done'
test_expect_success 'a run that outlives a daemon restart still calls back once it ends' '
	: >hooks.jsonl &&
	test "$(api POST /api/agents -d "{\"blueprint\": \"$TRASH/ab\", \"workdir\": \"$TRASH/work\", \"task\": \"go\", \"callback_url\": \"$HOOK\", \"callback_secret\": \"$SECRET\"}")" = 200 &&
	json out "j[\"run_id\"]" >id3 &&
	wait_for status_is "$(cat id3)" "waiting: tool approval" &&
	crash "$(cat id3)" &&
	"$LEV" daemon start >/dev/null &&
	wait_for status_is "$(cat id3)" "waiting: tool approval" &&
	"$LEV" respond "$(request_of "$(cat id3)")" --approve >/dev/null &&
	wait_for grep -q "webhook for run $(cat id3): delivered" "$ROOT/daemon.log" &&
	test "$(wc -l <hooks.jsonl)" = 1 &&
	python3 verify.py 0 "$SECRET" &&
	python3 - "$(cat id3)" <<-PY
	import json, sys
	p = json.loads([json.loads(l) for l in open("hooks.jsonl")][0]["body"])
	assert p["delivery_id"] == "agent_completed:" + sys.argv[1], p
	assert "approved and done" in json.dumps(p["final_output"]), p
	PY
'

test_expect_success 'no byte of the secret in any log, the run record or any file' '
	! grep -rq -- "$SECRET" . "$ROOT" &&
	! grep -rq -- "Zq81" . "$ROOT"
'

# Without allow_local_network the same loopback receiver is refused at spawn.
serve_stop
printf '[security]\nallow_local_network = false\n' >"$ROOT/config.toml"
serve_start
test_expect_success 'loopback is refused when the policy does not allow local addresses' '
	: >hooks.jsonl &&
	test "$(spawn "$HOOK")" = 403 &&
	grep -q "127.0.0.1 is a loopback address" out &&
	grep -q "allow_local_network" out &&
	test "$(spawn "http://localhost:$(cat rport)/hook")" = 403 &&
	! test -s hooks.jsonl
'

test_done
