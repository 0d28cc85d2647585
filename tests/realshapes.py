"""Every failure shape of a model server, and what Spar records when the real claude or codex
meets it (no tests here): tests/test_real_failures.py runs the real CLIs against the scripted
server answering so; tests/test_real_cli_replay.py replays their captured output
(tests/data/real-cli/server/, with the CLIs' versions) through the fake CLIs.

`words` must be in the recorded reason: the real CLI's own words. `attempts`: how many
attempts the reviewer made (a fallback model after a quota refusal, one retry of a transient
failure). `ended_by_spar`: the CLI would have gone on (retrying, or waiting on a hung server)
and Spar ended it, so a replay keeps the fake running after the output.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.modelserver import Cut, Error, Hang, Step, anthropic_error, openai_error, text

FALLBACK = "fb-model"  # every shape's reviewer has a fallback model: who falls back shows
LIMIT = 20  # seconds: the per-attempt limit of the shapes that hang or retry for minutes


@dataclass(frozen=True)
class Shape:
    name: str  # also the capture's file name: <name>.stdout.log / .stderr.log
    cli: str
    answer: Step  # the server's answer to every request
    status: str
    words: tuple[str, ...]
    attempts: int
    ended_by_spar: bool = False
    exit_code: int = 1


_RATE = "Number of request tokens has exceeded your per-minute rate limit"
_CREDIT = ("Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or "
           "purchase credits.")
_USAGE_LIMIT = {"error": {"type": "usage_limit_reached", "message": "The usage limit has been reached",
                          "plan_type": "plus", "resets_at": 1893456000, "resets_in_seconds": 13872}}

SHAPES = (
    # claude retries 429, 529, 500 and 401 for minutes (system/api_retry events); Spar does not wait
    Shape("429-claude", "claude", anthropic_error(429, "rate_limit_error", _RATE), "unavailable",
          ("quota or rate limit: ", "api_retry 1/10: error rate_limit, HTTP status 429"), 2, ended_by_spar=True),
    Shape("429-retry-after-claude", "claude", anthropic_error(429, "rate_limit_error", _RATE, {"retry-after": "1"}),
          "unavailable", ("quota or rate limit: ", "HTTP status 429"), 2, ended_by_spar=True),
    Shape("529-claude", "claude", anthropic_error(529, "overloaded_error", "Overloaded"), "failed",
          ("API Error: Repeated 529 Overloaded errors",), 2),  # transient: tried once more
    Shape("500-claude", "claude", anthropic_error(500, "api_error", "Internal server error"), "timeout",
          (f"no answer within {LIMIT}s", "process group killed", "error server_error, HTTP status 500"), 1,
          ended_by_spar=True),
    Shape("401-claude", "claude", anthropic_error(401, "authentication_error", "invalid x-api-key"), "unavailable",
          ("authentication: ", "api_retry 1/10: error authentication_failed, HTTP status 401"), 1, ended_by_spar=True),
    Shape("403-claude", "claude", anthropic_error(403, "permission_error", "Your API key does not have permission to "
                                                  "use the specified resource."), "failed",
          ("Failed to authenticate. API Error: 403",), 1),  # no refusal phrase of the contract: by its exit
    Shape("credit-400-claude", "claude", anthropic_error(400, "invalid_request_error", _CREDIT), "failed",
          ("Credit balance is too low",), 1),  # likewise: no fallback
    Shape("hang-claude", "claude", Hang(), "timeout", (f"no answer within {LIMIT}s", "process group killed"), 1,
          ended_by_spar=True),
    Shape("cut-claude", "claude", Cut(text("partial answer"), after=3), "failed",
          ("API Error: Connection to the API was lost (ECONNRESET)",), 2),
    Shape("no-structured-claude", "claude", text("I think the code is fine."), "invalid_output",
          ("no structured_output", "not one JSON object"), 1, exit_code=0),
    # codex retries on its own (5 times) and then ends the turn
    Shape("429-codex", "codex", openai_error(429, "Rate limit reached for gpt-5 on tokens per min (TPM): Limit 30000, "
                                              "Used 30000. Please try again in 1s.", "tokens", "rate_limit_exceeded"),
          "unavailable", ("quota or rate limit: ", "429 Too Many Requests"), 2),
    Shape("usage-limit-codex", "codex", Error(429, _USAGE_LIMIT), "unavailable",
          ("quota or rate limit: ", "hit your usage limit"), 2),
    Shape("quota-codex", "codex", openai_error(429, "You exceeded your current quota, please check your plan and "
                                                    "billing details.", "insufficient_quota", "insufficient_quota"),
          "unavailable", ("quota or rate limit: ", "Quota exceeded. Check your plan and billing details."), 2),
    Shape("401-codex", "codex", openai_error(401, "Incorrect API key provided: sk-scr***ted.", "invalid_request_error",
                                             "invalid_api_key"), "unavailable",
          ("authentication: ", "401 Unauthorized: Incorrect API key provided"), 1),
    Shape("hang-codex", "codex", Hang(), "timeout", (f"no answer within {LIMIT}s", "process group killed"), 1,
          ended_by_spar=True),
    Shape("cut-codex", "codex", Cut(text("partial"), after=1), "failed",
          ("stream disconnected before completion",), 2),
)


def shape(name: str) -> Shape:
    (found,) = [s for s in SHAPES if s.name == name]
    return found
