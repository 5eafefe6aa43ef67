#!/usr/bin/env python3
"""Count the keys of Leviath's blueprint schema lev accepts, warns on, rejects.

usage: count-keys.py LEV SCHEMA [--list]

For every key the schema describes (at every depth), write a small blueprint
that uses that key with a value of the schema's type, run `lev validate
--json` on it and sort the key into one of three piles:
  accepted  valid, and no not-run-by-lev finding covers the key (lev runs it)
  warned    valid, with a not-run-by-lev finding on the key or a table above it
  rejected  lev validate fails
Prints "accepted N warned N rejected N" (and each key with --list).
"""
import json
import os
import subprocess
import sys
import tempfile

lev, schema_path = sys.argv[1], sys.argv[2]
listing = "--list" in sys.argv[3:]
schema = json.load(open(schema_path))
defs = schema.get("$defs", {})


def resolve(node):
    while "$ref" in node:
        node = defs[node["$ref"].split("/")[-1]]
    return node


def sample(node):
    """A value of NODE's type that the schema accepts."""
    node = resolve(node)
    if "enum" in node:
        return node["enum"][0]
    if "oneOf" in node:
        return sample(node["oneOf"][0])
    t = node.get("type")
    if t == "string":
        if "pattern" in node and "%" in node["pattern"]:
            return "5%"
        return "x"
    if t == "boolean":
        return True
    if t in ("integer", "number"):
        return max(1, node.get("minimum", 1))
    if t == "array":
        item = resolve(node.get("items", {}))
        if item.get("type") == "object":
            return [required_object(item)]
        return [sample(item)]
    if t == "object":
        return required_object(node)
    return "x"


def required_object(node):
    node = resolve(node)
    props = node.get("properties", {})
    return {k: sample(props[k]) for k in node.get("required", [])}


def keys(node, path):
    """(dotted path, value node) for every key below NODE."""
    node = resolve(node)
    for k, v in node.get("properties", {}).items():
        yield path + [k], v
        yield from keys(v, path + [k])
    ap = node.get("additionalProperties")
    if isinstance(ap, dict):
        name = {"stages": "main", "regions": "r", "transitions": "main"}.get(
            path[-1] if path else "", "read_file")
        yield from keys(ap, path + [name])
    item = node.get("items")
    if isinstance(item, dict) and resolve(item).get("type") == "object":
        yield from keys(item, path + ["[0]"])


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + " }"


def place(doc, path, value):
    """Set PATH in DOC (dicts; "[0]" is the first element of an array of tables)."""
    cur = doc
    for i, k in enumerate(path[:-1]):
        if k == "[0]":
            continue
        nxt = path[i + 1]
        if nxt == "[0]":
            cur = cur.setdefault(k, [{}])[0]
        else:
            cur = cur.setdefault(k, {})
            if not isinstance(cur, dict):
                return False
    if isinstance(value, dict) and isinstance(cur.get(path[-1]), dict):
        cur[path[-1]].update(value)	# a table that holds others: keep them
    else:
        cur[path[-1]] = value
    return True


def base():
    return {"agent": {"name": "k"}, "stages": {"main": {}}}


def fix_up(doc, path):
    """What a key needs around it to mean anything."""
    st = doc["stages"].get("main", {})
    if path[:3] == ["stages", "main", "model"] and path[-1] == "script":
        st["model"]["provider"] = "script"
    if path == ["agent", "entry_stage"]:
        doc["agent"]["entry_stage"] = "main"
    for lst in ("models", "fallbacks"):
        if path[:4] == ["stages", "main", "model", lst]:
            # a provider lev has, so the list is usable
            st["model"][lst] = [{"provider": "openai", "model": "m"}]
    if path[-1] == "required" and path[:2] == ["context", "regions"]:
        doc["context"]["regions"]["r"]["seed"] = "task"
    if path[:2] == ["stages", "main"] and "require_output" in path:
        st["available_tools"] = ["submit_output"]
    if path[:3] == ["stages", "main", "tool_routing"]:
        # a route names a region the blueprint declares
        doc.setdefault("context", {}).setdefault("regions", {})["x"] = {"kind": "temporary"}
    if path[:2] == ["context", "file_tracking"]:
        # the tracking region is one the blueprint declares
        regions = doc["context"].setdefault("regions", {})
        regions["files"] = regions["x"] = {"kind": "temporary"}
    if path == ["stages", "main", "required_tools"]:
        st["available_tools"] = ["x"]
    # a tool and a provider that exist: naming none is an error of its own
    for k in ("available_tools", "required_tools"):
        if k in st:
            st[k] = ["read_file"]
    if path == ["stages", "main", "model", "provider"]:
        st["model"]["provider"] = "openai"
    if path[:3] == ["stages", "main", "transitions"] and len(path) > 4:
        st["transitions"]["main"].setdefault("hint", "h")


def run(doc):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "agent.leviath"), "w") as f:
            for k, v in doc.items():
                f.write(f"{k} = {toml_value(v)}\n")
        env = dict(os.environ, HOME=d, LEVIATH_HOME=d)
        r = subprocess.run([lev, "validate", "--json", d], capture_output=True, text=True,
                           env=env)
        try:
            return json.loads(r.stdout)
        except ValueError:
            return {"valid": False, "findings": []}


piles = {"accepted": [], "warned": [], "rejected": []}
for path, node in keys(schema, []):
    doc = base()
    if not place(doc, path, sample(node)):
        continue
    fix_up(doc, path)
    out = run(doc)
    dotted = ".".join(p for p in path if p != "[0]")
    if not out.get("valid"):
        pile = "rejected"
    else:
        fkeys = [f.get("key") or "" for f in out["findings"] if f["code"] == "not-run-by-lev"]
        flat = ".".join(path)
        covered = any(flat == k or flat.startswith(k + ".") or flat.startswith(k + "[")
                      or dotted == k or dotted.startswith(k + ".") for k in fkeys)
        # lev's own warnings about a key it ignores name it in quotes
        covered = covered or any(f"'{dotted}'" in f["message"] for f in out["findings"]
                                 if f["code"] == "ignored-setting")
        pile = "warned" if covered else "accepted"
    piles[pile].append(dotted)

print(" ".join(f"{k} {len(v)}" for k, v in piles.items()))
if listing:
    for k, v in piles.items():
        for key in v:
            print(f"{k}\t{key}")
