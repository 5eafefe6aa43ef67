#!/bin/bash
# lev mcp login / logout: OAuth 2.1 + PKCE for an HTTP MCP server that demands
# a bearer (docs/mcp.md "OAuth"), against tests/helpers/mcp-oauth-server.py
# playing both the MCP server and its authorization server on 127.0.0.1.
# The browser is the test: it fetches the printed URL with curl and follows
# the redirect to lev's loopback listener.  Each attack has a benign twin.
. "$SRC_DIR/tests/lib.sh"

lev() {
	setsid -w "$LEV" "$@"
}

if ! command -v curl >/dev/null; then
	test_skip "mcp oauth" "curl is not installed (the test plays the browser with it)"
	test_done
	exit
fi

export LEVIATH_HOME="$HOME"
DATA="$HOME/.leviath"
mkdir -p "$DATA" work && chmod 700 "$DATA"
CONFIG="$DATA/config.toml"
CREDS="$DATA/credentials.toml"
SRVS=
cleanup_t5403() {
	for p in $SRVS; do kill "$p" 2>/dev/null; done
	_lev_cleanup
}
trap cleanup_t5403 EXIT

# startsrv DIR [ARGS...]: one helper with its state in DIR; sets PORT
startsrv() {
	local d=$1
	shift
	mkdir -p "$d"
	python3 "$SRC_DIR/tests/helpers/mcp-oauth-server.py" "$d/port" "$d" "$@" \
		>"$d/out" 2>"$d/err" &
	SRVS="$SRVS $!"
	for _ in $(seq 300); do [ -s "$d/port" ] && break; sleep 0.1; done
	PORT=$(cat "$d/port")
}
startsrv "$TRASH/a"
A=$PORT
startsrv "$TRASH/b" --static-token static-b
B=$PORT

# setconfig URL: one url server "o"
setconfig() {
	cat >"$CONFIG" <<EOF
[tool_permissions]
o__echo = "allow"
[[mcp_servers]]
name = "o"
url = "$1"
allow_local_network = true
timeout_secs = 5
EOF
	chmod 600 "$CONFIG"
}
setconfig "http://127.0.0.1:$A/mcp"

mode() {
	curl -sS -X POST "http://127.0.0.1:$A/_mode?mode=$1${2:+&expires_in=$2}" >/dev/null
}

# stored: does the credential store hold an MCP login (a key under an
# mcp-oauth-* entry)?
stored() {
	[ -f "$CREDS" ] && python3 - "$CREDS" <<-\EOF
	import sys, tomllib
	p = tomllib.load(open(sys.argv[1], "rb")).get("providers", {})
	sys.exit(0 if any(k.startswith("mcp-oauth-") and "api_key" in v for k, v in p.items()) else 1)
	EOF
}

# login_bg: start 'lev mcp login o --no-browser' in the background; sets
# LOGIN_PID and URL (the printed authorization URL)
login_bg() {
	rm -f login.out login.err
	setsid -w "$LEV" mcp login o --no-browser --timeout 60 >login.out 2>login.err &
	LOGIN_PID=$!
	URL=
	for _ in $(seq 300); do
		URL=$(grep -o "http://127.0.0.1:$A/authorize?[^ ]*" login.out 2>/dev/null)
		[ -n "$URL" ] && break
		kill -0 "$LOGIN_PID" 2>/dev/null || break
		sleep 0.1
	done
}

# count EV KEY VALUE: lines of the server's log for event EV with KEY = VALUE
count() {
	python3 - "$TRASH/${4:-a}/log" "$1" "$2" "$3" <<'EOF'
import json, sys
n = 0
try:
    for l in open(sys.argv[1]):
        e = json.loads(l)
        if e["ev"] == sys.argv[2] and str(e.get(sys.argv[3])) == sys.argv[4]:
            n += 1
except FileNotFoundError:
    pass
print(n)
EOF
}

# ---- before any login --------------------------------------------------------

test_expect_success 'a server that answers 401: test says to run lev mcp login, list says needs login' '
	test_must_fail lev mcp test o 2>err &&
	assert_file_has_content err "run .lev mcp login o." &&
	lev mcp list >list &&
	assert_file_has_content list "auth: needs login"
'

