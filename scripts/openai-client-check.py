#!/usr/bin/env python3
"""The real-client check: completions and chat completions from `gpt2 serve` with the official `openai` package.

    python3 scripts/openai-client-check.py [--model synthetic] [--binary target/debug/gpt2]

1. creates a virtual environment under target/venv-openai-check and pip-installs `openai` there
   (once; later runs reuse it);
2. builds target/debug/gpt2 if it is missing (the test command's one build, dev profile);
3. starts `gpt2 serve --model synthetic` on a free loopback port and waits for /health;
4. streams one completion with `openai.OpenAI(...).completions.create(stream=True)` and checks
   that several text chunks and the usage chunk arrived, then asks for one whole completion;
5. does the same with `chat.completions.create` (streamed and whole): the same usage fields,
   the assistant role, and the same text both ways (greedy);
6. stops the server with SIGTERM and checks it exits cleanly.

Exits non-zero, with the reason and the end of the server's log, on any failure.
"""
import argparse
import os
import pathlib
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
VENV = ROOT / "target" / "venv-openai-check"
MAX_TOKENS = 8


def fail(message, log_path=None):
    print(f"openai-client-check: FAILED: {message}", file=sys.stderr)
    if log_path and pathlib.Path(log_path).exists():
        tail = pathlib.Path(log_path).read_text(errors="replace").splitlines()[-20:]
        print("--- end of the server's log ---", file=sys.stderr)
        print("\n".join(tail), file=sys.stderr)
    sys.exit(1)


def venv_python():
    python = VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    if not python.exists():
        print(f"creating {VENV} and installing openai from PyPI ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    probe = subprocess.run([str(python), "-c", "import openai"], capture_output=True)
    if probe.returncode != 0:
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "openai"], check=True)
    return python


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_health(url, server, log_path, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            fail(f"the server exited with status {server.returncode} before answering", log_path)
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.25)
    fail(f"no answer from {url}/health within {timeout_s} s", log_path)


def check_with_openai(base_url, model):
    """Runs inside the venv: the official client against the server."""
    import openai

    client = openai.OpenAI(base_url=f"{base_url}/v1", api_key="not-needed")
    models = [m.id for m in client.models.list()]
    assert model in models, f"/v1/models lists {models}, not {model!r}"

    stream = client.completions.create(
        model=model,
        prompt="Benchmarking tells you how; profiling tells you why.",
        max_tokens=MAX_TOKENS,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"ignore_eos": True},
    )
    text_chunks, pieces, usage = 0, [], None
    for chunk in stream:
        if chunk.choices and chunk.choices[0].text:
            text_chunks += 1
            pieces.append(chunk.choices[0].text)
        if chunk.usage is not None:
            usage = chunk.usage
    assert text_chunks >= 2, f"expected several streamed chunks, got {text_chunks}"
    assert usage is not None, "no usage chunk arrived although include_usage was asked for"
    assert usage.completion_tokens == MAX_TOKENS, f"usage says {usage.completion_tokens} tokens, expected {MAX_TOKENS}"

    whole = client.completions.create(model=model, prompt="Hello", max_tokens=4, extra_body={"ignore_eos": True})
    assert whole.choices[0].text, "the whole completion has no text"
    assert whole.usage.completion_tokens == 4, whole.usage

    chat_text, chat_chunks = check_chat(client, model)

    try:
        client.completions.create(model="no-such-model", prompt="Hello", max_tokens=1)
    except openai.BadRequestError as e:
        assert "no-such-model" in str(e), e
    else:
        raise AssertionError("an unknown model was accepted")
    print(f"openai {openai.__version__}: {text_chunks} streamed chunks, usage {usage.completion_tokens} tokens, "
          f"text {''.join(pieces)!r}; chat: {chat_chunks} streamed chunks, text {chat_text!r}")


def check_chat(client, model):
    """`chat.completions.create`, streamed and whole, as default-configured tools call it."""
    messages = [{"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Benchmarking tells you how; what tells you why?"}]
    stream = client.chat.completions.create(
        model=model, messages=messages, max_completion_tokens=MAX_TOKENS, temperature=0, stream=True,
        stream_options={"include_usage": True}, extra_body={"ignore_eos": True},
    )
    roles, pieces, usage, finish = [], [], None, None
    for chunk in stream:
        if chunk.choices:
            delta = chunk.choices[0].delta
            if delta.role:
                roles.append(delta.role)
            if delta.content:
                pieces.append(delta.content)
            finish = chunk.choices[0].finish_reason or finish
        if chunk.usage is not None:
            usage = chunk.usage
    assert roles == ["assistant"], f"the role should come once, first: {roles}"
    assert len(pieces) >= 2, f"expected several streamed chat chunks, got {len(pieces)}"
    assert finish == "length", f"finish_reason {finish!r}, expected 'length'"
    assert usage is not None and usage.completion_tokens == MAX_TOKENS, f"chat usage {usage}"

    whole = client.chat.completions.create(
        model=model, messages=messages, max_tokens=MAX_TOKENS, temperature=0, extra_body={"ignore_eos": True},
    )
    message = whole.choices[0].message
    assert message.role == "assistant", message
    assert message.content == "".join(pieces), f"whole {message.content!r} vs streamed {''.join(pieces)!r}"
    assert whole.usage.completion_tokens == MAX_TOKENS and whole.usage.prompt_tokens == usage.prompt_tokens, whole.usage
    assert whole.usage.total_tokens == whole.usage.prompt_tokens + MAX_TOKENS, whole.usage
    return message.content, len(pieces)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="synthetic", help="--model for gpt2 serve (default: synthetic)")
    parser.add_argument("--binary", default=str(ROOT / "target" / "debug" / "gpt2"))
    parser.add_argument("--startup-timeout", type=float, default=300.0,
                        help="seconds to wait for the server (the first synthetic run writes its checkpoint)")
    parser.add_argument("--inside-venv", metavar="BASE_URL", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.inside_venv:
        try:
            check_with_openai(args.inside_venv, args.model)
        except AssertionError as e:
            print(f"openai-client-check: FAILED: {e}", file=sys.stderr)
            sys.exit(1)
        return

    python = venv_python()
    binary = pathlib.Path(args.binary)
    if not binary.exists():
        print(f"{binary} is missing; building it with cargo ...", file=sys.stderr)
        subprocess.run(["cargo", "build", "-p", "gpt2"], cwd=ROOT, check=True)

    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    log = tempfile.NamedTemporaryFile(prefix="gpt2-serve-", suffix=".log", delete=False)
    server = subprocess.Popen(
        [str(binary), "serve", "--model", args.model, "--device", "cpu", "--port", str(port), "--max-batch-size", "4"],
        stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
    )
    try:
        wait_for_health(base_url, server, log.name, args.startup_timeout)
        check = subprocess.run([str(python), __file__, "--model", args.model, "--inside-venv", base_url])
        if check.returncode != 0:
            fail("the openai client check failed (see above)", log.name)
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
                fail("the server did not stop within 60 s of SIGTERM", log.name)
    if server.returncode != 0:
        fail(f"the server exited with status {server.returncode} after SIGTERM", log.name)
    # The server's log is kept only where a failure above names it.
    log.close()
    os.unlink(log.name)
    print("openai-client-check: OK (completions and chat completions, streamed and whole, with the official client; server stopped cleanly)")


if __name__ == "__main__":
    main()
