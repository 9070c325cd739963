"""``@record`` behaves as ``@dataclass(frozen=True)``: each class body below is made twice, once by each
decorator, and every observable behaviour the package (and a user of its data) can reach is compared."""

from __future__ import annotations

import ast
import copy
import dataclasses
import importlib
import inspect
import pickle
import pkgutil
import sys
from collections.abc import Callable
from dataclasses import FrozenInstanceError, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

import ortdoctor
from ortdoctor.core.record import record

PACKAGE = Path(ortdoctor.__file__).resolve().parent


class Pair:
    """One class body as a frozen dataclass (``dc``) and as a record (``rec``)."""

    def __init__(self, dc: type, rec: type) -> None:
        # Any: each is a class made at run time, whose fields the type checker cannot know
        self.dc: Any = dc
        self.rec: Any = rec


def _pair(decorated: object) -> Pair:
    """A class decorated by ``_twice``: the type checker keeps the class, not the ``Pair`` it became."""
    assert isinstance(decorated, Pair)
    return decorated


def _twice(order: bool = False, base: tuple[type, type] | None = None) -> Callable[[type], Pair]:
    """Decorate a copy of the class body with each decorator. Both classes live at module level under
    their own names (``<Name>DC``, ``<Name>REC``) so that pickle finds them."""

    def make(cls: type) -> Pair:
        made: list[type] = []
        for suffix, decorate, parent in (("DC", dataclass(frozen=True, order=order), base and base[0]),
                                         ("REC", record(order=order), base and base[1])):
            name = cls.__name__ + suffix
            body = {k: copy.copy(v) if isinstance(v, dataclasses.Field) else v
                    for k, v in cls.__dict__.items() if k not in ("__dict__", "__weakref__")}
            body["__qualname__"] = name
            body["__annotations__"] = dict(inspect.get_annotations(cls))
            made.append(decorate(type(name, (parent,) if parent else (), body)))
            globals()[name] = made[-1]
        return Pair(*made)

    return make


@_twice()
class Simple:
    """Two fields, one with a default."""

    a: int
    b: str = "x"


@_twice()
class One:
    n: int  # no docstring: dataclasses write one


@_twice()
class Empty:
    pass


@_twice()
class Factories:
    items: list[int] = field(default_factory=list)
    tags: dict[str, int] = field(default_factory=dict)
    n: int = 0


@_twice()
class Flags:
    name: str
    secret: str = field(default="", repr=False, compare=False)
    weight: float = field(default=1.0, compare=False)
    pinned: tuple[str, ...] = field(default=(), hash=False)


@_twice()
class NotInit:
    a: int
    derived: int = field(init=False, default=0)
    made: list[int] = field(init=False, default_factory=list)


@_twice()
class PostInit:
    a: int
    b: int | None = None

    def __post_init__(self) -> None:
        if self.b is None:
            object.__setattr__(self, "b", self.a * 2)


@_twice()
class WithClassVar:
    LIMIT: ClassVar[int] = 3
    a: int


@_twice(order=True)
class Ordered:
    major: int
    minor: int = 0
    label: str = field(default="", compare=False)


@_twice()
class Base:
    a: int
    b: int = 1


@_twice(base=(_pair(Base).dc, _pair(Base).rec))
class Child:
    c: int = 2


@_twice()
class Callable_:
    """A callable record: its instances keep their own signature."""

    scale: int = 2

    def __call__(self, x: int) -> int:
        return x * self.scale


PAIRS: dict[str, Pair] = {name: _pair(cls) for name, cls in {"Simple": Simple, "One": One, "Empty": Empty, "Factories": Factories, "Flags": Flags,
                                                                  "NotInit": NotInit, "PostInit": PostInit, "WithClassVar": WithClassVar, "Ordered": Ordered,
                                                                  "Child": Child, "Callable": Callable_}.items()}

