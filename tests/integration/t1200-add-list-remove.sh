#!/bin/bash
# lev add / list / remove: atomic installs, the plain-words inventory,
# refusal of links, specials and bad blueprints, and nothing half-installed.
. "$SRC_DIR/tests/lib.sh"

DEMO="$SRC_DIR/examples/demo"
AGENTS="$HOME/.leviath/agents"

bp() {
	mkdir -p "$1" && cat >"$1/agent.leviath"
}

# Nothing but finished installs may sit in the store.
store_is_clean() {
	local f
	for f in "$AGENTS"/.[!.]* "$AGENTS"/..?*; do
		[ -e "$f" ] && { echo "left behind: $f" >&2; return 1; }
	done
	return 0
}

test_expect_success 'an empty store lists nothing and says how to add' '
	lev list >out &&
	grep -q "no agents installed" out &&
	lev list --json >out.json &&
	python3 -c "import json; assert json.load(open(\"out.json\")) == {\"agents\": []}"
'

test_expect_success 'add installs the demo and says what it asks for' '
	lev add "$DEMO" >out &&
	grep -q "^installed '"'"'demo'"'"' 1.0.0 in $AGENTS/demo" out &&
	grep -q "asks for the following" out &&
	grep -q "  - pre-approves these tools (no prompt at run time): read_file, read_files, list_dir" out &&
	grep -q "  - requests a namespace sandbox, network off" out &&
	grep -q "  - asks to read outside its workdir (read-only): glob:~/.config/lev-demo/\*.md; 1 declared, 0 granted - grant the rest with \[agent_read_paths.demo\]" out &&
	grep -q "  - runs this command at start, before any prompt: \`git ls-files\` (region '"'"'files'"'"'; on the built-in safe list)" out &&
	grep -q "inspect it with: lev validate demo" out
'

test_expect_success 'the install is private: directories 0700, files 0600' '
	test "$(stat -c %a "$HOME/.leviath")" = 700 &&
	test "$(stat -c %a "$AGENTS")" = 700 &&
	test "$(stat -c %a "$AGENTS/demo")" = 700 &&
	test "$(stat -c %a "$AGENTS/demo/agent.leviath")" = 600 &&
	test "$(stat -c %a "$AGENTS/demo/turns/survey.toml")" = 600 &&
	cmp "$DEMO/agent.leviath" "$AGENTS/demo/agent.leviath"
'

test_expect_success 'list shows version, description and the read path counts' '
	lev list >out &&
	grep -q "^demo 1.0.0 - Reviews a small project" out &&
	grep -q "^    read_paths: 1 declared, 0 granted - \`lev validate demo\` shows which" out
'

test_expect_success 'list --json carries the same' '
	lev list --json >out.json &&
	python3 - out.json <<-PY
	import json, sys
	a = json.load(open(sys.argv[1]))["agents"]
	assert [x["name"] for x in a] == ["demo"], a
	assert a[0]["version"] == "1.0.0"
	assert a[0]["read_paths"] == {"declared": 1, "granted": 0}, a
	assert a[0]["error"] is None
	PY
'

test_expect_success 'a grant in the config shows up in list' '
	mkdir -p "$HOME/.leviath" &&
	printf "[agent_read_paths.demo]\nallow = [\"glob:~/.config/lev-demo/*.md\"]\n" >"$HOME/.leviath/config.toml" &&
	lev list >out &&
	grep -q "^    read_paths: 1 declared, 1 granted$" out &&
	rm "$HOME/.leviath/config.toml"
'

test_expect_success 'validate finds the installed agent by name' '
	lev validate demo >out &&
	grep -q "^valid: blueprint '"'"'demo'"'"'" out
'

test_expect_success 'adding it again needs --force, and says so' '
	test_must_fail --code 1 lev add "$DEMO" 2>err &&
	assert_one_line err &&
	grep -q "already installed; '"'"'lev add --force'"'"' replaces it" err
'

test_expect_success '--force replaces it atomically' '
	cp -r "$DEMO" demo2 &&
	sed -i "s/^version = \"1.0.0\"/version = \"1.1.0\"/" demo2/agent.leviath &&
	lev add --force demo2 >out &&
	grep -q "^replaced '"'"'demo'"'"' 1.1.0" out &&
	lev list >out &&
	grep -q "^demo 1.1.0" out &&
	store_is_clean
'

test_expect_success 'add takes the agent.leviath file too' '
	bp byfile <<-EOT &&
	[agent]
	name = "byfile"
	[stages.main]
	EOT
	lev add byfile/agent.leviath >out &&
	test -f "$AGENTS/byfile/agent.leviath"
'

test_expect_success 'an ordinary agent asks for nothing beyond the defaults, except its sandbox choice' '
	grep -q "requests no sandbox; your config decides" out
'

