"""A reviewer's credentials (its vendor variables) never reach anything Spar writes: the
streams are masked where they enter Spar (spar/proc/masking.py)."""

from __future__ import annotations

import base64
import json
import re
import shutil
import string
import sys
from urllib.parse import quote, quote_plus, unquote_to_bytes

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from spar.presets import get_preset
from spar.proc.environment import credential_values, is_credential, reviewer_env, without_userinfo
from spar.proc.masking import MASK, Masker, _any_of, mask_text, mask_value, secrets_of
from tests.endpointfake import FakeEndpoint, Reply
from tests.runsetup import FAKE_ENV, finding, make_setup, result

SECRET = "sk-ant-api03-TOPSECRETVALUE"


def _masked(secrets: tuple[bytes, ...], chunks: list[bytes]) -> tuple[bytes, int]:
    masker = Masker(secrets)
    out = b"".join(masker.feed(c) for c in chunks) + masker.flush()
    return out, masker.count


def test_a_secret_cut_anywhere_between_chunks_is_masked():
    text = b"before " + SECRET.encode() + b" middle " + SECRET.encode() + b" after"
    for cut in range(len(text)):
        for second in (cut, min(cut + 5, len(text))):
            out, count = _masked(secrets_of([SECRET]), [text[:cut], text[cut:second], text[second:]])
            assert out == b"before " + MASK + b" middle " + MASK + b" after"
            assert count == 2


def test_text_that_only_starts_like_a_secret_is_passed_on_whole():
    out, count = _masked(secrets_of([SECRET]), [b"sk-ant-api03-TOP", b"PUBLIC text"])
    assert (out, count) == (b"sk-ant-api03-TOPPUBLIC text", 0)
    out, count = _masked(secrets_of([SECRET]), [b"ends with sk-ant-"])
    assert (out, count) == (b"ends with sk-ant-", 0)


def test_short_values_are_no_secrets():
    assert secrets_of(["1", "true", "1234567", "12345678x"]) == (b"12345678x",)


def test_common_words_and_numbers_are_no_secrets():
    """AUTH_MODE=disabled would mask every "disabled" of a review."""
    assert secrets_of(["disabled", "86400000", "keychainlogin", "hunter2hunter", "Disabled",
                       "averylongpassphrasewords"]) == (b"averylongpassphrasewords", b"hunter2hunter", b"Disabled")


@pytest.mark.slow
def test_a_claude_reviewer_printing_its_key_leaves_it_nowhere(tmp_path):
    """The fake claude prints its own ANTHROPIC_API_KEY on stderr and copies it into a
    finding's evidence: logs, round.json, findings.json, summary.md, the terminal and the
    exports hold the mask; round.json says how many were masked."""
    s = make_setup(tmp_path)
    s.env["ANTHROPIC_API_KEY"] = SECRET
    s.configure([{"name": "claude", "preset": "claude"}])
    s.scenario({"claude": {"stderr": f"debug: key={SECRET}\n",
                           "result": result(head=s.head, findings=[finding(evidence=f"the key is {SECRET}")])}})
    proc = s.run()
    assert proc.returncode == 0, proc.stderr.decode()
    round_dir = s.repo / "reviews" / "r1"
    sarif = s.spar("export", "--format", "sarif", str(round_dir))
    assert sarif.returncode == 0, sarif.stderr.decode()
    written = [p.read_bytes() for p in round_dir.rglob("*") if p.is_file() and "workspace" not in p.parts]
    for data in [*written, proc.stdout, proc.stderr, sarif.stdout]:
        assert SECRET.encode() not in data
    assert MASK in (round_dir / "claude" / "stderr.log").read_bytes()
    findings = json.loads((round_dir / "findings.json").read_text())
    assert MASK.decode() in findings[0]["evidence"]
    logs = sum((round_dir / "claude" / f"{name}.log").read_bytes().count(MASK) for name in ("stdout", "stderr"))
    assert logs >= 2  # stderr, and the answer (the fake prints it more than once)
    rj = json.loads((round_dir / "round.json").read_text())
    assert rj["masked_secrets"] == logs
    assert rj["reviewers"][0]["attempts"][0]["masked_secrets"] == logs


# ---------------------------------------------------------------- forms, hiding, media

def _all_masked(data: bytes, secret: str = SECRET) -> bool:
    out, count = _masked(secrets_of([secret]), [data])
    return count >= 1 and secret.encode() not in out and out.count(MASK) == count


