"""spar.plain: the class decorator spar uses instead of dataclasses (what spar relies on of it)."""

from __future__ import annotations

import pytest

from spar.plain import FrozenInstanceError, asdict, dataclass, field, replace


@dataclass
class Row:
    """Fields with and without defaults."""

    name: str
    count: int = 0
    tags: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Point:
    """Frozen: hashable, not assignable."""

    x: int
    y: int = 0


@dataclass(slots=True)
class Slim:
    """Slotted."""

    a: int
    b: list[int] = field(default_factory=list)

    def total(self) -> int:
        return self.a + sum(self.b)


def test_init_defaults_and_factories():
    row = Row("a")
    assert (row.name, row.count, row.tags) == ("a", 0, [])
    assert Row("b", 2, ["x"]).tags == ["x"]
    assert Row(name="c", tags=["y"]).tags == ["y"]
    assert Row("a").tags is not Row("a").tags  # a new list for each instance
    assert Row.count == 0 and not hasattr(Row, "tags")  # as dataclasses: no class attribute for a factory
    with pytest.raises(TypeError):
        Row()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Row("a", nope=1)  # type: ignore[call-arg]


def test_repr_eq_and_hash_as_dataclasses():
    assert repr(Row("a", 1)) == "Row(name='a', count=1, tags=[])"
    assert Row("a", 1) == Row("a", 1)
    assert Row("a", 1) != Row("a", 2)
    assert Row("a") != ("a", 0, [])
    assert Row.__hash__ is None  # mutable and compared by value: not hashable
    assert hash(Point(1, 2)) == hash(Point(1, 2))
    assert {Point(1, 2): "p"}[Point(1, 2)] == "p"


def test_frozen_refuses_assignment_and_deletion():
    p = Point(1)
    with pytest.raises(FrozenInstanceError):
        p.x = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del p.y  # type: ignore[misc]
    assert (p.x, p.y) == (1, 0)


def test_slots():
    s = Slim(1, [2, 3])
    assert s.total() == 6 and Slim.__slots__ == ("a", "b")
    assert not hasattr(s, "__dict__")
    with pytest.raises(AttributeError):
        s.other = 1  # type: ignore[attr-defined]
    assert Slim(1) == Slim(1, [])


def test_replace_and_asdict():
    row = Row("a", 1, ["t"])
    other = replace(row, count=5)
    assert other == Row("a", 5, ["t"]) and row.count == 1
    assert other.tags is row.tags  # as dataclasses.replace: fields are not copied
    with pytest.raises(TypeError):
        replace(row, nope=1)
    assert asdict(Point(3, 4)) == {"x": 3, "y": 4}


def test_no_inherited_fields_and_no_default_before_a_required_field():
    with pytest.raises(TypeError):
        @dataclass
        class Child(Row):
            """Fields of a base are not supported."""

            extra: int = 0
    with pytest.raises(TypeError):
        @dataclass
        class Bad:
            """A required field after a default."""

            a: int = 0
            b: int  # type: ignore[misc]
