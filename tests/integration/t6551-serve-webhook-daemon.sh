#!/bin/bash
# Completion webhooks are the daemon's (daemon/webhook.h): lev serve hands a
# spawn's callback to the daemon, which keeps it (0600, beneath the data
# root) and delivers it when the run ends.  So the delivery survives the lev
# serve that took the spawn being stopped, and a daemon restart, and a
# delivery pending when the daemon stops resumes when it starts again; each
# time the receiver gets one signed POST with the right HMAC.  The daemon
# checks the network policy on every connect with its own config: a URL the
# policy allowed at spawn but refuses when the run ends gets no byte.  No
# byte of the secret is in a file others can read, a log, or any API output.
# [webhook]'s keys: a bad value is one error line naming the key; good
# values change the retries a receiver answering 500 counts.
. "$SRC_DIR/tests/lib.sh"
. "$SRC_DIR/tests/daemon-lib.sh"
. "$SRC_DIR/tests/serve-lib.sh"

# It shares "webhook-daemon" with this test's directory, so with every path
# the runs are given: a daemon that added it to its redaction set would
# redact the blueprint's path from the request it keeps, and a resumed run
# would not find it (the restarts below).
SECRET=whsec-Kp27-webhook-daemon-4b9d

mkdir -p work
approval_agent ab 'approved and done'

# The receiver: each POST is one JSON line in hooks.jsonl; it answers 500
# while the file "failing" exists, 200 otherwise.
cat >receiver.py <<-'PY'
import http.server, json, os, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        rec = {"headers": {k.lower(): v for k, v in self.headers.items()},
               "body": body.decode("latin-1")}
        st = 500 if os.path.exists("failing") else 200
        rec["status"] = st
        with open(sys.argv[1], "a") as f:
            f.write(json.dumps(rec) + "\n")
        self.send_response(st)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[2], "w").write(str(s.server_address[1]))
s.serve_forever()
PY

# verify.py RUN: hooks.jsonl holds POSTs for RUN only, the last a 200, each
# signed with the secret over its exact body, the same delivery id.
cat >verify.py <<-'PY'
import hashlib, hmac, json, sys
run, secret = sys.argv[1], sys.argv[2]
recs = [json.loads(l) for l in open("hooks.jsonl")]
assert recs and recs[-1]["status"] == 200, recs
for r in recs:
    sig = r["headers"]["x-leviath-signature"]
    mine = hmac.new(secret.encode(), r["body"].encode("latin-1"), hashlib.sha256).hexdigest()
    assert sig == "sha256=" + mine, r
    assert r["headers"]["x-leviath-delivery"] == "agent_completed:" + run, r
    p = json.loads(r["body"])
    assert p["delivery_id"] == "agent_completed:" + run and p["run_id"] == run, p
    assert p["status"] == "complete", p
    assert "approved and done" in json.dumps(p["final_output"]), p
PY

python3 receiver.py hooks.jsonl rport &
RPID=$!
trap 'kill $RPID 2>/dev/null; serve_stop; stop_daemon; _lev_cleanup' EXIT
wait_for test -s rport
HOOK="http://127.0.0.1:$(cat rport)/hook"

config() {
	{ printf '[security]\nallow_local_network = %s\n' "$1"; cat; } >"$ROOT/config.toml"
}
config true <<-EOF
[webhook]
base_delay_ms = 0
EOF
"$LEV" daemon start >/dev/null

# spawn_waiting: a run of ab with the webhook, over a fresh lev serve, left
# waiting for its approval; its id in the file id; that lev serve stopped
spawn_waiting() {
	serve_start &&
	test "$(api POST /api/agents -d "{\"blueprint\": \"$TRASH/ab\", \"workdir\": \"$TRASH/work\", \"task\": \"go\", \"callback_url\": \"$HOOK\", \"callback_secret\": \"$SECRET\"}")" = 200 &&
	json out "j[\"run_id\"]" >id &&
	wait_for status_is "$(cat id)" "waiting: tool approval" &&
	serve_stop
}