def _escaped(text: str, backslashes: int = 1, hexes: str = "04x") -> str:
    """`text` with every third character a JSON escape (as nested JSON strings write them)."""
    return "".join("\\" * backslashes + f"u{ord(c):{hexes}}" if i % 3 == 0 else c for i, c in enumerate(text))


def test_json_escaped_hidden_reversed_hex_and_base64_forms_are_masked():
    """Each form a reviewer could print a credential in, inside ordinary text."""
    hidden = [
        _escaped(SECRET), _escaped(SECRET, 2), _escaped(SECRET, 3, "04X"),
        "\u200b".join(SECRET), "\\u200d".join(SECRET), "\u00ad".join(SECRET[:5]) + SECRET[5:],
        SECRET[:6] + "\x1b[31m" + SECRET[6:12] + "\x1b[0m" + SECRET[12:], SECRET[:6] + "\\u001b[1;32m" + SECRET[6:],
        SECRET[::-1], SECRET.encode().hex(), SECRET.encode().hex().upper(),
    ]
    for prefix in (b"", b"x", b"xy"):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            hidden.append(encode(prefix + SECRET.encode() + b"tail").decode())
    for form in hidden:
        data = f'{{"text": "before {form} after"}}'.encode()
        assert _all_masked(data), form
        out, _ = _masked(secrets_of([SECRET]), [data])
        assert out.startswith(b'{"text": "before ') and out.endswith(b' after"}'), out


def test_a_hidden_form_cut_anywhere_between_chunks_is_masked():
    text = ("pre " + _escaped(SECRET[:9]) + "\x1b[0m" + SECRET[9:15] + "\u200b" + SECRET[15:] + " post \\u00").encode()
    for cut in range(len(text)):
        for second in range(cut, len(text), 3):
            out, count = _masked(secrets_of([SECRET]), [text[:cut], text[cut:second], text[second:]])
            assert (out, count) == (b"pre " + MASK + b" post \\u00", 1), (cut, second)


def test_a_slash_escaped_credential_is_masked():
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYKEY"  # AWS secret keys hold slashes
    assert _all_masked(('"' + secret.replace("/", "\\/") + '"').encode(), secret)


def test_a_credential_that_looks_escaped_itself_is_masked_as_written():
    for secret in ("pa\\/ss\\u0041word", "x\u200by-\x1b[1mzzzzzz", "pa%40ss%2Fword%", "0123456789abcdefXYZ\n"):
        assert _masked(secrets_of([secret]), [f"[{secret}]".encode()]) == (b"[" + MASK + b"]", 1), secret


def test_text_without_a_credential_passes_unchanged_escapes_and_all():
    data = '{"a": "caf\\u00e9 \\u2019 \\\\n \\/ \x1b[1m\u200bbold \\ud83d\\ude00"}'.encode()
    assert _masked(secrets_of([SECRET]), [data]) == (data, 0)


def test_decoded_strings_and_values_are_masked_keys_included_however_deep():
    text, count = mask_text(f"key: {SECRET}; again {SECRET[::-1]}", secrets_of([SECRET]))
    assert (text, count) == (f"key: {MASK.decode()}; again {MASK.decode()}", 2)
    deep: list = [f"x {SECRET}"]
    for _ in range(5000):  # deeper than the recursion limit
        deep = [deep]
    value = {SECRET: [deep, ("t", SECRET), 3, None]}
    masked, count = mask_value(value, secrets_of([SECRET]))
    assert masked is value and count == 3 and masked[MASK.decode()][1] == ("t", MASK.decode())
    inner = masked[MASK.decode()][0]
    while isinstance(inner[0], list):
        inner = inner[0]
    assert inner == [f"x {MASK.decode()}"]


def test_a_monitor_masks_every_event_as_decoded():
    """What the monitor takes from an event (the observed model, notices, the answer) is
    masked after decoding, whatever the stream's masks let through."""
    monitor = get_preset("claude").monitor()
    monitor.masks = secrets_of([SECRET])
    monitor.feed(json.dumps({"type": "system", "subtype": "init", "model": SECRET, "tools": [], "cwd": "/w"}))
    assert (monitor.init_model, monitor.masked) == (MASK.decode(), 1)



# ---------------------------------------------------------------- URL encoding, base32, wrapped base64