test_expect_success 'mcp add --url on a 401 server says to log in; --no-login does not ask; a server satisfied by its header needs none' '
	cp "$CONFIG" config.keep &&
	lev mcp add o2 --url "http://127.0.0.1:$A/mcp" --allow-local-network >out 2>err &&
	assert_file_has_content out "run .lev mcp login o2." &&
	lev mcp add o3 --url "http://127.0.0.1:$A/mcp" --allow-local-network --no-login >out2 &&
	assert_not_file_has_content out2 "login" &&
	lev mcp add ob --url "http://127.0.0.1:$B/mcp" --allow-local-network \
		--header "Authorization=Bearer static-b" >out3 &&
	assert_file_has_content out3 "needs no login" &&
	cp config.keep "$CONFIG"
'

# ---- bad input: one line, non-zero, nothing stored ---------------------------

for m in bad-prm-json:"not a JSON object" prm-missing-as:"authorization_servers" \
	 asm-missing-token:"token_endpoint" wrong-issuer:"issuer check" \
	 other-resource:"not one of the server.s origin"; do
	test_expect_success "login refused, one line, nothing stored: ${m%%:*}" "
		mode ${m%%:*} &&
		test_must_fail lev mcp login o --no-browser --timeout 5 >out 2>err &&
		assert_one_line err &&
		assert_file_has_content err '${m#*:}' &&
		! stored
	"
done

test_expect_success 'an authorization server on plain http (not loopback) is refused before any request' '
	mode http-as &&
	test_must_fail lev mcp login o --no-browser --timeout 5 >out 2>err &&
	assert_one_line err &&
	assert_file_has_content err "as.example.com.* is plain http" &&
	! stored
'

test_expect_success 'a registration that puts the redirect_uri off loopback is refused, no URL shown' '
	mode bad-redirect &&
	test_must_fail lev mcp login o --no-browser --timeout 5 >out 2>err &&
	assert_one_line err &&
	assert_file_has_content err "not lev.s loopback listener" &&
	assert_not_file_has_content out "authorize?" &&
	! stored
'

# ---- the login ---------------------------------------------------------------

test_control LOGIN 'login: the printed URL carries S256, state and resource; a forged state is refused, the real answer logs in' '
	mode normal &&
	login_bg &&
	test -n "$URL" &&
	case "$URL" in *code_challenge_method=S256*) ;; *) false ;; esac &&
	case "$URL" in *"resource=http%3A%2F%2F127.0.0.1%3A$A%2Fmcp"*) ;; *) false ;; esac &&
	case "$URL" in *redirect_uri=http%3A%2F%2F127.0.0.1%3A*) ;; *) false ;; esac &&
	forged=$(printf "%s" "$URL" | sed "s/state=[^&]*/state=forged/") &&
	code=$(curl -sS -o forged.body -w "%{http_code}" -L --max-redirs 2 "$forged") &&
	test "$code" = 400 &&
	assert_file_has_content forged.body "state" &&
	test "$(count token grant authorization_code)" = 0 &&
	code=$(curl -sS -o ok.body -w "%{http_code}" -L --max-redirs 2 "$URL") &&
	test "$code" = 200 &&
	wait "$LOGIN_PID" &&
	assert_file_has_content login.out "logged in to MCP server .o." &&
	test "$(count token ok True)" = 1 &&
	stored
'

test_expect_success LOGIN 'PKCE is checked by the server: a code redeemed with the wrong verifier is refused, the right one granted' '
	reg=$(curl -sS -X POST -H "Content-Type: application/json" \
		-d "{\"redirect_uris\":[\"http://127.0.0.1:9/cb\"]}" "http://127.0.0.1:$A/register") &&
	cid=$(printf "%s" "$reg" | python3 -c "import json,sys; print(json.load(sys.stdin)[\"client_id\"])") &&
	v=verifier-0123456789-0123456789-0123456789-xyz &&
	ch=$(printf "%s" "$v" | openssl dgst -sha256 -binary | base64 | tr "+/" "-_" | tr -d "=") &&
	get_code() {
		curl -sS -o /dev/null -w "%{redirect_url}" "http://127.0.0.1:$A/authorize?response_type=code&client_id=$cid&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb&code_challenge=$ch&code_challenge_method=S256&state=s&resource=http%3A%2F%2F127.0.0.1%3A$A%2Fmcp" |
			sed "s/.*code=\([^&]*\).*/\1/"
	} &&
	redeem() {
		curl -sS -o /dev/null -w "%{http_code}" -X POST "http://127.0.0.1:$A/token" \
			--data-urlencode grant_type=authorization_code --data-urlencode "code=$1" \
			--data-urlencode "client_id=$cid" --data-urlencode "redirect_uri=http://127.0.0.1:9/cb" \
			--data-urlencode "code_verifier=$2" \
			--data-urlencode "resource=http://127.0.0.1:$A/mcp"
	} &&
	test "$(redeem "$(get_code)" wrong-verifier-0123456789-0123456789-0123)" = 400 &&
	test "$(redeem "$(get_code)" "$v")" = 200
