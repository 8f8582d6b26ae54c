#!/usr/bin/env python3
"""Extracts the corpus's streams from other projects' test material (see README.md).

Usage: extract.py pydantic-ai MIRROR   (a git directory of pydantic/pydantic-ai)
       extract.py openllmetry MIRROR   (traceloop/openllmetry)
       extract.py vercel-ai MIRROR     (vercel/ai)
       extract.py hf-tapes MIRROR      (huggingface/huggingface.js)

pydantic-ai, openllmetry: every VCR cassette (tests/**/cassettes/**/*.yaml) is parsed with PyYAML; each
interaction whose response has Content-Type text/event-stream and a string body gives one stream:
the body string is written byte for byte (UTF-8), exactly what the cassette recorded.
vercel-ai: every packages/*/src/**/__fixtures__/*.chunks.txt is copied byte for byte (one JSON
chunk per line, as the SDK's tests replay them; the corpus test frames each line as an SSE data
event).

It writes the stream files and prints one provenance entry per stream (JSON lines); the
expectations in MANIFEST.json were added to these by reading the streams.
"""
import json, os, re, subprocess, sys
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))


def git(mirror, *args):
    return subprocess.run(["git", "--git-dir", mirror, *args], check=True, capture_output=True).stdout


def safe(s):
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s).strip("_")


def header(h, name):
    for k, v in (h or {}).items():
        if k.lower() == name:
            return v[0] if isinstance(v, list) else v
    return ""


def cassettes(mirror, repo, licence, prefix):
    commit = git(mirror, "rev-parse", "HEAD").decode().strip()
    files = git(mirror, "ls-tree", "-r", "--name-only", "HEAD").decode().split("\n")
    for path in files:
        if "cassettes/" not in path or not path.endswith(".yaml"):
            continue
        try:
            raw = git(mirror, "show", "HEAD:" + path)
        except subprocess.CalledProcessError:
            continue  # a blob the snapshot does not hold
        if b"text/event-stream" not in raw and b"ndjson" not in raw:
            continue
        doc = yaml.safe_load(raw)
        for i, it in enumerate(doc.get("interactions") or []):
            resp, req = it.get("response") or {}, it.get("request") or {}
            ct = header(resp.get("headers"), "content-type")
            if "text/event-stream" not in ct and "ndjson" not in ct:
                continue
            body = (resp.get("body") or {}).get("string")
            if not isinstance(body, str) or not body:
                continue
            name = safe(path.split("cassettes/", 1)[1][: -len(".yaml")]) + (f"__{i}" if i else "")
            out = os.path.join(prefix, name + (".sse" if "event-stream" in ct else ".ndjson"))
            with open(os.path.join(HERE, out), "wb") as f:
                f.write(body.encode("utf-8"))
            reqbody = req.get("parsed_body")
            rb = req.get("body")
            if isinstance(rb, dict):
                rb = rb.get("string")
            if reqbody is None and isinstance(rb, (str, bytes)):
                try:
                    reqbody = json.loads(rb)
                except ValueError:
                    reqbody = None
            print(json.dumps({
                "file": out, "framing": "sse" if "event-stream" in ct else "ndjson",
                "source": {"repository": repo, "path": path, "commit": commit,
                           "licence": licence, "interaction": i,
                           "extracted": "response.body.string of the interaction, parsed with PyYAML, written as UTF-8"},
                "uri": req.get("uri", ""),
                "request": {"stream_options": (reqbody or {}).get("stream_options"), "n": (reqbody or {}).get("n")} if isinstance(reqbody, dict) else None,
            }))


def vercel_ai(mirror):
    commit = git(mirror, "rev-parse", "HEAD").decode().strip()
    files = git(mirror, "ls-tree", "-r", "--name-only", "HEAD").decode().split("\n")
    for path in files:
        if "/__fixtures__/" not in path or not path.endswith(".chunks.txt"):
            continue
        try:
            raw = git(mirror, "show", "HEAD:" + path)
        except subprocess.CalledProcessError:
            continue  # a blob the snapshot does not hold
        pkg = path.split("/")[1]
        name = safe(pkg + "__" + path.rsplit("/", 1)[1][: -len(".chunks.txt")])
        out = os.path.join("vercel-ai", name + ".chunks.txt")
        with open(os.path.join(HERE, out), "wb") as f:
            f.write(raw)
        print(json.dumps({
            "file": out, "framing": "chunks",
            "source": {"repository": "vercel/ai", "path": path, "commit": commit, "licence": "Apache-2.0",
                       "extracted": "the file byte for byte; one JSON chunk per line, framed as SSE data events by the test"},
        }))


def openllmetry(mirror):
    cassettes(mirror, "traceloop/openllmetry", "Apache-2.0", "openllmetry")


def pydantic_ai(mirror):
    cassettes(mirror, "pydantic/pydantic-ai", "MIT", "pydantic-ai")


def hf_tapes(mirror):
    """huggingface.js recorded its inference tests in packages/inference/test/tapes.json (one
    entry per request: url, request init, response body as a string) until commit b5bb4f452
    removed them; the tapes are read at that commit's parent."""
    commit = git(mirror, "rev-parse", "b5bb4f452^").decode().strip()
    path = "packages/inference/test/tapes.json"
    tapes = json.loads(git(mirror, "show", commit + ":" + path))
    for key, t in tapes.items():
        resp = t.get("response") or {}
        if "text/event-stream" not in (resp.get("headers") or {}).get("content-type", ""):
            continue
        body = resp.get("body")
        if not isinstance(body, str) or not body:
            continue
        host = t["url"].split("/")[2]
        out = os.path.join("hf-tapes", safe(host) + "__" + key[:12] + ".sse")
        with open(os.path.join(HERE, out), "wb") as f:
            f.write(body.encode("utf-8"))
        req = None
        try:
            req = json.loads((t.get("init") or {}).get("body") or "")
        except ValueError:
            pass
        print(json.dumps({
            "file": out, "framing": "sse",
            "source": {"repository": "huggingface/huggingface.js", "path": path, "commit": commit,
                       "licence": "MIT", "tape": key,
                       "extracted": "the tape's response.body string (JSON), written as UTF-8"},
            "uri": t["url"],
            "request": {"stream_options": req.get("stream_options"), "n": req.get("n")} if isinstance(req, dict) else None,
        }))


if __name__ == "__main__":
    which, mirror = sys.argv[1], sys.argv[2]
    os.makedirs(os.path.join(HERE, which), exist_ok=True)
    {"pydantic-ai": pydantic_ai, "vercel-ai": vercel_ai, "openllmetry": openllmetry, "hf-tapes": hf_tapes}[which](mirror)