def _masked_around(form: str, secret: str = SECRET, *, json_levels: int = 0) -> None:
    """`form` inside ordinary text (JSON-encoded `json_levels` times) is masked, whole, and
    nothing around it is touched, however the stream is cut into chunks."""
    text = form
    for _ in range(json_levels):
        text = json.dumps(text)
    data = f"before {text} after".encode()
    for chunks in ([data], [data[i:i + 1] for i in range(len(data))], [data[i:i + 7] for i in range(0, len(data), 7)]):
        out, count = _masked(secrets_of([secret]), chunks)
        assert count >= 1 and out.startswith(b"before ") and out.endswith(b" after"), (form, out)
        assert text.encode() not in out and secret.encode() not in out, (form, out)


def _percent(value: str, pick) -> str:
    return "".join(pick(i, b) for i, b in enumerate(value.encode()))


def test_url_encoded_forms_are_masked_in_either_case_however_many_bytes_are_encoded():
    secret = "sk-ant-api03/TOP+SECRET~VALUE=x"
    forms = [
        quote(secret, safe=""), quote(secret), re.sub("%..", lambda m: m.group().lower(), quote(secret, safe="")),
        _percent(secret, lambda i, b: f"%{b:02X}"), _percent(secret, lambda i, b: f"%{b:02x}"),
        _percent(secret, lambda i, b: (f"%{b:02x}", f"%{b:02X}", f"%{b:02x}"[:2] + f"{b:02X}"[1], chr(b))[i % 4]),
        "sk-ant-api03%2FTOP%2bSECRET~VALUE%3dx",
        quote(secret, safe="").replace("%", "\\u0025"),  # the percent signs JSON-escaped
        quote(secret, safe="").replace("%", "%\u200b"),  # a zero-width character inside each escape
    ]
    for form in forms:
        for levels in (0, 1, 2):
            _masked_around(form, secret, json_levels=levels)
    spaced = "correct horse battery staple 42!"
    for form in (quote_plus(spaced), quote(spaced, safe=""), quote_plus(spaced).lower()):
        _masked_around(form, spaced)


def _b32_forms(value: bytes) -> list[str]:
    """`value` behind 0-4 other bytes and before more, in each base32 alphabet and case."""
    found = []
    for skew in range(5):
        data = b"pre!"[:skew] + value + b"tail"
        for text in (base64.b32encode(data).decode(), base64.b32hexencode(data).decode()):
            found += [text, text.lower()]
    return found


def test_base32_forms_are_masked_at_every_alignment_in_both_alphabets_and_cases():
    for form in _b32_forms(SECRET.encode()):
        _masked_around(form)
        _masked_around(form, json_levels=1)


def _wrapped(text: str, width: int, newline: str = "\n") -> str:
    return newline.join(text[i:i + width] for i in range(0, len(text), width))


def test_base64_base32_and_hex_with_line_breaks_are_masked():
    """MIME (76 columns), PEM (64), \\r\\n, raw or JSON-escaped once or twice, the value
    anywhere on or across the lines."""
    value = SECRET.encode()
    for skew in range(7):
        blob = b"k" * (40 + skew) + value + b"and the rest of the file"
        forms = [base64.encodebytes(blob).decode(), _wrapped(base64.b64encode(blob).decode(), 64),
                 _wrapped(base64.b64encode(blob).decode(), 64, "\r\n"),
                 _wrapped(base64.urlsafe_b64encode(blob).decode(), 76, "\r\n"),
                 _wrapped(base64.b32encode(blob).decode(), 20), _wrapped(blob.hex(), 60)]
        for form in forms:
            for levels in (0, 1, 2):
                _masked_around(form, json_levels=levels)


def test_a_wrapped_or_url_encoded_form_cut_anywhere_between_chunks_is_masked_as_if_whole():
    """Wherever two cuts fall (inside a line break, a JSON escape of one, a %XX, or just
    before a line's last characters), the output is the one of the stream in one piece."""
    blob = base64.b64encode(b"k" * 13 + SECRET.encode() + b"rest").decode()
    # a zero-width character every 4 characters, one just before the value's first
    shifted = base64.b64encode(b"k" * 15 + SECRET.encode() + b"rest").decode()
    hidden = "\n".join("\u200b".join(line[i:i + 4] for i in range(0, 16, 4)) for line in _wrapped(shifted, 16).split())
    forms = [_wrapped(blob, 16), json.dumps(_wrapped(blob, 17, "\r\n")), json.dumps(json.dumps(_wrapped(blob, 18))),
             quote(SECRET, safe=""), hidden]
    for form in forms:
        data = f"pre {form} post".encode()
        whole = _masked(secrets_of([SECRET]), [data])
        assert whole[1] == 1 and whole[0].startswith(b"pre ") and whole[0].endswith(b" post"), form
        for cut in range(len(data)):
            for second in range(cut, len(data), 3):
                assert _masked(secrets_of([SECRET]), [data[:cut], data[cut:second], data[second:]]) == whole, \
                    (form, cut, second)


