#!/bin/bash
# A follower that stops reading never holds up the daemon or the run: the
# run completes and the daemon answers others while the follower's frames
# pile up; past the daemon's bound (8 MiB) it is disconnected, never given
# a partial stream as if whole.  Its twin, a follower that reads, gets the
# whole run and its end.  (160 calls, each with a result event of up to
# 64 KiB: over 10 MiB of frames.)
. "$SRC_DIR/tests/lib.sh"

. "$SRC_DIR/tests/daemon-lib.sh"
export SOCK

open_request() {
	"$LEV" respond --json | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert len(r) == 1, r
print(r[0]["id"])
'
}

# follower RUN READY GO OUT: attach to RUN, touch READY, read nothing until
# GO exists, then read to the end of the stream; OUT gets the frames' ops
follower() {
	python3 -c '
import json, os, socket, struct, sys, time
run, ready, go, out = sys.argv[1:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(os.environ["SOCK"])
b = json.dumps({"v": 1, "op": "attach", "run": run}).encode()
s.sendall(struct.pack(">I", len(b)) + b)
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.1)
def exact(n):
    d = b""
    while len(d) < n:
        c = s.recv(n - len(d))
        if not c:
            return None
        d += c
    return d
ops = []
while True:
    h = exact(4)
    if h is None:
        break
    body = exact(struct.unpack(">I", h)[0])
    if body is None:
        ops.append("(cut)")
        break
    m = json.loads(body)
    ops.append(m.get("op", "reply"))
open(out, "w").write("\n".join(ops) + "\n")
' "$@"
}

mkdir -p work big
cat >big/agent.leviath <<'EOF2'
[agent]
name = "big"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell", "ask_user_confirm"]
max_iterations = 200
EOF2
{
	printf '[[turn]]\n[[turn.call]]\ntool = "ask_user_confirm"\nargs = { question = "Start?" }\n'
	for i in $(seq 160); do
		printf '[[turn]]\n[[turn.call]]\ntool = "shell"\n'
		printf 'args = { command = "head -c 70000 /dev/zero | tr \\"\\\\\\\\0\\" x" }\n'
	done
	printf '[[turn]]\ntext = "big done"\n'
} >big/turns.toml

test_expect_success 'a follower that reads nothing: the run completes, the daemon answers, the follower is dropped' '
	setsid -w "$LEV" run ./big --workdir work --allow shell --detach >id 2>/dev/null &&
	id=$(cat id) &&
	wait_for status_is "$id" "waiting: user prompt" &&
	{ follower "$id" ready go slow.ops & fpid=$!; } &&
	wait_for test -e ready &&
	"$LEV" respond "$(open_request)" --approve &&
	wait_for status_is "$id" complete &&
	"$LEV" ps >/dev/null &&
	test "$("$LEV" result "$id")" = "big done" &&
	touch go && wait $fpid &&
	! grep -q "^end$" slow.ops &&
	grep -q "dropped a follower that reads too slowly" "$ROOT/daemon.log" &&
	"$LEV" logs "$id" | grep -c "\"event\":\"tool_result\"" >n &&
	test "$(cat n)" = 161
'

test_expect_success 'benign twin: a follower that reads gets every event and the end' '
	rm -f ready go &&
	setsid -w "$LEV" run ./big --workdir work --allow shell --detach >id 2>/dev/null &&
	id=$(cat id) &&
	wait_for status_is "$id" "waiting: user prompt" &&
	touch go &&
	{ follower "$id" ready go fast.ops & fpid=$!; } &&
	wait_for test -e ready &&
	"$LEV" respond "$(open_request)" --approve &&
	wait $fpid &&
	test "$(tail -n 1 fast.ops)" = end &&
	test "$(grep -c "^event$" fast.ops)" -gt 300
'

test_done
