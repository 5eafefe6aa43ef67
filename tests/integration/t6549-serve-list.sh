#!/bin/bash
# GET /api/runs is the daemon's page passed on unparsed (ps's "items", the
# API's list as the daemon writes it, daemon.c send_ps()): it must hold
# exactly what lev ps --all lists, the runs going first and then the ended
# ones, each run once over a walk of the pages, and next_cursor null at the
# end.  It would catch a list joined wrongly (a missing or doubled comma
# between the runs going and the ended ones), the reply's prefix not cut,
# a page that skips or repeats a run.  The twins: a first page with no run
# going, a cursor past the end (an empty list), a bad limit (400, as before).
. "$SRC_DIR/tests/lib.sh"
. "$SRC_DIR/tests/daemon-lib.sh"
. "$SRC_DIR/tests/serve-lib.sh"

mkdir -p work quick
cat >quick/agent.leviath <<-EOT
[agent]
name = "quick"
[stages.main]
model = { provider = "script", script = "turns.toml" }
EOT
printf '[[turn]]\ntext = "done"\n' >quick/turns.toml
approval_agent lone 'all done'

"$LEV" daemon start >/dev/null
serve_start

# same FILE: GET /api/runs's items (in FILE) are lev ps --all's runs, then its finished ones
same() {
	"$LEV" ps --all --json >ps.json &&
	python3 - "$1" ps.json <<-'PY'
	import json, sys
	got, ps = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
	assert set(got) == {"items", "next_cursor"}, got.keys()
	want = ps["runs"] + ps["finished"]
	assert got["items"] == want, (got["items"], want)
	assert got["next_cursor"] is None, got
	PY
}

test_expect_success 'no run going: the ended runs alone, as lev ps --all lists them' '
	for t in "one" "two: é ü \"quoted\" \\\\ <b>markup</b>" "three	tab"; do
		"$LEV" run ./quick --workdir work --task "$t" --detach >>ids || return 1
	done &&
	for i in $(cat ids); do wait_for status_is "$i" complete || return 1; done &&
	test "$(api GET /api/runs)" = 200 &&
	same out &&
	test "$(json out "len(j[\"items\"])")" = 3
'

test_expect_success 'a run going and ended ones: one list, the run going first, one comma each' '
	"$LEV" run ./lone --workdir work --task "ask me" --detach >live &&
	wait_for status_is "$(cat live)" "waiting: tool approval" &&
	test "$(api GET /api/runs)" = 200 &&
	same out &&
	test "$(json out "j[\"items\"][0][\"id\"]")" = "$(cat live)" &&
	test "$(json out "len(j[\"items\"])")" = 4 &&
	curl -s -D hdr -o /dev/null -H "Authorization: Bearer $TOKEN" "$URL/api/runs" &&
	grep -qi "^content-type: application/json" hdr
'

test_expect_success 'pages of one: every ended run once, in order, then next_cursor null' '
	python3 - "$URL" "$TOKEN" "$(cat live)" <<-'PY'
	import json, sys, urllib.request
	url, token, live = sys.argv[1:]
	def get(q):
	    r = urllib.request.Request(url + "/api/runs" + q, headers={"Authorization": "Bearer " + token})
	    return json.load(urllib.request.urlopen(r))
	seen, q, pages = [], "?limit=1", 0
	while True:
	    p = get(q)
	    pages += 1
	    seen += [r["id"] for r in p["items"]]
	    if p["next_cursor"] is None:
	        break
	    q = "?limit=1&cursor=" + p["next_cursor"]
	    assert pages < 10, seen
	assert seen[0] == live, seen
	assert len(seen) == 4 and len(set(seen)) == 4, seen
	assert seen[1:] == sorted(seen[1:]), seen
	PY
'

test_expect_success 'a cursor past the end: an empty list; a bad limit: 400' '
	test "$(api GET "/api/runs?cursor=zzzzzzzz")" = 200 &&
	test "$(json out "j")" = "{'"'"'items'"'"': [], '"'"'next_cursor'"'"': None}" &&
	test "$(api GET "/api/runs?limit=0")" = 400 &&
	test "$(api GET "/api/agents?limit=x")" = 400 &&
	grep -q "limit" out
'

test_done
