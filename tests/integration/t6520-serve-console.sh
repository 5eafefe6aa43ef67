#!/bin/bash
# lev serve's web console in a real headless Chromium: it loads (with a
# strict CSP), shows a pending approval with the whole call and the terminal
# prompt's choices, approves it, and shows the run finish; a run whose
# output holds markup and script shows it as text, inert.
. "$SRC_DIR/tests/lib.sh"
. "$SRC_DIR/tests/daemon-lib.sh"
. "$SRC_DIR/tests/serve-lib.sh"

mkdir -p work
approval_agent bp '<b id="injected">bold</b><img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
"$LEV" daemon start >/dev/null
serve_start

test_expect_success 'the console is served without a token, with a strict CSP' '
	curl -s -D hdr -o page "$URL/" &&
	grep -q "^HTTP/1.1 200" hdr &&
	grep -qi "^content-security-policy: default-src .none.; script-src .self.;" hdr &&
	grep -q "<script src=\"/console.js\"" page &&
	! grep -q "<script>" page &&
	curl -s -o js "$URL/console.js" && grep -q textContent js &&
	! grep -q innerHTML js
'

test_expect_success 'the console files hold no data: the API still needs the token' '
	test "$(curl -s -o /dev/null -w "%{http_code}" "$URL/api/interactions")" = 401
'

why=
command -v chromium >/dev/null || why="chromium is not installed"
command -v chromedriver >/dev/null || why="${why:+$why; }chromedriver (chromium-driver) is not installed"
# Debian's python3-selenium is for Debian's python3, which need not be first on PATH
PY=
for p in python3 /usr/bin/python3; do
	"$p" -c "import selenium" 2>/dev/null && { PY=$p; break; }
done
[ -n "$PY" ] || why="${why:+$why; }python3-selenium is not installed"
if [ -n "$why" ]; then
	test_skip 'the console approves a run in a real Chromium; its markup stays inert' "$why"
else
	"$LEV" run "$TRASH/bp" --workdir work --detach >id 2>/dev/null
	test_expect_success 'the console approves a run in a real Chromium; its markup stays inert' '
		wait_for status_is "$(cat id)" "waiting: tool approval" &&
		"$PY" "$SRC_DIR/tests/serve-console.py" "$URL" "$TOKEN" "$(cat id)" &&
		test "$(cat work/ml.txt)" = ran
	'
fi

test_done
