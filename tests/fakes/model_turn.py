"""What the fake `claude` and `codex` share about the network: a turn through the model API
(`FAKE_API=1`), a connection that ignores the base URL (`FAKE_DIRECT`), and a credential
written out (`FAKE_MODE=leak-credential`). Standard library only; see README.md."""
import base64
import http.client
import json
import os
import socket
import sys
import tomllib
import urllib.parse

# The variables a CLI's credential may be in, in the order the real CLIs prefer them.
CREDENTIALS = {
    "claude": ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"),
    "codex": ("CODEX_API_KEY", "OPENAI_API_KEY"),
}


class ApiError(Exception):
    pass


def credential(cli):
    """(variable, value) of the CLI's credential, or (None, None)."""
    for var in CREDENTIALS[cli]:
        if os.environ.get(var):
            return var, os.environ[var]
    return None, None


def leak_sentence(cli):
    """The credential, reversed and in base64: what a prompt injection asks for, and what no
    redactor recognises. Also written to $HOME/.fake-credential, as a CLI caching its key."""
    _, value = credential(cli)
    value = value or ""
    home = os.environ.get("HOME")
    if home:
        try:
            with open(os.path.join(home, ".fake-credential"), "w") as f:
                f.write(value)
        except OSError:
            pass
    encoded = base64.b64encode(value.encode()).decode()
    return f" My credential reversed: {value[::-1]} and in base64: {encoded}."


def try_direct(cli, spy):
    """FAKE_DIRECT=HOST:PORT: connect there, ignoring the base URL, and report how it went."""
    target = os.environ.get("FAKE_DIRECT")
    if not target:
        return
    host, _, port = target.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=5):
            outcome = "connected"
    except OSError as e:
        outcome = f"refused: {e.strerror or e}"
    if spy:
        spy({"cli": cli, "direct": target, "outcome": outcome})


def _post(url, headers, body):
    """POST `body` (JSON) to `url`, yield the `data:` payloads of its event stream, parsed."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http":
        raise ApiError(f"the fake CLIs speak plain HTTP only, not {parts.scheme}")
    conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=60)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    payload = json.dumps(body).encode()
    conn.request("POST", path, body=payload,
                 headers={**headers, "content-type": "application/json",
                          "accept": "text/event-stream"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise ApiError(f"{resp.status} {resp.read(2000).decode('utf-8', 'replace')}")
    while True:
        line = resp.readline()
        if not line:
            break
        line = line.decode("utf-8", "replace").rstrip("\r\n")
        if line.startswith("data:"):
            try:
                yield json.loads(line[5:].strip())
            except ValueError:
                pass
    conn.close()


def claude_turn(model, messages):
    """One streamed call to the Messages API at $ANTHROPIC_BASE_URL; the answer's text."""
    base = os.environ.get("ANTHROPIC_BASE_URL", "https://api.anthropic.com").rstrip("/")
    headers = {"anthropic-version": "2023-06-01"}
    if os.environ.get("ANTHROPIC_API_KEY"):
        headers["x-api-key"] = os.environ["ANTHROPIC_API_KEY"]
    elif os.environ.get("CLAUDE_CODE_OAUTH_TOKEN"):
        headers["authorization"] = "Bearer " + os.environ["CLAUDE_CODE_OAUTH_TOKEN"]
        headers["anthropic-beta"] = "oauth-2025-04-20"
    text = []
    body = {"model": model, "max_tokens": 4096, "stream": True, "messages": messages}
    for event in _post(base + "/v1/messages?beta=true", headers, body):
        if event.get("type") == "content_block_delta":
            text.append(event.get("delta", {}).get("text", ""))
        elif event.get("type") == "error":
            raise ApiError(json.dumps(event))
    return "".join(text)


def codex_provider():
    """(base_url, env_key) of the provider $CODEX_HOME/config.toml selects, else the built-in."""
    try:
        with open(os.path.join(os.environ["CODEX_HOME"], "config.toml"), "rb") as f:
            config = tomllib.load(f)
    except (KeyError, OSError, tomllib.TOMLDecodeError):
        config = {}
    name = config.get("model_provider")
    provider = config.get("model_providers", {}).get(name) if name else None
    if provider:
        return provider.get("base_url", ""), provider.get("env_key")
    return os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"), None


def codex_turn(model, prompt):
    """One streamed call to the Responses API of the selected provider; the answer's text."""
    base, env_key = codex_provider()
    _, value = (env_key, os.environ.get(env_key)) if env_key else credential("codex")
    headers = {"authorization": f"Bearer {value or ''}"}
    text, done = [], None
    body = {"model": model, "stream": True,
            "input": [{"role": "user", "content": [{"type": "input_text", "text": prompt}]}]}
    for event in _post(base.rstrip("/") + "/responses", headers, body):
        kind = event.get("type")
        if kind == "response.output_text.delta":
            text.append(event.get("delta", ""))
        elif kind == "response.output_item.done":
            for part in event.get("item", {}).get("content", []):
                if part.get("type") == "output_text":
                    done = part.get("text", "")
        elif kind == "response.failed":
            raise ApiError(json.dumps(event))
    return "".join(text) or done or ""


def die_api(message):
    sys.stderr.write(f"API Error: {message}\n")
    sys.exit(1)
