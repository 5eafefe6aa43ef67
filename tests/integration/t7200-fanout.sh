#!/bin/bash
# Fan-out stages and sub-agents (docs/sub-agents.md), run with the script
# provider: a fan_out call runs one worker per item and merges their answers;
# on_worker_failure, max_items and max_attempts; every worker runs under its
# parent's policy or tighter (read paths, permissions, taint); spawn_agent,
# its max_child_depth and a configured deny.  Each effect is shown from the
# run's events and the workers' sub-records, with a twin where it must not
# happen.
. "$SRC_DIR/tests/lib.sh"

mkdir -p work "$HOME/.leviath" outside
echo "public words" >work/public.txt
echo "PRIVATE-LINE-42" >outside/secret.txt
OUT="$TRASH/outside"
CONFIG="$HOME/.leviath/config.toml"
# the user trusts the blueprints' [read_paths] and lets web_fetch run: the
# taint gate is what decides where private words may go
printf 'taint_tracking = true\n[security]\nallow_blueprint_read_paths = true\n[tool_permissions]\nweb_fetch = "allow"\n' \
	>"$CONFIG"
chmod 600 "$CONFIG"
# this host may receive internal data, never private
printf '[[allowlist]]\ntool = "web_fetch"\nto = ["127.0.0.1"]\nmax_sensitivity = "internal"\n' \
	>"$HOME/.leviath/policy.toml"
chmod 600 "$HOME/.leviath/policy.toml"

M='model = { provider = "script", script = "turns.toml" }'

# bp DIR: the blueprint from stdin; turns DIR: its script from stdin
bp() {
	mkdir -p "$1" && cat >"$1/agent.leviath"
}
turns() {
	cat >"$1/turns.toml"
}
# run DIR [ARGS]: a foreground run with no terminal; its events in DIR.ev
run() {
	local d=$1
	shift
	setsid -w "$LEV" run --foreground "$d" --task t --workdir work --json "$@" >"$d.ev" \
		2>"$d.err"
}
# check DIR PYTHON: PYTHON runs with `ev` (the events), `end` (the last), of(name),
# and kid(event): the events of a child's sub-record
check() {
	python3 - "$1.ev" "$2" <<-'PY'
	import json, os, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	end = ev[-1]
	def of(name, evs=None):
	    return [e for e in (ev if evs is None else evs) if e["event"] == name]
	def kid(e):
	    return [json.loads(l) for l in open(os.path.join(e["record"], "events.jsonl"))]
	def audit(e):
	    return [json.loads(l) for l in open(os.path.join(e["record"], "audit.jsonl"))]
	exec(sys.argv[2])
	PY
}

# fanbp NAME EXTRA-SPLIT-KEYS: split fans out to `one`, merge reads the region
fanbp() {
	bp "$1" <<-EOF
	[agent]
	name = "$1"
	[read_paths]
	allow = ["$OUT"]
	[stages.split]
	mode = "fan_out"
	$M
	worker_stage = "one"
	merge_stage = "merge"
	results_region = "rows"
	$2
	[stages.one]
	$M
	allow_as_worker = true
	available_tools = ["read_file", "submit_output"]
	require_output = true
	max_iterations = 2
	[stages.merge]
	$M
	available_tools = ["context_read", "web_fetch"]
	[context.regions]
	rows = { kind = "temporary" }
	EOF
}

# ---- a fan-out merges its workers ----------------------------------------------

fanbp merge3 ""
turns merge3 <<'EOF'
[[turn]]
[[turn.call]]
tool = "fan_out"
args = { items = [{ id = "a", context = { slice = "first" } }, { id = "b", context = "second" }, { id = "c", context = { slice = "third" } }] }
[[turn]]
[[turn.call]]
tool = "read_file"
args = { path = "public.txt" }
[[turn]]
[[turn.call]]
tool = "submit_output"
args = { output = "rows of a" }
[[turn]]
[[turn.call]]
tool = "submit_output"
args = { output = "rows of b" }
[[turn]]
[[turn.call]]
tool = "submit_output"
args = { output = "rows of c" }
[[turn]]
[[turn.call]]
tool = "context_read"
args = { region = "rows" }
[[turn]]
text = "merged"
EOF

