#!/usr/bin/env python3
"""serve.py - OpenAI-compatible HTTP front for a GGUF model on the CPU, for sre-agent's tests.

The model runs in-process in xllamacpp (llama.cpp's server core; it opens no port itself);
this is a stdlib HTTP server in front of it, bound to loopback:

  POST /v1/chat/completions   OpenAI chat completions: a JSON answer, or with "stream": true
                              a server-sent-event stream of chat.completion.chunk objects,
                              token by token, ending with `data: [DONE]`
  POST /v1/completions        OpenAI (legacy) text completions of a raw prompt: what the model
                              writes, before any chat-template or tool-call processing
  GET  /v1/models             the one model
  GET  /health                {"status": "ok"} once the model is loaded

What users run is what the tests get: the prompt is rendered with the model's own chat
template (qwen2.5-coder.jinja beside this file, the template embedded in the GGUF), nothing is
added to or removed from the conversation, and tool calls come back however llama.cpp parses
them (often not at all: the agent must read tool calls out of `content` itself). Sampling
parameters (temperature, seed, max_tokens, ...) are the client's; a request without "seed"
uses --seed (default 42), so that the same request gives the same answer.

Requests are answered one at a time (one llama.cpp slot). One JSON line per request goes to
stderr: {"event": "request", "status", "stream", "tools", "prompt_tokens", "completion_tokens",
"seconds", "queued_s", "tool_calls", "finish_reason", ...}. Once the model is loaded and the
port bound, the base URL (http://127.0.0.1:PORT/v1) is written to --url-file (atomically),
so a harness can wait for that file; SIGTERM/SIGINT stop the server and remove the file.

usage: serve.py MODEL.gguf [--port 0] [--threads 2] [--ctx 8192] [--url-file FILE]
                [--seed 42] [--n-predict 768] [--chat-template FILE] [--model-name NAME]
                [--llama-log FILE]   (llama.cpp's own log; default: mixed into stderr)
"""
import argparse
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))


def log(**fields):
    sys.stderr.write(json.dumps(fields, separators=(",", ":")) + "\n")
    sys.stderr.flush()


def split_llama_log(path):
    """llama.cpp writes its own (long) log to file descriptor 2: send that to PATH and keep
    Python's sys.stderr, with the JSON lines, on the original stderr."""
    keep = os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stderr = os.fdopen(keep, "w", buffering=1)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="path of the .gguf file")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    ap.add_argument("--threads", type=int, default=2, help="CPU threads (default 2)")
    ap.add_argument("--ctx", type=int, default=8192, help="context size in tokens (default 8192)")
    ap.add_argument("--url-file", help="write the base URL here once ready")
    ap.add_argument("--seed", type=int, default=42, help="seed for requests that send none (default 42)")
    ap.add_argument("--n-predict", type=int, default=768,
                    help="max new tokens when the request sets no max_tokens (default 768)")
    ap.add_argument("--chat-template", default=os.path.join(HERE, "qwen2.5-coder.jinja"),
                    help="Jinja chat template file (default: the model's own, beside this file)")
    ap.add_argument("--model-name", help="model id to report (default: the file name without .gguf)")
    ap.add_argument("--llama-log", help="append llama.cpp's own log here instead of stderr")
    return ap.parse_args()


def load(args):
    import xllamacpp as xlc

    p = xlc.CommonParams()
    p.model.path = args.model
    p.model_alias = args.model_name
    p.n_ctx = args.ctx
    p.n_parallel = 1
    p.use_jinja = True
    with open(args.chat_template, encoding="utf-8") as f:
        p.chat_template = f.read()
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads
    p.n_predict = args.n_predict
    p.sampling.seed = args.seed
    return xlc.Server(p), xlc.__version__


def is_chunk(obj):
    """A chat.completion(.chunk) result (or a list of them) rather than an error object."""
    if isinstance(obj, list):
        return True
    return isinstance(obj, dict) and ("choices" in obj or str(obj.get("object", "")).startswith("chat.completion"))


