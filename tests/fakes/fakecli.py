"""Shared logic of the fake `claude`, `codex` and `agy` programs (see README.md here).

Each fake checks its argv the way the real program does (so a preset bug shows
up), reads its prompt the way the real program does, and prints the real
program's output shapes (described in the shared specification, spec/reference/reviewer-clis.md).
What it answers is steered by a JSON scenario file named in SPAR_FAKE_SCENARIO.
Standard library only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid

VERSIONS = {"claude": "2.1.197 (Claude Code)", "codex": "codex-cli 0.171.0", "agy": "1.2.11"}  # as captured
DEFAULT_MODELS = {"claude": "claude-sonnet-4-5-20250929", "codex": "gpt-5-codex", "agy": "gemini-3-pro"}
CLAUDE_ALIASES = {"opus": "claude-opus-4-6", "sonnet": "claude-sonnet-4-5-20250929",
                  "haiku": "claude-haiku-4-5-20251001"}
DEFAULT_RESULT = {
    "reviewed_head": "0000000",
    "verdict": "no_blocking_findings",
    "angles_checked": [],
    "angles_unchecked": [],
    "findings": [],
    "limits": "",
}


def _parent_of(pid: int) -> int | None:
    """The parent of `pid` (the fake's keeper: its parent is the guard that started it)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


class Exit(Exception):
    def __init__(self, code: int):
        self.code = code


class Fake:
    def __init__(self, prog: str):
        self.prog = prog
        self.argv = sys.argv[1:]
        self.name = os.environ.get("FAKE_NAME") or os.path.basename(sys.argv[0])
        self.start = time.time()
        self.stdin_data: bytes | None = None
        self.prompt_text: str | None = None
        self.packet_file_text: str | None = None  # agy: the packet file its prompt names, as read
        self.model_arg = ""
        self.cwd = os.getcwd()
        self.sc: dict = {}

    # ------------------------------------------------------------ scenario

    def load_scenario(self) -> dict:
        path = os.environ.get("SPAR_FAKE_SCENARIO")
        if not path:
            return {}
        if path.lstrip().startswith("{"):  # the scenario itself (a sandboxed fake sees no test file)
            data = json.loads(path)
        else:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        for key in (os.environ.get("FAKE_NAME"), os.path.basename(sys.argv[0]), self.prog):
            if key and isinstance(data.get(key), dict):
                return data[key]
        return data

    def apply_model(self, prompt: str | None = None, *, version: bool = False) -> None:
        first, marker = self.sc.get("first_call"), self.sc.get("first_call_marker")
        if isinstance(first, dict) and marker and not version and not os.path.exists(marker):
            open(marker, "w").close()  # the first call only: a failure a retry does not meet
            self.sc = {**self.sc, **first}
        overrides = self.sc.get("by_model", {}).get(self.model_arg)
        if isinstance(overrides, dict):
            self.sc = {**self.sc, **overrides}
        for needle, fields in self.sc.get("by_prompt", {}).items():
            if prompt is not None and needle in prompt and isinstance(fields, dict):
                self.sc = {**self.sc, **fields}
                break

    # ------------------------------------------------------------ output

    def out(self, event) -> None:
        data = event if isinstance(event, bytes) else (json.dumps(event) + "\n").encode("utf-8")
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()

    def err(self, text: str) -> None:
        sys.stderr.write(text if text.endswith("\n") else text + "\n")
        sys.stderr.flush()

    def fail(self, message: str, code: int) -> None:
        self.err(message)
        raise Exit(code)

    def record(self, code: int) -> None:
        path = self.sc.get("record")
        if not path:
            return
        line = {
            "prog": self.prog, "name": self.name, "argv": self.argv, "cwd": self.cwd,
            "start": self.start, "end": time.time(), "pid": os.getpid(), "exit_code": code,
            "keeper_parent": _parent_of(os.getppid()),
            "model": self.model_arg,
            "stdin_sha256": hashlib.sha256(self.stdin_data).hexdigest() if self.stdin_data is not None else None,
            "prompt_sha256": (hashlib.sha256(self.prompt_text.encode("utf-8")).hexdigest()
                              if self.prompt_text is not None else None),
            "packet_file_sha256": (hashlib.sha256(self.packet_file_text.encode("utf-8")).hexdigest()
                                   if self.packet_file_text is not None else None),
        }
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")

    def read_stdin(self) -> str:
        self.stdin_data = sys.stdin.buffer.read()  # to EOF, like the real programs
        return self.stdin_data.decode("utf-8", errors="replace")

    # ------------------------------------------------------------ common behaviour

    def prelude(self) -> None:
        if self.sc.get("pid_file"):
            with open(self.sc["pid_file"], "w", encoding="utf-8") as f:
                f.write(str(os.getpid()))
        if self.sc.get("ignore_sigterm"):
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if self.sc.get("stderr"):
            self.err(self.sc["stderr"])
        if self.sc.get("run"):  # a command the model had the CLI run: its output goes to stderr
            sys.stderr.flush()
            subprocess.run(self.sc["run"], stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno(), check=False)
        if self.sc.get("spawn_child"):
            # a grandchild that outlives us unless the whole process group is killed;
            # it inherits stdout, so it also keeps the pipe open
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            with open(self.sc["spawn_child"], "w", encoding="utf-8") as f:
                f.write(str(child.pid))
        if self.sc.get("invalid_utf8"):
            self.out(b"\xff\xfe not UTF-8 at all \xc3\x28\n")
            self.out(b'{"type":"noise","text":"\xff\xfe\xfd"}\n')
            sys.stderr.buffer.write(b"warning: \xff\xfe bytes\n")
            sys.stderr.buffer.flush()

    def filler(self, make) -> None:
        count = int(self.sc.get("lines", 0))
        size = int(self.sc.get("line_size", 80))
        for i in range(count):
            self.out(make(i, "x" * size))

    def wait(self) -> None:
        meet = self.sc.get("meet")
        if meet:  # a barrier: answer only once `count` fakes have arrived in `dir` (60 s at most)
            open(os.path.join(meet["dir"], str(os.getpid())), "w").close()
            deadline = time.monotonic() + 60
            while len(os.listdir(meet["dir"])) < meet["count"] and time.monotonic() < deadline:
                time.sleep(0.005)
        delay = float(self.sc.get("delay", 0))
        if delay:
            time.sleep(delay)

    def answer_text(self) -> str:
        if "raw_result" in self.sc:
            return self.sc["raw_result"]
        return json.dumps(self.sc.get("result", DEFAULT_RESULT))

    def answer_object(self):
        if "raw_result" in self.sc:
            return None
        return self.sc.get("result", DEFAULT_RESULT)

    def refusal_kind(self) -> str:
        if self.sc.get("refusal_kind"):
            return self.sc["refusal_kind"]
        text = self.sc["refusal"].lower()
        auth_words = ("login", "log in", "auth", "401", "api key", "oauth")
        return "auth" if any(w in text for w in auth_words) else "quota"

    def epilogue(self) -> None:
        if self.sc.get("close_stdout_and_hang"):
            sys.stdout.flush()
            os.close(1)
            time.sleep(600)
        if self.sc.get("never_close_stdout"):
            time.sleep(600)

    def exit_code(self, default: int) -> int:
        return int(self.sc.get("exit_code", default))

    def version(self) -> int:
        if self.sc.get("version_delay"):
            time.sleep(float(self.sc["version_delay"]))
        if self.sc.get("fail_version"):
            self.err(f"{self.prog}: {self.sc['fail_version']}"
                     if isinstance(self.sc["fail_version"], str) else f"{self.prog}: broken installation")
            return 1
        print(VERSIONS[self.prog], flush=True)
        return 0


def take_value(args: list[str], i: int, flag: str, fake: Fake, usage_code: int) -> tuple[str, int]:
    """Value of `--flag value` or `--flag=value`; returns (value, next index)."""
    arg = args[i]
    if "=" in arg and arg.startswith("--"):
        return arg.split("=", 1)[1], i + 1
    if i + 1 >= len(args):
        fake.fail(f"error: option '{flag}' argument missing", usage_code)
    return args[i + 1], i + 2


# ================================================================ claude

CLAUDE_TOOLS = {"Read", "Grep", "Glob", "Bash", "Edit", "Write", "MultiEdit", "NotebookEdit", "Task", "Agent",
                "WebFetch", "WebSearch", "TodoWrite", "BashOutput", "KillShell", "LS"}
CLAUDE_VALUE_FLAGS = {"--output-format", "--json-schema", "--tools", "--permission-mode", "--model", "--effort",
                      "--input-format", "--allowedTools", "--allowed-tools", "--disallowedTools",
                      "--disallowed-tools", "--fallback-model", "--append-system-prompt", "--max-turns",
                      "--session-id", "--max-budget-usd"}
CLAUDE_BOOL_FLAGS = {"-p", "--print", "--verbose", "--debug", "--include-partial-messages",
                     "--no-session-persistence"}


# the result event's usage (2.1.197 shape); input 1200 in all, 1000 of it read from the cache
CLAUDE_USAGE = {"input_tokens": 150, "cache_creation_input_tokens": 50, "cache_read_input_tokens": 1000,
                "output_tokens": 300, "service_tier": "standard"}


def claude(fake: Fake) -> int:
    args = fake.argv
    opts: dict[str, str] = {}
    flags: set[str] = set()
    positional: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        key = a.split("=", 1)[0]
        if key in CLAUDE_VALUE_FLAGS:
            opts[key], i = take_value(args, i, key, fake, 1)
        elif a in CLAUDE_BOOL_FLAGS:
            flags.add(a)
            i += 1
        elif a.startswith("-") and a != "-":
            fake.fail(f"error: unknown option '{a}'", 1)
        else:
            positional.append(a)
            i += 1
    fake.model_arg = opts.get("--model", "")
    if not flags & {"-p", "--print"}:
        fake.fail("fake claude: interactive sessions are not supported (use -p)", 1)
    fmt = opts.get("--output-format", "text")
    if fmt not in ("text", "json", "stream-json"):
        fake.fail(f"Error: Invalid output format \"{fmt}\". Must be one of: text, json, stream-json", 1)
    if fmt == "stream-json" and "--verbose" not in flags:
        fake.fail("Error: When using --print, --output-format=stream-json requires --verbose", 1)
    if "--json-schema" in opts:
        try:
            schema = json.loads(opts["--json-schema"])
        except ValueError:
            fake.fail("Error: --json-schema must be a valid JSON schema string", 1)
        if not isinstance(schema, dict):
            fake.fail("Error: --json-schema must be a valid JSON schema string", 1)
    if "--tools" in opts and opts["--tools"] != "":
        for tool in opts["--tools"].split(","):
            if tool.strip() not in CLAUDE_TOOLS:
                fake.fail(f"Error: Unknown tool in --tools: {tool.strip()}", 1)
    mode = opts.get("--permission-mode", "default")
    if mode not in ("acceptEdits", "bypassPermissions", "default", "dontAsk", "plan"):
        fake.fail(f"error: option '--permission-mode <mode>' argument '{mode}' is invalid", 1)
    budget = opts.get("--max-budget-usd")
    if budget is not None:
        try:
            if float(budget) <= 0:
                raise ValueError(budget)
        except ValueError:
            fake.fail(f"Error: --max-budget-usd must be a positive number, got {budget}", 1)
    effort = opts.get("--effort")
    if effort is not None and effort not in ("low", "medium", "high", "xhigh", "max"):
        fake.fail(f"error: option '--effort <level>' argument '{effort}' is invalid", 1)
    prompt = positional[0] if positional else fake.read_stdin()
    if not prompt.strip():
        fake.fail("Error: Input must be provided either through stdin or as a prompt argument when using --print", 1)

    fake.apply_model(prompt)
    sc = fake.sc
    model = sc.get("model") or CLAUDE_ALIASES.get(fake.model_arg, fake.model_arg) or DEFAULT_MODELS["claude"]
    session = str(uuid.uuid4())
    events: list = []

    def emit(event) -> None:
        if fmt == "stream-json":
            fake.out(event)
        elif not isinstance(event, bytes):
            events.append(event)

    fake.prelude()
    emit({"type": "system", "subtype": "init", "cwd": fake.cwd, "session_id": session,
          "tools": (opts.get("--tools") or "").split(",") if "--tools" in opts else sorted(CLAUDE_TOOLS),
          "model": model, "permissionMode": mode, "apiKeySource": "none"})
    for event in sc.get("before", []):
        emit(event)
    for n, tool in enumerate(sc.get("tools", [])):
        name = tool if isinstance(tool, str) else tool["name"]
        tool_input = {} if isinstance(tool, str) else dict(tool.get("input", {}))
        if not isinstance(tool, str) and tool.get("pad"):
            tool_input["padding"] = "x" * int(tool["pad"])
        tid = f"toolu_{n:04d}"
        emit({"type": "assistant", "message": {"model": model, "role": "assistant",
              "content": [{"type": "tool_use", "id": tid, "name": name, "input": tool_input}]},
              "session_id": session})
        emit({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tid, "content": "ok"}]}, "session_id": session})
    fake.filler(lambda i, pad: {"type": "assistant", "message": {"model": model, "role": "assistant",
                "content": [{"type": "text", "text": f"thinking {i} {pad}"}]}, "session_id": session})
    fake.wait()

    usage = {model: {"inputTokens": 1200, "outputTokens": 300, "costUSD": 0.01}}
    code = 0
    if sc.get("refusal"):
        text = sc["refusal"]
        kind = fake.refusal_kind()
        emit({"type": "assistant", "message": {"model": "<synthetic>", "role": "assistant",
              "content": [{"type": "text", "text": text}]},
              "error": "rate_limit" if kind == "quota" else "authentication_failed", "session_id": session})
        if kind == "quota" and sc.get("resets_at"):
            emit({"type": "rate_limit_event", "rate_limit_info": {"status": "rejected",
                                                                  "resetsAt": sc["resets_at"]}})
        emit({"type": "result", "subtype": "success", "is_error": True, "result": text, "num_turns": 1,
              "session_id": session, "modelUsage": {}, "errors": []})
        code = 1
    elif sc.get("is_error"):
        spent = {"usage": CLAUDE_USAGE, "total_cost_usd": sc["error_cost_usd"]} if "error_cost_usd" in sc else {}
        emit({"type": "result", "subtype": "success", "is_error": True, "result": sc["is_error"],
              "session_id": session, "modelUsage": {}, "errors": [], **spent})
        code = 1
    elif sc.get("budget_exceeded"):
        # what 2.1.197 prints when --max-budget-usd is reached
        emit({"type": "result", "subtype": "error_max_budget_usd", "is_error": True, "duration_ms": 2000,
              "num_turns": 4, "session_id": session, "total_cost_usd": float(budget or 0) + 0.01,
              "usage": CLAUDE_USAGE, "modelUsage": usage, "errors": []})
        code = 1
    elif not sc.get("no_result"):
        answer = fake.answer_object()
        if answer is not None and sc.get("structured", True):
            emit({"type": "assistant", "message": {"model": model, "role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_final", "name": "StructuredOutput", "input": answer}]},
                "session_id": session})
        result = {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 1234,
                  "num_turns": 3, "result": fake.answer_text() if answer is None else "",
                  "session_id": session, "total_cost_usd": sc.get("cost_usd", 0.01), "usage": CLAUDE_USAGE,
                  "modelUsage": sc.get("model_usage", usage), "errors": []}
        if answer is not None and sc.get("structured", True):
            result["structured_output"] = answer
        elif answer is not None:
            result["result"] = fake.answer_text()
        emit(result)
    code = fake.exit_code(code)
    if fmt == "json":
        fake.out(events[-1] if events and "--verbose" not in flags else events)
    elif fmt == "text" and events:
        sys.stdout.write(str(events[-1].get("result", "")) + "\n")
    fake.epilogue()
    return code