# Calls for each class: valid ones and each kind of wrong one (the TypeError texts must match too).
CALLS: dict[str, list[tuple[tuple[Any, ...], dict[str, Any]]]] = {
    "Simple": [((1,), {}), ((1, "y"), {}), ((), {"a": 1}), ((), {"b": "z", "a": 2}), ((1,), {"b": "q"}),
               ((), {}), ((1, "y", 3), {}), ((1,), {"a": 2}), ((1,), {"c": 3}), ((), {"b": "z"}),
               ((1, 2, 3, 4), {"a": 1}), ((1, 2, 3), {"zz": 1})],
    "One": [((1,), {}), ((), {"n": 2}), ((), {}), ((1, 2), {}), ((), {"m": 1})],
    "Empty": [((), {}), ((1,), {}), ((), {"a": 1})],
    "Factories": [((), {}), (([1],), {}), ((), {"tags": {"k": 1}}), (([1], {}, 3, 4), {}), ((), {"x": 1})],
    "Flags": [(("n",), {}), (("n", "s", 2.0, ("p",)), {}), ((), {"name": "n", "secret": "s"}), ((), {})],
    "NotInit": [((1,), {}), ((), {"a": 1}), ((1, 2), {}), ((1,), {"derived": 3}), ((), {"made": []})],
    "PostInit": [((1,), {}), ((1, 5), {}), ((), {"b": 1}), ((), {"a": 3, "b": None})],
    "WithClassVar": [((1,), {}), ((), {"LIMIT": 4, "a": 1}), ((1, 2), {})],
    "Ordered": [((1,), {}), ((1, 2, "x"), {}), ((), {"minor": 1}), ((1, 2, "x", 4), {})],
    "Child": [((1,), {}), ((1, 2, 3), {}), ((), {"a": 1, "c": 5}), ((), {"c": 1}), ((1, 2, 3, 4), {})],
    "Callable": [((), {}), ((3,), {})],
}


def _outcome(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str]:
    """What the call gave, with the class's own name taken out (the two classes differ only by it)."""
    try:
        result = cls(*args, **kwargs)
    except TypeError as exc:
        return "TypeError", str(exc).replace(cls.__qualname__, "C")
    return "ok", repr(result).replace(cls.__qualname__, "C")


def _instances(cls: type, kind: str) -> list[Any]:
    out = []
    for args, kwargs in CALLS[kind]:
        try:
            out.append(cls(*copy.deepcopy(args), **copy.deepcopy(kwargs)))
        except TypeError:
            pass
    return out


CASES = [pytest.param(name, id=name) for name in PAIRS]


@pytest.mark.parametrize("kind", CASES)
def test_construction_and_its_errors_match(kind: str) -> None:
    pair = PAIRS[kind]
    for args, kwargs in CALLS[kind]:
        assert _outcome(pair.rec, args, kwargs) == _outcome(pair.dc, args, kwargs), (args, kwargs)


@pytest.mark.parametrize("kind", CASES)
def test_equality_hash_and_repr_match(kind: str) -> None:
    pair = PAIRS[kind]
    dcs, recs = _instances(pair.dc, kind), _instances(pair.rec, kind)
    assert len(dcs) == len(recs) > 0
    for i, (d1, r1) in enumerate(zip(dcs, recs, strict=True)):
        assert repr(r1).replace(pair.rec.__qualname__, "C") == repr(d1).replace(pair.dc.__qualname__, "C")
        assert vars(r1) == vars(d1)
        assert list(vars(r1)) == list(vars(d1))  # attributes set in field order
        for d2, r2 in zip(dcs[i:], recs[i:], strict=True):
            assert (r1 == r2) == (d1 == d2)
            assert (r1 != r2) == (d1 != d2)
        assert r1 == copy.deepcopy(r1)
        assert r1 != d1  # another class is never equal, as between two dataclasses
        assert r1.__eq__(vars(r1)) is NotImplemented
        try:
            expected: Any = hash(d1)
        except TypeError as exc:  # a dict or list field: unhashable in both
            expected = str(exc)
        try:
            got: Any = hash(r1)
        except TypeError as exc:
            got = str(exc)
        assert got == expected  # the same tuple is hashed


