# daemon-lib.sh - the set-up the daemon tests (t60xx) share; source it after
# lib.sh.
#
# Sets LEVIATH_HOME to a data root of the test's own (ROOT, mode 0700, with
# the control socket at SOCK), stops the test's daemon at exit, and defines:
#   wait_for CMD...      retry CMD quietly until it succeeds, at most 30 s
#   field RUN KEY        a field of RUN as `lev ps --all --json` shows it
#   status_is RUN STATUS RUN's STATUS column in `lev ps --all` starts with
#                        STATUS (no python: it is polled)
#   request_of RUN       the id of RUN's open request (there is one)
#   daemon_pid           the running daemon's pid
#   gone PID             PID has ended
#   crash RUN...         kill -9 the daemon and RUNs' workers; wait until all are gone
#   crash_daemon         kill -9 the daemon alone (its workers wait to be adopted)
#   mock_daemon SCRIPT   serve SCRIPT with mock-model (lev_start_mock_model) as
#                        provider 'mockoa' of config.toml, its key in the
#                        credential store (a resumed run has it too)
#   mock_agent NAME [PROVIDER MODEL]
#                        NAME/agent.leviath: agent NAME of one stage on the
#                        mock model (mockoa's mock-1 unless named), no
#                        tools, the run's task its seed
#   keep_config_base     keep config.toml as it is now (config.base); then
#   config <<EOF         makes config.toml that base and stdin, whole (0600)
#   script_agent NAME TOOLS
#                        NAME/agent.leviath: agent NAME of one stage on the
#                        script model (NAME/turns.toml, the test writes it)
#                        offering TOOLS (a TOML list's items: '"shell"')

export LEVIATH_HOME="$TRASH/lh"
ROOT="$LEVIATH_HOME/.leviath"
SOCK="$ROOT/daemon.sock"
mkdir -p "$ROOT" && chmod 700 "$LEVIATH_HOME" "$ROOT"

stop_daemon() {
	"$LEV" daemon stop >/dev/null 2>&1
}
trap 'stop_daemon; _lev_cleanup' EXIT

# wait_for CMD...: until CMD succeeds, for at most LEV_TEST_WAIT seconds
# (default 120: a loaded machine can take long to start a daemon and a run;
# this bounds a hang, it asserts no speed)
wait_for() {
	local end=$((SECONDS + ${LEV_TEST_WAIT:-120}))
	while [ "$SECONDS" -lt "$end" ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "wait_for: '$*' never succeeded" >&2
	return 1
}

field() {
	"$LEV" ps --all --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
for r in d["runs"] + d["finished"]:
    if r["id"] == sys.argv[1]:
        v = r.get(sys.argv[2])
        print("" if v is None else v)
' "$1" "$2"
}

status_is() {
	"$LEV" ps --all | grep -q "^$1  *[^ ]*  *$2"
}

request_of() {
	"$LEV" respond --json | python3 -c '
import json, sys
r = [q for q in json.load(sys.stdin) if q["run"] == sys.argv[1]]
assert len(r) == 1, r
print(r[0]["id"])
' "$1"
}

daemon_pid() {
	"$LEV" daemon status | sed -n "s/^running: pid \([0-9]*\),.*/\1/p"
}

gone() {
	! kill -0 "$1" 2>/dev/null
}

crash() {
	local dpid pids r p
	dpid=$(daemon_pid) && test -n "$dpid" || return 1
	pids=
	for r in "$@"; do
		pids="$pids $(field "$r" pid)"
	done
	kill -9 "$dpid" && wait_for gone "$dpid" || return 1
	# a worker outlives its daemon (a new one adopts it): killed too, so
	# each run is resumed from its record (crash_daemon: the daemon alone)
	for p in $pids; do
		kill -9 "$p" 2>/dev/null
		wait_for gone "$p" || return 1
	done
}

crash_daemon() {
	local dpid
	dpid=$(daemon_pid) && test -n "$dpid" || return 1
	kill -9 "$dpid" && wait_for gone "$dpid"
}

mock_daemon() {
	lev_start_mock_model "$1"
	printf '[providers.mockoa]\napi_key = "sk-mock-openai"\n' >"$ROOT/credentials.toml"
	chmod 600 "$ROOT/credentials.toml"
	cat >"$ROOT/config.toml" <<-EOF
	[providers.mockoa]
	kind = "openai"
	base_url = "http://127.0.0.1:$PORT/v1"
	model = "mock-1"
	timeout_secs = 30
	EOF
	chmod 600 "$ROOT/config.toml"
}

mock_agent() {
	mkdir -p "$1" &&
	cat >"$1/agent.leviath" <<-EOF
	[agent]
	name = "$1"

	[context.regions.task]
	seed = "task"

	[stages.main]
	model = { provider = "${2:-mockoa}", model = "${3:-mock-1}" }
	available_tools = []
	system_prompt = "test"
	EOF
}

keep_config_base() {
	cp "$ROOT/config.toml" config.base
}

config() {
	{ cat config.base; cat; } >config.new && chmod 600 config.new &&
	mv config.new "$ROOT/config.toml"
}

script_agent() {
	mkdir -p "$1" &&
	cat >"$1/agent.leviath" <<-EOF
	[agent]
	name = "$1"
	[stages.main]
	model = { provider = "script", script = "turns.toml" }
	available_tools = [$2]
	EOF
}