# ================================================================ codex

CODEX_EFFORTS = ("minimal", "low", "medium", "high", "xhigh")


def _strict_problem(schema, where: str = "") -> str | None:
    """The OpenAI strict-schema rule: every object lists all properties as required, no extras."""
    if isinstance(schema, dict):
        if schema.get("type") == "object" or (isinstance(schema.get("type"), list) and "object" in schema["type"]):
            props = schema.get("properties", {})
            if schema.get("additionalProperties") is not False:
                return f"'additionalProperties' is required to be supplied and to be false{where}"
            if sorted(schema.get("required", [])) != sorted(props):
                return f"'required' is required to be supplied and to be an array including every key in properties{where}"
        for key, value in schema.items():
            if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
                for name, sub in value.items():
                    problem = _strict_problem(sub, f" (in {name})")
                    if problem:
                        return problem
            elif isinstance(value, (dict, list)) and key not in ("required", "enum"):
                problem = _strict_problem(value, where)
                if problem:
                    return problem
    elif isinstance(schema, list):
        for sub in schema:
            problem = _strict_problem(sub, where)
            if problem:
                return problem
    return None


def codex(fake: Fake) -> int:
    args = fake.argv
    if not args or args[0] not in ("exec", "e"):
        fake.fail("fake codex: only `codex exec` is supported", 2)
    args = args[1:]
    opts: dict[str, str] = {}
    configs: list[str] = []
    flags: set[str] = set()
    positional: list[str] = []
    aliases = {"-s": "--sandbox", "-m": "--model", "-C": "--cd", "-c": "--config", "--experimental-json": "--json"}
    i = 0
    while i < len(args):
        a = args[i]
        key = aliases.get(a.split("=", 1)[0], a.split("=", 1)[0])
        if key in ("--sandbox", "--model", "--cd", "--output-schema", "--output-last-message", "--profile"):
            opts[key], i = take_value(args, i, key, fake, 2)
        elif key == "--config":
            value, i = take_value(args, i, key, fake, 2)
            configs.append(value)
        elif key in ("--json", "--skip-git-repo-check", "--ephemeral", "--full-auto"):
            flags.add(key)
            i += 1
        elif a.startswith("-") and a != "-":
            fake.fail(f"error: unexpected argument '{a}' found", 2)
        else:
            positional.append(a)
            i += 1
    sandbox = opts.get("--sandbox", "read-only")
    if sandbox not in ("read-only", "workspace-write", "danger-full-access"):
        fake.fail(f"error: invalid value '{sandbox}' for '--sandbox <SANDBOX_MODE>'", 2)
    fake.model_arg = opts.get("--model", "")
    for item in configs:
        if "=" not in item:
            fake.fail(f"Error: Invalid override (missing '='): {item}", 1)
        key, raw = item.split("=", 1)
        # -c values are TOML; a bare word falls back to a literal string
        value = raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] == '"' else raw
        if key.strip() == "model_reasoning_effort" and value not in CODEX_EFFORTS:
            fake.fail(f"Error: unknown variant `{value}`, expected one of "
                      + ", ".join(f"`{e}`" for e in CODEX_EFFORTS), 1)
    if "--cd" in opts:
        if not os.path.isdir(opts["--cd"]):
            fake.fail(f"Error: No such file or directory (os error 2): {opts['--cd']}", 1)
        fake.cwd = os.path.abspath(opts["--cd"])
    if "--skip-git-repo-check" not in flags and not _in_git_repo(fake.cwd):
        fake.fail("Not inside a trusted directory and --skip-git-repo-check was not specified.", 1)
    schema_problem = None
    if "--output-schema" in opts:
        try:
            with open(opts["--output-schema"], encoding="utf-8") as f:
                schema = json.load(f)
        except (OSError, ValueError) as exc:
            fake.fail(f"Error: failed to read output schema file {opts['--output-schema']}: {exc}", 1)
        schema_problem = _strict_problem(schema)
    if len(positional) > 1:
        fake.fail(f"error: unexpected argument '{positional[1]}' found", 2)
    if not positional or positional[0] == "-":
        prompt = fake.read_stdin()  # `-` (or no prompt and piped stdin): read stdin to EOF
    else:
        prompt = positional[0]
    if not prompt.strip():
        fake.fail("No prompt provided. Either specify one as an argument or pipe the prompt into stdin.", 1)

    fake.apply_model(prompt)
    sc = fake.sc
    json_mode = "--json" in flags

    def emit(event) -> None:
        if json_mode or isinstance(event, bytes):
            fake.out(event)
        elif event.get("type") == "item.completed":
            item = event["item"]
            sys.stdout.write(f"[{item['type']}] {item.get('text') or item.get('command') or ''}\n")
            sys.stdout.flush()

    fake.prelude()
    emit({"type": "thread.started", "thread_id": str(uuid.uuid4())})
    emit({"type": "turn.started"})
    if schema_problem:
        message = ("unexpected status 400 Bad Request: {\"error\":{\"message\":\"Invalid schema for "
                   f"response_format 'codex_output_schema': {schema_problem}\"}}}}")
        emit({"type": "error", "message": message})
        emit({"type": "turn.failed", "error": {"message": message}})
        fake.epilogue()
        return fake.exit_code(1)
    if sc.get("reroute"):
        emit({"type": "item.completed", "item": {"id": "item_r", "type": "error",
                                                 "message": f"model rerouted: {sc['reroute']}"}})
    for event in sc.get("before", []):
        emit(event)
    for n, tool in enumerate(sc.get("tools", [])):
        spec = {"type": tool} if isinstance(tool, str) else dict(tool)
        pad = int(spec.pop("pad", 0))
        if pad:
            spec["padding"] = "x" * pad
        kind = spec.pop("type", spec.pop("name", "command_execution"))
        item = {"id": f"item_{n}", "type": kind, **spec}
        if kind == "command_execution":
            item.setdefault("command", "bash -lc 'ls head'")
            emit({"type": "item.started", "item": {**item, "status": "in_progress"}})
            item.update(aggregated_output="ok\n", exit_code=0, status="completed")
        emit({"type": "item.completed", "item": item})
    fake.filler(lambda i, pad: {"type": "item.completed",
                                "item": {"id": f"item_f{i}", "type": "reasoning", "text": f"thinking {i} {pad}"}})
    fake.wait()
    code = 0
    if sc.get("refusal"):
        emit({"type": "error", "message": sc["refusal"]})
        emit({"type": "turn.failed", "error": {"message": sc["refusal"]}})
        code = 1
    elif sc.get("turn_failed"):
        emit({"type": "turn.failed", "error": {"message": sc["turn_failed"]}})
        code = 1
    elif not sc.get("no_result"):
        emit({"type": "item.completed", "item": {"id": "item_last", "type": "agent_message",
                                                 "text": fake.answer_text()}})
        emit({"type": "turn.completed", "usage": {"input_tokens": 1000, "cached_input_tokens": 400,
                                                  "output_tokens": 200, "reasoning_output_tokens": 50}})
    code = fake.exit_code(code)
    fake.epilogue()
    return code