@pytest.mark.parametrize("kind", CASES)
def test_dataclasses_functions_see_the_same_class(kind: str) -> None:
    pair = PAIRS[kind]
    is_dataclass = dataclasses.is_dataclass(pair.rec)  # a name of its own: the check would narrow pair.rec
    assert is_dataclass

    def describe(fields: tuple[dataclasses.Field[Any], ...]) -> list[tuple[Any, ...]]:
        return [(f.name, f.type, f.default, f.default_factory, f.init, f.repr, f.compare, f.hash, f.kw_only)
                for f in fields]

    assert describe(dataclasses.fields(pair.rec)) == describe(dataclasses.fields(pair.dc))
    assert list(pair.rec.__dataclass_fields__) == list(pair.dc.__dataclass_fields__)  # ClassVars included
    assert pair.rec.__dataclass_params__.frozen is True
    assert pair.rec.__dataclass_params__.order == pair.dc.__dataclass_params__.order
    assert pair.rec.__match_args__ == pair.dc.__match_args__
    assert str(inspect.signature(pair.rec)) == str(inspect.signature(pair.dc))
    assert (pair.rec.__doc__ or "").replace(pair.rec.__name__, "C") == (pair.dc.__doc__ or "").replace(
        pair.dc.__name__, "C")
    for name in pair.dc.__dataclass_fields__:  # a default is the class attribute; a factory leaves none
        assert hasattr(pair.rec, name) == hasattr(pair.dc, name), name
        if hasattr(pair.dc, name):
            assert getattr(pair.rec, name) == getattr(pair.dc, name)
    for d, r in zip(_instances(pair.dc, kind), _instances(pair.rec, kind), strict=True):
        assert dataclasses.asdict(r) == dataclasses.asdict(d)
        assert dataclasses.astuple(r) == dataclasses.astuple(d)
        is_dataclass = dataclasses.is_dataclass(r)  # a name of its own: the check would narrow r
        assert is_dataclass
        if "a" in pair.dc.__match_args__:
            assert vars(dataclasses.replace(r, a=7)) == vars(dataclasses.replace(d, a=7))
        assert dataclasses.replace(r) == r
        with pytest.raises(TypeError) as by_rec:
            dataclasses.replace(r, no_such_field=1)
        with pytest.raises(TypeError) as by_dc:
            dataclasses.replace(d, no_such_field=1)
        assert str(by_rec.value).replace(pair.rec.__qualname__, "C") == str(by_dc.value).replace(
            pair.dc.__qualname__, "C")


def _set_one(obj: object, name: str) -> None:
    setattr(obj, name, 1)


@pytest.mark.parametrize("kind", CASES)
def test_frozen_errors_match(kind: str) -> None:
    pair = PAIRS[kind]
    for d, r in zip(_instances(pair.dc, kind), _instances(pair.rec, kind), strict=True):
        for name in [*pair.dc.__dataclass_fields__, "not_a_field"]:
            for action in (_set_one, delattr):
                with pytest.raises(FrozenInstanceError) as by_rec:
                    action(r, name)
                with pytest.raises(FrozenInstanceError) as by_dc:
                    action(d, name)
                assert str(by_rec.value) == str(by_dc.value)


@pytest.mark.parametrize("kind", CASES)
@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickle_and_copy_round_trip(kind: str, protocol: int) -> None:
    for r in _instances(PAIRS[kind].rec, kind):
        back = pickle.loads(pickle.dumps(r, protocol=protocol))
        assert type(back) is type(r)
        assert vars(back) == vars(r)
        assert vars(copy.copy(r)) == vars(r)
        assert vars(copy.deepcopy(r)) == vars(r)


