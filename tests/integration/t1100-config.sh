#!/bin/bash
# config.toml: where it is, who may write it, and how bad values are
# reported (unknown keys warn, wrong types and enums fail, nothing fails open).
. "$SRC_DIR/tests/lib.sh"

DEMO="$SRC_DIR/examples/demo"
CFG="$HOME/.leviath/config.toml"

# cfg: write ~/.leviath/config.toml (0600) from stdin.
cfg() {
	mkdir -p "$HOME/.leviath" && cat >"$CFG" && chmod 600 "$CFG"
}

test_expect_success 'no config file means the defaults' '
	lev validate "$DEMO" >out &&
	grep -q "^valid" out
'

test_expect_success 'the example config loads without a warning' '
	LEVIATH_CONFIG_PATH="$SRC_DIR/examples/config.toml" lev validate "$DEMO" >out &&
	assert_not_file_has_content out config-unknown-key
'

test_expect_success 'a group-writable config is refused with the chmod fix' '
	echo "taint_tracking = true" | cfg &&
	chmod 620 "$CFG" &&
	test_must_fail --code 1 lev validate "$DEMO" 2>err &&
	assert_one_line err &&
	grep -q "config '"'"'$CFG'"'"' is writable by its group" err &&
	grep -q "chmod 600" err
'

test_expect_success 'a world-writable config is refused, by every command' '
	chmod 666 "$CFG" &&
	test_must_fail --code 1 lev validate "$DEMO" 2>err &&
	grep -q "writable by everyone" err &&
	test_must_fail --code 1 lev list 2>err &&
	grep -q "writable by everyone" err &&
	test_must_fail --code 1 lev add "$DEMO" 2>err &&
	grep -q "writable by everyone" err &&
	test ! -e "$HOME/.leviath/agents/demo"
'

test_expect_success 'after chmod 600 it loads' '
	chmod 600 "$CFG" &&
	lev validate "$DEMO" >out &&
	grep -q "^valid" out
'

if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	test_expect_success 'a config owned by another user is refused' '
		chown nobody "$CFG" &&
		test_must_fail --code 1 lev validate "$DEMO" 2>err &&
		grep -q "is owned by uid $(id -u nobody), not by you" err &&
		chown 0 "$CFG"
	'
else
	test_skip 'a config owned by another user is refused' 'needs root to chown'
fi

test_expect_success 'an unknown key is a warning naming file and line' '
	cfg <<-EOT &&
	[security]
	allow_seed_comands = false
	EOT
	lev validate "$DEMO" >out &&
	grep -q "warning: $CFG:2: unknown key '"'"'allow_seed_comands'"'"' in \[security\] \[config-unknown-key\]" out &&
	test_must_fail --code 1 lev validate --deny-warnings "$DEMO"
'

test_expect_success 'a wrong type is an error naming file:line:col' '
	cfg <<-EOT &&
	[security]
	allow_seed_commands = "no"
	EOT
	test_must_fail --code 1 lev validate "$DEMO" 2>err &&
	assert_one_line err &&
	grep -q "$CFG:2:23: '"'"'security.allow_seed_commands'"'"' must be a boolean" err
'

test_expect_success 'an invalid enum value lists the valid ones' '
	cfg <<-EOT &&
	[security]
	shell_env = "loose"
	EOT
	test_must_fail --code 1 lev validate "$DEMO" 2>err &&
	grep -q "$CFG:2:13: .*must be one of filtered, strict, custom, inherit (got '"'"'loose'"'"')" err
'

test_expect_success 'a misspelt permission is an error, never a looser default' '
	cfg <<-EOT &&
	[tool_permissions]
	shell = "dney"
	EOT
	test_must_fail --code 1 lev validate "$DEMO" 2>err &&
	grep -q "allow, ask, deny" err
'

test_expect_success 'a sandbox kind typo is an error' '
	cfg <<-EOT &&
	[sandbox]
	kind = "namespce"
	EOT
	test_must_fail --code 1 lev validate "$DEMO" 2>err &&
	grep -q "none, namespace, container" err
'

test_expect_success 'a TOML syntax error names the line' '
	printf "[security\n" | cfg &&
	test_must_fail --code 1 lev validate "$DEMO" 2>err &&
	assert_one_line err &&
	grep -q "$CFG:1:" err
'

test_expect_success 'a config that is a directory is refused' '
	rm -f "$CFG" && mkdir "$CFG" &&
	test_must_fail --code 1 lev validate "$DEMO" 2>err &&
	grep -q "not a regular file" err &&
	rmdir "$CFG"
'

test_expect_success 'a 10 MB config is refused by size' '
	head -c 10485760 /dev/zero | tr "\0" "#" | cfg &&
	test_must_fail --code 1 lev validate "$DEMO" 2>err &&
	grep -q "too large" err &&
	rm -f "$CFG"
'

test_expect_success 'a binary config is a one-line error' '
	head -c 2048 /bin/ls | cfg &&
	test_must_fail --code 1 lev validate "$DEMO" 2>err &&
	assert_one_line err &&
	rm -f "$CFG"
'

test_expect_success 'LEVIATH_CONFIG_PATH names the config file' '
	printf "[security]\nread_paths = [\"glob:~/.config/lev-demo/*.md\"]\n" >mine.toml &&
	LEVIATH_CONFIG_PATH="$PWD/mine.toml" lev validate "$DEMO" >out &&
	grep -q "1 declared, 1 granted" out
'

test_expect_success 'LEVIATH_HOME moves the data root, and the config with it' '
	mkdir -p elsewhere/.leviath &&
	printf "[security]\nallow_blueprint_read_paths = true\n" >elsewhere/.leviath/config.toml &&
	chmod 600 elsewhere/.leviath/config.toml &&
	LEVIATH_HOME="$PWD/elsewhere" lev validate "$DEMO" >out &&
	grep -q "all granted by \[security\] allow_blueprint_read_paths = true" out &&
	LEVIATH_HOME="$PWD/elsewhere" lev add "$DEMO" >out &&
	test -f elsewhere/.leviath/agents/demo/agent.leviath &&
	test ! -e "$HOME/.leviath/agents/demo"
'

test_expect_success 'a relative LEVIATH_HOME is refused' '
	test_must_fail --code 1 env LEVIATH_HOME=rel "$LEV" list 2>err &&
	grep -q "absolute" err
'

test_expect_success 'disabled command seeds are said to be skipped' '
	printf "[security]\nallow_seed_commands = false\n" | cfg &&
	lev validate "$DEMO" >out &&
	grep -q "allow_seed_commands = false: these are skipped" out &&
	rm -f "$CFG"
'

test_done
