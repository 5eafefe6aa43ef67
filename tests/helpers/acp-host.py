#!/usr/bin/env python3
"""acp-host.py - a scripted Agent Client Protocol host (an editor, as far as
`lev agent-client` can tell), standard library only.

    acp-host.py [options] -- LEV agent-client AGENT [--yolo]

It spawns the command, says initialize, opens a session in --cwd, sends
--prompt, answers every session/request_permission with --answer, and waits
for the prompt's answer.  Everything the agent wrote is kept, one JSON object
a line, in --log.  It prints the prompt's stopReason (or "error: MESSAGE") and
exits 0; 1 when the agent broke the protocol, crashed or stayed silent for
--timeout seconds (the host never hangs).

  --garbage            before the prompt, send bad lines (not JSON, wrong
                       types, an unknown method, a line over the limit) and
                       check each gets a JSON-RPC error
  --no-caps            send no clientCapabilities at initialize
  --kill-daemon-on-ask kill -9 the daemon (LEV daemon status) at the first
                       permission request and leave that one unanswered
  --break-root DIR     with --kill-daemon-on-ask: then make DIR (the data
                       root) writable by all, so no daemon may start there
  --cancel-on-ask      send session/cancel at the first permission request
  --second-prompt T    at the first permission request, send a second
                       session/prompt T (before answering it)
  --respond-outside    answer a question the agent says as output (an editor
                       with no capabilities) with `LEV respond ID --approve`
"""
import argparse
import json
import os
import re
import select
import signal
import subprocess
import sys
import time


