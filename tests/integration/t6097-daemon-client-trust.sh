#!/bin/bash
# The client checks whom it talks to before it sends anything (an API key
# among it): a data root or socket another user owns or can reach, a
# directory above it that others may write, or a listener of another uid
# (SO_PEERCRED) is refused with one line, and a neighbour's fake listener
# receives zero bytes.  A real second user plays the neighbour.
. "$SRC_DIR/tests/lib.sh"

lev() {
	setsid -w "$LEV" "$@"
}

. "$SRC_DIR/tests/daemon-lib.sh"

NB=levneighbour
PY=/usr/bin/python3
mkdir -p work
mkdir -p hello
cat >hello/agent.leviath <<'EOF'
[agent]
name = "hello"

[stages.main]
model = { provider = "script", script = "turns.toml" }
available_tools = ["read_file"]
system_prompt = "test"
EOF
cat >hello/turns.toml <<'EOF'
[[turn]]
text = "all done"
EOF

if [ "$(id -u)" != 0 ] || ! command -v useradd >/dev/null || ! command -v runuser >/dev/null ||
   ! [ -x "$PY" ]; then
	test_skip 'a neighbour (a second user) cannot receive the client request' \
		'not root, or no useradd/runuser or /usr/bin/python3 to play a second user'
	test_done
fi
id "$NB" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$NB" ||
	id "$NB" >/dev/null 2>&1 || { test_skip 'neighbour tests' 'cannot create a test user'; test_done; }
NBUID=$(id -u "$NB")
# the neighbour may traverse the test directory, as it could /tmp
chmod 711 "$TRASH"
NBDIR="$TRASH/nb" && mkdir -p "$NBDIR" && chown "$NB" "$NBDIR"

# listen PATH LOG: the neighbour's fake daemon on PATH, one LOG line per
# connection with the number of bytes it received
listen() {
	runuser -u "$NB" -- "$PY" -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o777)
s.listen(8)
with open(sys.argv[2] + ".ready", "w") as f:
    f.write("%d\n" % os.getpid())
while True:
    c, _ = s.accept()
    n = 0
    while True:
        b = c.recv(65536)
        if not b:
            break
        n += len(b)
    c.close()
    with open(sys.argv[2], "a") as f:
        f.write("%d\n" % n)
' "$1" "$2" &
	wait_for test -s "$2.ready" &&
	LISTENERS="$LISTENERS $(cat "$2.ready")"
}
LISTENERS=
trap 'kill $LISTENERS 2>/dev/null; stop_daemon; _lev_cleanup' EXIT

# received LOG SOCK: probe the listener (5 bytes) once lev is done; the
# connections it logged before the probe's own line must all be empty
received() {
	"$PY" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1]); s.sendall(b"probe"); s.close()' "$2" &&
	wait_for grep -qx 5 "$1" &&
	sed '$d' "$1" >"$1.lev" &&
	! grep -qvx 0 "$1.lev"
}

# the request lev would send carries the key
export OPENAI_API_KEY=sk-neighbour-must-not-see-this

# refused HOME PATTERN CMD...: lev CMD with LEVIATH_HOME=HOME fails with one
# line matching PATTERN
refused() {
	local home=$1 pat=$2
	shift 2
	test_must_fail env LEVIATH_HOME="$home" setsid -w "$LEV" "$@" 2>err &&
	assert_one_line err &&
	grep -q "$pat" err
}

test_expect_success 'a data root the neighbour pre-created is refused; its listener gets zero bytes' '
	mkdir -p "$NBDIR/home" && chown "$NB" "$NBDIR/home" &&
	runuser -u "$NB" -- mkdir -m 700 "$NBDIR/home/.leviath" &&
	listen "$NBDIR/home/.leviath/daemon.sock" "$NBDIR/l1" &&
	refused "$NBDIR/home" \
		"refusing to talk to the daemon: .*/nb/home.* belongs to another user (uid $NBUID" \
		run hello --task go --workdir work &&
	received "$NBDIR/l1" "$NBDIR/home/.leviath/daemon.sock"
'

test_expect_success 'a data root of ours under a directory the neighbour owns is refused' '
	mkdir -p "$NBDIR/own/.leviath" && chmod 700 "$NBDIR/own/.leviath" &&
	refused "$NBDIR/own" "refusing to talk to the daemon: .*/nb., above the data root .*, belongs to another user (uid $NBUID)" ps
'

test_expect_success 'a data root under a directory others may write (no sticky bit) is refused' '
	mkdir -p "$TRASH/open/h/.leviath" && chmod 700 "$TRASH/open/h/.leviath" &&
	chmod 777 "$TRASH/open" &&
	refused "$TRASH/open/h" "refusing to talk to the daemon: .*/open., above the data root .*, is writable by other users (mode 777)" ps
'

test_expect_success 'a data root open to other users is refused' '
	mkdir -p "$TRASH/wide/.leviath" && chmod 755 "$TRASH/wide/.leviath" &&
	refused "$TRASH/wide" "the data root .*/wide/.leviath. is open to other users" ps
'

# our own data root, 0700; the socket in it is the neighbour's listener, moved in
mkdir -p "$TRASH/mine/.leviath" && chmod 700 "$TRASH/mine/.leviath"
MSOCK="$TRASH/mine/.leviath/daemon.sock"

test_expect_success 'a socket the neighbour owns in our data root is refused; zero bytes' '
	listen "$NBDIR/l2.sock" "$NBDIR/l2" &&
	mv "$NBDIR/l2.sock" "$MSOCK" &&
	refused "$TRASH/mine" \
		"refusing to talk to the daemon: .*daemon.sock. is not a socket of yours alone (uid $NBUID" \
		run hello --task go --workdir work &&
	received "$NBDIR/l2" "$MSOCK"
'

test_expect_success 'a socket of ours answered by the neighbour is refused by SO_PEERCRED; zero bytes' '
	chown root "$MSOCK" && chmod 600 "$MSOCK" && : >"$NBDIR/l2" &&
	refused "$TRASH/mine" \
		"refusing to talk to the daemon: .*daemon.sock. is answered by another user (uid $NBUID, pid [0-9]*), not by your daemon" \
		run hello --task go --workdir work &&
	received "$NBDIR/l2" "$MSOCK"
'

test_expect_success 'benign twin: our own data root and daemon work' '
	"$LEV" daemon start >out && grep -q "daemon started" out &&
	lev run --follow hello --task go --workdir work >out 2>err &&
	grep -q "all done" out
'

test_expect_success 'benign twin: a data root under a sticky directory others may write works' '
	mkdir -p "$TRASH/sticky/h/.leviath" && chmod 700 "$TRASH/sticky/h/.leviath" &&
	chmod 1777 "$TRASH/sticky" &&
	LEVIATH_HOME="$TRASH/sticky/h" "$LEV" daemon start >out && grep -q "daemon started" out &&
	LEVIATH_HOME="$TRASH/sticky/h" setsid -w "$LEV" run --follow hello --task go --workdir work >out 2>err;
	rc=$?; LEVIATH_HOME="$TRASH/sticky/h" "$LEV" daemon stop >/dev/null 2>&1;
	test $rc = 0 && grep -q "all done" out
'

test_done
