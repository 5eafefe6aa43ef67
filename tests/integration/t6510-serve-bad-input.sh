#!/bin/bash
# lev serve on bad input: malformed JSON, wrong types, unknown fields, an
# oversized body, a traversal in a run id, a missing or wrong token: each a
# clear 4xx naming what is wrong, and nothing changed (the run still waits,
# its call has not run, no run was started).  Each refusal has a benign twin.
. "$SRC_DIR/tests/lib.sh"
. "$SRC_DIR/tests/daemon-lib.sh"
. "$SRC_DIR/tests/serve-lib.sh"

mkdir -p work
approval_agent bp 'done'
"$LEV" daemon start >/dev/null
serve_start
"$LEV" run "$TRASH/bp" --workdir work --detach >id 2>/dev/null

# unchanged: one run, still waiting on the same question, its call not run
unchanged() {
	test "$("$LEV" ps --all --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["runs"]) + len(d["finished"]))')" = 1 &&
	test "$(request_of "$(cat id)")" = q1 &&
	test ! -e work/ml.txt
}

# refused STATUS PATTERN METHOD PATH [CURL ARGS]: the route answers STATUS,
# its error matches PATTERN, and nothing changed
refused() {
	local st=$1 pat=$2
	shift 2
	test "$(api "$@")" = "$st" &&
	grep -q "\"error\":\".*$pat" out &&
	unchanged
}

I=/api/agents/$(cat id)/interaction

test_expect_success 'the run waits for approval' '
	wait_for status_is "$(cat id)" "waiting: tool approval" &&
	test "$(api GET $I)" = 200 &&
	json out "j[\"pending\"][\"digest\"]" >digest
'

test_expect_success 'malformed JSON is 400 with where' '
	refused 400 "not JSON: line 1" POST $I -d "{\"request\": \"q1\", \"answer\": " &&
	refused 400 "not JSON" POST /api/agents -d "{blueprint}"
'

test_expect_success 'a body that is not an object is 400' '
	refused 400 "must be a JSON object" POST $I -d "[\"q1\"]"
'

test_expect_success 'a field of the wrong type is 400 naming it' '
	refused 400 "field .choice. must be a whole number" POST $I -d "{\"request\": \"q1\", \"choice\": \"1\"}" &&
	refused 400 "field .choice. must be a whole number" POST $I -d "{\"request\": \"q1\", \"choice\": -1}" &&
	refused 400 "field .allow. must be an array of strings" POST /api/agents -d "{\"blueprint\": \"x\", \"allow\": [\"shell\", 1]}" &&
	refused 400 "field .request. must be a string" POST $I -d "{\"request\": 1, \"answer\": \"approve\"}"
'

test_expect_success 'an unknown field is 400 naming it' '
	refused 400 "unknown field .approve." POST $I -d "{\"request\": \"q1\", \"approve\": true}" &&
	refused 400 "unknown field .callback_headers." POST /api/agents -d "{\"blueprint\": \"$TRASH/bp\", \"callback_headers\": \"x\"}"
'

test_expect_success 'a duplicate key is 400' '
	refused 400 "duplicate" POST $I -d "{\"request\": \"q1\", \"answer\": \"deny\", \"answer\": \"approve\"}"
'

test_expect_success 'a missing required field, a bad answer or scope: 400' '
	refused 400 "field .request. is required" POST $I -d "{\"answer\": \"approve\"}" &&
	refused 400 "field .answer. must be" POST $I -d "{\"request\": \"q1\", \"answer\": \"yes\", \"digest\": \"$(cat digest)\"}" &&
	refused 400 "field .scope. must be" POST $I -d "{\"request\": \"q1\", \"answer\": \"approve\", \"scope\": \"forever\", \"digest\": \"$(cat digest)\"}" &&
	refused 400 "no answer" POST $I -d "{\"request\": \"q1\"}"
'

test_expect_success 'an oversized body is 413, never read into an answer' '
	python3 -c "import json; print(json.dumps({\"request\": \"q1\", \"answer\": \"approve\", \"digest\": open(\"digest\").read().strip(), \"text\": \"x\" * 70000}))" >big &&
	refused 413 "over the 65536 bytes" POST $I --data-binary @big
'

test_expect_success 'a body on a route that takes none is 400' '
	refused 400 "takes no body" GET /api/runs --data-binary "{}" -X GET
'

test_expect_success 'a run id with a traversal or odd bytes matches no route (404)' '
	refused 404 "no such route" GET "/api/agents/..%2f..%2fetc/interaction" &&
	refused 404 "no such route" GET "/api/agents/../runs" --path-as-is &&
	refused 404 "no such route" GET "/api/agents/.hidden"
'

test_expect_success 'the events of a run that does not exist: 404' '
	refused 404 "no run .nosuchrun." GET /api/runs/nosuchrun/events
'

test_expect_success 'a method the path does not take is 405' '
	refused 405 "method not allowed" PUT $I -d "{}"
'

test_expect_success 'a run over HTTP may not be unattended: yolo is 403' '
	refused 403 "never unattended" POST /api/agents -d "{\"blueprint\": \"$TRASH/bp\", \"workdir\": \"$TRASH/work\", \"yolo\": true}"
'

test_expect_success 'a blueprint that looks like an option is 400, no run' '
	refused 400 "field .blueprint. must name" POST /api/agents -d "{\"blueprint\": \"--yolo\"}"
'

test_expect_success 'a blueprint that does not exist: 400 with lev run s reason, no run' '
	refused 400 "the run was not started" POST /api/agents -d "{\"blueprint\": \"$TRASH/nosuch\", \"workdir\": \"$TRASH/work\"}"
'

test_expect_success 'no token, a wrong one, a token of another length: 401, nothing changed' '
	test "$(curl -s -o out -w "%{http_code}" -X POST -d "{\"request\": \"q1\", \"answer\": \"approve\", \"digest\": \"$(cat digest)\"}" "$URL$I")" = 401 &&
	unchanged &&
	test "$(curl -s -o out -w "%{http_code}" -H "Authorization: Bearer x$TOKEN" -X POST -d "{\"request\": \"q1\", \"answer\": \"approve\", \"digest\": \"$(cat digest)\"}" "$URL$I")" = 401 &&
	unchanged &&
	test "$(curl -s -o out -w "%{http_code}" -H "Authorization: Bearer ${TOKEN%?}" -X POST -d "{\"request\": \"q1\", \"answer\": \"approve\", \"digest\": \"$(cat digest)\"}" "$URL$I")" = 401 &&
	unchanged
'

test_expect_success 'an answer to a question not open is 409' '
	refused 409 "no longer open" POST $I -d "{\"request\": \"q7\", \"answer\": \"deny\"}"
'

test_expect_success 'the same answer, well formed, is taken (benign twin)' '
	test "$(api POST $I -d "{\"request\": \"q1\", \"answer\": \"approve\", \"digest\": \"$(cat digest)\"}")" = 200 &&
	wait_for status_is "$(cat id)" complete &&
	test "$(cat work/ml.txt)" = ran
'

test_done
