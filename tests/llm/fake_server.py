"""A fake OpenAI + Anthropic HTTP API on 127.0.0.1 for driving the real SDK clients in tests.

Serves ``POST /v1/chat/completions`` (OpenAI shape) and ``POST /v1/messages`` (Anthropic shape), and
``GET .../models`` (the model list; kept apart in ``probes``).
Answers are queued with :meth:`FakeLLMServer.push`: a text (200), an HTTP error status, a raw
malformed body, an optional delay and the usage object to report (the default counts, a given
object, or none at all); when the queue is empty every request gets "ok". A wrong
or missing key (Authorization: Bearer or x-api-key) gets 401. Every request is recorded, with the
wall-clock time it arrived (``request_times``, seconds since the epoch: another process's start can be
compared with it).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

API_KEY = "test-key"


@dataclass(frozen=True)
class Answer:
    text: str = "ok"
    status: int = 200
    raw: bytes | None = None  # sent as-is instead of a JSON body
    delay_s: float = 0.0
    finish: str = "stop"  # "stop" or "length"
    headers: tuple[tuple[str, str], ...] = ()
    usage: dict | None | str = "default"  # "default": the shape's counts below; None: no usage field


OPENAI_USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
ANTHROPIC_USAGE = {"input_tokens": 13, "output_tokens": 5}


def _with_usage(body: dict, usage: dict | None | str, default: dict) -> dict:
    if usage is not None:
        body["usage"] = default if usage == "default" else usage
    return body


def _openai_body(answer: Answer, model: str) -> dict:
    return _with_usage({"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": model,
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": answer.text},
                                     "finish_reason": answer.finish}]}, answer.usage, OPENAI_USAGE)


def _anthropic_body(answer: Answer, model: str) -> dict:
    return _with_usage({"id": "msg_1", "type": "message", "role": "assistant", "model": model,
                        "content": [{"type": "text", "text": answer.text}],
                        "stop_reason": "max_tokens" if answer.finish == "length" else "end_turn",
                        "stop_sequence": None}, answer.usage, ANTHROPIC_USAGE)


class _Handler(BaseHTTPRequestHandler):
    server: "FakeLLMServer"

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def _send(self, status: int, body: bytes, headers=()) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        """The model list (what evokernel.llm.reach asks before a campaign): 401 for a wrong key."""
        self.server.probes.append(self.path)
        key = self.headers.get("x-api-key") or self.headers.get("Authorization", "").removeprefix("Bearer ")
        if key != API_KEY:
            return self._send(401, json.dumps({"error": {"message": "bad key"}}).encode())
        self._send(200, json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode())

    def do_POST(self) -> None:
        arrived = time.time()
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        self.server.request_times.append(arrived)
        self.server.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, request))
        key = self.headers.get("x-api-key") or self.headers.get("Authorization", "").removeprefix("Bearer ")
        if key != API_KEY:
            error = {"type": "error", "error": {"type": "authentication_error", "message": "bad key"}}
            return self._send(401, json.dumps(error).encode())
        answer = self.server.next_answer()
        time.sleep(answer.delay_s)
        if answer.raw is not None:
            return self._send(answer.status, answer.raw, answer.headers)
        if answer.status != 200:
            error = {"type": "error", "error": {"type": "api_error", "message": f"status {answer.status}"}}
            return self._send(answer.status, json.dumps(error).encode(), answer.headers)
        shape = _anthropic_body if self.path.endswith("/messages") else _openai_body
        self._send(200, json.dumps(shape(answer, request.get("model", "?"))).encode())


class FakeLLMServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[tuple[str, dict, dict]] = []
        self.request_times: list[float] = []  # time.time() of each request's arrival, in order
        self.probes: list[str] = []  # paths of GET requests (the model list), not generations
        self._answers: deque[Answer] = deque()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def push(self, *answers: Answer) -> None:
        with self._lock:
            self._answers.extend(answers)

    def next_answer(self) -> Answer:
        with self._lock:
            return self._answers.popleft() if self._answers else Answer()

    def __enter__(self) -> "FakeLLMServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
        self.server_close()