def error_body(res):
    """xllamacpp returns llama.cpp's error object {code, message, type}, unwrapped."""
    err = res.get("error", res) if isinstance(res, dict) else {"message": str(res)}
    if not isinstance(err, dict):
        err = {"message": str(err)}
    code = err.get("code") if isinstance(err.get("code"), int) else 500
    err.setdefault("code", code)
    err.setdefault("type", "server_error")
    return code, {"error": err}


class Stats:
    """What goes into the request's log line, gathered from the answer or the stream."""

    def __init__(self):
        self.prompt = self.completion = self.finish = None
        self.tool_calls = {}  # index -> name
        self.timings = {}

    def take(self, obj):
        if isinstance(obj, list):
            for o in obj:
                self.take(o)
            return
        if not isinstance(obj, dict):
            return
        u = obj.get("usage") or {}
        if u:
            self.prompt, self.completion = u.get("prompt_tokens"), u.get("completion_tokens")
        t = obj.get("timings") or {}
        if t:
            self.timings = t
            if self.prompt is None and t.get("prompt_n") is not None:  # a stream without usage
                self.prompt = t["prompt_n"] + (t.get("cache_n") or 0)
            self.completion = self.completion if self.completion is not None else t.get("predicted_n")
        for ch in obj.get("choices") or []:
            if ch.get("finish_reason"):
                self.finish = ch["finish_reason"]
            m = ch.get("message") or ch.get("delta") or {}
            for i, tc in enumerate(m.get("tool_calls") or []):
                name = (tc.get("function") or {}).get("name")
                idx = tc.get("index", i)
                if name or idx not in self.tool_calls:
                    self.tool_calls[idx] = name


