#!/usr/bin/env python3
"""An MCP HTTP server that demands an OAuth bearer, and its authorization server.

usage: mcp-oauth-server.py PORTFILE STATEDIR [--static-token TOKEN]

Serves on 127.0.0.1, a port the kernel picks (written to PORTFILE):
  POST /mcp...                       MCP (initialize, tools/list, tools/call of 'echo');
                                     401 with WWW-Authenticate resource_metadata unless
                                     'Authorization: Bearer T' names a live access token
  GET  /.well-known/oauth-protected-resource[/mcp]   RFC 9728
  GET  /.well-known/oauth-authorization-server       RFC 8414
  POST /register                     RFC 7591
  GET  /authorize                    checks the request, 302 to redirect_uri with code+state
  POST /token                        authorization_code (PKCE S256 checked) and refresh_token
  POST /revoke                       RFC 7009
  POST /_mode?mode=M[&expires_in=N]  the test's control: how the next answers misbehave
  POST /_expire                      every access token issued so far stops working

STATEDIR/log holds one JSON line per event: each Authorization header the MCP
endpoint received ("auth"), each token request and whether it was granted
("token"), each revocation ("revoke"); STATEDIR/issued each token issued.
Standard library only.
"""
import base64
import hashlib
import http.server
import json
import os
import secrets
import sys
import urllib.parse

PORTFILE, STATEDIR = sys.argv[1], sys.argv[2]
STATIC = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--static-token" else None

state = {
    "mode": "normal", "expires_in": 3600,
    "clients": {"preset": None},  # client_id -> redirect_uri (None: any on loopback)
    "codes": {},        # code -> dict
    "access": set(), "refresh": {},  # refresh token -> client_id
}


def log(ev, **kw):
    kw["ev"] = ev
    with open(os.path.join(STATEDIR, "log"), "a") as f:
        f.write(json.dumps(kw) + "\n")


def issue(prefix):
    t = prefix + secrets.token_hex(16)
    with open(os.path.join(STATEDIR, "issued"), "a") as f:
        f.write(t + "\n")
    return t


