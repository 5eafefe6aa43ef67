#!/bin/sh
# Leviath's context keys run with Leviath's meaning (docs/context.md): a
# stage's tool_routing puts a result in its region, cut to its token ceiling
# with a note saying so, and a pointer answers the call in the conversation;
# a region with admission = "reject" refuses a write that does not fit and
# the model is told; the routed copy keeps the result's taint label.  Each
# shown from the run's own events, next to the same run without the keys.

test_description='tool_routing, region admission and the context tools'
. "$SRC_DIR/tests/lib.sh"

COMPAT="$SRC_DIR/tests/compat"
export LEVIATH_HOME="$TRASH/lh"
mkdir -p "$LEVIATH_HOME/.leviath" work && chmod 700 "$LEVIATH_HOME" "$LEVIATH_HOME/.leviath"
i=0
while test $i -lt 200; do echo "line $i of the big file"; i=$((i + 1)); done >work/big.txt

# results EV: r1, r2, ... the text of each tool_result; p1, ... its "routed"
# note; ok1, ... "ok label"; taintN the taint of the Nth model request
results() {
	rm -f r[0-9]* p[0-9]* ok[0-9]* taint[0-9]*
	python3 - "$1" <<-\PY
	import json, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	assert ev[-1]["status"] == "complete", ev[-1]
	res = [e for e in ev if e.get("event") == "tool_result"]
	for i, e in enumerate(res):
	    open("r%d" % (i + 1), "w").write(e["text"])
	    open("p%d" % (i + 1), "w").write(e.get("routed") or "")
	    open("ok%d" % (i + 1), "w").write("%s %s" % (e["ok"], e["label"]))
	req = [e for e in ev if e.get("event") == "model_request"]
	for i, e in enumerate(req):
	    open("taint%d" % (i + 1), "w").write(e["taint"])
	PY
}

test_expect_success 'the blueprint validates with no finding for the keys lev runs' '
	lev validate "$COMPAT/context" >out &&
	! grep -q "tool_routing\|volatility\|admission" out &&
	grep -q "0 error(s), 0 warning(s)" out
'

test_expect_success 'a routed run completes' '
	lev run --follow "$COMPAT/context" --task t --workdir work --json </dev/null >ev 2>err &&
	results ev
'

test_expect_success 'read_file lands in codebase cut to 10 tokens, with a note naming the ceiling' '
	grep -q "put in context region .codebase." p1 &&
	grep -q "cut to its ceiling of 10 tokens" p1 &&
	grep -q "^line 0 of the big file" r4 &&
	grep -q "output truncated to the result ceiling of 10 tokens" r4 &&
	! grep -q "line 20 of the big file" r4
'

test_expect_success 'list_dir lands in scratch; the full scratch region rejects the next one' '
	grep -q "is in context region .scratch." p2 &&
	grep -q "^\[error\] the result of .list_dir. was not kept: context region .scratch. is full" p3 &&
	grep -q "context_delete" p3 &&
	grep -q "^codebase (temporary): 1 entries" r5 &&
	grep -q "^scratch (clearable): 1 entries" r5
'

test_expect_success 'the routed copy keeps its label: the run is as tainted as without routing' '
	test "$(cat taint2)" = internal &&
	grep -qx "True internal" ok4
'

test_expect_success 'without tool_routing the same calls stay in the conversation (benign twin)' '
	mkdir -p plain &&
	sed "/^\[stages.main.tool_routing\]/,/^list_dir = /d" "$COMPAT/context/agent.leviath" \
		>plain/agent.leviath &&
	cp "$COMPAT/context/turns.toml" plain/ &&
	! grep -q "^\[stages.main.tool_routing" plain/agent.leviath &&
	lev run --follow plain --task t --workdir work --json </dev/null >ev2 2>err &&
	results ev2 &&
	! test -s p1 && ! test -s p3 &&
	grep -q "^line 199 of the big file" r1 &&
	grep -q "^codebase (temporary): 0 entries" r5 &&
	grep -q "^scratch (clearable): 0 entries" r5 &&
	test "$(cat taint2)" = internal
'