def test_a_line_that_ends_a_chunk_is_passed_on_whole():
    """The monitors wait for whole lines: one ending a chunk is held back only when a form
    may go on after its line break (a run of 16 base64 characters ending in a form's start)."""
    masker = Masker(secrets_of([SECRET]))
    for line in (b"done\n", b"x" * 40 + b"\n", b"ABCD" * 10 + b"\r\n", b'{"a": "' + b"b" * 30 + b'\\n"}\n'):
        assert masker.feed(line) == line
    assert masker.feed(b"z" * 20 + b"c2st\n") == b"z" * 20  # c2st: base64 of "sk-"'s start
    assert masker.feed(b"YW50LWFwaTAzLVRPUFNFQ1JFVFZBTFVF") == MASK

def test_forms_in_a_long_chunk_are_placed_as_in_short_ones():
    """A chunk of 2 KiB or more is searched another way (each form alone): the same forms,
    overlapping, one the start of another, side by side, are masked the same."""
    longer = SECRET + "-AND-MORE"
    secrets = secrets_of([SECRET, longer])
    pieces = [longer, SECRET, SECRET[::-1] + SECRET, base64.b64encode(SECRET.encode()).decode(),
              SECRET[:10] + longer, SECRET.encode().hex() + SECRET, quote(SECRET, safe="")]
    data = " ".join(p + " filler" * (i * 37 % 50) for i, p in enumerate(pieces * 6)).encode()
    assert len(data) > 4096
    whole = _masked(secrets, [data])
    assert whole[1] >= len(pieces) * 6 and SECRET.encode() not in whole[0]
    assert _masked(secrets, [data[i:i + 500] for i in range(0, len(data), 500)]) == whole
    assert _masked(secrets, [data[i:i + 3000] for i in range(0, len(data), 3000)]) == whole

def test_forms_that_start_one_another_many_times_over_compile():
    """Their tree of common starts would nest a group for each fork: too deep to compile
    (RecursionError), so they are one branch a form; the longest still wins."""
    pattern = _any_of([b"k" * i + b"!" for i in range(1, 600)])
    assert pattern.search(b"x" + b"k" * 5 + b"!k!").span() == (1, 7)
    values = ["pass-" + "x" * i for i in range(4, 80)]  # beyond the tree's depth, masked all the same
    out, count = _masked(secrets_of(values), [f"[{values[60]}] [{values[5]}] [{values[-1][::-1]}]".encode()])
    assert (out, count) == (b"[" + MASK + b"] [" + MASK + b"] [" + MASK + b"]", 3)


def test_line_breaks_percent_signs_and_runs_of_letters_without_a_credential_pass_unchanged():
    lines = "\n".join(["x" * 20 + "abc", "sk-ant-api03-TOP", "SECRETPUBLIC 100%", "%41%42%4", "QUJD" * 30,
                       "c2stYW50LWFwaTAz", "VE9QU0VDUkVUVkFMVUU=", "\\n", "end\r\n", "%"])
    for data in (lines.encode(), json.dumps(lines).encode(), json.dumps(json.dumps(lines)).encode()):
        for size in (1, 3, 64, len(data)):
            assert _masked(secrets_of([SECRET]), [data[i:i + size] for i in range(0, len(data), size)]) == (data, 0)