'

test_expect_success LOGIN 'with the token, tools/list works and the bearer went to the server' '
	lev mcp test o >out &&
	assert_file_has_content out "o__echo" &&
	lev mcp list >list &&
	assert_file_has_content list "auth: logged in" &&
	lev mcp list --json >list.json &&
	python3 -c "import json,sys; s=json.load(open(\"list.json\"))[0]; assert s[\"auth\"]==\"logged in\", s"
'

test_expect_success LOGIN 'an expired token (the server says 401) is refreshed and the call goes through' '
	before=$(count token grant refresh_token) &&
	curl -sS -X POST "http://127.0.0.1:$A/_expire" >/dev/null &&
	lev mcp test o >out &&
	assert_file_has_content out "o__echo" &&
	test "$(count token grant refresh_token)" = $((before + 1))
'

test_expect_success LOGIN 'a token past its expires_in is refreshed before it is sent' '
	mode normal 0 &&
	curl -sS -X POST "http://127.0.0.1:$A/_expire" >/dev/null &&
	lev mcp test o >out &&
	mode normal &&
	before=$(count token grant refresh_token) &&
	lev mcp test o >out2 &&
	assert_file_has_content out2 "o__echo" &&
	test "$(count token grant refresh_token)" = $((before + 1)) &&
	last=$(tail -n 3 "$TRASH/a/log") &&
	! printf "%s\n" "$last" | grep -q "\"value\": \"\""
'

test_expect_success LOGIN 'a run calls the tool with the token' '
	mkdir -p ag &&
	cat >ag/agent.leviath <<-\EOF &&
	[agent]
	name = "m"
	[stages.main]
	model = { provider = "script", script = "turns.toml" }
	available_connectors = ["o"]
	system_prompt = "test"
	EOF
	cat >ag/turns.toml <<-\EOF &&
	[[turn]]
	text = "first"
	[[turn.call]]
	tool = "o__echo"
	args = { text = "one" }
	[[turn]]
	text = "done"
	EOF
	lev run --follow ag --task t --workdir work --json >ev 2>err &&
	assert_file_has_content ev "echo: one"
'

# ---- the origin binding ------------------------------------------------------

test_expect_success LOGIN 'the token for origin A is not sent when the url points at origin B' '
	setconfig "http://127.0.0.1:$B/mcp" &&
	test_must_fail lev mcp test o 2>err &&
	assert_file_has_content err "run .lev mcp login o." &&
	test "$(count auth value "" b)" -ge 1 &&
	! grep -q "at-" "$TRASH/b/log"
'

test_expect_success LOGIN 'benign twin: another path of origin A gets the token' '
	setconfig "http://127.0.0.1:$A/mcp/other" &&
	lev mcp test o >out &&
	assert_file_has_content out "o__echo" &&
	setconfig "http://127.0.0.1:$A/mcp"
'