mkdir -p req
cat >req/agent.leviath <<'BP'
[agent]
name = "required"
[stages.main]
model = { provider = "script", script = "turns.toml" }
max_iterations = 10
available_tools = ["context_write"]
nudge = { enabled = false }	# the required region's reminder alone
[context.regions]
findings = { kind = "clearable", required = true, required_message = "Write {region} first." }
BP
cat >req/turns.toml <<'BP'
[[turn]]
text = "I am done."
[[turn]]
[[turn.call]]
tool = "context_write"
args = { region = "findings", content = "the findings" }
[[turn]]
text = "Now I am done."
BP

test_expect_success 'a required region (no seed) keeps the stage going until it is filled' '
	lev validate req >out && grep -q "0 error(s), 0 warning(s)" out &&
	lev run --follow req --task t --workdir work --json </dev/null >ev3 2>err &&
	grep -q "required region .findings. empty; the model was asked to fill it (1 of 3)" ev3 &&
	test "$(grep -c "\"event\":\"model_request\"" ev3)" = 3 &&
	tail -n 1 ev3 | grep -q "\"output\":\"Now I am done.\""
'

test_expect_success 'without required the first answer ends the stage (benign twin)' '
	mkdir -p noreq && cp req/turns.toml noreq/ &&
	sed "s/required = true, //" req/agent.leviath >noreq/agent.leviath &&
	lev run --follow noreq --task t --workdir work --json </dev/null >ev4 2>err &&
	! grep -q "asked to fill" ev4 &&
	test "$(grep -c "\"event\":\"model_request\"" ev4)" = 1
'

mkdir -p todo
cat >todo/agent.leviath <<'BP'
[agent]
name = "todo"
[stages.main]
model = { provider = "script", script = "turns.toml" }
max_iterations = 10
available_tools = ["todo_add", "todo_done", "todo_note", "context_append", "context_delete",
                   "context_read"]
[context.regions]
task = { kind = "pinned", budget = "5%" }
todos = { kind = "checklist", budget = "3%" }
notes = { kind = "temporary", budget = "10%" }
BP
cat >todo/turns.toml <<'BP'
[[turn]]
[[turn.call]]
tool = "todo_add"
args = { region = "todos", item = "compute the fee table" }
[[turn.call]]
tool = "todo_add"
args = { region = "todos", item = "write the report" }
[[turn.call]]
tool = "context_append"
args = { region = "notes", content = "first note" }
[[turn.call]]
tool = "context_append"
args = { region = "notes", content = "second note" }
[[turn]]
[[turn.call]]
tool = "todo_done"
args = { region = "todos", id = 1 }
[[turn.call]]
tool = "todo_note"
args = { region = "todos", id = 2, note = "half written" }
[[turn.call]]
tool = "todo_done"
args = { region = "todos", id = 9 }
[[turn.call]]
tool = "context_delete"
args = { region = "notes", index = 0 }
[[turn.call]]
tool = "context_delete"
args = { region = "notes", key = "x" }
[[turn.call]]
tool = "context_delete"
args = { region = "task", oldest = 1 }
[[turn]]
[[turn.call]]
tool = "context_read"
args = { region = "todos" }
[[turn.call]]
tool = "context_read"
args = { region = "notes" }
[[turn]]
text = "done"
BP

test_expect_success 'todo_add / todo_done / todo_note keep a checklist, open items first' '
	lev validate todo >out && grep -q "0 error(s), 0 warning(s)" out &&
	lev run --follow todo --task t --workdir work --json </dev/null >ev5 2>err &&
	results ev5 &&
	grep -qx "\[ok\] item #1 added to .todos." r1 &&
	grep -qx "\[ok\] item #2 added to .todos." r2 &&
	grep -q "no checklist item #9" r7 && grep -q "^False" ok7 &&
	printf "%s\n" "- [ ] #2 write the report" "  note: half written" \
		"- [x] #1 compute the fee table" >want &&
	test_cmp want r11
'

test_expect_success 'context_delete releases one entry; a key no note has and pinned regions are refused' '
	grep -q "^\[ok\] released 1 entry of .notes." r8 &&
	grep -q "has no entry keyed .x." r9 && grep -q "^False" ok9 &&
	grep -q "pinned: its entries cannot be released" r10 &&
	test "$(cat r12)" = "second note"
'

