#!/usr/bin/env python3
"""Selects the corpus from what extract.py wrote and reads each stream for its expectations.

Usage: build.py X.jsonl...  (extract.py's output) > MANIFEST.json

Selection: streams of the APIs llmtap decodes (chat completions, completions, responses,
Anthropic messages, Ollama's native API, TGI's generate_stream), one copy of identical bytes,
at most 200 KB each, at most PER_KIND streams of one provider and API (so that the corpus is not
mostly OpenAI), and none from a mock server. Files not selected are deleted.

The expectations are read from the stream here, by rules written from each API's documentation
(see docs/compatibility.md), not by llmtap: the SSE framing of the WHATWG spec, the event
classes of docs/metrics.md, the usage fields each API documents. Every disagreement with llmtap
was then read by hand in the stream (MANIFEST.json's "note").
"""
import hashlib, json, os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_BYTES = 200_000
PER_KIND = 8

PROVIDERS = [  # (uri or file pattern, provider)
    (r"openai\.azure\.com|azure-", "Azure OpenAI"),
    (r"github-copilot", "GitHub Copilot"),
    (r"lmstudio", "LM Studio"),
    (r"api\.openai\.com|^vercel-ai/openai|open-responses__openai", "OpenAI"),
    (r"anthropic", "Anthropic"),
    (r"deepseek", "DeepSeek"),
    (r"groq", "Groq"),
    (r"crusoe", "Crusoe"),
    (r"mistral\.ai|^vercel-ai/mistral", "Mistral"),
    (r"api\.z\.ai", "Z.ai"),
    (r"bedrock-mantle", "Amazon Bedrock"),
    (r"snowflake", "Snowflake Cortex"),
    (r"openrouter", "OpenRouter"),
    (r"novita", "Novita"),
    (r"together", "Together"),
    (r"11434", "Ollama"),
    (r"writer\.com", "Writer"),
    (r"localhost:8000", "vLLM"),
    (r"sambanova", "SambaNova"),
    (r"cerebras", "Cerebras"),
    (r"fireworks", "Fireworks"),
    (r"nebius", "Nebius"),
    (r"hyperbolic", "Hyperbolic"),
    (r"cohere\.com/compatibility", "Cohere (OpenAI compatibility)"),
    (r"hf-inference", "Hugging Face Inference (TGI)"),
    (r"vercel-ai/xai|openai-compatible__xai", "xAI"),
    (r"perplexity", "Perplexity"),
    (r"moonshot", "Moonshot"),
    (r"alibaba", "Alibaba"),
]

# Files that are not evidently recorded responses, left out by name (the reason is the value).
EXCLUDE = {
    "vercel-ai/xai__xai-image-generation-tool.1.chunks.txt": "created_at 0 and an all-zero UUID: not evidently a recorded response",
    "vercel-ai/moonshotai__moonshotai-stream.chunks.txt": "id chatcmpl-stream, model kimi-k3: written by hand",
}

PATHS = {"openai.chat": "/v1/chat/completions", "openai.completions": "/v1/completions",
         "openai.responses": "/v1/responses", "anthropic.messages": "/v1/messages",
         "ollama.chat": "/api/chat", "ollama.generate": "/api/generate", "tgi.generate": "/generate_stream"}


def provider(e):
    key = e.get("uri", "") + " " + e["file"]
    for pat, name in PROVIDERS:
        if re.search(pat, key):
            return name
    return None


def api_of(e, events):
    u = e.get("uri", "")
    if u:
        path = u.split("?")[0].split("#")[0]
        if "localhost:5002" in u:
            return None  # a mock server in openllmetry's tests
        if path.endswith("/chat/completions") or path.endswith("api.writer.com/v1/chat"):
            return "openai.chat"
        if path.endswith("/completions") and "writer.com" not in path:
            return "openai.completions"
        if re.search(r"/responses$", path):
            return "openai.responses"
        if path.endswith("/messages"):
            return "anthropic.messages"
        if path.endswith("/api/chat"):
            return "ollama.chat"
        if path.endswith("/api/generate"):
            return "ollama.generate"
        if "hf-inference/models/" in path and "/v1/" not in path:
            first = next((j for _, _, j in events if isinstance(j, dict)), {})
            return "tgi.generate" if ("token" in first or "error" in first) else "openai.chat"
        return None
    first = next((j for _, _, j in events if isinstance(j, dict)), {})
    obj, typ = first.get("object", ""), first.get("type", "")
    if obj == "chat.completion.chunk":
        return "openai.chat"
    if obj == "text_completion":
        return "openai.completions"
    if typ.startswith("response."):
        return "openai.responses"
    if typ in ("message_start", "ping"):
        return "anthropic.messages"
    return None