def _in_git_repo(path: str) -> bool:
    path = os.path.abspath(path)
    while True:
        if os.path.exists(os.path.join(path, ".git")):
            return True
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent


# ================================================================ agy

AGY_TOOLS = ["view_file", "read_file", "grep_search", "list_dir", "run_command", "write_to_file", "search_web",
             "invoke_subagent", "ask_question"]


def agy(fake: Fake) -> int:
    args = fake.argv
    opts: dict[str, str] = {}
    i = 0
    while i < len(args):
        a = args[i]
        key = a.split("=", 1)[0]
        key = {"-p": "--prompt", "-m": "--model"}.get(key, key)
        if key in ("--prompt", "--output-format", "--mode", "--model", "--json-schema", "--print-timeout"):
            opts[key], i = take_value(args, i, key, fake, 2)
        else:
            fake.fail(f"Error: unknown flag: {a}", 2)
    if "--prompt" not in opts:
        fake.fail("Error: headless use needs -p/--prompt", 2)
    fmt = opts.get("--output-format", "text")
    if fmt not in ("text", "json", "stream-json"):
        fake.fail(f"Error: invalid --output-format {fmt!r}", 2)
    mode = opts.get("--mode", "agent")
    if mode not in ("plan", "agent", "fast"):
        fake.fail(f"Error: invalid --mode {mode!r}", 2)
    if "--json-schema" in opts:
        try:
            with open(opts["--json-schema"], encoding="utf-8") as f:
                json.load(f)
        except (OSError, ValueError) as exc:
            fake.fail(f"Error: cannot read --json-schema {opts['--json-schema']}: {exc}", 2)
    if "--print-timeout" in opts and not re.fullmatch(r"[0-9]+(ms|s|m|h)", opts["--print-timeout"]):
        fake.fail(f"Error: invalid --print-timeout {opts['--print-timeout']!r} (a duration such as 300s)", 2)
    fake.prompt_text = opts["--prompt"]
    if not fake.prompt_text.strip():
        fake.fail("Error: empty prompt", 2)
    fake.model_arg = opts.get("--model", "")
    # as the model would: read the packet file the prompt names (what it says is matched too)
    named = re.search(r"The review packet is in the file (\S+), not in this prompt", fake.prompt_text)
    if named:
        with open(named.group(1), encoding="utf-8") as f:
            fake.packet_file_text = f.read()
    fake.apply_model(fake.prompt_text + "\n" + (fake.packet_file_text or ""))
    sc = fake.sc
    model = sc.get("model") or fake.model_arg or None
    events: list = []

    def emit(event) -> None:
        if fmt == "stream-json" or isinstance(event, bytes):
            fake.out(event)
        else:
            events.append(event)

    if sc.get("auto_denied"):
        # a tool needed a permission headless mode cannot ask for: nothing on stdout, exit 0
        fake.err(f"no output produced \u2014 a tool required the \"{sc['auto_denied']}\" permission that headless "
                 "mode cannot prompt for, so it was auto-denied. Re-run with a permission mode that allows it.")
        return fake.exit_code(0)
    fake.prelude()
    init = {"cwd": fake.cwd, "tools": AGY_TOOLS}
    if model and not sc.get("hide_model"):
        init["model"] = model  # newer versions only
    emit({"event": "init", "conversation_id": str(uuid.uuid4()), "init": init})
    for tool in sc.get("tools", []):
        if isinstance(tool, str):
            name, params = tool, {"AbsolutePath": os.path.join(fake.cwd, "head")}
        else:
            name = tool["name"]
            params = tool.get("parameters") or ({"CommandLine": tool["command"]} if "command" in tool else {})
        if not isinstance(tool, str) and tool.get("pad"):
            params = {**params, "Padding": "x" * int(tool["pad"])}
        for state in ("ACTIVE", "DONE"):
            emit({"event": "step_update", "step_update": {"step_type": "tool", "tool_name": name, "state": state,
                                                          "tool_info": {"parameters": params}}})
    fake.filler(lambda i, pad: {"event": "step_update",
                                "step_update": {"step_type": "agent_response", "text_delta": f"{i} {pad}"}})
    fake.wait()
    code = 0
    if sc.get("print_timeout"):
        # 1.1.28+: its own --print-timeout passed; partial output, usage zero, exit 0
        fake.err(f"[agy] print timeout after {sc['print_timeout']} with turn in progress; returning partial output")
        emit({"event": "result", "result": {"status": "SUCCESS", "response": "I started looking at",
                                            "structured_output": None,
                                            "usage": {"input_tokens": 0, "output_tokens": 0}}})
    elif sc.get("refusal"):
        if fake.refusal_kind() == "quota":
            error = {"status": "RESOURCE_EXHAUSTED", "error_code": 429, "short_error": sc["refusal"]}
        else:
            error = {"status": "UNAUTHENTICATED", "error_code": 401, "short_error": sc["refusal"]}
        fake.err("AGY_ERROR: " + json.dumps(error))
        code = 3
    elif not sc.get("no_result"):
        answer = fake.answer_object()
        result = {"status": sc.get("status", "SUCCESS"),
                  "response": sc.get("response", fake.answer_text()),
                  "structured_output": answer if sc.get("structured", True) else None,
                  "usage": {"input_tokens": 900, "output_tokens": 100, "thinking_tokens": 60,
                            "cache_read_tokens": 300, "total_tokens": 1060}}
        if sc.get("denied_actions"):
            result["denied_actions"] = sc["denied_actions"]
        emit({"event": "result", "result": result})
    code = fake.exit_code(code)
    if fmt == "json":
        fake.out(events)
    elif fmt == "text" and events:
        sys.stdout.write(str(events[-1].get("result", {}).get("response", "")) + "\n")
    fake.epilogue()
    return code