mkdir -p watch
echo hello >work/a.txt
cat >watch/agent.leviath <<'BP'
[agent]
name = "watch"
[stages.main]
model = { provider = "script", script = "turns.toml" }
max_iterations = 10
available_tools = ["read_file", "context_read"]
[context.regions]
task = { kind = "pinned", budget = "5%" }
files = { kind = "temporary", budget = "5%" }
[context.file_tracking]
region = "files"
[repetition_detection]
max_repeat_calls = 3
max_readonly_streak = 4
BP
cat >watch/turns.toml <<'BP'
[[turn]]
[[turn.call]]
tool = "read_file"
args = { path = "a.txt" }
[[turn]]
[[turn.call]]
tool = "read_file"
args = { path = "a.txt" }
[[turn]]
[[turn.call]]
tool = "read_file"
args = { path = "a.txt" }
[[turn]]
[[turn.call]]
tool = "context_read"
args = { region = "files" }
[[turn]]
text = "done"
BP

test_expect_success 'repetition_detection: the same call three times gets a note, so does a read-only streak' '
	lev validate watch >out && grep -q "0 error(s), 0 warning(s)" out &&
	lev run --follow watch --task t --workdir work --json </dev/null >ev6 2>err &&
	results ev6 &&
	grep -q "\"message\":\"repetition: You have made the same call (.read_file., same arguments) 3 times in a row" ev6 &&
	grep -q "\"message\":\"repetition: You have made 4 read-only calls in a row" ev6
'

test_expect_success 'file_tracking lists each file read once in its region' '
	test "$(cat r4)" = "read: a.txt"
'

test_expect_success 'without [repetition_detection] the same calls get no note (benign twin)' '
	mkdir -p nowatch && cp watch/turns.toml nowatch/ &&
	sed "/^\[repetition_detection\]/,\$d" watch/agent.leviath >nowatch/agent.leviath &&
	lev run --follow nowatch --task t --workdir work --json </dev/null >ev7 2>err &&
	! grep -q "repetition:" ev7
'

mkdir -p compact
for f in a b c; do echo "the file $f holds forty bytes of text!!" >work/$f.txt; done
cat >compact/agent.leviath <<'BP'
[agent]
name = "compact"
[compaction]
max_summary_tokens = 200
[stages.main]
model = { provider = "script", script = "turns.toml" }
max_iterations = 10
available_tools = ["read_file", "context_read"]
[stages.main.tool_routing]
overrides = { read_file = "codebase" }
[context.regions]
task = { kind = "pinned", budget = "5%" }
codebase = { kind = "compacting", max_tokens = 25, compact_count = 2 }
BP
cat >compact/turns.toml <<'BP'
[[turn]]
[[turn.call]]
tool = "read_file"
args = { path = "a.txt" }
[[turn]]
[[turn.call]]
tool = "read_file"
args = { path = "b.txt" }
[[turn]]
[[turn.call]]
tool = "read_file"
args = { path = "c.txt" }
[[turn]]
text = "SUMMARY: files a and b were read"
[[turn]]
[[turn.call]]
tool = "context_read"
args = { region = "codebase" }
[[turn]]
text = "done"
BP

test_expect_success 'a compacting region past its budget is summarised by a model call' '
	lev validate compact >out && grep -q "0 error(s), 0 warning(s)" out &&
	lev run --follow compact --task t --workdir work --json </dev/null >ev8 2>err &&
	results ev8 &&
	grep -q "\"event\":\"context_compacted\"" ev8 &&
	printf "%s\n\n%s\n" "SUMMARY: files a and b were read" \
		"the file c holds forty bytes of text!!" >want &&
	test_cmp want r4
'

test_expect_success 'the summary carries the highest label of what it replaced' '
	python3 - ev8 <<-\PY
	import json, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	c = [e for e in ev if e["event"] == "context_compacted"]
	assert len(c) == 1 and c[0]["entries"] == 2, c
	assert c[0]["label"] == "internal", c
	assert c[0]["tokens_after"] < c[0]["tokens_before"], c
	PY
'

test_expect_success 'with strategy per_item the oldest entry is dropped, nothing summarised (benign twin)' '
	mkdir -p percall && cp compact/turns.toml percall/ &&
	sed "s/kind = \"compacting\", /kind = \"temporary\", strategy = \"per_item\", /" \
		compact/agent.leviath >percall/agent.leviath &&
	grep -q "per_item" percall/agent.leviath &&
	lev run --follow percall --task t --workdir work --json </dev/null >ev9 2>err &&
	! grep -q "context_compacted" ev9 &&
	grep -q "\"event\":\"context_evicted\"" ev9 &&
	tail -n 1 ev9 | grep -q "SUMMARY: files a and b were read"