# the daemon killed (with the run's worker) and started again, the run resumed waiting
crash_waiting() {
	crash "$(cat id)" &&
	"$LEV" daemon start >/dev/null &&
	wait_for status_is "$(cat id)" "waiting: tool approval"
}

restart_daemon() {
	"$LEV" daemon stop >/dev/null &&
	"$LEV" daemon start >/dev/null
}

approve() {
	"$LEV" respond "$(request_of "$(cat id)")" --approve >/dev/null
}

delivered() {
	wait_for grep -q "webhook for run $(cat id): \(not \)\?delivered" "$ROOT/daemon.log" &&
	grep -q "webhook for run $(cat id): delivered" "$ROOT/daemon.log"
}

test_expect_success 'the daemon keeps the webhook: 0600 in a 0700 directory, nothing else holds the secret' '
	spawn_waiting &&
	test "$(stat -c %a "$ROOT/webhooks")" = 700 &&
	test "$(stat -c %a "$ROOT/webhooks/$(cat id)")" = 600 &&
	grep -rl -- "$SECRET" "$TRASH" >holders &&
	test "$(cat holders)" = "$ROOT/webhooks/$(cat id)"
'

test_expect_success 'lev serve stopped before the run ends: the daemon delivers, once, signed' '
	approve &&
	delivered &&
	test "$(wc -l <hooks.jsonl)" = 1 &&
	python3 verify.py "$(cat id)" "$SECRET" &&
	test_must_fail python3 verify.py "$(cat id)" "${SECRET}x" &&
	! test -e "$ROOT/webhooks/$(cat id)"
'

test_expect_success 'lev serve stopped and the daemon restarted: still one signed delivery' '
	: >hooks.jsonl &&
	spawn_waiting &&
	crash_waiting &&
	approve &&
	delivered &&
	test "$(wc -l <hooks.jsonl)" = 1 &&
	python3 verify.py "$(cat id)" "$SECRET"
'

test_expect_success 'a delivery pending when the daemon stops resumes when it starts' '
	: >hooks.jsonl &&
	: >failing &&
	config true <<-EOF &&
	[webhook]
	max_retries = 5
	base_delay_ms = 3600000
	max_delay_ms = 3600000
	EOF
	restart_daemon &&
	spawn_waiting &&
	approve &&
	wait_for grep -q "\"status\": 500" hooks.jsonl &&
	"$LEV" daemon stop >/dev/null &&
	test -e "$ROOT/webhooks/$(cat id)" &&
	rm failing &&
	config true </dev/null &&
	"$LEV" daemon start >/dev/null &&
	delivered &&
	test "$(wc -l <hooks.jsonl)" = 2 &&
	python3 verify.py "$(cat id)" "$SECRET" &&
	! test -e "$ROOT/webhooks/$(cat id)"
'

test_expect_success 'no byte of the secret in a log, lev ps, the API, or any file left' '
	serve_start &&
	api GET "/api/agents/$(cat id)" >/dev/null && cat out >api.txt &&
	api GET /api/agents >/dev/null && cat out >>api.txt &&
	"$LEV" ps --all --json >>api.txt &&
	grep -q "$(cat id)" api.txt &&
	! grep -rq -- "$SECRET" . "$ROOT" &&
	! grep -rq -- "Kp27" . "$ROOT"
'

test_expect_success 'attack: the daemon checks the policy at connect: a URL allowed at spawn, refused at the end, gets nothing' '
	: >hooks.jsonl &&
	config true </dev/null &&
	spawn_waiting &&
	config false </dev/null &&
	crash_waiting &&
	approve &&
	wait_for grep -q "webhook for run $(cat id): not delivered" "$ROOT/daemon.log" &&
	grep "webhook for run $(cat id): not delivered after 1 attempt" "$ROOT/daemon.log" | grep -q "loopback" &&
	! test -s hooks.jsonl &&
	! test -e "$ROOT/webhooks/$(cat id)"
