"""`dataclass`, `field` and `replace` for spar's record-like classes, cheap to create at import.

The standard `dataclasses.dataclass` costs ~0.3 ms a class when its module is imported
(one `exec` per generated method, and a look at each annotation for ClassVar, InitVar
and KW_ONLY) and imports `inspect` with it (~5 ms: ast, dis, tokenize); `spar run`
imports some thirty such classes before its first reviewer starts. This one does what
spar uses of it, and nothing else:

- `__init__` with every annotated field of the class itself, in order, defaults and
  `field(default_factory=...)` included (one `exec` per class);
- `__repr__` and `__eq__` as dataclasses writes them (`__eq__`: same class, fields in
  order), and `__hash__` None, or of the fields for `frozen=True`;
- `frozen=True`: assigning or deleting a field raises `FrozenInstanceError` (an
  AttributeError, as the standard one);
- `slots=True`: the class is made again with `__slots__` of its fields.

No inheritance of fields, ClassVar, InitVar, `__post_init__` or keyword-only fields:
spar's classes use none of them (a base class with fields is refused). Pure: no I/O,
so `spar/judge/` may use it. `typing.dataclass_transform` tells mypy that it acts
like the standard decorator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast, dataclass_transform, overload

T = TypeVar("T")

FIELDS = "__plain_fields__"  # the field names of a class, in order


class FrozenInstanceError(AttributeError):
    """A field of a frozen instance was assigned or deleted."""


class _Factory:
    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


def field(*, default_factory: Callable[[], T]) -> T:
    """A field whose default is made anew for each instance by `default_factory`."""
    return _Factory(default_factory)  # type: ignore[return-value]  # the decorator replaces it


def _repr(self: Any) -> str:
    inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in getattr(self, FIELDS))
    return f"{type(self).__qualname__}({inner})"


def _eq(self: Any, other: object) -> Any:  # bool, or NotImplemented
    if other.__class__ is not self.__class__:
        return NotImplemented
    names = getattr(self, FIELDS)
    return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)


def _hash(self: Any) -> int:
    return hash(tuple(getattr(self, n) for n in getattr(self, FIELDS)))


def _frozen_setattr(self: Any, name: str, value: object) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _init(cls: type, names: list[str], defaults: dict[str, Any], frozen: bool) -> Callable[..., None]:
    """`__init__` for `names`, compiled once: as fast to call as the standard one."""
    params = []
    body = []
    scope: dict[str, Any] = {"_set": object.__setattr__}
    for name in names:
        if name not in defaults:
            params.append(name)
            value = name
        elif isinstance(defaults[name], _Factory):
            scope[f"_make_{name}"] = defaults[name].make
            params.append(f"{name}=_MISSING")
            value = f"_make_{name}() if {name} is _MISSING else {name}"
        else:
            scope[f"_default_{name}"] = defaults[name]
            params.append(f"{name}=_default_{name}")
            value = name
        body.append(f"  _set(self, {name!r}, {value})" if frozen else f"  self.{name} = {value}")
    scope["_MISSING"] = _MISSING
    source = f"def __init__(self, {', '.join(params)}):\n" + ("\n".join(body) or "  pass") + "\n"
    exec(source, scope)
    init: Callable[..., None] = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


_MISSING = object()


def _process(cls: type[T], frozen: bool, slots: bool) -> type[T]:
    for base in cls.__mro__[1:]:
        if FIELDS in base.__dict__:
            raise TypeError(f"{cls.__qualname__}: spar.plain classes do not inherit fields")
    # the class's own annotations (inspect.get_annotations would import inspect)
    names = list(cls.__dict__.get("__annotations__", {}))  # noqa: RUF063
    defaults = {}
    for name in names:
        if name in cls.__dict__:
            defaults[name] = cls.__dict__[name]
        elif defaults:
            raise TypeError(f"{cls.__qualname__}: field {name!r} without a default follows one with a default")
    if slots:
        namespace = {k: v for k, v in cls.__dict__.items() if k not in names and k not in ("__dict__", "__weakref__")}
        namespace["__slots__"] = tuple(names)
        maker: Any = type(cls)  # the class's metaclass
        cls = cast("type[T]", maker(cls.__name__, cls.__bases__, namespace))
    else:
        for name, value in defaults.items():
            if isinstance(value, _Factory):
                delattr(cls, name)  # as dataclasses: no class attribute for a factory's field
    setattr(cls, FIELDS, tuple(names))
    cls.__init__ = _init(cls, names, defaults, frozen)  # type: ignore[method-assign]
    if "__repr__" not in cls.__dict__:
        cls.__repr__ = _repr  # type: ignore[method-assign]
    if "__eq__" not in cls.__dict__:
        cls.__eq__ = _eq  # type: ignore[method-assign]
    cls.__hash__ = _hash if frozen else None  # type: ignore[assignment]
    if frozen:
        cls.__setattr__ = _frozen_setattr  # type: ignore[method-assign]
        cls.__delattr__ = _frozen_delattr  # type: ignore[method-assign]
    return cls


@overload
def dataclass(cls: type[T], /) -> type[T]: ...
@overload
def dataclass(*, frozen: bool = False, slots: bool = False) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(field_specifiers=(field,))
def dataclass(cls: type[T] | None = None, /, *, frozen: bool = False,
              slots: bool = False) -> type[T] | Callable[[type[T]], type[T]]:
    """`@dataclass`, `@dataclass(frozen=True)`, `@dataclass(slots=True)`: see the module."""
    if cls is not None:
        return _process(cls, frozen, slots)
    return lambda c: _process(c, frozen, slots)


def replace(obj: T, **changes: Any) -> T:
    """A copy of `obj` with `changes` (as dataclasses.replace: factories are not run again)."""
    values = {name: getattr(obj, name) for name in getattr(obj, FIELDS)}
    unknown = set(changes) - set(values)
    if unknown:
        raise TypeError(f"{type(obj).__qualname__} has no field {sorted(unknown)[0]!r}")
    values.update(changes)
    return type(obj)(**values)


def asdict(obj: Any) -> dict[str, Any]:
    """The fields of `obj` as a dict (not recursive: spar's uses hold plain values)."""
    return {name: getattr(obj, name) for name in getattr(obj, FIELDS)}
