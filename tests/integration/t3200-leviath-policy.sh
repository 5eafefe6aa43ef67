#!/bin/bash
# Leviath's ${XDG_CONFIG_HOME:-~/.config}/leviath/policy.toml is read beside
# lev's own and merged, the stricter winning: where both files have rules
# for a tool a rule of each must allow the call (a refusal in either wins,
# so does the lower max_sensitivity), an override takes the stricter of
# each field, a malformed Leviath file is an error naming its
# file:line:col (never skipped), `lev policy add` writes lev's file only,
# and Leviath's rules/*.rhai get a finding naming their Lua equivalent.
. "$SRC_DIR/tests/lib.sh"

ROOT="$HOME/.leviath"
POL="$ROOT/policy.toml"
export XDG_CONFIG_HOME="$TRASH/xdg"
LPOL="$XDG_CONFIG_HOME/leviath/policy.toml"
mkdir -p "$ROOT" "$XDG_CONFIG_HOME/leviath" && chmod 700 "$ROOT"

# ours FILE-TEXT / theirs FILE-TEXT: write lev's / Leviath's policy.toml
ours() {
	printf '%s\n' "$1" >"$POL" && chmod 600 "$POL"
}
theirs() {
	printf '%s\n' "$1" >"$LPOL" && chmod 600 "$LPOL"
}
allow_post() {
	printf '[[allowlist]]\ntool = "http_post"\nto = ["%s"]\nmax_sensitivity = "%s"\n' "$1" "${2:-private}"
}

test_control allow_both 'benign twin: an allow in both files allows' '
	ours "$(allow_post chat.example.com)" && theirs "$(allow_post chat.example.com)" &&
	lev policy test http_post --target chat.example.com >out &&
	grep -q "result: allowed by allowlist rule" out
'

test_expect_success allow_both 'an allow in ours, none in Leviath'"'"'s for another target: refused' '
	ours "$(allow_post chat.example.com)" && theirs "$(allow_post other.example.org)" &&
	test_must_fail --code 1 lev policy test http_post --target chat.example.com >out &&
	grep -q "blocked" out
'

test_expect_success allow_both 'and the other way round: Leviath'"'"'s allow, ours refuses' '
	ours "$(allow_post other.example.org)" && theirs "$(allow_post chat.example.com)" &&
	test_must_fail --code 1 lev policy test http_post --target chat.example.com >out &&
	grep -q "blocked" out
'

test_expect_success allow_both 'a file with no rule for the tool has no say: the other decides' '
	ours "$(allow_post chat.example.com)" &&
	theirs "$(printf "[[allowlist]]\ntool = \"send_email\"\nmax_sensitivity = \"private\"\n")" &&
	lev policy test http_post --target chat.example.com >out &&
	grep -q "allowed by allowlist rule #1" out &&
	ours "" &&
	theirs "$(allow_post chat.example.com)" &&
	lev policy test http_post --target chat.example.com >out &&
	grep -q "allowed by allowlist rule #1" out
'

test_expect_success allow_both 'the lower max_sensitivity wins' '
	ours "$(allow_post chat.example.com private)" && theirs "$(allow_post chat.example.com internal)" &&
	lev policy test http_post --target chat.example.com --taint internal >/dev/null &&
	test_must_fail --code 1 lev policy test http_post --target chat.example.com --taint private >/dev/null &&
	ours "$(allow_post chat.example.com internal)" && theirs "$(allow_post chat.example.com private)" &&
	test_must_fail --code 1 lev policy test http_post --target chat.example.com --taint private >/dev/null
'

test_expect_success allow_both 'an override takes the stricter field from either file' '
	ours "$(printf "[mcp_overrides.\"crm.export\"]\ndirection = \"outbound\"\nclearance = \"private\"\n")" &&
	theirs "$(printf "[mcp_overrides.\"crm.export\"]\nclearance = \"public\"\n")" &&
	test_must_fail --code 1 lev policy test crm__export --taint internal --json >o.json &&
	jq -e ".clearance == \"public\" and .result == \"blocked\"" o.json >/dev/null &&
	theirs "" &&
	lev policy test crm__export --taint internal --json >o.json &&
	jq -e ".clearance == \"private\" and .result == \"allowed\"" o.json >/dev/null
