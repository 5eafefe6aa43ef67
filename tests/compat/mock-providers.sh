# Sourced by the compatibility tests: mock_providers prints two provider
# tables for config.toml: 'down' at a loopback port nobody listens on, and
# 'mock' at the mock model server on $PORT (lev_start_mock_model).  Both
# take their key from $MOCK_KEY.
mock_providers() {
	closed=$(python3 -c "import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); print(s.getsockname()[1])")
	cat <<-EOF
	[providers.down]
	kind = "openai"
	base_url = "http://127.0.0.1:$closed/v1"
	api_key_env = "MOCK_KEY"
	timeout_secs = 2
	[providers.mock]
	kind = "openai"
	base_url = "http://127.0.0.1:$PORT/v1"
	api_key_env = "MOCK_KEY"
	timeout_secs = 5
	EOF
}
