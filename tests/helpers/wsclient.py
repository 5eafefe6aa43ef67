#!/usr/bin/env python3
"""wsclient.py - a WebSocket client for the lev serve tests, standard library only.

    wsclient.py URL [--origin O] [--until OP] [--ping] [--close-after N]
                    [--drop-after N] [--timeout S] [--cacert FILE]

Connects to URL (ws:// or wss://, token in the query), checks the
handshake's Sec-WebSocket-Accept and prints one line per thing received:
'status NNN' (then the body, exit 3) when the server did not switch,
'text JSON' for each text message, 'pong PAYLOAD', 'ping', 'close CODE
REASON'.  It stops (exit 0) after a message whose "op" is OP, after a
close, after N messages with --close-after (sends a close, waits for its
answer) or --drop-after (drops the TCP connection mid-stream).  --ping
sends a ping 'lev-ping' first.  Exit 4 on a timeout, 5 on a bad frame or
accept key.
"""
import argparse
import base64
import hashlib
import json
import os
import socket
import ssl
import struct
import sys
import urllib.parse

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def out(line):
    print(line, flush=True)


def frame(opcode, payload=b""):
    """A client frame: FIN, masked, as RFC 6455 5.2 says."""
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x80 | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack("!H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


class Reader:
    def __init__(self, sock, buf=b""):
        self.sock, self.buf = sock, buf

    def take(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("the server closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def frame(self):
        b0, b1 = self.take(2)
        if b1 & 0x80:
            raise ValueError("a server frame is masked")
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", self.take(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self.take(8))[0]
        return b0 & 0x80, b0 & 0x0F, self.take(n)


def handshake(args):
    u = urllib.parse.urlsplit(args.url)
    port = u.port or (443 if u.scheme == "wss" else 80)
    sock = socket.create_connection((u.hostname, port), timeout=args.timeout)
    if u.scheme == "wss":
        ctx = ssl.create_default_context(cafile=args.cacert)
        sock = ctx.wrap_socket(sock, server_hostname=u.hostname)
    key = base64.b64encode(os.urandom(16)).decode()
    path = u.path + ("?" + u.query if u.query else "")
    req = (f"GET {path} HTTP/1.1\r\nHost: {u.hostname}:{port}\r\nUpgrade: websocket\r\n"
           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n")
    if args.origin:
        req += f"Origin: {args.origin}\r\n"
    sock.sendall((req + "\r\n").encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            break
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
    if status != 101:
        out(f"status {status}")
        n = int(hdrs.get("content-length", "0"))
        while len(rest) < n:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        out(rest.decode(errors="replace"))
        sys.exit(3)
    want = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
    if hdrs.get("sec-websocket-accept") != want:
        out("bad accept key " + hdrs.get("sec-websocket-accept", "(none)"))
        sys.exit(5)
    out("status 101")
    return sock, rest


def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("--origin")
    p.add_argument("--until")
    p.add_argument("--ping", action="store_true")
    p.add_argument("--close-after", type=int)
    p.add_argument("--drop-after", type=int)
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--cacert")
    args = p.parse_args()
    sock, rest = handshake(args)
    r = Reader(sock, rest)
    if args.ping:
        sock.sendall(frame(0x9, b"lev-ping"))
    n = 0
    pong = not args.ping
    done = False
    try:
        while True:
            fin, op, data = r.frame()
            if not fin:
                raise ValueError("a fragmented frame (lev sends whole messages)")
            if op == 0x1:
                n += 1
                out("text " + data.decode())
                if args.until and json.loads(data).get("op") == args.until:
                    done = True
                    if pong:
                        return 0
                if args.drop_after and n >= args.drop_after:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    sock.close()
                    out("dropped")
                    return 0
                if args.close_after and n == args.close_after:
                    sock.sendall(frame(0x8, struct.pack("!H", 1000) + b"bye"))
            elif op == 0x9:
                out("ping")
                sock.sendall(frame(0xA, data))
            elif op == 0xA:
                out("pong " + data.decode())
                pong = True
                if done:
                    return 0
            elif op == 0x8:
                code = struct.unpack("!H", data[:2])[0] if len(data) >= 2 else 1005
                out(f"close {code} {data[2:].decode()}")
                return 0
            else:
                raise ValueError(f"opcode {op}")
    except socket.timeout:
        out("timeout")
        return 4
    except (ValueError, EOFError, OSError) as e:
        out(f"error {e}")
        return 5


if __name__ == "__main__":
    sys.exit(main())
