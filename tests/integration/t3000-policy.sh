#!/bin/bash
# lev policy list | add | test through the real binary: policy.toml edits
# that keep every other byte, errors that name the line, the real gate and
# its exit codes, --json shapes, and Lua rules from <data root>/rules.
. "$SRC_DIR/tests/lib.sh"

ROOT="$HOME/.leviath"
POL="$ROOT/policy.toml"

# json_check FILE JQ-EXPR: the JSON in FILE satisfies the jq expression.
json_check() {
	if ! jq -e "$2" "$1" >/dev/null; then
		echo "json_check failed: $2 on $(cat "$1")" >&2
		return 1
	fi
}

test_expect_success 'list with no policy file shows nothing and succeeds' '
	lev policy list >out &&
	assert_file_has_content out "^policy: $POL" &&
	assert_file_has_content out "^no allowlist rules" &&
	assert_file_has_content out "^no Lua rules"
'

test_expect_success 'lev policy without a subcommand is a usage error' '
	test_must_fail --code 2 lev policy 2>err &&
	assert_file_has_content err "missing subcommand" &&
	test_must_fail --code 2 lev policy frob 2>err &&
	assert_file_has_content err "unknown subcommand .frob."
'

test_expect_success 'add creates policy.toml (0600) and list numbers the rules' '
	lev policy add http_post --target "*.EXAMPLE.com" >out &&
	assert_file_has_content out "added allowlist rule #1: http_post \[max: internal\] -> \*\.example\.com" &&
	lev policy add shell --max-sensitivity private >out &&
	assert_file_has_content out "#2: shell \[max: private\] -> any target" &&
	test "$(stat -c %a "$POL")" = 600 &&
	lev policy list >out &&
	assert_file_has_content out "^  1\. http_post \[max: internal\] -> \*\.example\.com" &&
	assert_file_has_content out "^  2\. shell \[max: private\] -> any target"
'

test_expect_success 'add keeps comments, unknown keys and mcp_overrides byte for byte' '
	rm -f "$POL" &&
	printf "%s\n" \
		"# my policy: do not lose this" \
		"colour = \"blue\"   # unknown key, kept" \
		"" \
		"[[allowlist]]" \
		"tool = \"send_email\"   # inline comment" \
		"to = [\"megan@*\", \"+1555\"]" \
		"max_sensitivity = \"private\"" \
		"" \
		"[mcp_overrides.\"my-server\".tools]" \
		"read_customer_data = { sensitivity = \"private\", direction = \"outbound\", clearance = \"internal\" }" >"$POL" &&
	printf "# no newline at the end" >>"$POL" &&
	cp "$POL" orig &&
	lev policy add web_fetch --target docs.example.com --max-sensitivity public 2>err &&
	assert_file_has_content err "unknown key .colour." &&
	head -c "$(wc -c <orig)" "$POL" >prefix &&
	cmp orig prefix &&
	lev policy list --json >list.json &&
	json_check list.json "(.allowlist | length) == 2 and .allowlist[1].tool == \"web_fetch\"" &&
	json_check list.json ".allowlist[1].to == [\"docs.example.com\"] and .allowlist[1].max_sensitivity == \"public\"" &&
	json_check list.json ".overrides[0].tool == \"my-server.read_customer_data\" and .overrides[0].clearance == \"internal\"" &&
	json_check list.json ".allowlist[0].index == 1 and .allowlist[0].line == 4"
'

test_expect_success 'add refuses a bad level or pattern with status 2 and changes nothing' '
	cp "$POL" before &&
	test_must_fail --code 2 lev policy add shell --max-sensitivity secret 2>err &&
	assert_file_has_content err "secret" &&
	test_must_fail --code 2 lev policy add shell --target "*example.com" 2>err &&
	assert_file_has_content err "\*example.com" &&
	test_must_fail --code 2 lev policy add 2>err &&
	test_must_fail --code 2 lev policy add "two words" 2>err &&
	test_must_fail --code 2 lev policy add shell extra 2>err &&
	test_must_fail --code 2 lev policy add shell --target 2>err &&
	cmp before "$POL"
'

test_expect_success 'an invalid max_sensitivity is an error naming the line, never public' '
	printf "[[allowlist]]\ntool = \"shell\"\nmax_sensitivity = \"privat\"\n" >"$POL" &&
	test_must_fail --code 1 lev policy list 2>err &&
	assert_file_has_content err "^lev: error: .*policy.toml:3:[0-9]*:.*max_sensitivity" &&
	test_must_fail --code 1 lev policy test shell 2>err &&
	assert_file_has_content err "policy.toml:3:"
'

test_expect_success 'a missing max_sensitivity is an error naming the rule'"'"'s line' '
	printf "# c\n\n[[allowlist]]\ntool = \"shell\"\n" >"$POL" &&
	test_must_fail --code 1 lev policy list 2>err &&
	assert_file_has_content err "policy.toml:3:.*max_sensitivity"
'

test_expect_success 'add refuses to touch a policy that does not parse' '
	cp "$POL" before &&
	test_must_fail --code 1 lev policy add shell 2>err &&
	assert_file_has_content err "does not parse" &&
	cmp before "$POL"
'

test_expect_success 'a policy others may write is refused' '
	printf "\n" >"$POL" && chmod 666 "$POL" &&
	test_must_fail --code 1 lev policy list 2>err &&
	assert_file_has_content err "writable by group or others" &&
	chmod 600 "$POL"
'