'

test_expect_success 'a per-tool entry in Leviath'"'"'s file never loosens our whole-server entry' '
	ours "$(printf "[mcp_overrides.\"crm\"]\ndirection = \"outbound\"\nclearance = \"public\"\n")" &&
	theirs "$(printf "[mcp_overrides.\"crm.export\"]\ndirection = \"inbound\"\nclearance = \"private\"\n")" &&
	test_must_fail --code 1 lev policy test crm__export --taint internal --json >o.json &&
	jq -e ".outbound == true and .clearance == \"public\" and .result == \"blocked\"" o.json >/dev/null &&
	theirs "$(printf "[mcp_overrides.\"crm\".tools]\nexport = { clearance = \"private\" }\n")" &&
	test_must_fail --code 1 lev policy test crm__export --taint internal --json >o.json &&
	jq -e ".clearance == \"public\"" o.json >/dev/null &&
	lev policy list >out &&
	grep -q "^Leviath.s tool overrides (1; a call gets the stricter of each field)" out
'

test_expect_success 'benign twin: an equal entry changes nothing; a stricter one of theirs wins' '
	ours "$(printf "[mcp_overrides.\"crm\"]\nclearance = \"internal\"\n")" &&
	theirs "$(printf "[mcp_overrides.\"crm.export\"]\nclearance = \"internal\"\n")" &&
	lev policy test crm__export --taint internal --json >o.json &&
	jq -e ".clearance == \"internal\" and .result == \"allowed\"" o.json >/dev/null &&
	theirs "$(printf "[mcp_overrides.\"crm.export\"]\nclearance = \"public\"\n")" &&
	test_must_fail --code 1 lev policy test crm__export --taint internal --json >o.json &&
	jq -e ".clearance == \"public\"" o.json >/dev/null &&
	lev policy test crm__other --taint internal --json >o.json &&
	jq -e ".clearance == \"internal\" and .result == \"allowed\"" o.json >/dev/null
'

test_expect_success 'consequential in Leviath'"'"'s file is refused, naming file:line:col' '
	ours "" &&
	theirs "$(printf "[mcp_overrides.\"crm.export\"]\nconsequential = false\n")" &&
	test_must_fail lev policy list 2>err &&
	grep -q "$LPOL:2:17: .crm.export.: consequential belongs in lev.s policy.toml" err &&
	ours "$(printf "[mcp_overrides.\"crm.export\"]\nconsequential = false\n")" && theirs "" &&
	lev policy list >out
'

test_expect_success allow_both 'lev policy list says which file each entry came from' '
	ours "$(allow_post chat.example.com)" && theirs "$(allow_post chat.example.com internal)" &&
	lev policy list >out &&
	grep -q "^Leviath.s policy: $LPOL (merged" out &&
	grep -q "^  1\. http_post .*($POL:1)" out &&
	grep -q "^  2\. http_post .*($LPOL:1)" out &&
	lev policy list --json >l.json &&
	jq -e ".leviath_policy == \"$LPOL\" and .allowlist[1].file == \"$LPOL\" and .allowlist[0].file == \"$POL\"" l.json >/dev/null
'

test_expect_success allow_both 'lev policy add writes lev'"'"'s policy.toml and leaves Leviath'"'"'s untouched' '
	cp "$LPOL" lpol.before &&
	lev policy add web_fetch --target docs.example.com >out &&
	grep -q "web_fetch" "$POL" &&
	cmp "$LPOL" lpol.before
'

test_expect_success 'a malformed Leviath policy.toml is an error naming file:line:col, for every command' '
	ours "$(allow_post chat.example.com)" &&
	theirs "$(printf "[[allowlist]]\ntool = \"http_post\"\nmax_sensitivity = \"secret\"\n")" &&
	test_must_fail lev policy list 2>err &&
	grep -q "$LPOL:3:[0-9]*:" err &&
	test_must_fail lev policy test http_post --target chat.example.com 2>err &&
	grep -q "$LPOL:3" err &&
	theirs "$(printf "[[allowlist]]\ntool = \"http_post\"\n")" &&
	test_must_fail lev policy list 2>err &&
	grep -q "$LPOL:[0-9]*:[0-9]*: .*max_sensitivity" err &&
	lev doctor --no-daemon --json >doc 2>&1;
	jq -e "[.checks[] | select(.name == \"leviath\")][0].status == \"fail\"" doc >/dev/null
