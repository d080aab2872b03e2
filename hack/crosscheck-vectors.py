#!/usr/bin/env python3
"""An independent implementation of hashing/HASHING.md, written from the spec
alone, used to compute and cross-check testdata/vectors/*.yaml.

    python3 hack/crosscheck-vectors.py          # check every vector
    python3 hack/crosscheck-vectors.py --write  # fill in empty "expected" values

Needs PyYAML. The Go tests check the same vectors; this script is how the
expected values were obtained without trusting the Go code.
"""
import base64, glob, hashlib, hmac, json, os, re, struct, sys
import yaml

MAGIC = b"confighash.dev/hash/v1\n"

def u32(n): return struct.pack(">I", n)
def lp(s): b = s.encode(); return u32(len(b)) + b

B64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")

def b64(s):
    """Section 3: the standard alphabet with padding; CR and LF are ignored;
    anything else (spaces, missing padding, data after it) is an error; the
    unused bits of the last character are ignored."""
    s = string(s).replace("\r", "").replace("\n", "")
    if not B64.fullmatch(s): raise ValueError("not valid base64")
    return base64.b64decode(s)

def string(v):
    """Section 3: every value must be a string (the API server refuses a
    number, a boolean, null, a list or a map)."""
    if not isinstance(v, str): raise ValueError(f"value is {type(v).__name__}, not a string")
    return v

def content(obj):
    keys = {}
    if obj["kind"] == "ConfigMap":
        for k, v in (obj.get("data") or {}).items(): keys[k] = string(v).encode()
        for k, v in (obj.get("binaryData") or {}).items():
            if k in keys: raise ValueError(f"key {k} in data and binaryData")
            keys[k] = b64(v)
    else:
        for k, v in (obj.get("data") or {}).items(): keys[k] = b64(v)
        for k, v in (obj.get("stringData") or {}).items(): keys[k] = string(v).encode()
    return {k: hashlib.sha256(v).digest() for k, v in keys.items()}

def trim_key(key):
    """Section 5: ASCII white space around the key is not part of it."""
    return key.encode().strip(b" \t\n\v\f\r") if key else b""

def uses(spec):
    out = {}
    def add(kind, name, key, optional):
        if not name: return
        u = out.setdefault((kind, name), {"all": False, "keys": set(), "optional": optional})
        u["optional"] = u["optional"] and optional
        if key is None: u["all"] = True
        else: u["keys"].add(key)
    def items(kind, name, its, opt):
        if not its: add(kind, name, None, opt)
        for it in its or []: add(kind, name, it["key"], opt)
    for v in spec.get("volumes") or []:
        if "configMap" in v: c = v["configMap"]; items("ConfigMap", c.get("name"), c.get("items"), c.get("optional", False))
        if "secret" in v: c = v["secret"]; items("Secret", c.get("secretName"), c.get("items"), c.get("optional", False))
        for s in (v.get("projected") or {}).get("sources") or []:
            if "configMap" in s: c = s["configMap"]; items("ConfigMap", c.get("name"), c.get("items"), c.get("optional", False))
            if "secret" in s: c = s["secret"]; items("Secret", c.get("name"), c.get("items"), c.get("optional", False))
    for s in spec.get("imagePullSecrets") or []: add("Secret", s.get("name"), None, True)
    for group in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(group) or []:
            for ef in c.get("envFrom") or []:
                if "configMapRef" in ef: r = ef["configMapRef"]; add("ConfigMap", r.get("name"), None, r.get("optional", False))
                if "secretRef" in ef: r = ef["secretRef"]; add("Secret", r.get("name"), None, r.get("optional", False))
            for e in c.get("env") or []:
                vf = e.get("valueFrom") or {}
                if "configMapKeyRef" in vf: r = vf["configMapKeyRef"]; add("ConfigMap", r.get("name"), r["key"], r.get("optional", False))
                if "secretKeyRef" in vf: r = vf["secretKeyRef"]; add("Secret", r.get("name"), r["key"], r.get("optional", False))
    return out

def compute(ns, spec, objects, key, in_stream_only=False):
    us = uses(spec)
    if in_stream_only:
        us = {k: u for k, u in us.items() if k in objects}
    enc = MAGIC + u32(len(us))
    for (kind, name) in sorted(us, key=lambda t: (t[0].encode(), t[1].encode())):
        u = us[(kind, name)]
        enc += lp(kind) + lp(ns) + lp(name)
        obj = objects.get((kind, name))
        if obj is None:
            enc += b"\x00"; continue
        enc += b"\x01"
        keys = sorted(obj, key=str.encode) if u["all"] else sorted(u["keys"], key=str.encode)
        enc += u32(len(keys))
        for k in keys:
            enc += lp(k)
            enc += (b"\x01" + obj[k]) if k in obj else b"\x00"
    key = trim_key(key)
    if key:
        return "v1-hmac-sha256:" + hmac.new(key, enc, hashlib.sha256).hexdigest()
    return "v1-sha256:" + hashlib.sha256(enc).hexdigest()

def objects_of(docs):
    return {(d["kind"], d["metadata"]["name"]): content(d) for d in docs if d}

def main():
    write = "--write" in sys.argv
    root = os.path.join(os.path.dirname(__file__), "..", "testdata", "vectors")
    bad = 0
    for f in sorted(glob.glob(os.path.join(root, "*.yaml"))):
        v = yaml.safe_load(open(f))
        a = compute(v["namespace"], v["podSpec"], objects_of(yaml.safe_load_all(v["manifest"])), v.get("key"))
        b = compute(v["namespace"], v["podSpec"], objects_of(json.loads(l) for l in v["apiServer"].splitlines() if l.strip()), v.get("key"))
        if a != b:
            print(f"{f}: manifest {a} != apiServer {b}"); bad += 1; continue
        rt = v.get("renderTime")
        if rt is not None:
            r = compute(v["namespace"], v["podSpec"], objects_of(yaml.safe_load_all(v["manifest"])), v.get("key"), True)
            if not rt.get("expected") and write:
                text = open(f).read().replace('  expected: ""', "  expected: " + r)
                open(f, "w").write(text); print(f"{os.path.basename(f)}: wrote render-time {r}")
            elif rt.get("expected") != r:
                print(f"{f}: render-time expected {rt.get('expected')} but spec gives {r}"); bad += 1
        if not v.get("expected") and write:
            text = open(f).read().replace('expected: ""', "expected: " + a)
            open(f, "w").write(text); print(f"{os.path.basename(f)}: wrote {a}")
        elif v.get("expected") != a:
            print(f"{f}: expected {v.get('expected')} but spec gives {a}"); bad += 1
        else:
            print(f"{os.path.basename(f)}: ok {a}")
    for f in sorted(glob.glob(os.path.join(root, "rejected", "*.yaml"))):
        v = yaml.safe_load(open(f))
        try:
            objects_of(yaml.safe_load_all(v["manifest"]))
        except (ValueError, KeyError) as e:
            print(f"rejected/{os.path.basename(f)}: ok, refused ({e})")
            continue
        print(f"{f}: the spec refuses this input, but it was accepted"); bad += 1
    sys.exit(1 if bad else 0)

main()