test_expect_success 'a fan-out runs one worker per item and merges them: N blocks, "N succeeded"' '
	lev validate merge3 >val && grep -q "0 error(s)" val &&
	run merge3 &&
	check merge3 "
assert end[\"status\"] == \"complete\" and end[\"output\"] == \"merged\", end
fo = [e for e in of(\"tool_result\") if e[\"tool\"] == \"fan_out\"][0]
assert fo[\"ok\"] and fo[\"text\"].startswith(\"[fan_out results: 3 succeeded, 0 failed]\"), fo
kids = of(\"child_finished\")
assert [k[\"child\"] for k in kids] == [\"w1\", \"w2\", \"w3\"], kids
assert [k[\"output\"] for k in kids] == [\"rows of a\", \"rows of b\", \"rows of c\"], kids
# each worker got its own item and nothing else
first = kid(kids[0])
assert first[0][\"event\"] == \"run_started\" and first[0][\"entry_stage\"] == \"one\", first[0]
# the merge stage is where the run went, and the region holds one block per worker
assert [e[\"stage\"] for e in of(\"stage_started\")] == [\"split\", \"merge\"]
rows = [e for e in of(\"tool_result\") if e[\"tool\"] == \"context_read\"][0][\"text\"]
assert rows.count(\"## worker \") == 3 and \"rows of b\" in rows, rows
# the worker calls are in its sub-record, decided by the gate chain
a = audit(kids[0])
assert any(l[\"tool\"] == \"read_file\" and l[\"gate\"] == \"permission\" for l in a), a
"
'

# ---- on_worker_failure -------------------------------------------------------

for mode in continue fail; do
	fanbp "onfail_$mode" "on_worker_failure = \"$mode\""
	turns "onfail_$mode" <<-'EOF'
	[[turn]]
	[[turn.call]]
	tool = "fan_out"
	args = { items = [{ id = "good", context = "x" }, { id = "bad", context = "y" }, { id = "late", context = "z" }] }
	[[turn]]
	[[turn.call]]
	tool = "submit_output"
	args = { output = "good rows" }
	[[turn]]
	text = "no submit"
	[[turn]]
	text = "still no submit"
	[[turn]]
	[[turn.call]]
	tool = "submit_output"
	args = { output = "late rows" }
	[[turn]]
	text = "merged what there is"
	EOF
done

test_expect_success 'on_worker_failure = "continue": a failed worker is reported, the run goes on' '
	run onfail_continue &&
	check onfail_continue "
fo = [e for e in of(\"tool_result\") if e[\"tool\"] == \"fan_out\"][0]
assert fo[\"text\"].startswith(\"[fan_out results: 2 succeeded, 1 failed]\"), fo
assert \"- bad: FAILED\" in fo[\"text\"], fo
assert end[\"status\"] == \"complete\" and end[\"output\"] == \"merged what there is\", end
"
'

test_expect_success 'on_worker_failure = "fail": the first failure fails the stage, later items are not run' '
	run onfail_fail;
	check onfail_fail "
fo = [e for e in of(\"tool_result\") if e[\"tool\"] == \"fan_out\"][0]
assert not fo[\"ok\"] and fo[\"text\"].startswith(\"[fan_out results: 1 succeeded, 1 failed]\"), fo
assert \"1 item(s) not run: a worker failed\" in fo[\"text\"], fo
assert len(of(\"child_started\")) == 2
assert end[\"status\"] == \"error\" and \"worker \x27bad\x27 failed\" in end[\"error\"], end
assert [e[\"stage\"] for e in of(\"stage_started\")] == [\"split\"]
"
'

# ---- max_items -----------------------------------------------------------------

for cap in 2 3; do
	fanbp "cap$cap" "max_items = $cap"
	turns "cap$cap" <<-'EOF'
	[[turn]]
	[[turn.call]]
	tool = "fan_out"
	args = { items = [{ id = "a", context = "x" }, { id = "b", context = "y" }, { id = "c", context = "z" }] }
	[[turn]]
	[[turn.call]]
	tool = "submit_output"
	args = { output = "rows a" }
	[[turn]]
	[[turn.call]]
	tool = "submit_output"
	args = { output = "rows b" }
	[[turn]]
	[[turn.call]]
	tool = "submit_output"
	args = { output = "rows c" }
	[[turn]]
	text = "merged"
	EOF
done

test_expect_success 'max_items caps the items run; the rest are reported, not run' '
	run cap2 &&
	check cap2 "
fo = [e for e in of(\"tool_result\") if e[\"tool\"] == \"fan_out\"][0]
assert fo[\"text\"].startswith(\"[fan_out results: 2 succeeded, 0 failed]\"), fo
assert \"1 item(s) not run: over max_items = 2\" in fo[\"text\"], fo
assert len(of(\"child_started\")) == 2
"
'

test_expect_success 'with room for every item, every item runs (benign twin)' '
	run cap3 &&
	check cap3 "
fo = [e for e in of(\"tool_result\") if e[\"tool\"] == \"fan_out\"][0]
assert fo[\"text\"].startswith(\"[fan_out results: 3 succeeded, 0 failed]\"), fo
assert \"not run\" not in fo[\"text\"] and len(of(\"child_started\")) == 3
"
'

# ---- a stage that never fans out -------------------------------------------------

fanbp never "max_attempts = 1"
cat >>never/agent.leviath <<'EOF'
[stages.split.transitions.recover]
condition = "error"
[stages.recover]
model = { provider = "script", script = "turns.toml" }
EOF
turns never <<'EOF'
[[turn]]
text = "I would rather not split"
[[turn]]
text = "still not"
[[turn]]
text = "recovered"
EOF

test_expect_success 'a fan-out stage that never calls fan_out is asked again, then takes its error edge' '
	run never &&
	check never "
assert [e[\"stage\"] for e in of(\"stage_started\")] == [\"split\", \"recover\"], ev
f = of(\"stage_finished\")[0]
assert f[\"end\"] == \"error\", f
assert end[\"status\"] == \"complete\" and end[\"output\"] == \"recovered\", end
assert not of(\"child_started\")
"
'

# ---- a child never gets more than its parent -------------------------------------

# the installed agent `reader` declares the outside directory (the user trusts
# blueprint read paths): run on its own, it may read there
bp reader <<EOF
[agent]
name = "reader"
[read_paths]
allow = ["$OUT"]
[stages.main]
$M
available_tools = ["read_file"]
EOF
turns reader <<EOF
[[turn]]
[[turn.call]]
tool = "read_file"
args = { path = "$OUT/secret.txt" }
[[turn]]
text = "read it"
EOF
# spawner declares nothing outside the workdir; spawner_granted declares the directory
for d in spawner spawner_granted; do
	bp $d <<-EOF
	[agent]
	name = "$d"
	[stages.main]
	$M
	available_tools = ["spawn_agent"]
	EOF
	turns $d <<-'EOF'
	[[turn]]
	[[turn.call]]
	tool = "spawn_agent"
	args = { blueprint = "reader", task = "read the secret", wait = true }
	[[turn]]
	text = "parent done"
	EOF
done
printf '[read_paths]\nallow = ["%s"]\n' "$OUT" >>spawner_granted/agent.leviath

test_expect_success 'the installed agent on its own reads the file its blueprint declares' '
	lev add ./reader >/dev/null &&
	run reader &&
	check reader "
r = of(\"tool_result\")[0]
assert r[\"ok\"] and \"PRIVATE-LINE-42\" in r[\"text\"] and r[\"label\"] == \"private\", r
"
'

test_expect_success 'as a child of a run that could not read there, it cannot either' '
	run spawner &&
	check spawner "
k = of(\"child_finished\")[0]
c = [e for e in kid(k) if e[\"event\"] == \"tool_call\"][0]
assert c[\"tool\"] == \"read_file\" and c[\"decision\"] == \"deny\", c
assert c[\"gate\"] in (\"workdir\", \"read_paths\") and \"declares no [read_paths]\" in c[\"reason\"], c
r = [e for e in kid(k) if e[\"event\"] == \"tool_result\"][0]
assert \"PRIVATE-LINE-42\" not in r[\"text\"], r
assert \"PRIVATE-LINE-42\" not in open(sys.argv[1]).read()
"
'

test_expect_success 'as a child of a run granted the directory, it reads the file (benign twin)' '
	run spawner_granted &&
	check spawner_granted "
k = of(\"child_finished\")[0]
c = [e for e in kid(k) if e[\"event\"] == \"tool_call\"][0]
assert c[\"decision\"] == \"allow\", c
assert k[\"ok\"] and k[\"label\"] == \"private\", k
sp = [e for e in of(\"tool_result\") if e[\"tool\"] == \"spawn_agent\"][0]
assert sp[\"label\"] == \"private\", sp
"
'

# a parent stage that denies read_file: its worker may not read either
fanbp ceiling "tool_permissions = { read_file = \"deny\" }"
cp merge3/turns.toml ceiling/

test_expect_success 'a permission the parent stage denies is denied to its workers' '
	run ceiling &&
	check ceiling "
k = of(\"child_finished\")[0]
c = [e for e in kid(k) if e[\"event\"] == \"tool_call\"][0]
assert c[\"tool\"] == \"read_file\" and c[\"decision\"] == \"deny\", c
assert c[\"gate\"] == \"permission\" and \"parent run\" in c[\"rule\"], c
" &&
	check merge3 "
k = of(\"child_finished\")[0]
c = [e for e in kid(k) if e[\"event\"] == \"tool_call\"][0]
assert c[\"tool\"] == \"read_file\" and c[\"decision\"] == \"allow\", c
"
'

# ---- taint: what a worker read comes back with its label ----------------------------

for what in secret public; do
	fanbp "taint_$what" ""
	case $what in
	secret) path="$OUT/secret.txt" ;;
	public) path="public.txt" ;;
	esac
	turns "taint_$what" <<-EOF
	[[turn]]
	[[turn.call]]
	tool = "fan_out"
	args = { items = [{ id = "only", context = "read it" }] }
	[[turn]]
	[[turn.call]]
	tool = "read_file"
	args = { path = "$path" }
	[[turn]]
	[[turn.call]]
	tool = "submit_output"
	args = { output = "the line I read" }
	[[turn]]
	[[turn.call]]
	tool = "web_fetch"
	args = { url = "http://127.0.0.1:9/send" }
	[[turn]]
	text = "sent"
	EOF
done

test_expect_success 'a private file read in a worker makes the parent outbound call hit the taint gate' '
	run taint_secret &&
	check taint_secret "
k = of(\"child_finished\")[0]
assert k[\"label\"] == \"private\", k
fo = [e for e in of(\"tool_result\") if e[\"tool\"] == \"fan_out\"][0]
assert fo[\"label\"] == \"private\", fo
w = [e for e in of(\"tool_call\") if e[\"tool\"] == \"web_fetch\"][0]
assert w[\"decision\"] == \"deny\" and w[\"gate\"] == \"taint\", w
assert w[\"taint\"] == \"private\", w
"
'

test_expect_success 'with public data read in the worker, the same call passes the gates (benign twin)' '
	run taint_public &&
	check taint_public "
k = of(\"child_finished\")[0]
assert k[\"label\"] != \"private\", k
w = [e for e in of(\"tool_call\") if e[\"tool\"] == \"web_fetch\"][0]
assert w[\"decision\"] == \"allow\", w
"
'

# ---- spawn_agent: depth and a configured deny ----------------------------------------

for depth in 1 2; do
	bp "deep$depth" <<-EOF
	[agent]
	name = "deep$depth"
	max_child_depth = $depth
	[stages.main]
	$M
	available_tools = ["spawn_agent"]
	[stages.helper]
	$M
	allow_as_worker = true
	available_tools = ["spawn_agent"]
	nudge = { enabled = false }
	EOF
done
turns deep1 <<'EOF'
[[turn]]
[[turn.call]]
tool = "spawn_agent"
args = { blueprint = "helper", task = "help", wait = true }
[[turn]]
[[turn.call]]
tool = "spawn_agent"
args = { blueprint = "helper", task = "help me too", wait = true }
[[turn]]
text = "child done"
[[turn]]
text = "root done"
EOF
turns deep2 <<'EOF'
[[turn]]
[[turn.call]]
tool = "spawn_agent"
args = { blueprint = "helper", task = "help", wait = true }
[[turn]]
[[turn.call]]
tool = "spawn_agent"
args = { blueprint = "helper", task = "help me too", wait = true }
[[turn]]
text = "grandchild done"
[[turn]]
text = "child done"
[[turn]]
text = "root done"
EOF

test_expect_success 'max_child_depth = 1: a child may not start a grandchild' '
	run deep1 &&
	check deep1 "
k = of(\"child_finished\")
assert len(k) == 1 and k[0][\"output\"] == \"child done\", k
r = [e for e in kid(k[0]) if e[\"event\"] == \"tool_result\"][0]
assert not r[\"ok\"] and \"max_child_depth\" in r[\"text\"], r
assert not [e for e in kid(k[0]) if e[\"event\"] == \"child_started\"]
assert end[\"status\"] == \"complete\" and end[\"output\"] == \"root done\", end
"
'

test_expect_success 'max_child_depth = 2: the grandchild runs (benign twin)' '
	run deep2 &&
	check deep2 "
k = of(\"child_finished\")[0]
g = [e for e in kid(k) if e[\"event\"] == \"child_finished\"]
assert len(g) == 1 and g[0][\"output\"] == \"grandchild done\" and g[0][\"depth\"] == 2, g
assert end[\"output\"] == \"root done\", end
"
'

test_expect_success 'a deny for spawn_agent in the config refuses it' '
	cp "$CONFIG" config.keep &&
	printf "spawn_agent = \"deny\"\n" >>"$CONFIG" &&
	run deep2;
	mv config.keep "$CONFIG" &&
	check deep2 "
c = [e for e in of(\"tool_call\") if e[\"tool\"] == \"spawn_agent\"][0]
assert c[\"decision\"] == \"deny\" and c[\"gate\"] == \"permission\", c
assert not of(\"child_started\")
"
'

# ---- worker_agent: an installed agent per item ----------------------------------------

for w in reader absent; do
	bp "wa_$w" <<-EOF
	[agent]
	name = "wa_$w"
	[stages.split]
	mode = "fan_out"
	$M
	worker_agent = "$w"
	EOF
	turns "wa_$w" <<-'EOF'
	[[turn]]
	[[turn.call]]
	tool = "fan_out"
	args = { items = [{ id = "one", context = "read the secret" }] }
	EOF
done

test_expect_success 'a worker_agent that is not installed: a warning at validate, an error at run' '
	lev validate wa_absent >out &&
	grep -q "agent .absent., which is not installed.*worker-agent-not-installed" out &&
	test_must_fail run wa_absent &&
	grep -q "agent .absent., which is not installed; install it with .lev add." wa_absent.err
'

test_expect_success 'an installed worker_agent runs each item as a run of its own (benign twin)' '
	lev validate wa_reader >out &&
	! grep -q "worker-agent-not-installed" out &&
	run wa_reader &&
	check wa_reader "
k = of(\"child_finished\")[0]
assert k[\"agent\"] == \"reader\" and k[\"ok\"] and k[\"output\"] == \"read it\", k
c = [e for e in kid(k) if e[\"event\"] == \"tool_call\"][0]
assert c[\"decision\"] == \"deny\", c
"
'

# ---- the sandbox: a worker gets its parent's stage sandbox as its ceiling --------------

for net in off on; do
	fanbp "net_$net" ""
	sed -i 's/^available_tools = \["read_file", "submit_output"\]/available_tools = ["web_fetch", "submit_output"]/' \
		"net_$net/agent.leviath"
	turns "net_$net" <<-'EOF'
	[[turn]]
	[[turn.call]]
	tool = "fan_out"
	args = { items = [{ id = "only", context = "fetch it" }] }
	[[turn]]
	[[turn.call]]
	tool = "web_fetch"
	args = { url = "http://127.0.0.1:9/x" }
	[[turn]]
	[[turn.call]]
	tool = "submit_output"
	args = { output = "fetched" }
	[[turn]]
	text = "merged"
	EOF
done
printf '[stages.split.sandbox]\nnetwork = false\n' >>net_off/agent.leviath

test_expect_success 'a parent stage with network = false: its worker has no network either' '
	run net_off &&
	check net_off "
k = of(\"child_finished\")[0]
c = [e for e in kid(k) if e[\"event\"] == \"tool_call\"][0]
assert c[\"tool\"] == \"web_fetch\" and c[\"decision\"] == \"deny\" and c[\"gate\"] == \"network\", c
s = [e for e in kid(k) if e[\"event\"] == \"stage_started\"][0]
assert s[\"network\"] is False, s
"
'

test_expect_success 'a parent stage with the network on: the same worker call passes (benign twin)' '
	run net_on &&
	check net_on "
k = of(\"child_finished\")[0]
c = [e for e in kid(k) if e[\"event\"] == \"tool_call\"][0]
assert c[\"tool\"] == \"web_fetch\" and c[\"decision\"] == \"allow\", c
"
'

# ---- asks inside a worker reach the person through the parent run ----------------------

bp wask <<EOF
[agent]
name = "wask"
[stages.split]
mode = "fan_out"
$M
worker_stage = "one"
[stages.one]
$M
allow_as_worker = true
available_tools = ["write_file"]
EOF
turns wask <<'EOF'
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

if command -v script >/dev/null 2>&1; then
	test_expect_success 'a worker ask is the run prompt on the terminal (daemon run): allowed once, it writes' '
		chmod 700 "$HOME/.leviath" && rm -f work/asked.txt &&
		printf "1\n" | script -qec "$LEV run --follow ./wask --workdir work --json" /dev/null >tty.out &&
		grep -q "Allow tool call: .write_file. - .asked.txt." tty.out &&
		test "$(cat work/asked.txt)" = one
	'
	test_expect_success 'the same ask answered deny: nothing is written (benign twin)' '
		rm -f work/asked.txt &&
		printf "4\n" | script -qec "$LEV run --follow ./wask --workdir work --json" /dev/null >tty.out &&
		grep -q "Allow tool call: .write_file. - .asked.txt." tty.out &&
		test ! -e work/asked.txt
	'
else
	test_skip 'a worker ask is the run prompt on the terminal' 'script(1) is not installed'
fi

# ---- queued children: check_agent, wait_for_agent, send_to_agent, kill_agent ----------

bp queue <<EOF
[agent]
name = "queue"
[stages.main]
$M
available_tools = ["spawn_agent", "check_agent", "wait_for_agent", "send_to_agent", "kill_agent"]
[stages.helper]
$M
allow_as_worker = true
available_tools = ["context_read"]
EOF
turns queue <<'EOF'
[[turn]]
[[turn.call]]
tool = "spawn_agent"
args = { blueprint = "helper", task = "first task" }
[[turn.call]]
tool = "spawn_agent"
args = { blueprint = "helper", task = "second task" }
[[turn.call]]
tool = "send_to_agent"
args = { agent_id = "c1", message = "one more thing" }
[[turn.call]]
tool = "kill_agent"
args = { agent_id = "c2" }
[[turn.call]]
tool = "wait_for_agent"
args = { agent_id = "c1" }
[[turn.call]]
tool = "check_agent"
args = { agent_id = "c2" }
[[turn.call]]
tool = "send_to_agent"
args = { agent_id = "c1", message = "too late" }
[[turn]]
[[turn.call]]
tool = "context_read"
args = { region = "system" }
[[turn]]
text = "child one answered"
[[turn]]
text = "parent done"
EOF

test_expect_success 'spawn_agent without wait queues a child: a message reaches it, kill drops the other' '
	run queue &&
	check queue "
r = {e[\"id\"]: e for e in of(\"tool_result\")}
t = [e[\"text\"] for e in of(\"tool_result\")]
assert \"queued\" in t[0] and \"queued\" in t[1], t
assert \"message added\" in t[2] and \"killed\" in t[3], t
assert t[4] == \"child one answered\", t
assert \"was killed before it ran\" in t[5], t
assert \"already finished (done)\" in t[6], t
k = of(\"child_finished\")
assert len(k) == 1 and k[0][\"child\"] == \"c1\", k
c = [e for e in kid(k[0]) if e[\"event\"] == \"tool_result\"][0]
assert \"first task\" in c[\"text\"] and \"one more thing\" in c[\"text\"], c
assert \"second task\" not in c[\"text\"], c
"
'

# ---- a queued child starts with what its parent holds then ---------------------

for what in secret public; do
	case $what in
	secret) path="$OUT/secret.txt" ;;
	public) path="public.txt" ;;
	esac
	bp "late_$what" <<-EOF
	[agent]
	name = "late_$what"
	[read_paths]
	allow = ["$OUT"]
	[stages.main]
	$M
	available_tools = ["spawn_agent", "wait_for_agent", "read_file"]
	[stages.helper]
	$M
	allow_as_worker = true
	available_tools = ["web_fetch"]
	EOF
	turns "late_$what" <<-EOF
	[[turn]]
	[[turn.call]]
	tool = "spawn_agent"
	args = { blueprint = "helper", task = "post what you know" }
	[[turn]]
	[[turn.call]]
	tool = "read_file"
	args = { path = "$path" }
	[[turn]]
	[[turn.call]]
	tool = "wait_for_agent"
	args = { agent_id = "c1" }
	[[turn]]
	[[turn.call]]
	tool = "web_fetch"
	args = { url = "http://127.0.0.1:9/send" }
	[[turn]]
	text = "child done"
	[[turn]]
	text = "parent done"
	EOF
done

test_expect_success 'a child queued before its parent read a private file starts private: its post is blocked' '
	run late_secret &&
	check late_secret "
k = of(\"child_finished\")[0]
w = [e for e in kid(k) if e[\"event\"] == \"tool_call\" and e[\"tool\"] == \"web_fetch\"][0]
assert w[\"decision\"] == \"deny\" and w[\"gate\"] == \"taint\", w
assert w[\"taint\"] == \"private\", w
"
'

test_expect_success 'the same queued child after a public read posts (benign twin)' '
	run late_public &&
	check late_public "
k = of(\"child_finished\")[0]
w = [e for e in kid(k) if e[\"event\"] == \"tool_call\" and e[\"tool\"] == \"web_fetch\"][0]
assert w[\"decision\"] == \"allow\", w
"
'

test_done