def pieces(raw, framing):
    """The stream cut after every event (what the corpus test writes one at a time), each with
    the event it completes: (piece bytes, event type, data) or None for a piece with no event."""
    if framing == "chunks":
        out = []
        for line in raw.split(b"\n"):
            if line.strip():
                out.append((b"data: " + line + b"\n\n", "", line))
        return out
    if framing == "ndjson":
        out = []
        for m in re.finditer(rb"[^\n]*\n|[^\n]+$", raw):
            line = m.group(0)
            out.append((line, "", line.strip() if line.endswith(b"\n") and line.strip() else None))
        return out
    # SSE (WHATWG): lines end with CRLF, LF or CR; a blank line dispatches the event; an event
    # still open at the end of the body is discarded.
    out, start, typ, data, has = [], 0, "", [], False
    for m in re.finditer(rb"([^\r\n]*)(\r\n|\n|\r)", raw):
        line = m.group(1)
        if line == b"":
            out.append((raw[start:m.end()], typ, b"\n".join(data) if has else None))
            start, typ, data, has = m.end(), "", [], False
            continue
        if line.startswith(b":"):
            continue
        field, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            data.append(value); has = True
        elif field == b"event":
            typ = value.decode()
    if start < len(raw):
        out.append((raw[start:], "", None))  # an unterminated event: discarded
    return out


def parsed(ps):
    evs = []
    for i, (_, typ, data) in enumerate(ps):
        if data is None:
            continue
        try:
            j = json.loads(data)
        except ValueError:
            j = data.decode("utf-8", "replace").strip()
        evs.append((i, typ, j))
    return evs


def nonempty(s):
    return isinstance(s, str) and s != ""


def read_chat(evs, req):
    x = {"content": 0, "first": None, "usage": None, "error": False, "done": False,
         "choices": set(), "finished": set()}
    for i, typ, j in evs:
        if j == "[DONE]":
            x["done"] = True
            continue
        if not isinstance(j, dict):
            continue
        # The usage of a chunk counts even beside an error: OpenRouter ends a stream cut by an
        # upstream error with one chunk holding both. Groq sends its usage in x_groq.usage.
        for u in ((j.get("x_groq") or {}).get("usage"), j.get("usage")):
            if isinstance(u, dict) and any(isinstance(u.get(k), int) and u.get(k) > 0 for k in ("prompt_tokens", "completion_tokens", "total_tokens")):
                x["usage"] = u
        if typ == "error" or (j.get("error") not in (None,)) or j.get("object") == "error":
            x["error"] = True
            continue
        out = False
        for c in j.get("choices") or []:
            if not isinstance(c, dict):
                continue
            idx = c.get("index", 0)
            x["choices"].add(idx)
            if nonempty(c.get("finish_reason")):
                x["finished"].add(idx)
            if nonempty(c.get("text")):
                out = True
            m = c.get("delta") or c.get("message") or {}
            if not isinstance(m, dict):
                continue
            ct = m.get("content")
            if nonempty(ct):
                out = True
            if isinstance(ct, list):
                for p in ct:
                    if isinstance(p, dict) and (nonempty(p.get("text")) or nonempty(p.get("thinking")) or any(isinstance(t, dict) and nonempty(t.get("text")) for t in (p.get("thinking") if isinstance(p.get("thinking"), list) else []))):
                        out = True
            if nonempty(m.get("refusal")) or nonempty(m.get("reasoning_content")) or nonempty(m.get("reasoning")):
                out = True
            for tc in m.get("tool_calls") or []:
                f = (tc or {}).get("function") or {}
                if nonempty(f.get("name")) or nonempty(f.get("arguments")):
                    out = True
            f = m.get("function_call") or {}
            if isinstance(f, dict) and (nonempty(f.get("name")) or nonempty(f.get("arguments"))):
                out = True
            for d in m.get("reasoning_details") or []:
                if isinstance(d, dict) and (nonempty(d.get("text")) or nonempty(d.get("summary"))):
                    out = True
        if out:
            x["content"] += 1
            if x["first"] is None:
                x["first"] = i
    asked = bool(((req or {}).get("stream_options") or {}).get("include_usage"))
    finished = bool(x["choices"]) and x["finished"] >= x["choices"]
    complete = x["done"] or (finished and (x["usage"] is not None or not asked))
    u = x["usage"] or {}
    out = u.get("completion_tokens")
    p, r, t = u.get("prompt_tokens"), (u.get("completion_tokens_details") or {}).get("reasoning_tokens"), u.get("total_tokens")
    if isinstance(out, int) and isinstance(p, int) and isinstance(r, int) and r > 0 and t == p + out + r:
        out += r  # xAI counts reasoning apart from completion_tokens: the total says so
    return {
        "outcome": "stream_error" if x["error"] else ("complete" if complete else "truncated"),
        "content_events": x["content"], "first_content_piece": x["first"],
        "input_tokens": u.get("prompt_tokens"), "output_tokens": out,
        "reasoning_tokens": ((u.get("completion_tokens_details") or {}).get("reasoning_tokens")),
        "ends_with_done": x["done"],
    }