test_expect_success 'a symlink inside the blueprint is refused and nothing is left' '
	bp linky <<-EOT &&
	[agent]
	name = "linky"
	[stages.main]
	EOT
	ln -s /etc/passwd linky/passwd &&
	test_must_fail --code 1 lev add linky 2>err &&
	assert_one_line err &&
	grep -q "'"'"'passwd'"'"' is a symbolic link" err &&
	test ! -e "$AGENTS/linky" &&
	store_is_clean
'

test_expect_success 'a symlinked agent.leviath is refused too' '
	mkdir -p linky2 && ln -s "$DEMO/agent.leviath" linky2/agent.leviath &&
	test_must_fail --code 1 lev add linky2 2>err &&
	grep -q "symbolic link" err &&
	store_is_clean
'

test_expect_success 'a FIFO inside the blueprint is refused and nothing is left' '
	bp fifo <<-EOT &&
	[agent]
	name = "fifo"
	[stages.main]
	EOT
	mkfifo fifo/pipe &&
	test_must_fail --code 1 lev add fifo 2>err &&
	grep -q "special file" err &&
	test ! -e "$AGENTS/fifo" &&
	store_is_clean
'

test_expect_success 'an invalid blueprint is refused before anything is copied' '
	bp broken <<-EOT &&
	[agent]
	name = "broken"
	[stages.main]
	mode = "yolo"
	EOT
	test_must_fail --code 1 lev add broken 2>err &&
	assert_one_line err &&
	grep -q "broken/agent.leviath:4:8:" err &&
	test ! -e "$AGENTS/broken" &&
	store_is_clean
'

test_expect_success 'a hostile agent name cannot escape the store' '
	bp evil <<-EOT &&
	[agent]
	name = "../../evil"
	[stages.main]
	EOT
	test_must_fail --code 1 lev add evil 2>err &&
	grep -q "not a valid agent name" err &&
	test ! -e "$HOME/evil" && test ! -e "$HOME/.leviath/evil" &&
	store_is_clean
'

test_expect_success 'truncated, binary and 10 MB blueprints are refused, nothing left' '
	mkdir -p t1 t2 t3 &&
	printf "[agent]\nname = \"t1\"\n[stages.ma" >t1/agent.leviath &&
	head -c 4096 /bin/ls >t2/agent.leviath &&
	head -c 10485760 /dev/zero | tr "\0" "a" >t3/agent.leviath &&
	for d in t1 t2 t3; do
		test_must_fail --code 1 lev add $d 2>err || exit 1
		assert_one_line err || exit 1
	done &&
	grep -q "too large" err &&
	test ! -e "$AGENTS/t1" &&
	store_is_clean
'

test_expect_success 'a tree with a huge file is refused, nothing left' '
	bp big <<-EOT &&
	[agent]
	name = "big"
	[stages.main]
	EOT
	head -c 70000000 /dev/zero >big/blob &&
	test_must_fail --code 1 lev add big 2>err &&
	grep -q "too large" err &&
	test ! -e "$AGENTS/big" &&
	store_is_clean
'

test_expect_success 'wrongly typed fields are refused with the field named' '
	bp typed <<-EOT &&
	[agent]
	name = "typed"
	version = 2
	[stages.main]
	EOT
	test_must_fail --code 1 lev add typed 2>err &&
	grep -q "typed/agent.leviath:3:11: '"'"'agent.version'"'"' must be a string, not an integer" err
'

test_expect_success 'a broken installed agent is listed with its error, not a crash' '
	mkdir -p "$AGENTS/rotten" &&
	echo "garbage [[[" >"$AGENTS/rotten/agent.leviath" &&
	lev list >out &&
	grep -q "^rotten (cannot load: " out &&
	lev list --json >out.json &&
	python3 -c "import json; a=[x for x in json.load(open(\"out.json\"))[\"agents\"] if x[\"name\"]==\"rotten\"]; assert a[0][\"error\"]" &&
	rm -r "$AGENTS/rotten"
'

test_expect_success 'remove deletes the agent' '
	lev remove demo >out &&
	grep -q "^removed '"'"'demo'"'"'" out &&
	test ! -e "$AGENTS/demo" &&
	lev list >out &&
	assert_not_file_has_content out "^demo " &&
	store_is_clean
'

test_expect_success 'remove of an unknown or invalid name fails with 1' '
	test_must_fail --code 1 lev remove demo 2>err &&
	grep -q "not installed" err &&
	test_must_fail --code 1 lev remove ../.. 2>err &&
	grep -q "not a valid agent name" err
'

test_expect_success 'usage errors exit 2' '
	test_must_fail --code 2 lev add &&
	test_must_fail --code 2 lev add a b &&
	test_must_fail --code 2 lev add --frob x &&
	test_must_fail --code 2 lev remove &&
	test_must_fail --code 2 lev list extra &&
	test_must_fail --code 2 lev list --frob
'

test_done