def test_ordering_matches() -> None:
    dcs, recs = _instances(_pair(Ordered).dc, "Ordered"), _instances(_pair(Ordered).rec, "Ordered")
    for d1, r1 in zip(dcs, recs, strict=True):
        for d2, r2 in zip(dcs, recs, strict=True):
            assert (r1 < r2, r1 <= r2, r1 > r2, r1 >= r2) == (d1 < d2, d1 <= d2, d1 > d2, d1 >= d2)
    assert sorted(recs, reverse=True) == [recs[i] for i in sorted(
        range(len(dcs)), key=lambda i: dcs[i], reverse=True)]
    with pytest.raises(TypeError):
        _ = recs[0] < _pair(Ordered).dc(1)
    with pytest.raises(TypeError):
        _ = _pair(Simple).rec(1) < _pair(Simple).rec(2)  # no order unless asked for


def test_post_init_runs_after_the_fields_are_set() -> None:
    assert _pair(PostInit).rec(3).b == 6
    assert _pair(PostInit).rec(3, 1).b == 1
    assert dataclasses.replace(_pair(PostInit).rec(3), a=5).b == 6  # replace passes b on, as with dataclasses


def test_factories_give_each_instance_its_own_value() -> None:
    a, b = _pair(Factories).rec(), _pair(Factories).rec()
    assert a.items == []
    assert a.items is not b.items
    assert _pair(NotInit).rec(1).made is not _pair(NotInit).rec(1).made


def test_match_statement() -> None:
    simple = _pair(Simple).rec
    match simple(1, "y"):
        case simple(a, b):
            assert (a, b) == (1, "y")
        case _:
            pytest.fail("no match")


def test_a_dataclass_can_subclass_a_record() -> None:
    @dataclass(frozen=True)
    class Sub(_pair(Simple).rec):  # type: ignore[misc]
        c: int = 3

    assert repr(Sub(1)) == "test_a_dataclass_can_subclass_a_record.<locals>.Sub(a=1, b='x', c=3)"
    with pytest.raises(TypeError, match="cannot inherit non-frozen dataclass from a frozen one"):
        @dataclass
        class Mutable(_pair(Simple).rec):  # type: ignore[misc]
            c: int = 3


def test_a_plain_subclass_may_set_its_own_attributes() -> None:
    class Plain(_pair(Simple).rec):  # type: ignore[misc]
        pass

    p = Plain(1)
    p.extra = 1  # a frozen dataclass allows this too: only the fields and the class itself are frozen
    assert p.extra == 1
    with pytest.raises(FrozenInstanceError):
        p.a = 2


def test_callable_record_instances_keep_their_own_signature() -> None:
    assert str(inspect.signature(_pair(Callable_).rec)) == "(scale: 'int' = 2) -> None"
    assert str(inspect.signature(_pair(Callable_).rec())) == "(x: 'int') -> 'int'"


@pytest.mark.skipif(sys.version_info < (3, 13), reason="copy.replace is new in Python 3.13")
def test_copy_replace() -> None:
    assert copy.replace(_pair(Simple).rec(1), b="z") == _pair(Simple).rec(1, "z")  # type: ignore[attr-defined]


def _class_error(decorate: Callable[[type], type], body: dict[str, Any]) -> tuple[str, str]:
    try:
        decorate(type("Bad", (), dict(body)))
    except (TypeError, ValueError) as exc:
        return type(exc).__name__, str(exc)
    return "ok", ""


@pytest.mark.parametrize("body", [
    pytest.param({"__annotations__": {"a": "int", "b": "int"}, "a": 1}, id="non-default-after-default"),
    pytest.param({"__annotations__": {"a": "list[int]"}, "a": []}, id="mutable-default"),
    pytest.param({"__annotations__": {}, "a": field(default=1)}, id="field-without-annotation"),
    pytest.param({"__annotations__": {"a": "int"}, "__setattr__": lambda self, n, v: None}, id="own-setattr"),
])
def test_class_errors_match(body: dict[str, Any]) -> None:
    assert _class_error(record, body) == _class_error(dataclass(frozen=True), body)


def test_order_refuses_an_own_comparison_as_dataclasses_do() -> None:
    body = {"__annotations__": {"a": "int"}, "__lt__": lambda self, other: True}
    kind, text = _class_error(record(order=True), body)
    assert (kind, text) == ("TypeError", "Cannot overwrite attribute __lt__ in class Bad. "
                                         "Consider using functools.total_ordering")
    # Python 3.13 writes the same without the full stop
    assert _class_error(dataclass(frozen=True, order=True), body)[1].replace(". ", " ") == text.replace(". ", " ")