'

test_expect_success 'attack: a URL the policy refuses (or an oversized secret) is refused at spawn, no run, no delivery' '
	serve_start &&
	test "$(api POST /api/agents -d "{\"blueprint\": \"$TRASH/ab\", \"workdir\": \"$TRASH/work\", \"task\": \"go\", \"callback_url\": \"$HOOK\", \"callback_secret\": \"$SECRET\"}")" = 403 &&
	grep -q "127.0.0.1 is a loopback address" out &&
	big=$(python3 -c "print(\"s\" * 1025)") &&
	test "$(api POST /api/agents -d "{\"blueprint\": \"$TRASH/ab\", \"workdir\": \"$TRASH/work\", \"task\": \"go\", \"callback_url\": \"$HOOK\", \"callback_secret\": \"$big\"}")" = 400 &&
	grep -q "callback_secret.: longer than 1024 bytes" out &&
	ls "$ROOT/webhooks" >kept &&
	! test -s kept &&
	! test -s hooks.jsonl
'

test_expect_success '[webhook] max_retries against a receiver answering 500: 1 + max_retries attempts' '
	: >hooks.jsonl &&
	: >failing &&
	config true <<-EOF &&
	[webhook]
	max_retries = 2
	base_delay_ms = 0
	max_delay_ms = 0
	EOF
	restart_daemon &&
	spawn_waiting &&
	approve &&
	wait_for grep -q "webhook for run $(cat id): not delivered" "$ROOT/daemon.log" &&
	grep -q "webhook for run $(cat id): not delivered after 3 attempts: HTTP 500" "$ROOT/daemon.log" &&
	test "$(wc -l <hooks.jsonl)" = 3
'

test_expect_success 'benign twin: max_retries = 0 makes one attempt' '
	: >hooks.jsonl &&
	config true <<-EOF &&
	[webhook]
	max_retries = 0
	EOF
	restart_daemon &&
	spawn_waiting &&
	approve &&
	wait_for grep -q "webhook for run $(cat id): not delivered" "$ROOT/daemon.log" &&
	grep -q "webhook for run $(cat id): not delivered after 1 attempt: HTTP 500" "$ROOT/daemon.log" &&
	test "$(wc -l <hooks.jsonl)" = 1
'

bad_config() {
	config true &&
	test_must_fail "$LEV" validate ./ab >v 2>verr &&
	test "$(wc -l <verr)" = 1 &&
	cat verr
}

test_expect_success '[webhook]: a bad value or a misspelled key is one line naming it, with file:line:col' '
	printf "[webhook]\nmax_retries = -1\n" | bad_config >e1 &&
	grep -q "config.toml:4:15: .webhook.max_retries. must be between 0 and 100" e1 &&
	printf "[webhook]\ntimeout_secs = 0\n" | bad_config >e2 &&
	grep -q "webhook.timeout_secs" e2 &&
	printf "[webhook]\nmax_retry = 3\n" | bad_config >e3 &&
	grep -q "config.toml:4:1: unknown key .webhook.max_retry. in \[webhook\]" e3 &&
	printf "[webhook]\nbase_delay_ms = 10\nmax_delay_ms = 5\n" | bad_config >e4 &&
	grep -q "webhook.base_delay_ms (10) is above webhook.max_delay_ms (5)" e4 &&
	printf "[webhook]\nmax_retries = \"3\"\n" | bad_config >e5 &&
	grep -q "webhook.max_retries" e5
'

test_expect_success 'benign twin: Leviath'"'"'s documented [webhook] is accepted without a warning' '
	config true <<-EOF &&
	[webhook]
	max_retries   = 3
	base_delay_ms = 500
	max_delay_ms  = 30000
	timeout_secs  = 10
	EOF
	"$LEV" validate ./ab >v 2>verr &&
	! grep -q webhook verr
'

test_done
