"""A loopback server that speaks the OpenAI chat-completions protocol with scripted replies.

Standard library only. Usage:

    python loopback_server.py --script SCRIPT.json --log REQUESTS.jsonl

It listens on 127.0.0.1 on a free port and prints "PORT <n>" on stdout once it is ready. Every
request it receives is appended to the log as one JSON line (path, headers, body, time) before
it answers.

The script is a JSON object {"replies": [REPLY, ...]}. For each POST .../chat/completions the
first REPLY that still has uses left and whose "match" (a string, or a list of strings that must
all occur) occurs in the request's last user message is served (no "match": any request). A
REPLY may give:
  "times":   how often it may be served (default 1; 0 or less: without limit)
  "status":  HTTP status (default 200)
  "content": the assistant's text (status 200)
  "body":    a raw body to send instead of a completion (any status)
  "headers": extra headers, e.g. {"Retry-After": "1"}
  "delay_s": seconds to wait before answering (a slow reply)
  "usage":   {"prompt_tokens": n, "completion_tokens": m} (default: a count from the text)
A request whose body says "stream": true gets server-sent events: the content in chunks, a usage
chunk when stream_options.include_usage is set, then "data: [DONE]". A request no REPLY matches
gets HTTP 400 naming the message, so a test fails fast instead of waiting on retries.
"""
import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Script:
    def __init__(self, path):
        with open(path) as f:
            self.replies = json.load(f)["replies"]
        # uses left per reply; -1: without limit (it never counts down to 0)
        self.left = [r.get("times", 1) if r.get("times", 1) > 0 else -1 for r in self.replies]
        self.lock = threading.Lock()

    def pick(self, last_user):
        with self.lock:
            for i, r in enumerate(self.replies):
                match = r.get("match", [])
                match = [match] if isinstance(match, str) else match
                if self.left[i] == 0 or not all(m in last_user for m in match):
                    continue
                self.left[i] -= 1
                return r
        return None


def last_user_message(body):
    for m in reversed(body.get("messages", [])):
        if m.get("role") == "user":
            content = m.get("content", "")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def make_handler(script, log_path, log_lock):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # the body ends when the connection closes

        def log_message(self, *args):
            pass

        def send(self, status, body, content_type="application/json", headers=None):
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            try:
                body = json.loads(raw)
            except ValueError:
                body = {"unparsed": raw.decode(errors="replace")}
            with log_lock, open(log_path, "a") as f:
                f.write(json.dumps({"path": self.path, "headers": dict(self.headers),
                                    "body": body, "time": time.time()}) + "\n")
            if not self.path.endswith("/chat/completions"):
                return self.send(404, json.dumps({"error": {"message": "no such path"}}))
            last = last_user_message(body)
            reply = script.pick(last)
            if reply is None:
                return self.send(400, json.dumps(
                    {"error": {"message": "loopback: no scripted reply for: " + last[:300]}}))
            time.sleep(reply.get("delay_s", 0))
            status = reply.get("status", 200)
            headers = reply.get("headers", {})
            if "body" in reply or status != 200:
                text = reply.get("body", json.dumps({"error": {"message": f"scripted {status}"}}))
                return self.send(status, text, headers=headers)
            content = reply.get("content", "")
            prompt = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
            usage = reply.get("usage", {"prompt_tokens": prompt // 4 + 1,
                                        "completion_tokens": len(content) // 4 + 1})
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
            if body.get("stream"):
                return self.stream(body, content, usage, headers)
            doc = {"id": "cmpl-loopback", "object": "chat.completion", "model": body.get("model"),
                   "choices": [{"index": 0, "finish_reason": "stop",
                                "message": {"role": "assistant", "content": content}}],
                   "usage": usage}
            self.send(200, json.dumps(doc), headers=headers)

        def stream(self, body, content, usage, headers):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()

            def event(doc):
                self.wfile.write(b"data: " + json.dumps(doc).encode() + b"\n\n")
                self.wfile.flush()

            base = {"id": "cmpl-loopback", "object": "chat.completion.chunk",
                    "model": body.get("model")}
            event(dict(base, choices=[{"index": 0, "delta": {"role": "assistant"}}]))
            for i in range(0, len(content), 40):
                event(dict(base, choices=[{"index": 0, "delta": {"content": content[i:i + 40]}}]))
            event(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]))
            if body.get("stream_options", {}).get("include_usage"):
                event(dict(base, choices=[], usage=usage))
            self.wfile.write(b"data: [DONE]\n\n")

    return Handler


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--script", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port),
                                 make_handler(Script(args.script), args.log, threading.Lock()))
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