def read_responses(evs):
    x = {"content": 0, "first": None, "usage": None, "error": False, "done": False}
    for i, typ, j in evs:
        if not isinstance(j, dict):
            continue
        t = j.get("type") or typ
        out = False
        if typ == "error" or t in ("error", "response.failed"):
            x["error"] = True
        elif t in ("response.completed", "response.incomplete"):
            x["done"] = True
        if t in ("response.created", "response.in_progress", "response.completed", "response.incomplete", "response.failed"):
            r = j.get("response") or {}
            if isinstance(r.get("usage"), dict):
                x["usage"] = r["usage"]
        elif t.endswith(".delta") and nonempty(j.get("delta")):
            out = True
        elif t == "response.output_item.added":
            it = j.get("item") or {}
            if it.get("type") in ("function_call", "custom_tool_call") and nonempty(it.get("name")):
                out = True
        if out:
            x["content"] += 1
            if x["first"] is None:
                x["first"] = i
    u = x["usage"] or {}
    return {
        "outcome": "stream_error" if x["error"] else ("complete" if x["done"] else "truncated"),
        "content_events": x["content"], "first_content_piece": x["first"],
        "input_tokens": u.get("input_tokens"), "output_tokens": u.get("output_tokens"),
        "reasoning_tokens": (u.get("output_tokens_details") or {}).get("reasoning_tokens"),
    }


def read_anthropic(evs):
    x = {"content": 0, "first": None, "error": False, "done": False}
    inp = {"input_tokens": None, "cache_read_input_tokens": None, "cache_creation_input_tokens": None}
    out_tokens, thinking = None, None
    for i, typ, j in evs:
        if not isinstance(j, dict):
            continue
        t = j.get("type") or typ
        out = False
        if t == "error" or typ == "error":
            x["error"] = True
        elif t == "message_stop":
            x["done"] = True
        elif t in ("message_start", "message_delta"):
            u = (j.get("message") or {}).get("usage") if t == "message_start" else j.get("usage")
            if isinstance(u, dict):
                its = [it for it in (u.get("iterations") or []) if isinstance(it, dict)]
                if its:
                    # One entry per sampling pass (compaction, advisor, message): llmtap's
                    # contract (docs/metrics.md) counts every pass, so each count is the sum.
                    u = dict(u)
                    for k in list(inp) + ["output_tokens"]:
                        vals = [it[k] for it in its if isinstance(it.get(k), int)]
                        u[k] = sum(vals) if vals else None
                for k in inp:
                    if isinstance(u.get(k), int):
                        inp[k] = u[k]
                if t == "message_delta" and isinstance(u.get("output_tokens"), int):
                    out_tokens = u["output_tokens"]
                th = (u.get("output_tokens_details") or {}).get("thinking_tokens")
                if isinstance(th, int):
                    thinking = th
        elif t == "content_block_start":
            b = j.get("content_block") or {}
            bt = b.get("type")
            if bt == "text" and nonempty(b.get("text")):
                out = True
            elif bt == "thinking" and nonempty(b.get("thinking")):
                out = True
            elif bt == "redacted_thinking":
                out = True
            elif bt in ("tool_use", "server_tool_use", "mcp_tool_use") and (nonempty(b.get("name")) or b.get("input") not in (None, {}, "")):
                out = True
        elif t == "content_block_delta":
            d = j.get("delta") or {}
            key = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "partial_json", "compaction_delta": "content"}.get(d.get("type"))
            if key and nonempty(d.get(key)):
                out = True
        if out:
            x["content"] += 1
            if x["first"] is None:
                x["first"] = i
    total_in = None
    if inp["input_tokens"] is not None:
        total_in = inp["input_tokens"] + (inp["cache_read_input_tokens"] or 0) + (inp["cache_creation_input_tokens"] or 0)
    return {
        "outcome": "stream_error" if x["error"] else ("complete" if x["done"] else "truncated"),
        "content_events": x["content"], "first_content_piece": x["first"],
        "input_tokens": total_in, "output_tokens": out_tokens, "reasoning_tokens": thinking,
    }