'

test_expect_success '[integrity] in Leviath'"'"'s file is refused: it is lev'"'"'s alone' '
	theirs "$(printf "[integrity]\nuntrusted = [\"inbox/*\"]\n")" &&
	test_must_fail lev policy list 2>err &&
	grep -q "$LPOL:1:1: \[integrity\] and \[\[sources\]\] belong in lev" err
'

test_expect_success 'Leviath'"'"'s rules/*.rhai get a finding naming the Lua equivalent' '
	theirs "" && mkdir -p "$XDG_CONFIG_HOME/leviath/rules" &&
	echo "true" >"$XDG_CONFIG_HOME/leviath/rules/ops-reports.rhai" &&
	lev policy list >out 2>err &&
	grep -q "ops-reports.rhai: a Leviath Rhai gate rule, which lev does not run" err &&
	grep -q "$ROOT/rules/ops-reports.lua. (missing: write it)" err &&
	lev doctor --no-daemon --json >doc 2>&1;
	jq -e "[.checks[] | select(.name == \"leviath\")][0] | .status == \"warn\" and (.fix | test(\"ops-reports.lua\"))" doc >/dev/null &&
	mkdir -p "$ROOT/rules" && chmod 700 "$ROOT/rules" &&
	echo "return false" >"$ROOT/rules/ops-reports.lua" && chmod 600 "$ROOT/rules/ops-reports.lua" &&
	lev policy list >out 2>err &&
	grep -q "ops-reports.lua. (present)" err
'

test_expect_success 'lev check (the run'"'"'s gate chain) takes the merged policy too' '
	rm -rf "$XDG_CONFIG_HOME/leviath/rules" "$ROOT/rules" &&
	printf "taint_tracking = true\n" >"$ROOT/config.toml" && chmod 600 "$ROOT/config.toml" &&
	ours "$(allow_post chat.example.com)" && theirs "$(allow_post other.example.org)" &&
	mkdir -p agent &&
	printf "[agent]\nname = \"poster\"\n[stages.main]\nmodel = { provider = \"openai\", model = \"gpt-x\" }\navailable_tools = [\"http_post\"]\n" >agent/agent.leviath &&
	args="{\"url\":\"https://chat.example.com/x\",\"body\":\"b\"}" &&
	test_expect_code 3 lev check agent --allow http_post --tool http_post --taint private --args "$args" >out &&
	grep -q "^ask (gate: taint)" out &&
	theirs "$(allow_post chat.example.com)" &&
	lev check agent --allow http_post --tool http_post --taint private --args "$args" >out &&
	grep -q "^allow (gate: taint)" out &&
	grep -q "allowlist #1" out
'

# the daemon reports a broken Leviath policy.toml as it does ours (hot reload)
daemon_reports() {
	"$LEV" daemon status 2>&1 | grep -q "$1"
}

test_expect_success 'the daemon watches Leviath'"'"'s policy.toml: a broken edit is reported, a fix clears it' '
	theirs "$(allow_post chat.example.com)" &&
	lev daemon start >/dev/null &&
	! daemon_reports "error: .*leviath/policy.toml" &&
	printf "[[allowlist]]\ntool = \"http_post\"\n" >"$LPOL.tmp" && chmod 600 "$LPOL.tmp" &&
	mv "$LPOL.tmp" "$LPOL" &&
	n=0; until daemon_reports "error: .*$LPOL:[0-9]*:[0-9]*:" || [ $n -ge 300 ]; do sleep 0.1; n=$((n + 1)); done &&
	daemon_reports "error: .*$LPOL:[0-9]*:[0-9]*:" &&
	theirs "$(allow_post chat.example.com)" &&
	n=0; while daemon_reports "error: .*leviath/policy.toml" && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done &&
	! daemon_reports "error: .*leviath/policy.toml";
	rc=$?; lev daemon stop >/dev/null 2>&1; test $rc = 0
'

test_done
