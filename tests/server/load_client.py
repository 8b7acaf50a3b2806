#!/usr/bin/env python3
"""Bounded load on a llama-server on loopback: every prompt alone, then all of them at once from several threads.

Prints one JSON object: the greedy completions of each run, the failures, and the server's RSS before and after.
Only 127.0.0.1 is ever contacted; the number of requests and each request's time are bounded.
"""
import json
import sys
import threading
import time
import urllib.request


def complete(port, prompt, n_predict, timeout=300):
    # the generated models have random weights: a grammar keeps their output to plain text, which the server's
    # output parser accepts (random byte-level tokens can form invalid UTF-8 it rejects); greedy sampling stays greedy
    body = json.dumps({"prompt": prompt, "n_predict": n_predict, "temperature": 0, "top_k": 1, "seed": 1,
                       "cache_prompt": False, "grammar": "root ::= [a-zA-Z .,]+"}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/completion", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())["content"]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def main():
    port, pid, prompts_file, n_predict, rounds, threads = sys.argv[1:7]
    port, pid, n_predict, rounds, threads = int(port), int(pid), int(n_predict), int(rounds), int(threads)
    prompts = [p for p in open(prompts_file).read().split("\n\n") if p.strip()]
    out = {"alone": [], "loaded": [], "errors": [], "rss_kib": []}

    for p in prompts:                      # each prompt alone: the reference of this server
        out["alone"].append(complete(port, p, n_predict))
    out["rss_kib"].append(rss_kib(pid))

    results = [[None] * len(prompts) for _ in range(rounds)]
    jobs = [(r, i) for r in range(rounds) for i in range(len(prompts))]
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                if not jobs:
                    return
                r, i = jobs.pop(0)
            try:
                results[r][i] = complete(port, prompts[i], n_predict)
            except Exception as e:  # noqa: BLE001 - every failure is reported, none is fatal to the load
                with lock:
                    out["errors"].append(f"round {r} prompt {i}: {e}")

    t0 = time.time()
    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    out["seconds"] = time.time() - t0
    out["loaded"] = results
    out["rss_kib"].append(rss_kib(pid))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