# ================================================================ replay


def replay(fake: Fake) -> int:
    """Print captured output of a real CLI byte for byte (stderr, then stdout), then exit
    with `exit_code` or, with `hang`, keep running like codex without a network."""
    spec = fake.sc["replay"]
    if fake.prog in ("claude", "codex"):
        fake.read_stdin()  # as the real programs do, before they print anything
    fake.prelude()  # pid_file, spawn_child and the like, when the scenario asks
    with open(spec["stderr"], "rb") as f:
        sys.stderr.buffer.write(f.read())
        sys.stderr.buffer.flush()
    with open(spec["stdout"], "rb") as f:
        sys.stdout.buffer.write(f.read())
        sys.stdout.buffer.flush()
    if spec.get("hang"):
        time.sleep(600)
    return int(spec.get("exit_code", 0))


# ================================================================ entry

PROGRAMS = {"claude": claude, "codex": codex, "agy": agy}


def main(prog: str) -> None:
    fake = Fake(prog)
    code = 1
    try:
        fake.sc = fake.load_scenario()
        if fake.argv[:1] in (["--version"], ["-v"], ["-V"]):
            fake.apply_model(version=True)
            code = fake.version()
        elif fake.sc.get("replay"):
            code = replay(fake)
        else:
            code = PROGRAMS[prog](fake)
    except Exit as e:
        code = e.code
    finally:
        with contextlib.suppress(OSError):
            fake.record(code)
    sys.exit(code)