test_expect_success LOGIN 'no token appears in list, config, records, audit, logs or messages' '
	lev mcp list >l1 2>&1 &&
	lev mcp list --json >l2 2>&1 &&
	test -s "$TRASH/a/issued" &&
	ls $DATA/runs/*/audit.jsonl >/dev/null &&
	for t in $(cat "$TRASH/a/issued"); do
		! grep -rqF "$t" l1 l2 login.out login.err out err ev "$DATA" \
			--exclude=credentials.toml || { echo "token found: $t"; exit 1; }
	done
'

test_expect_success LOGIN 'property: over generated URLs, lev counts a server logged in exactly when its origin is the one logged in to' '
	cp "$CONFIG" config.keep &&
	python3 - "$A" "$B" >cases <<-\EOF &&
	import random, sys
	a, b = sys.argv[1], sys.argv[2]
	rnd = random.Random(5403)
	schemes = ["http", "http", "https"]
	hosts = ["127.0.0.1", "localhost", "LocalHost", "127.0.0.2", "[::1]"]
	ports = [a, b, ""]
	paths = ["/mcp", "/mcp/other", "/", "", "/MCP?x=1", "/mcp#frag"]
	seen = set()
	while len(seen) < 40:
	    seen.add(rnd.choice(schemes) + "://" + rnd.choice(hosts) +
	             (":" + p if (p := rnd.choice(ports)) else "") + rnd.choice(paths))
	for u in sorted(seen):
	    print(u)
	EOF
	i=0 &&
	while read -r u; do
		i=$((i + 1)) &&
		printf "[[mcp_servers]]\nname = \"p%d\"\nurl = \"%s\"\nallow_local_network = true\ntimeout_secs = 2\n" "$i" "$u" >>"$CONFIG" || exit 1
	done <cases &&
	lev mcp list --json >plist.json &&
	python3 - "$A" plist.json cases <<-\EOF &&
	import json, sys, urllib.parse
	a = sys.argv[1]
	def origin(u):
	    s = urllib.parse.urlsplit(u)
	    return (s.scheme.lower(), s.hostname.lower(), s.port or {"http": 80, "https": 443}[s.scheme.lower()])
	want = origin("http://127.0.0.1:%s/mcp" % a)
	got = {e["name"]: e["auth"] for e in json.load(open(sys.argv[2]))}
	bad, pos = [], 0
	for i, u in enumerate(open(sys.argv[3]).read().split(), 1):
	    same = origin(u) == want
	    pos += same
	    if same != (got["p%d" % i] == "logged in"):
	        bad.append((u, got["p%d" % i]))
	assert pos > 0 and pos < 40, pos
	assert not bad, bad
	print(pos, "of 40 cases share the origin")
	EOF
	cp config.keep "$CONFIG"
'

# ---- logout -----------------------------------------------------------------

test_expect_success LOGIN 'logout revokes and deletes the tokens: the server says 401 again' '
	revokes=$(count revoke ev revoke) &&
	lev mcp logout o >out &&
	assert_file_has_content out "revoked" &&
	test "$(count revoke ev revoke)" -gt "$revokes" &&
	! stored &&
	test_must_fail lev mcp test o 2>err &&
	assert_file_has_content err "run .lev mcp login o." &&
	lev mcp list >list &&
	assert_file_has_content list "auth: needs login" &&
	lev mcp logout o >out2 &&
	assert_file_has_content out2 "no stored login"
'

# ---- the browser, a configured client id --------------------------------------

cat >browser.sh <<EOF
#!/bin/sh
echo ran >"$TRASH/browser.ran"
exec curl -sS -L --max-redirs 2 "\$1" >"$TRASH/browser.out" 2>&1
EOF
chmod +x browser.sh

test_expect_success LOGIN '$BROWSER is started with the URL, and a configured oauth_client_id is used without registering' '
	echo "oauth_client_id = \"preset\"" >>"$CONFIG" &&
	regs=$(count register ev register) &&
	BROWSER="$TRASH/browser.sh" lev mcp login o --timeout 60 >out 2>err &&
	assert_file_has_content out "logged in to MCP server .o." &&
	assert_file_has_content browser.out "login received" &&
	test "$(count register ev register)" = "$regs" &&
	lev mcp test o >out2 &&
	assert_file_has_content out2 "o__echo" &&
	lev mcp logout o >/dev/null
'

test_expect_success LOGIN 'with --no-browser, $BROWSER is not started: the URL is only printed' '
	rm -f browser.ran &&
	export BROWSER="$TRASH/browser.sh" &&
	login_bg &&
	test -n "$URL" &&
	test ! -e browser.ran &&
	curl -sS -L --max-redirs 2 "$URL" >/dev/null &&
	wait "$LOGIN_PID" &&
	test ! -e browser.ran &&
	stored
'

test_expect_success 'oauth_client_id on a command server is a config error naming it' '
	printf "[[mcp_servers]]\nname = \"c\"\ncommand = \"true\"\noauth_client_id = \"x\"\n" >"$CONFIG" &&
	test_must_fail lev mcp list >out 2>err &&
	assert_file_has_content err "config.toml:.*oauth_client_id. is for a .url."
'

test_done