test_expect_success 'test: the real host of a URL decides, not the text around it' '
	rm -f "$POL" &&
	lev policy add web_fetch --target "*.example.com" --max-sensitivity private >/dev/null &&
	test_must_fail --code 1 lev policy test web_fetch --args "{\"url\":\"https://evil.com#.example.com\"}" >out &&
	assert_file_has_content out "^  target: evil.com$" &&
	assert_file_has_content out "^result: blocked" &&
	test_must_fail --code 1 lev policy test web_fetch --args "{\"url\":\"https://example.com.evil.com/\"}" >out &&
	test_must_fail --code 1 lev policy test web_fetch --args "{\"url\":\"https://user@evil.com/x.example.com\"}" >out &&
	assert_file_has_content out "target: evil.com" &&
	lev policy test web_fetch --args "{\"url\":\"https://API.Example.com./v1\"}" >out &&
	assert_file_has_content out "^  target: api.example.com$" &&
	assert_file_has_content out "^result: allowed by allowlist rule #1 (policy.toml line 3)"
'

test_expect_success 'test --json has exactly the documented shape' '
	lev policy test web_fetch --target docs.example.com --json >a.json &&
	json_check a.json "keys == ([\"tool\",\"outbound\",\"clearance\",\"taint\",\"result\",\"source\",\"rule\"] | sort)" &&
	json_check a.json ". == {\"tool\":\"web_fetch\",\"outbound\":true,\"clearance\":\"public\",\"taint\":\"private\",\"result\":\"allowed\",\"source\":\"allowlist\",\"rule\":1}" &&
	test_must_fail --code 1 lev policy test http_post --target x.org --json >b.json &&
	json_check b.json ".result == \"blocked\" and .source == \"none\" and .rule == null" &&
	lev policy test http_post --taint public --json >c.json &&
	json_check c.json ".result == \"allowed\" and .source == \"within_clearance\"" &&
	lev policy test read_files --json >d.json &&
	json_check d.json ".outbound == false and .source == \"not_outbound\" and .taint == \"private\""
'

test_expect_success 'test: unknown tools fail closed, levels and arguments are checked' '
	test_must_fail --code 1 lev policy test some_mcp__send --taint internal >out &&
	assert_file_has_content out "direction: outbound" &&
	test_must_fail --code 2 lev policy test 2>err &&
	test_must_fail --code 2 lev policy test shell --taint secret 2>err &&
	assert_file_has_content err "invalid taint .secret." &&
	test_must_fail --code 2 lev policy test shell --args "{not json" 2>err &&
	assert_file_has_content err "invalid --args" &&
	test_must_fail --code 2 lev policy test shell --frob 2>err &&
	test_must_fail --code 2 lev policy list extra 2>err
'

test_expect_success 'first matching allowlist rule wins and max_sensitivity bounds it' '
	rm -f "$POL" &&
	lev policy add http_post --target "*.example.com" --max-sensitivity internal >/dev/null &&
	lev policy add http_post --max-sensitivity private >/dev/null &&
	lev policy test http_post --target a.example.com --taint internal --json >j1 &&
	json_check j1 ".rule == 1" &&
	lev policy test http_post --target a.example.com --taint private --json >j2 &&
	json_check j2 ".rule == 2"
'

test_expect_success 'Lua rules are listed with their files and can allow a blocked call' '
	rm -f "$POL" &&
	mkdir -p "$ROOT/rules" &&
	cat >"$ROOT/rules/ops.lua" <<-\EOF &&
	-- allow reports to the ops mailbox
	return tool == "send_email" and target == "ops@corp.com" and args.subject == "report"
	EOF
	lev policy list >out &&
	assert_file_has_content out "^  - ops ($ROOT/rules/ops.lua)" &&
	lev policy test send_email --args "{\"to\":\"OPS@corp.com\",\"subject\":\"report\"}" --json >r.json &&
	json_check r.json ".source == \"rule\" and .rule == \"ops\"" &&
	test_must_fail --code 1 lev policy test send_email --args "{\"to\":[\"ops@corp.com\",\"x@evil.com\"],\"subject\":\"report\"}" >out
'

test_expect_success 'a hostile Lua rule neither escapes nor hangs the gate' '
	cat >"$ROOT/rules/aa-evil.lua" <<-EOF &&
	os.execute("touch $TRASH/pwned")
	EOF
	cat >"$ROOT/rules/ab-loop.lua" <<-\EOF &&
	while true do pcall(function() while true do end end) end
	EOF
	cat >"$ROOT/rules/ac-bomb.lua" <<-\EOF &&
	return #string.rep("x", 1e9) > 0
	EOF
	timeout 20 "$LEV" policy test send_email --args "{\"to\":\"ops@corp.com\",\"subject\":\"report\"}" --json >r.json 2>err &&
	json_check r.json ".rule == \"ops\"" &&
	assert_file_has_content err "aa-evil: error" &&
	assert_file_has_content err "ab-loop: budget" &&
	assert_file_has_content err "ac-bomb: memory" &&
	! test -e "$TRASH/pwned"
'

test_expect_success 'a Lua rule that does not compile is skipped and reported' '
	printf "return (\n" >"$ROOT/rules/broken.lua" &&
	lev policy list >out 2>err &&
	assert_file_has_content err "skipped .*rules/broken.lua:2:" &&
	assert_not_file_has_content out "broken" &&
	rm -f "$ROOT/rules"/*.lua
'

test_expect_success 'LEVIATH_HOME moves the policy' '
	mkdir -p "$TRASH/alt" &&
	LEVIATH_HOME="$TRASH/alt" lev policy add shell >out &&
	assert_file_has_content out "saved to $TRASH/alt/.leviath/policy.toml" &&
	LEVIATH_HOME="$TRASH/alt" lev policy list >out &&
	assert_file_has_content out "1\. shell"
'

test_done
