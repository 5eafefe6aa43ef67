# serve-lib.sh - the set-up the lev serve tests (t65xx) share; source it
# after daemon-lib.sh.
#
#   TOKEN                 the API token the tests' server is started with
#   serve_start [ARGS]    start `lev serve --port 0 ARGS` (the token in
#                         LEVIATH_API_TOKEN), log in serve.log; sets SPORT
#                         (empty when it did not come up), URL and
#                         SERVE_PID; stopped at exit.  Call it outside a
#                         test body (a body runs in a subshell)
#   api METHOD PATH [CURL ARGS]  curl PATH with the token; the body goes to
#                         out, the status is printed
#   approval_agent DIR    a blueprint in DIR whose run asks to run one shell
#                         command (writes ml.txt), then answers TEXT ($2)

TOKEN=tok-0123456789abcdef-serve
SERVE_PID=
SPORT=
URL=http://127.0.0.1:1

serve_stop() {
	if [ -n "$SERVE_PID" ]; then
		kill "$SERVE_PID" 2>/dev/null
		wait "$SERVE_PID" 2>/dev/null
	fi
	SERVE_PID=
}
trap 'serve_stop; stop_daemon; _lev_cleanup' EXIT

serve_start() {
	local i
	serve_stop
	: >serve.log
	LEVIATH_API_TOKEN=$TOKEN "$LEV" serve --port 0 "$@" >/dev/null 2>serve.log &
	SERVE_PID=$!
	SPORT=
	for i in $(seq 300); do
		SPORT=$(sed -n 's|^lev serve: listening on .*:\([0-9]*\)/$|\1|p' serve.log)
		[ -n "$SPORT" ] && break
		kill -0 "$SERVE_PID" 2>/dev/null || break
		sleep 0.1
	done
	URL=$(sed -n 's|^lev serve: listening on \(.*\)/$|\1|p' serve.log)
	URL=${URL:-http://127.0.0.1:1}
}

api() {
	local m=$1 p=$2
	shift 2
	curl -s -o out -w '%{http_code}' -X "$m" -H "Authorization: Bearer $TOKEN" "$@" "$URL$p"
}

approval_agent() {
	mkdir -p "$1"
	cat >"$1/agent.leviath" <<-EOT
	[agent]
	name = "approve"
	[stages.main]
	model = { provider = "script", script = "turns.toml" }
	available_tools = ["shell"]
	EOT
	cat >"$1/turns.toml" <<-EOT
	[[turn]]
	[[turn.call]]
	tool = "shell"
	args = { command = "echo ran >> ml.txt" }
	[[turn]]
	text = '''$2'''
	EOT
}

# json FILE EXPR: print EXPR (Python, over the parsed FILE as j)
json() {
	python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
