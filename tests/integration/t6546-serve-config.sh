#!/bin/bash
# GET /api/config: the configuration lev uses, redacted by construction.
# Every place a secret can be configured (a provider's key in
# credentials.toml and as a config.toml flat key, an MCP server's env,
# headers, arguments and URL) holds a marker; no byte of any marker is in
# the body, only the secret's presence.  The twin: the settings that are
# not secrets (a base URL, a model, a limit, the env and header names) are
# shown as written.
. "$SRC_DIR/tests/lib.sh"
. "$SRC_DIR/tests/daemon-lib.sh"
. "$SRC_DIR/tests/serve-lib.sh"

cat >"$ROOT/config.toml" <<-EOT
[limits]
shell_timeout_secs = 77
[providers]
flatprov_api_key = "sk-SECRET-flat-5d1e"
[providers.mockoa]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
model = "mock-model-visible"
[[mcp_servers]]
name = "stdiosrv"
command = "true"
args = ["--token", "SECRET-arg-b7c2"]
env = { MY_TOKEN = "SECRET-env-91aa" }
[[mcp_servers]]
name = "httpsrv"
url = "https://mcp.example.com/x?key=SECRET-url-33f0"
headers = { Authorization = "Bearer SECRET-header-c4d9" }
EOT
chmod 600 "$ROOT/config.toml"
printf '[providers.mockoa]\napi_key = "sk-SECRET-cred-e8b5"\n' >"$ROOT/credentials.toml"
chmod 600 "$ROOT/credentials.toml"

serve_start

test_expect_success 'the config: settings shown, each secret only as its presence' '
	test "$(api GET /api/config)" = 200 &&
	python3 - out <<-PY
	import json, sys
	j = json.load(open(sys.argv[1]))
	p = {x["name"]: x for x in j["providers"]}
	assert p["mockoa"]["base_url"] == "http://127.0.0.1:9/v1", p
	assert p["mockoa"]["model"] == "mock-model-visible", p
	assert p["mockoa"]["key_set"] is True, p
	assert p["flatprov"]["key_set"] is True, p
	assert j["limits"]["shell_timeout_secs"] == 77, j
	m = {x["name"]: x for x in j["mcp_servers"]}
	assert m["stdiosrv"]["env_set"] == ["MY_TOKEN"], m
	assert m["stdiosrv"]["args_count"] == 2, m
	assert m["httpsrv"]["headers_set"] == ["Authorization"], m
	assert m["httpsrv"]["url_set"] is True, m
	PY
'

test_expect_success 'no byte of any configured secret is in the body' '
	for s in SECRET sk-SECRET-flat-5d1e sk-SECRET-cred-e8b5 SECRET-arg-b7c2 SECRET-env-91aa \
		 SECRET-url-33f0 SECRET-header-c4d9 5d1e e8b5 b7c2 91aa 33f0 c4d9; do
		! grep -q -- "$s" out || { echo "leaked: $s"; return 1; }
	done
'

test_expect_success 'a provider with no key: key_set false (twin of the presence flag)' '
	rm "$ROOT/credentials.toml" &&
	test "$(api GET /api/config)" = 200 &&
	test "$(json out "[x[\"key_set\"] for x in j[\"providers\"] if x[\"name\"] == \"mockoa\"][0]")" = False
'

test_expect_success 'the route takes no body and needs the token' '
	test "$(api GET /api/config -d "{}")" = 400 &&
	test "$(curl -s -o out -w "%{http_code}" "$URL/api/config")" = 401 &&
	! grep -q mockoa out
'

test_done