'

mkdir -p staged
cat >staged/agent.leviath <<'BP'
[agent]
name = "staged"
[stages.a]
model = { provider = "script", script = "turns.toml" }
available_tools = ["context_append", "context_read"]
next = "b"
[stages.a.context.regions]
notes = { kind = "temporary" }
scratch = { kind = "clearable", budget = "5%" }
[stages.b]
model = { provider = "script", script = "turns.toml" }
available_tools = ["context_read"]
[stages.b.context.regions]
notes = { kind = "temporary" }
[context.regions]
task = { kind = "pinned", budget = "5%" }
notes = { kind = "temporary" }
BP
cat >staged/turns.toml <<'BP'
[[turn]]
[[turn.call]]
tool = "context_append"
args = { region = "scratch", content = "stage a scratch" }
[[turn]]
text = "a done"
[[turn]]
[[turn.call]]
tool = "context_read"
args = { region = "scratch" }
[[turn]]
text = "done"
BP

test_expect_success 'a region declared in a stage exists for the stages that list it only' '
	lev validate staged >out && grep -q "0 error(s), 0 warning(s)" out &&
	lev run --follow staged --task t --workdir work --json </dev/null >ev10 2>err &&
	results ev10 &&
	grep -qx "\[ok\] region .scratch. updated" r1 &&
	grep -qx "\[error\] there is no context region .scratch." r2
'

test_expect_success 'a stage without its own context sees every region (benign twin)' '
	mkdir -p unstaged && cp staged/turns.toml unstaged/ &&
	sed "/^\[stages.b.context.regions\]/,/^notes/d" staged/agent.leviath >unstaged/agent.leviath &&
	! grep -q "stages.b.context" unstaged/agent.leviath &&
	lev run --follow unstaged --task t --workdir work --json </dev/null >ev11 2>err &&
	results ev11 &&
	test "$(cat r2)" = "stage a scratch"
'

test_expect_success 'routing into a region the stage does not show is refused at validate' '
	mkdir -p badroute && cp staged/turns.toml badroute/ &&
	sed "s/^available_tools = \[\"context_read\"\]$/&\ntool_routing = { default_region = \"scratch\" }/" \
		staged/agent.leviath >badroute/agent.leviath &&
	grep -q "default_region = .scratch." badroute/agent.leviath &&
	test_must_fail lev validate badroute 2>err &&
	grep -q "stage .b. routes tool results to region .scratch., which is not in its own" err
'

mkdir -p persist
cat >persist/agent.leviath <<'BP'
[agent]
name = "persist"
[stages.a]
model = { provider = "script", script = "turns.toml" }
available_tools = ["read_file"]
next = "b"
tool_routing = { overrides = { read_file = "codebase" }, persist = false }
[stages.b]
model = { provider = "script", script = "turns.toml" }
available_tools = ["context_list"]
[context.regions]
task = { kind = "pinned", budget = "5%" }
codebase = { kind = "temporary" }
BP
cat >persist/turns.toml <<'BP'
[[turn]]
[[turn.call]]
tool = "read_file"
args = { path = "a.txt" }
[[turn]]
text = "a done"
[[turn]]
[[turn.call]]
tool = "context_list"
args = { region = "codebase" }
[[turn]]
text = "done"
BP

test_expect_success 'persist = false: the stage'"'"'s routed results leave with it' '
	lev run --follow persist --task t --workdir work --json </dev/null >ev12 2>err &&
	results ev12 &&
	grep -q "is in context region .codebase." p1 &&
	grep -q "^codebase (temporary): 0 entries" r2
'

test_expect_success 'persist = true keeps them for the next stage (benign twin)' '
	mkdir -p persisting && cp persist/turns.toml persisting/ &&
	sed "s/persist = false/persist = true/" persist/agent.leviath >persisting/agent.leviath &&
	lev run --follow persisting --task t --workdir work --json </dev/null >ev13 2>err &&
	results ev13 &&
	grep -q "^codebase (temporary): 1 entries" r2
'

test_done
