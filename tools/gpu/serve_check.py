#!/usr/bin/env python3
"""Sends the same requests to two running `ds4 serve` instances (the CPU backend first, then the CUDA backend) and
prints a table of the answers: chat and completions, plain and streamed (SSE), greedy, a two-turn conversation
(the second turn reuses the first one's session), a malformed body, and a seeded request twice on the CUDA
backend. Exit status 0 when both backends give the same text and status for every request of the table; how many
of 12 seeded requests agree across the backends is printed, not required. Used by tools/gpu/serve_check.sh.
usage: serve_check.py CPU_URL CUDA_URL
"""
import json
import sys
import time
import urllib.error
import urllib.request


def wait_ready(url, seconds=300):
    end = time.time() + seconds
    while time.time() < end:
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as r:
                if r.status == 200:
                    return True
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(1)
    return False


def post(url, path, body):
    """(status, text): the completion's text (streams: the deltas joined), or the error body."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            raw = r.read().decode()
            status = r.status
    except urllib.error.HTTPError as e:
        err = json.loads(e.read().decode()).get("error", {})
        return e.code, f"{err.get('type', '?')}: {err.get('message', '')}"
    if isinstance(body, dict) and body.get("stream"):
        parts, done = [], False
        for line in raw.splitlines():
            if not line.startswith("data: "):
                continue
            payload = line[len("data: "):]
            if payload == "[DONE]":
                done = True
                continue
            choice = json.loads(payload)["choices"][0]
            parts.append(choice.get("delta", {}).get("content") or choice.get("text") or "")
        return status, "".join(parts) + ("" if done else " <no [DONE]>")
    choice = json.loads(raw)["choices"][0]
    return status, choice["message"]["content"] if "message" in choice else choice["text"]


def main():
    cpu, cuda = sys.argv[1], sys.argv[2]
    for u in (cpu, cuda):
        if not wait_ready(u):
            print(f"{u}: not ready")
            return 1
    with urllib.request.urlopen(cuda + "/v1/models", timeout=30) as r:
        model = json.loads(r.read().decode())["data"][0]["id"]
    chat = "/v1/chat/completions"
    hello = [{"role": "user", "content": "Write one sentence about the sea."}]
    cases = [
        ("chat, greedy", chat, {"messages": hello, "max_tokens": 32, "temperature": 0}),
        ("chat, greedy, streamed", chat, {"messages": hello, "max_tokens": 32, "temperature": 0, "stream": True}),
        ("completion, greedy", "/v1/completions", {"prompt": "The capital of France is", "max_tokens": 24,
                                                   "temperature": 0}),
        ("completion, streamed", "/v1/completions", {"prompt": "Once upon a time", "max_tokens": 24,
                                                     "temperature": 0, "stream": True}),
    ]
    rows, same = [], True
    for name, path, body in cases:
        body["model"] = model
        a, b = post(cpu, path, body), post(cuda, path, body)
        rows.append((name, a, b))
    # Two turns: the second request extends the first conversation with the first answer, so the server can reuse
    # the first turn's session; its answer must not change because of that.
    def second_turn(url):
        greedy = {"model": model, "max_tokens": 24, "temperature": 0}
        _, first = post(url, chat, dict(greedy, messages=hello))
        msgs = hello + [{"role": "assistant", "content": first}, {"role": "user", "content": "And one about rain."}]
        return post(url, chat, dict(greedy, messages=msgs))

    rows.append(("second turn (session reused)", second_turn(cpu), second_turn(cuda)))
    rows.append(("malformed JSON body", post(cpu, chat, b"{not json"), post(cuda, chat, b"{not json")))
    # Seeded sampling: a seed must give the same tokens again on the same backend. Across backends the logits
    # differ in their float rounding (the GPU's prefill GEMMs round activations to bfloat16), so a draw that falls
    # near a boundary of the cumulative probabilities can pick another token there: counted, not required.
    sampled = {"model": model, "messages": hello, "max_tokens": 16, "temperature": 0.8, "top_p": 0.95}
    rows.append(("cuda, seed 1234 twice", post(cuda, chat, dict(sampled, seed=1234)),
                 post(cuda, chat, dict(sampled, seed=1234))))
    seeds = range(1, 13)
    equal = sum(post(cpu, chat, dict(sampled, seed=k)) == post(cuda, chat, dict(sampled, seed=k)) for k in seeds)
    print("| request (A: cpu, B: cuda, unless named) | status A | status B | same text | text B |")
    print("|---|---|---|---|---|")
    for name, a, b in rows:
        # Every well-formed request must succeed; the malformed one must be refused with 400 on both.
        want = 400 if name.startswith("malformed") else 200
        eq = a == b and a[0] == want
        same = same and eq
        print(f"| {name} | {a[0]} | {b[0]} | {'yes' if eq else 'NO'} | {json.dumps(b[1])[:80]} |")
        if not eq:
            print(f"|   text A | | | | {json.dumps(a[1])[:80]} |")
    print(f"\nseeded sampling (temperature 0.8, top_p 0.95, 16 tokens), seeds 1-{len(seeds)}: {equal} of "
          f"{len(seeds)} answers the same on both backends (informational)")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
