#!/bin/bash
# The commands a Leviath user types that lev answers on its own data: kill
# (cancel's alias), tools, update, approvals safe.  Each documented invocation,
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

test_done
