#!/bin/bash
# The commands a Leviath user types that lev answers on its own data: kill
# (cancel's alias), tools, update, approvals safe, models; Leviath's flags of
# list and mcp add.  Each documented invocation,
# its exit status and its output's shape.
. "$SRC_DIR/tests/lib.sh"

mkdir -p "$HOME/.leviath"
cfg() {
	cat >"$HOME/.leviath/config.toml" && chmod 600 "$HOME/.leviath/config.toml"
}

test_expect_success 'lev kill is lev cancel: the same usage, the same refusal with no daemon' '
	test_must_fail --code 2 lev kill 2>err &&
	grep -q "which run" err &&
	test_must_fail --code 1 lev kill no-such-run 2>kerr &&
	test_must_fail --code 1 lev cancel no-such-run 2>cerr &&
	test_cmp kerr cerr
'

test_expect_success 'lev tools lists every built-in tool with its default and arguments' '
	lev tools >out &&
	grep -q "^shell (bash)  \[ask\]" out &&
	grep -q "^read_file  \[allow\]" out &&
	grep -q "arguments: content\* \[output=content\]" out
'

test_expect_success 'lev tools --json: one object per tool, with its schema' '
	lev tools --json >out &&
	python3 -c "
import json
t = json.load(open(\"out\"))[\"tools\"]
names = [x[\"name\"] for x in t]
assert \"write_file\" in names and len(names) == len(set(names))
assert all(x[\"parameters\"][\"type\"] == \"object\" for x in t)
"
'

test_expect_success 'lev tools takes no argument' '
	test_must_fail --code 2 lev tools extra
'

test_expect_success 'lev update says how lev is updated, in one line, and changes nothing' '
	cp "$LEV" lev-copy && lev update >out &&
	test $(wc -l <out) -eq 1 && grep -q "package manager" out &&
	lev update --check --channel beta --yes >out2 && test_cmp out out2 &&
	lev update --json | python3 -c "import json,sys; d=json.load(sys.stdin); assert d[\"updated\"] is False" &&
	cmp lev-copy "$LEV" &&
	test_must_fail --code 2 lev update --frob
'

test_expect_success 'approvals safe: the built-in list, with no file behind it' '
	lev approvals safe >out &&
	grep -q "^shell:ls  *built-in list$" out &&
	! grep -q "cargo tree" out
'

test_expect_success 'approvals safe: a [safe_commands] entry names config.toml' '
	cfg <<-EOF &&
	[safe_commands]
	shell = ["cargo tree"]
	tools = ["read_files"]
	[agent_safe_commands.coder]
	shell = ["make test"]
	EOF
	lev approvals safe >out &&
	grep -q "^shell:cargo tree  *\[safe_commands\]  $HOME/.leviath/config.toml$" out &&
	grep -q "^read_files  *\[safe_commands\]" out &&
	! grep -q "make test" out &&
	lev approvals safe --json >j &&
	python3 -c "
import json
d = json.load(open(\"j\"))
e = [x for x in d[\"safe\"] if x[\"key\"] == \"shell:cargo tree\"][0]
assert e[\"source\"] == \"[safe_commands]\" and e[\"file\"].endswith(\"config.toml\")
assert [x for x in d[\"safe\"] if x[\"source\"] == \"built-in list\"][0][\"file\"] is None
"
'

test_expect_success 'approvals safe: turning the built-in list off shows it gone' '
	cfg <<-EOF &&
	[safe_commands]
	defaults = false
	shell = ["cargo tree"]
	EOF
	lev approvals safe >out &&
	! grep -q "built-in list" out &&
	grep -q "^shell:cargo tree" out
'

test_expect_success 'approvals: only safe exists, and a usage error says so' '
	test_must_fail --code 2 lev approvals list 2>err &&
	grep -q "only" err &&
	test_must_fail --code 2 lev approvals 2>err &&
	test_must_fail --code 2 lev approvals safe --agent
'

test_expect_success 'list -f/--filter: agents and all list the installed agents; blueprints none' '
	lev list >plain &&
	lev list -f agents >a && test_cmp plain a &&
	lev list --filter all >b && test_cmp plain b &&
	lev list --filter=agents >c && test_cmp plain c &&
	lev list -f blueprints >d && grep -q "bundles no blueprints" d &&
	lev list -f blueprints --json | python3 -c "import json,sys; assert json.load(sys.stdin) == {\"agents\": []}"
'

test_expect_success 'list --filter: an unknown value is a usage error, never ignored' '
	test_must_fail --code 2 lev list --filter bogus 2>err &&
	grep -q "unknown filter .bogus." err &&
	test_must_fail --code 2 lev list -f 2>err
'

# the [[mcp_servers]] entry NAME as JSON (config.toml read by python)
mcp_entry() {
	python3 -c "
import json, sys, tomllib
c = tomllib.load(open(sys.argv[1], \"rb\"))
e = [m for m in c[\"mcp_servers\"] if m[\"name\"] == sys.argv[2]][0]
del e[\"name\"]
print(json.dumps(e, sort_keys=True))
" "$HOME/.leviath/config.toml" "$1"
}

test_expect_success 'mcp add --command --arg --env --no-login writes what -- CMD ARGS writes' '
	rm -f "$HOME/.leviath/config.toml" &&
	lev mcp add lv --command python3 --arg server.py --arg "two words" --env LOG=warn --no-login >out &&
	grep -q "added MCP server .lv." out &&
	lev mcp add dash --env LOG=warn -- python3 server.py "two words" &&
	mcp_entry lv >a && mcp_entry dash >b && test_cmp a b &&
	grep -q "\"args\": \[\"server.py\", \"two words\"\]" a
'

test_expect_success 'mcp add --url --header --no-login; --arg without --command, two commands: usage' '
	lev mcp add web --url https://mcp.example.com/mcp --header "X-Team=a b" --no-login &&
	mcp_entry web | grep -q "https://mcp.example.com/mcp" &&
	test_must_fail --code 2 lev mcp add x --arg a --url https://e.example/mcp 2>err &&
	grep -q "arg is an argument of --command" err &&
	test_must_fail --code 2 lev mcp add y --command a -- b 2>err &&
	grep -q "command once" err &&
	! grep -q "name = \"[xy]\"" "$HOME/.leviath/config.toml"
'

test_expect_success 'models list: the built-in providers, and a config one marked default' '
	cfg <<-EOF &&
	default_provider = "local"
	[providers.local]
	kind = "openai"
	base_url = "http://127.0.0.1:9/v1"
	model = "small-1"
	EOF
	lev models list >out &&
	sed -n 1p out | grep -q "^PROVIDER  *KIND  *SOURCE  *MODEL  *ENDPOINT$" &&
	grep -q "^local  *openai  *config.toml  *small-1  *http://127.0.0.1:9/v1  \[default_provider\]$" out &&
	grep -q "^anthropic  *anthropic  *built-in " out &&
	lev models list -p local --json >j &&
	python3 -c "
import json
p = json.load(open(\"j\"))[\"providers\"]
assert [x[\"name\"] for x in p] == [\"local\"] and p[0][\"default\"] is True, p
"
'

test_expect_success 'models: a provider nothing defines exits 1; --remote and show are refused' '
	test_must_fail --code 1 lev models list -p nosuch 2>err &&
	grep -q "no provider .nosuch." err &&
	test_must_fail --code 2 lev models list --remote 2>err &&
	grep -q "refused" err &&
	test_must_fail --code 2 lev models show gpt-4o 2>err &&
	grep -q "no model catalogue" err
'

test_expect_success 'setup prints the three steps; a key flag is refused and nothing written' '
	rm -f "$HOME/.leviath/config.toml" &&
	lev setup --non-interactive --no-verify >out &&
	grep -q "lev auth set PROVIDER" out && grep -q "lev doctor" out &&
	test_must_fail --code 2 lev setup --non-interactive --openai-key sk-test-1 2>err &&
	grep -q "shell history" err &&
	test_must_fail --code 2 lev setup --default-model m 2>err &&
	grep -q "config.toml" err &&
	test ! -e "$HOME/.leviath/config.toml" &&
	! grep -rq "sk-test-1" "$HOME/.leviath" 2>/dev/null
'

test_expect_success 'daemon --socket is refused on every action, naming LEVIATH_HOME' '
	test_must_fail --code 2 lev daemon status --socket /tmp/x.sock 2>err &&
	grep -q "LEVIATH_HOME" err &&
	test_must_fail --code 2 lev daemon --socket=x start 2>err &&
	test ! -S "$HOME/.leviath/daemon.sock"
'

test_expect_success 'pack and test are refused, each saying what lev does instead' '
	test_must_fail --code 2 lev pack 2>err && grep -q "lev add DIR" err &&
	test_must_fail --code 2 lev pack . -o x.leviath-bundle 2>err && test ! -e x.leviath-bundle &&
	test_must_fail --code 2 lev test --dry-run 2>err && grep -q "lev check" err
'

test_done