def test_own_methods_are_kept() -> None:
    @record
    class Own:
        a: int

        def __repr__(self) -> str:
            return "mine"

        def __eq__(self, other: object) -> bool:
            return True

    assert repr(Own(1)) == "mine"
    assert Own(1) == Own(2)
    assert hash(Own(1)) == hash((1,))  # an own __eq__ still gets the generated __hash__, as with dataclasses


@pytest.mark.parametrize("annotation", ["InitVar[int]", "dataclasses.KW_ONLY"])
def test_unsupported_annotations_say_so(annotation: str) -> None:
    with pytest.raises(TypeError, match="@record does not support"):
        record(type("Unsupported", (), {"__annotations__": {"a": annotation}}))


def _is_record(obj: object) -> bool:
    init = getattr(obj, "__dict__", {}).get("__init__")
    return isinstance(obj, type) and "__dataclass_fields__" in obj.__dict__ \
        and init is not None and getattr(init, "__code__", None) is not None \
        and init.__code__.co_filename == sys.modules[record.__module__].__file__


def test_every_package_record_is_what_dataclass_would_make() -> None:
    """Each ``@record`` class of the package, made again from its own body by ``@dataclass``: the same
    fields, defaults, signature and match arguments."""
    generated = {"__dict__", "__weakref__", "__init__", "__repr__", "__eq__", "__hash__", "__setattr__",
                 "__delattr__", "__match_args__", "__signature__", "__replace__", "__lt__", "__le__", "__gt__",
                 "__ge__", "__dataclass_fields__", "__dataclass_params__", "__doc__"}
    seen = 0
    for info in pkgutil.walk_packages(ortdoctor.__path__, "ortdoctor."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if not (_is_record(obj) and obj.__module__ == module.__name__):
                continue
            body = {k: v for k, v in obj.__dict__.items() if k not in generated}
            for f in obj.__dataclass_fields__.values():
                if f.default_factory is not dataclasses.MISSING or not (f.init and f.repr and f.compare) \
                        or f.hash is not None:
                    body[f.name] = copy.copy(f)
            again: Any = dataclass(frozen=True, order=obj.__dataclass_params__.order)(
                type(obj.__name__, obj.__bases__, body))
            assert str(inspect.signature(obj)) == str(inspect.signature(again)), obj
            assert obj.__match_args__ == again.__match_args__, obj

            def describe(cls: type) -> list[tuple[Any, ...]]:
                return [(f.name, f.type, f.default, f.default_factory, f.init, f.repr, f.compare, f.hash)
                        for f in dataclasses.fields(cls)]

            assert describe(obj) == describe(again), obj
            seen += 1
    assert seen >= 100  # every frozen class of the package but the pytest plugin's


def _frozen_dataclass_decorators(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and ast.unparse(deco.func) in ("dataclass", "dataclasses.dataclass") \
                        and any(k.arg == "frozen" for k in deco.keywords):
                    lines.append(deco.lineno)
    return lines


# The pytest plugin is loaded into every test session and imports nothing of ortdoctor until asked
# (tests/test_pytest_plugin.py::test_inert_unless_asked), so its one class stays a stdlib dataclass.
EXEMPT = {"pytest_plugin.py"}


def test_no_frozen_dataclass_left_in_the_package() -> None:
    """Frozen classes are ``@record`` (see :mod:`ortdoctor.core.record`): each ``@dataclass(frozen=True)``
    costs ~1 ms at import."""
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}"
             for path in sorted(PACKAGE.rglob("*.py")) if str(path.relative_to(PACKAGE)) not in EXEMPT
             for line in _frozen_dataclass_decorators(ast.parse(path.read_text(encoding="utf-8")))]
    assert not found, "use @record instead of @dataclass(frozen=True): " + ", ".join(found)