def read_ollama(evs):
    x = {"content": 0, "first": None, "error": False, "done": False, "in": None, "out": None}
    for i, typ, j in evs:
        if not isinstance(j, dict):
            continue
        if j.get("error"):
            x["error"] = True
            continue
        m = j.get("message") or {}
        if nonempty(m.get("content")) or nonempty(m.get("thinking")) or nonempty(j.get("response")) or nonempty(j.get("thinking")) or m.get("tool_calls"):
            x["content"] += 1
            if x["first"] is None:
                x["first"] = i
        if j.get("done") is True:
            x["done"] = True
            x["in"], x["out"] = j.get("prompt_eval_count"), j.get("eval_count")
    return {"outcome": "stream_error" if x["error"] else ("complete" if x["done"] else "truncated"),
            "content_events": x["content"], "first_content_piece": x["first"],
            "input_tokens": x["in"], "output_tokens": x["out"], "reasoning_tokens": None}


def read_tgi(evs):
    x = {"content": 0, "first": None, "error": False, "done": False, "out": None, "in": None}
    for i, typ, j in evs:
        if not isinstance(j, dict):
            continue
        if j.get("error"):
            x["error"] = True
            continue
        tok = j.get("token") or {}
        if nonempty(tok.get("text")) and not tok.get("special"):
            x["content"] += 1
            if x["first"] is None:
                x["first"] = i
        if j.get("generated_text") is not None:
            x["done"] = True
            d = j.get("details") or {}
            x["out"], x["in"] = d.get("generated_tokens"), d.get("input_length")
    return {"outcome": "stream_error" if x["error"] else ("complete" if x["done"] else "truncated"),
            "content_events": x["content"], "first_content_piece": x["first"],
            "input_tokens": x["in"], "output_tokens": x["out"], "reasoning_tokens": None}


def main():
    entries, seen, per = [], set(), {}
    for fn in sys.argv[1:]:
        for line in open(fn):
            entries.append(json.loads(line))
    keep, drop = [], []
    for e in entries:
        path = os.path.join(HERE, e["file"])
        raw = open(path, "rb").read()
        h = hashlib.sha256(raw).hexdigest()
        ps = pieces(raw, e["framing"])
        evs = parsed(ps)
        api, prov = api_of(e, evs), provider(e)
        k = (prov, api)
        if api is None or prov is None or e["file"] in EXCLUDE or len(raw) > MAX_BYTES or h in seen or per.get(k, 0) >= PER_KIND:
            drop.append(path)
            continue
        seen.add(h)
        per[k] = per.get(k, 0) + 1
        req = e.get("request")
        if api in ("openai.chat", "openai.completions"):
            x = read_chat(evs, req)
        elif api == "openai.responses":
            x = read_responses(evs)
        elif api == "anthropic.messages":
            x = read_anthropic(evs)
        elif api.startswith("ollama."):
            x = read_ollama(evs)
        else:
            x = read_tgi(evs)
        e.update({"provider": prov, "api": api, "path": PATHS[api], "sha256": h, "bytes": len(raw),
                  "pieces": len(ps), "expect": x})
        keep.append(e)
    for p in drop:
        os.remove(p)
    keep.sort(key=lambda e: (e["provider"], e["api"], e["file"]))
    json.dump({"streams": keep}, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
