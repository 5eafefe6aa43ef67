#!/bin/sh
# The information tools (docs/run.md): what each returns, checked against
# the real machine and the run's own environment, through every gate; what
# they must not show (a variable's value, a provider key) they do not.

test_description='which_command, locale_info, system_info, environment_info, runtime_info, context_list'
. "$SRC_DIR/tests/lib.sh"

export LEVIATH_HOME="$TRASH/lh"
mkdir -p "$LEVIATH_HOME/.leviath" info work && chmod 700 "$LEVIATH_HOME" "$LEVIATH_HOME/.leviath"
CONFIG="$LEVIATH_HOME/.leviath/config.toml"
cat >info/agent.leviath <<'EOF'
[agent]
name = "info"
[stages.main]
model = { provider = "script", script = "turns.toml" }
max_iterations = 12
available_tools = ["which_command", "locale_info", "system_info", "environment_info",
                   "runtime_info", "context_list"]
EOF
cat >info/turns.toml <<'EOF'
[[turn]]
[[turn.call]]
tool = "which_command"
args = { command = "sh" }
[[turn.call]]
tool = "which_command"
args = { command = "no-such-program-lev" }
[[turn.call]]
tool = "which_command"
args = { command = "../../bin/sh" }
[[turn.call]]
tool = "locale_info"
args = {}
[[turn.call]]
tool = "system_info"
args = {}
[[turn.call]]
tool = "environment_info"
args = {}
[[turn.call]]
tool = "runtime_info"
args = {}
[[turn.call]]
tool = "context_list"
args = {}
[[turn.call]]
tool = "context_list"
args = { region = "nope" }
[[turn]]
text = "done"
EOF

# result N: the text of the Nth tool_result (1-based); ok N: its ok field
results() {
	python3 - ev <<-\PY
	import json, sys
	r = [json.loads(l) for l in open(sys.argv[1])]
	r = [e for e in r if e.get("event") == "tool_result"]
	for i, e in enumerate(r):
	    open("r%d" % (i + 1), "w").write(e["text"])
	    open("ok%d" % (i + 1), "w").write("%s %s" % (e["ok"], e["label"]))
	PY
}

test_expect_success 'the run calls each information tool without asking anyone' '
	LANG=de_CH.UTF-8 LC_ALL= LEV_SECRET_VALUE=hunter2-value OPENAI_API_KEY=sk-info-0123456789 \
		lev run --follow info --workdir work --json </dev/null >ev 2>err &&
	results && test -s r9
'

test_expect_success 'which_command finds sh where the shell would, and runs nothing' '
	grep -q "^sh: /" r1 && p=$(sed "s/^sh: //" r1) && test -x "$p" &&
	test "$(readlink -f "$p")" = "$(readlink -f "$(command -v sh)")" &&
	grep -qx "no-such-program-lev: not found on PATH" r2 &&
	grep -q "without a ./." r3 && grep -q "^False" ok3
'

test_expect_success 'locale_info turns LANG into a BCP-47 tag' '
	grep -qx "tag: de-CH" r4 && grep -qx "from: LANG=de_CH.UTF-8" r4 && grep -q "public" ok4
'

test_expect_success 'system_info matches uname and nproc' '
	grep -qx "os: $(uname -s) $(uname -r)" r5 &&
	grep -qx "arch: $(uname -m)" r5 &&
	grep -qx "cpus: $(getconf _NPROCESSORS_ONLN)" r5 &&
	grep -q "^free disk in the working directory: [0-9]* MiB$" r5 && grep -q "internal" ok5
'

test_expect_success 'environment_info shows names, never values, and no provider key' '
	grep -qx "working directory: $(cd work && pwd -P)" r6 &&
	grep -q "PATH" r6 &&
	! grep -q "hunter2-value" r6 && ! grep -q "sk-info" r6 && ! grep -q "OPENAI_API_KEY" r6
'

test_expect_success 'runtime_info and context_list describe this run' '
	grep -qx "agent: info" r7 && grep -qx "stage: main" r7 &&
	grep -qx "iteration: 1 of 12" r7 && grep -qx "model: script/" r7 &&
	grep -qx "someone can answer a question: no" r7 &&
	grep -q "^conversation (" r8 &&
	grep -qx "\[error\] there is no context region .nope." r9
'

test_expect_success 'a deny in the config holds for them too (benign twin: the run above)' '
	printf "[tool_permissions]\nsystem_info = \"deny\"\n" >"$CONFIG" && chmod 600 "$CONFIG" &&
	lev run --follow info --workdir work --json </dev/null >ev 2>err;
	rm -f "$CONFIG" &&
	results && grep -q "^False" ok5 && grep -q "^\[denied\]" r5 && ! grep -q "^os:" r5 &&
	grep -q "^True" ok4
'

test_done