def s256(v):
    return base64.urlsafe_b64encode(hashlib.sha256(v.encode()).digest()).rstrip(b"=").decode()


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    @property
    def base(self):
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def send(self, code, body=b"", ctype="application/json", headers=()):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        if body:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n).decode() if n else ""

    # ---- metadata -------------------------------------------------------------
    def prm(self):
        m = state["mode"]
        if m == "bad-prm-json":
            return self.send(200, "{\"resource\": ", "application/json")
        doc = {"resource": self.base + "/mcp", "authorization_servers": [self.base],
               "scopes_supported": ["mcp"]}
        if m == "prm-missing-as":
            del doc["authorization_servers"]
        if m == "http-as":
            doc["authorization_servers"] = ["http://as.example.com"]
        if m == "other-resource":
            doc["resource"] = "https://elsewhere.example/mcp"
        self.send(200, doc)

    def asm(self):
        doc = {"issuer": self.base, "authorization_endpoint": self.base + "/authorize",
               "token_endpoint": self.base + "/token",
               "registration_endpoint": self.base + "/register",
               "revocation_endpoint": self.base + "/revoke",
               "code_challenge_methods_supported": ["S256"]}
        if state["mode"] == "asm-missing-token":
            del doc["token_endpoint"]
        if state["mode"] == "wrong-issuer":
            doc["issuer"] = "https://evil.example"
        self.send(200, doc)

    # ---- the authorization server ---------------------------------------------
    def register(self):
        req = json.loads(self.body())
        cid = "client-" + secrets.token_hex(4)
        uri = req["redirect_uris"][0]
        if state["mode"] == "bad-redirect":
            uri = "https://evil.example/cb"
        state["clients"][cid] = uri
        log("register", client=cid)
        self.send(201, {"client_id": cid, "redirect_uris": [uri]})

    def authorize(self, q):
        g = lambda k: q.get(k, [None])[0]
        cid, ru = g("client_id"), g("redirect_uri")
        host = urllib.parse.urlsplit(ru or "").hostname
        bad = None
        if g("response_type") != "code":
            bad = "response_type"
        elif cid not in state["clients"] or state["clients"][cid] not in (None, ru):
            bad = "redirect_uri not the registered one"
        elif host not in ("127.0.0.1", "::1"):
            bad = "redirect_uri not on loopback"
        elif g("code_challenge_method") != "S256" or not g("code_challenge"):
            bad = "no S256 challenge"
        elif g("resource") != self.base + "/mcp":
            bad = "resource is not this server's url"
        if bad:
            log("authorize", ok=False, why=bad)
            return self.send(400, {"error": "invalid_request", "error_description": bad})
        code = secrets.token_hex(8)
        state["codes"][code] = {"client": cid, "redirect": ru,
                                "challenge": g("code_challenge"), "resource": g("resource")}
        log("authorize", ok=True, code=code)
        loc = ru + "?" + urllib.parse.urlencode({"code": code, "state": g("state") or ""})
        self.send(302, headers=[("Location", loc)])

    def grant(self):
        access, refresh = issue("at-"), issue("rt-")
        state["access"].add(access)
        return access, refresh

    def token(self):
        f = {k: v[0] for k, v in urllib.parse.parse_qs(self.body()).items()}
        gt = f.get("grant_type")
        if gt == "authorization_code":
            c = state["codes"].pop(f.get("code", ""), None)
            ok = bool(c) and c["client"] == f.get("client_id") and \
                c["redirect"] == f.get("redirect_uri") and \
                s256(f.get("code_verifier", "")) == c["challenge"] and \
                f.get("resource") == c["resource"]
        elif gt == "refresh_token":
            ok = state["refresh"].pop(f.get("refresh_token", ""), None) == f.get("client_id")
        else:
            ok = False
        log("token", grant=gt, ok=ok)
        if not ok:
            return self.send(400, {"error": "invalid_grant"})
        access, refresh = self.grant()
        state["refresh"][refresh] = f.get("client_id")
        self.send(200, {"access_token": access, "token_type": "Bearer",
                        "expires_in": state["expires_in"], "refresh_token": refresh})

    def revoke(self):
        f = {k: v[0] for k, v in urllib.parse.parse_qs(self.body()).items()}
        t = f.get("token", "")
        state["access"].discard(t)
        state["refresh"].pop(t, None)
        log("revoke", hint=f.get("token_type_hint"))
        self.send(200)

    # ---- MCP ------------------------------------------------------------------
    def mcp(self):
        auth = self.headers.get("Authorization") or ""
        log("auth", value=auth, path=self.path)
        tok = auth[7:] if auth.startswith("Bearer ") else None
        body = self.body()
        if tok not in state["access"] and (STATIC is None or tok != STATIC):
            md = self.base + "/.well-known/oauth-protected-resource/mcp"
            return self.send(401, {"error": "unauthorized"}, headers=[
                ("WWW-Authenticate", 'Bearer resource_metadata="%s"' % md)])
        msg = json.loads(body)
        if "id" not in msg:
            return self.send(202)
        m = msg.get("method")
        if m == "initialize":
            res = {"protocolVersion": msg["params"]["protocolVersion"],
                   "capabilities": {"tools": {}}, "serverInfo": {"name": "oauth-test"}}
        elif m == "tools/list":
            res = {"tools": [{"name": "echo", "description": "echoes its text",
                              "inputSchema": {"type": "object",
                                              "properties": {"text": {"type": "string"}}}}]}
        elif m == "tools/call":
            t = msg["params"].get("arguments", {}).get("text", "")
            res = {"content": [{"type": "text", "text": "echo: " + t}]}
        else:
            return self.send(200, {"jsonrpc": "2.0", "id": msg["id"],
                                   "error": {"code": -32601, "message": "no such method"}})
        self.send(200, {"jsonrpc": "2.0", "id": msg["id"], "result": res})

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        if u.path.startswith("/.well-known/oauth-protected-resource"):
            return self.prm()
        if u.path == "/.well-known/oauth-authorization-server":
            return self.asm()
        if u.path == "/authorize":
            return self.authorize(urllib.parse.parse_qs(u.query))
        self.send(404, {"error": "not found"})

    def do_POST(self):
        u = urllib.parse.urlsplit(self.path)
        if u.path.startswith("/mcp"):
            return self.mcp()
        if u.path == "/register":
            return self.register()
        if u.path == "/token":
            return self.token()
        if u.path == "/revoke":
            return self.revoke()
        if u.path == "/_mode":
            q = urllib.parse.parse_qs(u.query)
            state["mode"] = q.get("mode", ["normal"])[0]
            state["expires_in"] = int(q.get("expires_in", ["3600"])[0])
            self.body()
            return self.send(200, {"mode": state["mode"]})
        if u.path == "/_expire":
            state["access"].clear()
            self.body()
            return self.send(200, {})
        self.send(404, {"error": "not found"})


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(PORTFILE + ".tmp", PORTFILE)
srv.serve_forever()