def _core(encode, bits: int, before: bytes, value: bytes, after: bytes = b"") -> tuple[str, bytes]:
    """`encode(before + value + after)`, and its characters that encode nothing but `value`."""
    text = encode(before + value + after)
    return text.decode(), text[-(-8 * len(before) // bits):8 * (len(before) + len(value)) // bits]


def _wrap_core(width: int, newline: str, found: tuple[str, bytes]) -> tuple[str, bytes]:
    return _wrapped(found[0], width, newline), found[1]


_ENCODINGS = {  # name: (value, bytes before it) -> (what is printed, what must not be readable of it)
    "plain": lambda v, pre: (v.decode(), v),
    "percent": lambda v, pre: (quote(v, safe=""), v),
    "percent lower": lambda v, pre: ("".join(f"%{b:02x}" for b in v), v),
    "base64": lambda v, pre: _core(base64.b64encode, 6, pre, v, b"~tail"),
    "base64 url-safe": lambda v, pre: _core(base64.urlsafe_b64encode, 6, pre, v, b"~tail"),
    "base64 mime": lambda v, pre: _core(base64.encodebytes, 6, b"=" * 57 + pre, v, b"~tail"),
    "pem crlf": lambda v, pre: _wrap_core(64, "\r\n", _core(base64.b64encode, 6, b"-" * 40 + pre, v)),
    "base32": lambda v, pre: _core(base64.b32encode, 5, pre, v, b"~tail"),
    "base32hex lower": lambda v, pre: _core(lambda d: base64.b32hexencode(d).lower(), 5, pre, v, b"~"),
    "base32 wrapped": lambda v, pre: _wrap_core(32, "\n", _core(base64.b32encode, 5, b"!" * 30 + pre, v)),
}


@settings(max_examples=80, deadline=None)
@given(secret=st.text(alphabet=string.ascii_letters + string.digits + "-_./+~", min_size=12, max_size=60),
       encoding=st.sampled_from(sorted(_ENCODINGS)), prefix=st.binary(max_size=4), levels=st.integers(0, 2),
       around=st.text(alphabet=" \n\\\"%aZ09{}:,", max_size=20), cuts=st.lists(st.integers(1, 200), max_size=8),
       hidden=st.lists(st.tuples(st.integers(0, 400), st.sampled_from(["\u200b", "\x1b[0m"])), max_size=3))
def test_property_each_encoding_is_masked_however_the_stream_is_cut(secret, encoding, prefix, levels, around, cuts,
                                                                   hidden):
    """Whatever the value, its place in the encoding, the hiding inside it, the JSON around
    it and the chunks: the mask takes what a decoder would read the value from, nothing
    else, and the output is the one of the stream in one piece."""
    assume(not re.fullmatch(r"[a-z]{1,15}|[0-9]{1,15}", secret))  # a common word or number is no credential
    form, core = _ENCODINGS[encoding](secret.encode(), prefix)
    for at, hiding in sorted(hidden, reverse=True):
        form = form[:at] + hiding + form[at:]
    for _ in range(levels):
        form = json.dumps(form)
    data = f"{around}<{form}>{around}".encode()
    chunks, at = [], 0
    for size in cuts:
        chunks.append(data[at:at + size])
        at += size
    out, count = _masked(secrets_of([secret]), [*chunks, data[at:]])
    assert (out, count) == _masked(secrets_of([secret]), [data])
    assert count >= 1 and out.startswith(f"{around}<".encode()) and out.endswith(f">{around}".encode())
    inside = out.split(b"<", 1)[1].rsplit(b">", 1)[0]
    readable = unquote_to_bytes(re.sub(rb"\\+[rn]|[\r\n]|\\+u200b|\\+u001b\[0m|\xe2\x80\x8b|\x1b\[0m", b"", inside))
    assert core not in readable, (form, out)


@settings(max_examples=100, deadline=None)
@given(text=st.text(alphabet="ab0+/=%\\\"unr\n\r \u200b\x1b[m{}", max_size=300),
       cuts=st.lists(st.integers(1, 50), max_size=10))
def test_property_text_without_a_credential_comes_out_byte_identical(text, cuts):
    data = text.encode()
    chunks, at = [], 0
    for size in cuts:
        chunks.append(data[at:at + size])
        at += size
    assert _masked(secrets_of([SECRET, "c2stYW50", "%41%42%43%44"]), [*chunks, data[at:]]) == (data, 0)


# ---------------------------------------------------------------- which values are credentials

def test_credentials_are_known_by_name_settings_are_not():
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GH_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD",
                 "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN", "github_token", "MY_APIKEY", "apiKey",
                 "GOOGLE_APPLICATION_CREDENTIALS", "SECRETS", "mysql_passwd"):
        assert is_credential(name), name
    for name in ("ANTHROPIC_MODEL", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL",
                 "GIT_AUTHOR_NAME", "TOKENIZERS_PARALLELISM", "KEYBOARD_LAYOUT", "HTTPS_PROXY", "PWD", "PATH"):
        assert not is_credential(name), name


def test_credential_values_are_named_ones_endpoint_keys_and_url_passwords():
    env = {"ANTHROPIC_API_KEY": "a" * 20, "ANTHROPIC_MODEL": "claude-sonnet-4-5",
           "ANTHROPIC_BASE_URL": "https://gateway.example/v1", "LOCAL_SERVER_MASTER": "m" * 12,
           "HTTPS_PROXY": "http://alice:pa%40ss-word@proxy:3128", "all_proxy": "bob:hunter22x@proxy:1080",
           "DATABASE_URL": "postgres://app:dbsecret99@db/app", "REPO": "git@github.com:o/r"}
    found = credential_values(env, ["LOCAL_SERVER_MASTER"])
    assert set(found) == {"a" * 20, "m" * 12, "pa%40ss-word", "pa@ss-word", "alice:pa%40ss-word", "hunter22x",
                          "bob:hunter22x", "dbsecret99", "app:dbsecret99"}
    # a short credential is none: masking "pw" would cut every word holding it
    assert secrets_of(credential_values({"HTTPS_PROXY": "http://u:pw@h:1"})) == ()


def test_a_command_reviewer_gets_the_proxy_without_its_password_unless_listed():
    env = {"PATH": "/bin", "HTTPS_PROXY": "http://alice:s3cretpass@proxy:3128", "no_proxy": "localhost"}
    assert reviewer_env(env, None, proxy_credentials=False) == {
        "PATH": "/bin", "HTTPS_PROXY": "http://proxy:3128", "no_proxy": "localhost"}
    assert reviewer_env(env, None)["HTTPS_PROXY"] == env["HTTPS_PROXY"]
    assert reviewer_env(env, ["HTTPS_PROXY"], proxy_credentials=False)["HTTPS_PROXY"] == env["HTTPS_PROXY"]
    assert without_userinfo("bob:pw@proxy:1080") == "proxy:1080"


# ---------------------------------------------------------------- end to end

OTHER = "sk-proj-OTHERVENDORSECRET42"  # another vendor's key


def _leaks(s, secret: str, *outputs: bytes) -> list[str]:
    """Where `secret` is readable after the round: in clear, or in a form masking covers
    (JSON-escaped, reversed), in any file of the series (workspace aside), report.html, the
    SARIF export or `outputs`."""
    report = s.spar("report", "reviews", "--out", str(s.tmp / "report.html"))
    assert report.returncode == 0, report.stderr.decode()
    sarif = s.spar("export", "--format", "sarif", str(s.repo / "reviews" / "r1"))
    assert sarif.returncode == 0, sarif.stderr.decode()
    files = {str(p): p.read_bytes() for p in (s.repo / "reviews").rglob("*") if p.is_file() and "workspace" not in p.parts}
    files.update({"report.html": (s.tmp / "report.html").read_bytes(), "sarif": sarif.stdout})
    files.update({f"output {i}": o for i, o in enumerate(outputs)})
    forms = [secret.encode(), secret[::-1].encode(), _escaped(secret).encode(), _escaped(secret, 2).encode(),
             secret[1:].encode()]
    return [where for where, data in files.items() for form in forms if form in data]


@pytest.mark.slow
def test_a_json_escaped_key_in_an_answer_is_masked_in_every_record_and_export(tmp_path):
    """claude's answer (JSON inside its result event's JSON string) writes the key with \\u
    escapes: decoded, it would be in clear. A command's answer escapes the backslash of an
    escape (\\u005cu0073...): the stream holds no escape of the key, the decoded answer does."""
    s = make_setup(tmp_path)
    s.env["ANTHROPIC_API_KEY"] = SECRET
    text = f"the key is {SECRET}"
    answer = json.dumps(result(head=s.head, findings=[finding(claim=text, evidence=text, failure_scenario=text)]))
    command = s.answer_reviewer("cmd", answer.replace(SECRET, "\\u005cu0073" + SECRET[1:]), copy=False)
    s.configure([{"name": "claude", "preset": "claude"}, command])
    s.scenario({"claude": {"raw_result": answer.replace(SECRET, _escaped(SECRET)), "structured": False}})
    proc = s.run()
    assert proc.returncode == 0, proc.stderr.decode()
    assert _leaks(s, SECRET, proc.stdout, proc.stderr) == []
    findings = json.loads((s.repo / "reviews" / "r1" / "findings.json").read_text())
    assert len(findings) >= 1 and all(f["claim"] == f"the key is {MASK.decode()}" for f in findings)
    rj = json.loads((s.repo / "reviews" / "r1" / "round.json").read_text())
    assert {r["name"]: r["attempts"][0].get("masked_secrets", 0) >= 1 for r in rj["reviewers"]} == \
        {"claude": True, "cmd": True}


@pytest.mark.slow
def test_every_reviewer_output_is_masked_for_every_credential_not_only_its_vendors(tmp_path):
    """codex prints claude's key (read from claude's /proc/PID/environ without the sandbox)
    and a CI token of the caller's, on stderr and in its answer."""
    s = make_setup(tmp_path)
    s.env.update(ANTHROPIC_API_KEY=SECRET, OPENAI_API_KEY=OTHER, CI_JOB_TOKEN="glcbt-CIJOBTOKEN1234")
    s.configure([{"name": "claude", "preset": "claude"}, {"name": "codex", "preset": "codex"}])
    stolen = f"read {SECRET} and glcbt-CIJOBTOKEN1234"
    s.scenario({"claude": {"stderr": f"saw {OTHER}\n", "result": result(head=s.head)},
                "codex": {"stderr": stolen + "\n", "result": result(head=s.head, findings=[finding(evidence=stolen)])}})
    proc = s.run()
    assert proc.returncode == 0, proc.stderr.decode()
    for secret in (SECRET, OTHER, "glcbt-CIJOBTOKEN1234"):
        assert _leaks(s, secret, proc.stdout, proc.stderr) == [], secret
    assert MASK in (s.repo / "reviews" / "r1" / "codex" / "stderr.log").read_bytes()
    assert MASK in (s.repo / "reviews" / "r1" / "claude" / "stderr.log").read_bytes()


@pytest.mark.slow
def test_settings_are_not_masked_only_credentials(tmp_path):
    """ANTHROPIC_MODEL and ANTHROPIC_BASE_URL are settings: the observed model and a
    finding naming them stay whole, and nothing is counted as masked."""
    s = make_setup(tmp_path)
    model, base = "claude-sonnet-4-5-20250929", "http://127.0.0.1:9/anthropic"
    s.env.update(ANTHROPIC_MODEL=model, ANTHROPIC_BASE_URL=base, OPENAI_BASE_URL=base + "/v1")
    s.configure([{"name": "claude", "preset": "claude"}])
    text = f"the client calls {base} with {model}"
    s.scenario({"claude": {"model": model, "result": result(head=s.head, findings=[finding(evidence=text)])}})
    proc = s.run()
    assert proc.returncode == 0, proc.stderr.decode()
    rj = json.loads((s.repo / "reviews" / "r1" / "round.json").read_text())
    assert rj["reviewers"][0]["observed_model"] == model
    assert rj["masked_secrets"] == 0 and "masked_secrets" not in rj["reviewers"][0]["attempts"][0]
    findings = json.loads((s.repo / "reviews" / "r1" / "findings.json").read_text())
    assert findings[0]["evidence"] == text


PROXY_PASSWORD = "prox-PASSWORD-7781"
ENV_SCRIPT = r'''
import json, os, sys
answer = json.loads(open(sys.argv[1], encoding="utf-8").read())
head = __import__("re").search(r"^- Head commit: `([0-9a-f]+)`", open(sys.argv[2]).read(), __import__("re").M).group(1)
answer["reviewed_head"] = head
answer["findings"][0]["evidence"] = "proxy: " + os.environ.get("HTTPS_PROXY", "none")
print(json.dumps(answer))
'''


@pytest.mark.slow
def test_a_proxy_password_reaches_no_command_reviewer_and_is_masked_everywhere(tmp_path):
    """A command reviewer gets the proxy's address only; a CLI reviewer that needs the proxy
    gets it whole, and what it prints of the password is masked."""
    s = make_setup(tmp_path)
    proxy = f"http://alice:{PROXY_PASSWORD}@127.0.0.1:3128"
    s.env["HTTPS_PROXY"] = proxy
    script = s.answers / "env.py"
    script.write_text(ENV_SCRIPT, encoding="utf-8")
    (s.answers / "a.json").write_text(json.dumps(result(findings=[finding()])), encoding="utf-8")
    s.configure([{"name": "cmd", "preset": "command", "argv": [sys.executable, str(script),
                                                                str(s.answers / "a.json"), "{prompt}"]}],
                passthrough=None)
    proc = s.run()
    assert proc.returncode == 0, proc.stderr.decode()
    findings = json.loads((s.repo / "reviews" / "r1" / "findings.json").read_text())
    assert findings[0]["evidence"] == "proxy: http://127.0.0.1:3128"

    shutil.rmtree(s.repo / "reviews" / "r1")
    s.configure([{"name": "claude", "preset": "claude"}], passthrough=[*FAKE_ENV, "HTTPS_PROXY"])
    s.scenario({"claude": {"stderr": f"via {proxy}\n",
                           "result": result(head=s.head, findings=[finding(evidence=f"proxy {proxy}")])}})
    proc = s.run()
    assert proc.returncode == 0, proc.stderr.decode()
    assert _leaks(s, PROXY_PASSWORD, proc.stdout, proc.stderr) == []
    assert "alice:" not in json.loads((s.repo / "reviews" / "r1" / "findings.json").read_text())[0]["evidence"]


@pytest.mark.slow
def test_doctor_masks_a_key_the_endpoint_echoes_back(tmp_path):
    """The endpoint lists the key it was sent among its models: `spar run` masks such
    text, and doctor, text and JSON alike, does too."""
    s = make_setup(tmp_path)
    key = "sk-local-ECHOEDKEY-5521"
    s.env["LOCAL_LLM"] = key  # an api_key_env whose name does not say key
    with FakeEndpoint([Reply()], models=(f"{key}-model", _escaped(key))) as fake:
        s.configure([{"name": "ep", "preset": "openai-compatible", "base_url": fake.base_url, "model": "m1",
                      "api_key_env": "LOCAL_LLM"}])
        shown = [s.spar("doctor", "--format", fmt) for fmt in ("text", "json")]
    for out in shown:
        assert b"GET /models does not list model m1" in out.stdout, out.stdout.decode()
        assert key.encode() not in out.stdout + out.stderr
        assert b"masked by spar" in out.stdout


@pytest.mark.slow
def test_encoded_reversed_and_hidden_forms_of_a_key_leave_no_log(tmp_path):
    """The reviewer prints its key in base64, reversed, with zero-width characters and split
    by ANSI escapes, on stderr and stdout: the logs hold masks."""
    s = make_setup(tmp_path)
    s.env["ANTHROPIC_API_KEY"] = SECRET
    s.configure([{"name": "claude", "preset": "claude"}])
    hidden = [base64.b64encode(b"k=" + SECRET.encode()).decode(), base64.urlsafe_b64encode(SECRET.encode()).decode(),
              SECRET[::-1], "\u200b".join(SECRET), SECRET[:5] + "\x1b[1m" + SECRET[5:]]
    s.scenario({"claude": {"stderr": "\n".join(hidden) + "\n",
                           "result": result(head=s.head, findings=[finding(evidence=" ".join(hidden))])}})
    proc = s.run()
    assert proc.returncode == 0, proc.stderr.decode()
    logs = b"".join(p.read_bytes() for p in (s.repo / "reviews" / "r1" / "claude").glob("*.log"))
    for form in hidden:
        assert form.encode() not in logs and form.encode("unicode_escape") not in logs, form
    assert logs.count(MASK) >= 2 * len(hidden)
    assert _leaks(s, SECRET, proc.stdout, proc.stderr) == []


def test_a_long_credential_costs_memory_in_proportion_to_its_length_and_is_masked_cut_anywhere():
    """Every start of every form kept whole would grow with the square of a credential's length
    (an RSA key in a variable: 1.2 GB for 6 KB); starts past _SHORT_START bytes are looked up
    by their first bytes instead. A form cut after more than that many bytes is still held
    back and masked."""
    from spar.proc.masking import _SHORT_START, _compiled

    def kept_bytes(length: int) -> int:
        forms = _compiled(secrets_of([("k7" * length)[:length]]))
        return sum(map(len, forms.prefixes)) + sum(len(f) for group in forms.long_starts.values() for f in group)
    assert kept_bytes(4000) < 5 * kept_bytes(1000)  # linear (quadratic would be 16x)
    secret = "".join(chr(65 + (i * 7919) % 26) for i in range(3000))
    data = ("before " + secret + " after").encode()
    for cut in (7 + _SHORT_START - 1, 7 + _SHORT_START + 1, 7 + 2999, 1500):
        masker = Masker(secrets_of([secret]))
        out = masker.feed(data[:cut]) + masker.feed(data[cut:]) + masker.flush()
        assert out == b"before " + MASK + b" after", cut
