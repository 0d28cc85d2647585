"""The jail's seccomp filter read instruction by instruction (a small classic-BPF reader of
the four operations it uses): every architecture of the one keyring table gets EPERM for
add_key, request_key and keyctl, and nothing else; keyctl's own number is the table's."""

from __future__ import annotations

import struct

import pytest

from spar.proc import keyring
from spar.proc.keyring import KEYRING_CALLS
from spar.proc.sandbox import keyring_filter

ALLOW, EPERM = 0x7FFF0000, 0x00050001


def _run(program: bytes, arch: int, nr: int) -> int:
    """What the filter answers a call `nr` of architecture `arch` (seccomp_data: nr at 0, arch at 4)."""
    code = list(struct.iter_unpack("=HBBI", program))
    data = {0: nr, 4: arch}
    acc, pc = 0, 0
    while True:
        op, jt, jf, k = code[pc]
        if op == 0x20:  # BPF_LD | BPF_W | BPF_ABS
            acc = data[k]
        elif op == 0x54:  # BPF_ALU | BPF_AND | BPF_K
            acc &= k
        elif op == 0x15:  # BPF_JMP | BPF_JEQ | BPF_K
            pc += jt if acc == k else jf
        elif op == 0x06:  # BPF_RET | BPF_K
            return k
        else:
            raise AssertionError(f"an operation the filter does not use: {op:#x}")
        pc += 1


@pytest.mark.parametrize("machine", sorted(KEYRING_CALLS))
def test_each_architectures_keyring_calls_are_refused_and_no_other(machine):
    arch, calls = KEYRING_CALLS[machine]
    program = keyring_filter()
    for nr in calls:
        assert _run(program, arch, nr) == EPERM
    others = set(range(460)) - set(calls)
    assert {_run(program, arch, nr) for nr in others} == {ALLOW}


def test_x32_calls_on_x86_64_are_refused_too():
    arch, calls = KEYRING_CALLS["x86_64"]
    assert all(_run(keyring_filter(), arch, nr | 0x40000000) == EPERM for nr in calls)


def test_ppc64_big_endian_has_its_own_architecture():
    """ppc64 and ppc64le share call numbers but not their AUDIT_ARCH: each is in the filter."""
    assert KEYRING_CALLS["ppc64"][0] != KEYRING_CALLS["ppc64le"][0]
    assert _run(keyring_filter(), KEYRING_CALLS["ppc64"][0], 271) == EPERM


def test_keyctl_number_is_the_tables():
    import platform
    found = KEYRING_CALLS.get(platform.machine())
    assert (found[1][2] if found else None) == keyring._NUMBER
