"""The llama-server measurement: a fresh server per configuration, one warm-up request, then measured requests with
the same long prompt, reading prompt tokens/s from the server's own timings.

Each request sends the prompt as token ids (so every configuration processes exactly the same tokens) with
cache_prompt off (so the server processes the whole prompt every time instead of reusing its cache).
"""

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request


class ServerError(RuntimeError):
    pass


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def command(llama_bin, model, threads, ctx_size, port, extra=()):
    """The spec's server: layers on the CPU, one slot holding the whole context, f16 KV cache (the default)."""
    return [os.path.join(llama_bin, "llama-server"), "-m", model, "-ngl", "0", "-t", str(threads),
            "-c", str(ctx_size), "-np", "1", "--host", "127.0.0.1", "--port", str(port), "--no-webui", *extra]


def http_json(url, body=None, timeout=600.0):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"},
                                 method="GET" if body is None else "POST")
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read().decode("utf-8", errors="replace"))


def parse_timings(resp):
    """(prompt tokens processed, prompt tokens/s) from a /completion response."""
    if not isinstance(resp, dict) or not isinstance(resp.get("timings"), dict):
        raise ServerError("the server's response has no 'timings'")
    t = resp["timings"]
    try:
        n = int(t["prompt_n"])
        tps = float(t["prompt_per_second"])
    except (KeyError, TypeError, ValueError):
        raise ServerError(f"the server's timings lack prompt_n / prompt_per_second: {t}") from None
    if n <= 0 or not tps > 0:
        raise ServerError(f"the server processed no prompt tokens (prompt_n={n})")
    return n, tps


def fit_tokens(tokens, n):
    """The first n of `tokens`, repeating them when the text is shorter than n tokens."""
    if not tokens:
        raise ServerError("the prompt text tokenizes to nothing")
    out = []
    while len(out) < n:
        out.extend(tokens[: n - len(out)])
    return out


class Server:
    """One llama-server process, its output going to a log file."""

    def __init__(self, cmd, env, log_path, port):
        self.cmd, self.env, self.log_path, self.port = cmd, env, log_path, port
        self.url = f"http://127.0.0.1:{port}"
        self.proc = None
        self.log = None

    def start(self, timeout=600.0):
        self.log = open(self.log_path, "w", encoding="utf-8")
        self.proc = subprocess.Popen(self.cmd, env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerError(f"llama-server exited with status {self.proc.returncode} while loading; "
                                  f"see {self.log_path}")
            try:
                if http_json(self.url + "/health", timeout=5).get("status") == "ok":
                    return
            except (urllib.error.URLError, OSError, ValueError):
                pass   # still loading (503) or not listening yet
            time.sleep(0.25)
        raise ServerError(f"llama-server did not become ready within {timeout:.0f} s; see {self.log_path}")

    def tokenize(self, text):
        resp = http_json(self.url + "/tokenize", {"content": text, "add_special": False}, timeout=120)
        tokens = resp.get("tokens") if isinstance(resp, dict) else None
        if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
            raise ServerError("the server's /tokenize gave no token list")
        return tokens

    def complete(self, tokens, timeout=1800.0):
        body = {"prompt": tokens, "n_predict": 1, "cache_prompt": False, "temperature": 0.0}
        try:
            return parse_timings(http_json(self.url + "/completion", body, timeout=timeout))
        except urllib.error.HTTPError as e:
            raise ServerError(f"the server answered {e.code} to /completion; see {self.log_path}") from None
        except (urllib.error.URLError, OSError) as e:
            raise ServerError(f"no answer from the server ({e}); see {self.log_path}") from None

    def stop(self):
        """SIGTERM (a clean shutdown, so the plugin writes its report), then SIGKILL if it hangs."""
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            except ProcessLookupError:
                pass
        if self.log:
            self.log.close()
            self.log = None

    def log_text(self):
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""