class Host:
    def __init__(self, argv, log, timeout):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.buf = b""
        self.log = open(log, "w") if log else None
        self.timeout = timeout
        self.next_id = 0

    def send_raw(self, data):
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def send(self, obj):
        self.send_raw(json.dumps(obj).encode() + b"\n")

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def read(self):
        """The next message from the agent (a dict); dies after the timeout."""
        end = time.monotonic() + self.timeout
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            r, _, _ = select.select([self.p.stdout], [], [], max(left, 0))
            if not r:
                die("no message from the agent in %d s" % self.timeout)
            chunk = os.read(self.p.stdout.fileno(), 65536)
            if not chunk:
                die("the agent closed its stdout (exit %s)" % self.p.poll())
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        try:
            msg = json.loads(line)
        except ValueError:
            die("the agent wrote a line that is not JSON: %r" % line[:200])
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            die("not a JSON-RPC 2.0 message: %r" % line[:200])
        if self.log:
            self.log.write(json.dumps(msg) + "\n")
            self.log.flush()
        return msg

    def answer_of(self, rid, on_other=None):
        """Read until the response to RID; ON_OTHER sees everything else."""
        while True:
            m = self.read()
            if "method" not in m and m.get("id") == rid:
                return m
            if on_other:
                on_other(m)

    def close(self):
        self.p.stdin.close()
        try:
            rc = self.p.wait(self.timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            die("the agent did not exit when its stdin closed")
        if rc != 0:
            die("the agent exited %d" % rc)


def die(msg):
    print("acp-host: " + msg, file=sys.stderr)
    sys.exit(1)


def expect_error(h, data, code, what):
    h.send_raw(data)
    m = h.read()
    if "error" not in m or m["error"].get("code") != code:
        die("%s: wanted error %d, got %r" % (what, code, m))
    print("error %d: %s" % (code, m["error"]["message"]))


def garbage(h, sid):
    expect_error(h, b"{not json\n", -32700, "malformed JSON")
    expect_error(h, b"[1,2]\n", -32700, "not an object")
    expect_error(h, b'{"jsonrpc":"2.0","id":{"x":1},"method":"initialize"}\n', -32600,
                 "an object id")
    expect_error(h, b'{"jsonrpc":"1.0","id":5,"method":"initialize"}\n', -32600,
                 "jsonrpc 1.0")
    expect_error(h, b'{"jsonrpc":"2.0","id":6,"method":"initialize","params":[1]}\n',
                 -32600, "params an array")
    expect_error(h, b'{"jsonrpc":"2.0","id":7,"method":"session/frobnicate","params":{}}\n',
                 -32601, "an unknown method")
    expect_error(h, b'{"jsonrpc":"2.0","id":8,"method":"session/prompt","params":'
                 b'{"sessionId":"%s","prompt":"not an array"}}\n' % sid.encode(), -32602,
                 "prompt a string")
    expect_error(h, b'{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":'
                 b'{"sessionId":7,"prompt":[]}}\n', -32602, "sessionId a number")
    expect_error(h, b'{"jsonrpc":"2.0","id":10,"method":"session/new","params":'
                 b'{"cwd":"relative/dir"}}\n', -32602, "a relative cwd")
    expect_error(h, b'{"jsonrpc":"2.0","id":11,"method":"x","id":12}\n', -32700,
                 "a duplicate key")
    expect_error(h, b'{"jsonrpc":"2.0","id":13,"method":"session/prompt","params":{"a":"'
                 + b"x" * (300 << 10) + b'"}}\n', -32600, "a line over the limit")
    expect_error(h, b'\xff\xfe\x00garbage\n', -32700, "binary bytes")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cwd", required=True)
    ap.add_argument("--prompt", default="do the task")
    ap.add_argument("--answer", default="allow_once")
    ap.add_argument("--log")
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--garbage", action="store_true")
    ap.add_argument("--no-caps", action="store_true")
    ap.add_argument("--kill-daemon-on-ask", action="store_true")
    ap.add_argument("--cancel-on-ask", action="store_true")
    ap.add_argument("--respond-outside", action="store_true")
    ap.add_argument("--second-prompt")
    ap.add_argument("--break-root")
    ap.add_argument("--load", help="session/load this session id instead of session/new")
    ap.add_argument("argv", nargs="+")
    a = ap.parse_args()

    h = Host(a.argv, a.log, a.timeout)
    init = {"protocolVersion": 1}
    if not a.no_caps:
        init["clientCapabilities"] = {"fs": {"readTextFile": False, "writeTextFile": False}}
    r = h.answer_of(h.request("initialize", init))
    if r.get("result", {}).get("protocolVersion") != 1:
        die("initialize: %r" % r)
    if a.load is not None:
        if not r["result"]["agentCapabilities"].get("loadSession"):
            die("loadSession not advertised: %r" % r)
        replayed = []

        def on_replay(m):
            if m.get("method") != "session/update" or m["params"].get("sessionId") != a.load:
                die("unexpected message while loading: %r" % m)
            replayed.append(m)

        r = h.answer_of(h.request("session/load", {
            "sessionId": a.load, "cwd": os.path.abspath(a.cwd), "mcpServers": []}), on_replay)
        if "error" in r:
            print("error %d: %s" % (r["error"]["code"], r["error"]["message"]))
            h.close()
            return
        print("loaded: %d updates" % len(replayed))
        sid = a.load
    else:
        r = h.answer_of(h.request("session/new", {"cwd": os.path.abspath(a.cwd),
                                                  "mcpServers": []}))
        sid = r.get("result", {}).get("sessionId")
    if not isinstance(sid, str):
        die("session/new: %r" % r)
    if a.garbage:
        garbage(h, sid)

    asks = []
    second = []

    def on_other(m):
        if "method" not in m and m.get("id") in second:
            die("the second prompt was answered before the first: %r" % m)
        if m.get("method") == "session/update":
            if m["params"].get("sessionId") != sid:
                die("an update for another session: %r" % m)
            text = m["params"]["update"].get("content", {})
            said = re.search(r"lev respond (q\d+)", text.get("text", "")
                             if isinstance(text, dict) else "")
            if said and a.respond_outside:
                subprocess.run([a.argv[0], "respond", said.group(1), "--approve"],
                               stdout=subprocess.DEVNULL, check=True)
                print("answered %s outside" % said.group(1))
            return
        if m.get("method") != "session/request_permission":
            die("unexpected message: %r" % m)
        asks.append(m)
        if len(asks) == 1 and a.kill_daemon_on_ask:
            st = subprocess.run([a.argv[0], "daemon", "status"], capture_output=True, text=True)
            pid = re.search(r"running: pid (\d+)", st.stdout)
            if not pid:
                die("no daemon to kill: %r" % st.stdout)
            os.kill(int(pid.group(1)), signal.SIGKILL)
            if a.break_root:
                os.chmod(a.break_root, 0o777)
            print("killed the daemon")
            return
        if len(asks) == 1 and a.second_prompt:
            second.append(h.request("session/prompt", {
                "sessionId": sid, "prompt": [{"type": "text", "text": a.second_prompt}]}))
        if len(asks) == 1 and a.cancel_on_ask:
            h.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}})
            return
        opts = [o["optionId"] for o in m["params"]["options"]]
        if a.answer not in opts:
            die("option %s not offered: %r" % (a.answer, opts))
        h.send({"jsonrpc": "2.0", "id": m["id"],
                "result": {"outcome": {"outcome": "selected", "optionId": a.answer}}})

    r = h.answer_of(h.request("session/prompt", {
        "sessionId": sid, "prompt": [{"type": "text", "text": a.prompt}]}), on_other)
    print("asked %d" % len(asks))
    for rid in second:
        r2 = h.answer_of(rid)
        print("second prompt: %s" % r2.get("result", r2.get("error")))
    if "result" in r:
        print("stopReason: %s" % r["result"].get("stopReason"))
    else:
        print("error: %s" % r.get("error", {}).get("message"))
    h.close()


if __name__ == "__main__":
    main()
