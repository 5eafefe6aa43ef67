#!/bin/bash
# lev validate says before a run what would fail in it: a stage whose
# provider lev cannot run (Leviath's [model_providers] Rhai script provider,
# or a name nothing defines) and available_tools naming a tool nothing
# provides (Leviath's glob and grep) are errors, exit 1.  Each has a benign
# twin that still validates.
. "$SRC_DIR/tests/lib.sh"

mkdir -p "$HOME/.leviath"
CONFIG=$HOME/.leviath/config.toml
cfg() {
	cat >"$CONFIG" && chmod 600 "$CONFIG"
}
# bp DIR MODEL TOOLS: a one-stage blueprint
bp() {
	mkdir -p "$1"
	cat >"$1/agent.leviath" <<-EOF
	[agent]
	name = "$1"
	[stages.main]
	model = $2
	available_tools = $3
	EOF
}
# finding FILE CODE SEVERITY: validate --json's FILE has a CODE finding of SEVERITY
finding() {
	python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert [f for f in d['findings'] if f['code'] == sys.argv[2] and f['severity'] == sys.argv[3]], d
" "$@"
}

test_expect_success 'a stage on a [model_providers] Rhai script provider is an error' '
	cfg <<-EOF &&
	[model_providers.mockx]
	script = "mockx.rhai"
	EOF
	bp rhai "{ provider = \"mockx\", model = \"sim-1\" }" "[\"read_file\"]" &&
	test_must_fail --code 1 lev validate rhai >out &&
	grep -q "^invalid" out &&
	grep -q "error: stage .main.: .*provider .mockx. is a Rhai script provider.*\[provider-not-run\]" out &&
	test_must_fail --code 1 lev validate --json rhai >j &&
	finding j provider-not-run error
'

test_expect_success 'the twin: the same name as an OpenAI-compatible [providers.mockx] validates' '
	cfg <<-EOF &&
	[providers.mockx]
	kind = "openai"
	base_url = "http://127.0.0.1:9/v1"
	EOF
	lev validate rhai >out &&
	grep -q "^valid" out && ! grep -q provider-not-run out
'

test_expect_success 'a provider nothing defines is an error too; a built-in one is not' '
	rm -f "$CONFIG" &&
	bp nosuch "{ provider = \"nosuch\", model = \"m\" }" "[\"read_file\"]" &&
	test_must_fail --code 1 lev validate nosuch >out &&
	grep -q "provider .nosuch. is neither one of lev.s" out &&
	bp builtin "{ provider = \"openai\", model = \"m\" }" "[\"read_file\"]" &&
	lev validate builtin >out && grep -q "^valid" out
'

test_expect_success 'glob and grep in available_tools are errors, each named' '
	bp lev_tools "{ provider = \"openai\", model = \"m\" }" "[\"read_file\", \"glob\", \"grep\"]" &&
	test_must_fail --code 1 lev validate lev_tools >out &&
	grep -q "available_tools names .glob., which no tool provides.*\[unknown-tool\]" out &&
	grep -q "available_tools names .grep., which no tool provides" out &&
	! grep -q "names .read_file." out &&
	test_must_fail --code 1 lev validate --json lev_tools >j &&
	finding j unknown-tool error
'

test_expect_success 'the twins: bash (an alias), a Lua script tool, a configured MCP server tool' '
	cfg <<-EOF &&
	[[mcp_servers]]
	name = "files"
	command = "true"
	EOF
	bp twins "{ provider = \"openai\", model = \"m\" }" \
		"[\"bash\", \"grep\", \"files__read_text_file\"]" &&
	mkdir -p twins/tools &&
	printf -- "-- @tool grep\n-- @description search\nreturn \"\"\n" >twins/tools/grep.lua &&
	lev validate twins >out &&
	grep -q "^valid" out && ! grep -q unknown-tool out
'

test_expect_success 'a bare unknown name with MCP servers configured is a warning (a server may have it)' '
	bp bare "{ provider = \"openai\", model = \"m\" }" "[\"read_text_file\", \"nosrv__x\"]" &&
	test_must_fail --code 1 lev validate --json bare >j &&
	finding j unknown-tool warning &&
	finding j unknown-tool error &&
	python3 -c "
import json
d = json.load(open(\"j\"))
u = {f[\"severity\"]: f[\"message\"] for f in d[\"findings\"] if f[\"code\"] == \"unknown-tool\"}
assert \"read_text_file\" in u[\"warning\"] and \"nosrv__x\" in u[\"error\"], u
"
'

# ---- --graph, --width ------------------------------------------------------

mkdir -p flow
cat >flow/agent.leviath <<'EOF'
[agent]
name = "flow"
[stages.a]
model = { provider = "openai", model = "m" }
[stages.a.transitions.b]
hint = "more sources are needed before anything can be written, and this hint is long"
[stages.a.transitions.c]
hint = "ready"
[stages.b]
model = { provider = "openai", model = "m" }
next = "c"
[stages.c]
model = { provider = "openai", model = "m" }
EOF

test_expect_success 'validate --graph draws every stage and edge after the report' '
	rm -f "$CONFIG" &&
	lev validate flow --graph >out &&
	sed -n "/^stage graph:/,\$p" out >g &&
	cat >want <<-EOF &&
	stage graph:
	  a (entry)
	    -> b  [done]  "more sources are needed before anything can be written, and this hint is long"
	    -> c  [done]  "ready"
	  b
	    -> c  [next]
	  c
	    -> (end of run)
	EOF
	test_cmp want g &&
	lev validate flow >plain && ! grep -q "stage graph" plain
'

test_expect_success 'validate --graph --width cuts longer lines to that many columns' '
	lev validate flow --graph --width 40 >out &&
	sed -n "/^stage graph:/,\$p" out >g &&
	grep -q "^    -> b  \[done\]  \"more sources.*\.\.\.$" g &&
	! awk "length > 40" g | grep -q . &&
	grep -q "^    -> c  \[done\]  \"ready\"$" g
'

test_expect_success 'validate --graph is ignored with --json; --width outside 20..1000 is usage' '
	lev validate flow --graph --json >j &&
	python3 -c "import json; json.load(open(\"j\"))" &&
	test_must_fail --code 2 lev validate flow --graph --width 5 &&
	test_must_fail --code 2 lev validate flow --width
'

test_done