def main():
    args = parse_args()
    if not os.path.isfile(args.model):
        sys.exit(f"serve.py: no model file {args.model}")
    if not args.model_name:
        args.model_name = os.path.basename(args.model).removesuffix(".gguf")
    if args.llama_log:
        split_llama_log(args.llama_log)
    t0 = time.time()
    server, xlc_version = load(args)
    load_s = round(time.time() - t0, 2)
    gen_lock = threading.Lock()
    model_id = args.model_name

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "sre-agent-test-llm"

        def log_message(self, fmt, *a):  # the JSON line per request replaces the access log
            pass

        def _json(self, code, obj):
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _route(self):
            return self.path.split("?", 1)[0].rstrip("/")

        def do_GET(self):
            path = self._route()
            if path in ("/health", "/v1/health"):
                return self._json(200, {"status": "ok", "model": model_id})
            if path in ("/v1/models", "/models"):
                return self._json(200, {"object": "list", "data": [
                    {"id": model_id, "object": "model", "created": int(t0), "owned_by": "sre-agent-tests"}]})
            self._json(404, {"error": {"message": f"no route GET {path}", "type": "not_found", "code": 404}})

        def do_POST(self):
            path = self._route()
            try:
                n = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                n = -1
            if n < 0:
                log(event="request", path=path, status=411, error="bad Content-Length")
                return self._json(411, {"error": {"message": "Content-Length required", "code": 411}})
            raw = self.rfile.read(n)
            if path in ("/v1/chat/completions", "/chat/completions"):
                generate = server.handle_chat_completions
            elif path in ("/v1/completions", "/completions"):
                generate = server.handle_completions
            else:
                log(event="request", path=path, status=404, error="no such route")
                return self._json(404, {"error": {"message": f"no route POST {path}", "type": "not_found", "code": 404}})
            try:
                req = json.loads(raw)
                if not isinstance(req, dict):
                    raise ValueError("the body must be a JSON object")
            except ValueError as e:
                log(event="request", path=path, status=400, bytes=len(raw), error=f"bad request body: {e}")
                return self._json(400, {"error": {"message": f"bad request body: {e}", "type": "invalid_request_error", "code": 400}})
            stream = bool(req.get("stream"))
            line = {"event": "request", "path": path, "stream": stream, "bytes": len(raw),
                    "messages": len(req["messages"]) if isinstance(req.get("messages"), list) else None,
                    "tools": len(req["tools"]) if isinstance(req.get("tools"), list) else 0,
                    "temperature": req.get("temperature"), "seed": req.get("seed", args.seed)}
            stats = Stats()
            t_arrive = time.time()
            status = 500
            err = None
            with gen_lock:
                t_start = time.time()
                try:
                    if stream:
                        status, err = self._stream(generate, req, stats)
                    else:
                        res = generate(req)
                        if is_chunk(res):
                            stats.take(res)
                            status = 200
                            self._json(200, res)
                        else:
                            status, body = error_body(res)
                            err = body["error"].get("message")
                            self._json(status, body)
                except (BrokenPipeError, ConnectionResetError):
                    status, err = 499, "client went away"
                except Exception as e:  # a request llama.cpp rejects raises (e.g. bad messages)
                    status, err = 400, f"{type(e).__name__}: {e}"
                    try:
                        self._json(400, {"error": {"message": err, "type": "invalid_request_error", "code": 400}})
                    except OSError:
                        pass
            t = stats.timings
            line.update(status=status, prompt_tokens=stats.prompt, completion_tokens=stats.completion,
                        seconds=round(time.time() - t_start, 2), queued_s=round(t_start - t_arrive, 2),
                        tool_calls=len(stats.tool_calls), tool_call_names=[v for v in stats.tool_calls.values() if v],
                        finish_reason=stats.finish,
                        prompt_tok_s=round(t["prompt_per_second"], 1) if t.get("prompt_per_second") else None,
                        gen_tok_s=round(t["predicted_per_second"], 1) if t.get("predicted_per_second") else None,
                        cached_tokens=t.get("cache_n"), error=err)
            log(**line)

        def _stream(self, generate, req, stats):
            """Token-by-token SSE. An error before the first chunk is a plain JSON error answer
            (as OpenAI and llama-server do); later errors are sent as an `error` event."""
            state = {"started": False, "status": 200, "err": None}

            def chunk(data):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

            def on_result(obj):  # called by llama.cpp for every result; True = stop
                try:
                    if not state["started"]:
                        if not is_chunk(obj):
                            state["status"], body = error_body(obj)
                            state["err"] = body["error"].get("message")
                            self._json(state["status"], body)
                            return True
                        self.send_response(200)
                        self.send_header("Content-Type", "text/event-stream")
                        self.send_header("Cache-Control", "no-cache")
                        self.send_header("Transfer-Encoding", "chunked")
                        self.end_headers()
                        state["started"] = True
                    if is_chunk(obj):
                        stats.take(obj)
                        events = obj if isinstance(obj, list) else [obj]
                    else:
                        state["err"] = error_body(obj)[1]["error"].get("message")
                        events = [error_body(obj)[1]]
                    if events:  # llama.cpp also reports empty lists (a token that added no text)
                        chunk(b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events))
                    return False
                except OSError:
                    state["err"] = "client went away"
                    state["status"] = 499
                    return True


            generate(req, on_result)
            if state["started"]:
                try:
                    chunk(b"data: [DONE]\n\n")
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except OSError:
                    state["status"], state["err"] = 499, "client went away"
            elif state["err"] is None:
                state["status"], state["err"] = 500, "no result"
                self._json(500, {"error": {"message": "no result from the model", "type": "server_error", "code": 500}})
            return state["status"], state["err"]

    httpd = ThreadingHTTPServer((args.host, args.port), Handler)
    httpd.daemon_threads = True
    host, port = httpd.server_address[:2]
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{port}/v1"

    def stop(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        if args.url_file:
            tmp = f"{args.url_file}.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                f.write(url + "\n")
            os.replace(tmp, args.url_file)
        log(event="ready", url=url, model=model_id, path=os.path.abspath(args.model), load_s=load_s,
            threads=args.threads, ctx=args.ctx, seed=args.seed, n_predict=args.n_predict,
            chat_template=os.path.abspath(args.chat_template), xllamacpp=xlc_version, pid=os.getpid())
        httpd.serve_forever()
    except SystemExit:
        pass
    finally:
        if args.url_file:
            try:
                with open(args.url_file) as f:
                    mine = f.read().strip() == url
                if mine:
                    os.remove(args.url_file)
            except OSError:
                pass
        log(event="stopped", url=url)
        sys.stderr.flush()
        # A generation may still be running in llama.cpp's threads: leave without waiting.
        os._exit(0)


if __name__ == "__main__":
    main()
