#!/bin/bash
# lev check starts a stage's MCP servers with the environment the run gives
# them: without the variables secret by their role (a provider's api_key_env,
# an MCP server's ${VAR}), whatever their names.  The server writes the names
# of the variables it was given to a file at start-up; a provider's key
# variable (named here like nothing secret: LEVT_PLAIN_NAME) must not be
# among them, neither under lev check nor in a run, while an ordinary
# variable (the benign twin) still reaches the server in both.  Each other
# way a variable is dropped is a case too, so that the two could not drift
# apart unseen: a variable another server's env names (${VAR}), and with
# credential_store = "keychain" the session bus's address.
. "$SRC_DIR/tests/lib.sh"

DATA="$HOME/.leviath"
mkdir -p "$DATA" work agent && chmod 700 "$DATA"
cat >work/envsrv.py <<'PY'
import json, os, sys
with open(sys.argv[1], "a") as f:
    f.write(" ".join(sorted(os.environ)) + "\n")
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    meth = m.get("method")
    if meth == "initialize":
        r = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
             "serverInfo": {"name": "envsrv", "version": "1"}}
    elif meth == "tools/list":
        r = {"tools": [{"name": "ping", "description": "answers pong",
                        "inputSchema": {"type": "object", "properties": {}}}]}
    elif meth == "tools/call":
        r = {"content": [{"type": "text", "text": "pong"}]}
    else:
        r = {}
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
PY
cat >"$DATA/config.toml" <<CFG
[security]
credential_store = "keychain"
[sandbox]
kind = "none"
[providers.keyed]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "LEVT_PLAIN_NAME"
model = "m-1"
[[mcp_servers]]
name = "e"
command = "python3"
args = ["$TRASH/work/envsrv.py", "$TRASH/work/env-names.txt"]
timeout_secs = 30
[[mcp_servers]]
name = "refd"
command = "true"
env = { TOKEN = "\${LEVT_REF_NAME}" }
CFG
chmod 600 "$DATA/config.toml"
cat >agent/agent.leviath <<'BP'
[agent]
name = "envcheck"

[context.regions]
task = { kind = "pinned", seed = "task" }
conversation = { kind = "sliding_window", max_items = 10 }

[stages.main]
model = { provider = "script", script = "main.toml" }
available_tools = ["read_file"]
available_connectors = ["e"]
BP
cat >agent/main.toml <<'SCRIPT'
[[turn]]
[[turn.call]]
tool = "e__ping"
[[turn]]
text = "finished"
SCRIPT
export LEVT_PLAIN_NAME=sk-t5306-never-to-a-server LEVT_ORDINARY=plain-value
export LEVT_REF_NAME=tok-t5306-only-for-refd DBUS_SESSION_BUS_ADDRESS=unix:path=/nonexistent-t5306
# the names no server may see, under lev check or in a run
never_seen() {
	for v in LEVT_PLAIN_NAME LEVT_REF_NAME DBUS_SESSION_BUS_ADDRESS; do
		! grep -qw "$v" work/env-names.txt || { echo "$v reached the server"; return 1; }
	done
}

test_expect_success 'lev check starts the server without a variable secret by its role' '
	rm -f work/env-names.txt &&
	"$LEV" check "$TRASH/agent" --tool e__ping --workdir work --no-terminal >out 2>err;
	test -s work/env-names.txt &&
	never_seen
'

test_expect_success 'benign twin: an ordinary variable reaches the server under lev check' '
	grep -qw LEVT_ORDINARY work/env-names.txt
'

test_expect_success 'a run gives its server the same environment' '
	rm -f work/env-names.txt &&
	setsid -w "$LEV" run --foreground "$TRASH/agent" --workdir work --task t --yolo \
		</dev/null >run.out 2>&1;
	test -s work/env-names.txt &&
	never_seen &&
	grep -qw LEVT_ORDINARY work/env-names.txt
'

# lev check writes to a pipe only through lev_write_nosig() (a server, a
# sandbox's child): a server that exits at once is lev check's answer, never
# a SIGPIPE death (exit 141): the one-line error; the server here is refd,
# the command true
mkdir -p quick
sed -e 's/name = "envcheck"/name = "quick"/' -e 's/available_connectors = \["e"\]/available_connectors = ["refd"]/' \
	agent/agent.leviath >quick/agent.leviath
cp agent/main.toml quick/main.toml
test_expect_success 'a server that exits at once is an answer, never a SIGPIPE death' '
	for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
		st=0 && "$LEV" check "$TRASH/quick" --tool read_file --workdir work \
			--no-terminal >out 2>err || st=$?
		test "$st" = 1 || { echo "run $i: exit $st"; cat err; return 1; }
	done &&
	grep -q "MCP server .refd. did not start" err
'

# to_closed_pipe CMD...: CMD with its standard output a pipe nobody reads;
# prints how it ended (a signal: -N) and what it wrote to standard error
cat >closed.py <<'PY'
import os, subprocess, sys
r, w = os.pipe()
os.close(r)
p = subprocess.run(sys.argv[1:], stdout=w, stderr=subprocess.PIPE)
print(p.returncode)
sys.stdout.write(p.stderr.decode())
PY
test_expect_success 'lev check to a closed standard output ends quietly, as lev help does' '
	python3 closed.py "$LEV" check "$TRASH/agent" --tool e__ping --workdir work \
		--no-terminal >closed.out &&
	python3 closed.py "$LEV" help >help.out &&
	test_cmp help.out closed.out &&
	test "$(wc -l <closed.out)" = 1
'

test_expect_success 'benign twin: with standard output open lev check prints its answer' '
	"$LEV" check "$TRASH/agent" --tool e__ping --workdir work --no-terminal >out 2>err;
	grep -q e__ping out
'

test_done
