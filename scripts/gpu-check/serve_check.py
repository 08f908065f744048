"""Serving on one device, through the real server: `gpt2 serve` answers each prompt alone, then
all of them sent at once, which continuous batching decodes together. Greedy decoding (temperature
0) must give every request the same completion either way: a batched step that mixed rows, or a
kernel that read a neighbour's cache, would change some text.

    serve_check.py --gpt2 PATH --device cuda --model synthetic --out serve.json

Writes the record to --out and exits 0 when every request matched, 1 when one did not, 2 when
the server could not be run."""
import argparse
import json
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

# Prompts of one to six words, so the batch holds sequences at different positions (short
# enough for the tiny model's 64-token context with its synthetic tokenizer).
WORDS = "profile the decode step before you benchmark".split()
PROMPTS = [" ".join(WORDS[: i + 1]) for i in range(6)]
LISTENING = re.compile(r"listening on (http://\S+)")


class ServeError(Exception):
    pass


def judge(alone, together):
    """Problems (empty when none) comparing each prompt's completion alone and in the batch.
    Each argument is a list of `/v1/completions` answers, one per prompt, in the same order."""
    problems = []
    for i, (a, b) in enumerate(zip(alone, together)):
        (ca,), (cb,) = a["choices"], b["choices"]
        if a["usage"]["completion_tokens"] == 0:
            problems.append(f"prompt {i}: no tokens generated alone")
        if (ca["text"], ca["finish_reason"]) != (cb["text"], cb["finish_reason"]):
            problems.append(f"prompt {i}: batched {cb['text']!r} ({cb['finish_reason']}) but alone {ca['text']!r} ({ca['finish_reason']})")
    if len(alone) != len(together):
        problems.append(f"{len(alone)} answers alone but {len(together)} batched")
    return problems


class Server:
    """`gpt2 serve --port 0` on a model; its address from the line it prints when ready."""

    def __init__(self, gpt2, device, model, log_path, ready_s=240):
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen([gpt2, "serve", "--model", model, "--device", device, "--port", "0",
                                      "--max-batch-size", str(len(PROMPTS))],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        found = []

        def pump():  # copy the server's output to the log, noting its address
            for line in self.proc.stdout:
                self.log.write(line)
                self.log.flush()
                m = LISTENING.search(line)
                if m and not found:
                    found.append(m.group(1))

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.time() + ready_s
        while not found:
            if self.proc.poll() is not None:
                raise ServeError(f"gpt2 serve exited with status {self.proc.returncode} before listening; see {log_path}")
            if time.time() > deadline:
                self.stop()
                raise ServeError(f"gpt2 serve did not listen within {ready_s} s; see {log_path}")
            time.sleep(0.1)
        self.url = found[0]
        try:
            self.model = json.load(urllib.request.urlopen(self.url + "/v1/models", timeout=30))["data"][0]["id"]
        except Exception:  # the caller never gets this server, so stop it here
            self.stop()
            raise

    def complete(self, prompt, max_tokens):
        body = json.dumps({"model": self.model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0}).encode()
        req = urllib.request.Request(self.url + "/v1/completions", body, {"Content-Type": "application/json"})
        try:
            return json.load(urllib.request.urlopen(req, timeout=120))
        except urllib.error.HTTPError as e:  # the server's answer says what it refused
            raise ServeError(f"POST /v1/completions {prompt!r}: HTTP {e.code}: {e.read().decode(errors='replace')}") from e

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def check(gpt2, device, model, max_tokens, log_path):
    server = Server(gpt2, device, model, log_path)
    try:
        start = time.perf_counter()
        alone = [server.complete(p, max_tokens) for p in PROMPTS]
        alone_s = time.perf_counter() - start
        together = [None] * len(PROMPTS)
        errors = []

        def send(i):
            try:
                together[i] = server.complete(PROMPTS[i], max_tokens)
            except Exception as e:  # recorded below: one failed request must not hide the others
                errors.append(f"prompt {i} batched: {e}")

        start = time.perf_counter()
        threads = [threading.Thread(target=send, args=(i,)) for i in range(len(PROMPTS))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        together_s = time.perf_counter() - start
    finally:
        server.stop()
    problems = errors or judge(alone, together)
    return {"device": device, "model": model, "prompts": len(PROMPTS), "max_tokens": max_tokens,
            "alone_s": round(alone_s, 3), "together_s": round(together_s, 3),
            "completion_tokens": [a["usage"]["completion_tokens"] for a in alone],
            "problems": problems, "pass": not problems}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpt2", required=True, help="the gpt2 binary")
    ap.add_argument("--device", required=True, help="cpu or cuda")
    ap.add_argument("--model", required=True, help="what gpt2 serve --model takes (synthetic, synthetic-tiny, a folder)")
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--out", required=True, help="the record (JSON); the server's log goes beside it as .log")
    args = ap.parse_args(argv)
    try:
        record = check(args.gpt2, args.device, args.model, args.max_tokens, args.out + ".log")
    except (ServeError, OSError) as e:
        print(f"serve_check: error: {e}", file=sys.stderr)
        return 2
    with open(args.out, "w") as f:
        json.dump(record, f, indent=2)
    print(f"{record['prompts']} prompts on {args.device}: alone {record['alone_s']} s, together {record['together_s']} s; "
          + ("every batched completion is its alone completion" if record["pass"] else "; ".join(record["problems"])))
    return 0 if record["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
