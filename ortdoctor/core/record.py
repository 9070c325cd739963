"""``@record``: ``@dataclass(frozen=True)`` without the cost of creating the class, or of importing
``dataclasses``.

``dataclasses`` writes the source of ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__`` and ``__delattr__`` for every class and compiles it with ``exec``, and (before
Python 3.13) asks ``inspect.signature`` for the class's docstring: 0.6-1 ms per class, tens of
milliseconds for the frozen classes ``check`` imports. Importing it imports ``inspect`` (and with it
``ast``, ``dis`` and ``tokenize``): ~9 ms more on a 2-core machine. ``@record`` builds the same methods
as closures over the class's field names, in tens of microseconds, from its own field descriptions
(:func:`field`), and imports only ``abc``, ``operator`` and ``_thread``.

It still leaves the class looking like a frozen dataclass to the ``dataclasses`` module:
``__dataclass_fields__`` (real :class:`dataclasses.Field` objects) and ``__dataclass_params__`` (frozen)
are built on first read, which only code that has imported ``dataclasses`` does. So
``dataclasses.fields``, ``replace``, ``asdict``, ``is_dataclass`` and a ``@dataclass`` subclass work as
they do on a dataclass. Instances pickle and copy like a frozen dataclass's (their state is their
``__dict__``). The package itself uses :func:`replace` and :func:`field_names` from here.

Supported: what this package uses of ``@dataclass(frozen=True)`` and ``@dataclass(frozen=True,
order=True)``: positional and keyword arguments, defaults, ``field(default_factory=..., init=...,
repr=..., compare=..., hash=...)`` (this module's :func:`field` or ``dataclasses.field``),
``__post_init__``, ``ClassVar`` annotations, fields inherited from a frozen dataclass or record base.
Not supported (a ``TypeError`` says so): ``InitVar``, ``KW_ONLY`` and ``field(kw_only=True)``.

Where it differs from ``dataclasses``: ``__init__`` takes ``(*args, **kwargs)`` and binds them itself
(the errors are the interpreter's ``TypeError`` texts); ``inspect.signature(cls)`` still shows the
fields (``__signature__``, built on first use), and a class without a docstring gets the dataclass's
``Name(fields...)`` docstring on first read. ``__eq__`` compares tuples of the fields, as Python
3.10-3.12's dataclasses do (3.13's compare field by field, so a NaN held by both sides differs there).
"""

from __future__ import annotations

import abc
import sys
from _thread import get_ident
from operator import attrgetter

TYPE_CHECKING = False
if TYPE_CHECKING:
    import dataclasses
    from collections.abc import Callable, Mapping
    from typing import Any, TypeVar, overload

    if sys.version_info >= (3, 11):
        from typing import dataclass_transform
    else:
        from typing_extensions import dataclass_transform

    _T = TypeVar("_T")
else:
    # At run time it only decorates, and importing typing for it would cost ~5% of a check: the type
    # checker reads the branch above.
    def dataclass_transform(**_):
        return lambda f: f

__all__ = ["MISSING", "field", "field_names", "record", "replace"]


class _Sentinel:
    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


MISSING: Any = _Sentinel("MISSING")  # no default; dataclasses.MISSING where dataclasses sees the field
_REQUIRED = _Sentinel("<required>")
_FACTORY = _Sentinel("<factory>")  # the default ``inspect.signature`` shows for a default_factory, as dataclasses'
_FIELD = "field"
_CLASSVAR = "classvar"


class _Spec:
    """One field, as ``dataclasses.Field`` describes it (the same attribute names), without dataclasses."""

    __slots__ = (
        "compare",
        "default",
        "default_factory",
        "hash",
        "init",
        "kind",
        "kw_only",
        "metadata",
        "name",
        "repr",
        "type",
    )

    def __init__(self, default: Any = MISSING, default_factory: Any = MISSING, init: bool = True,
                 repr: bool = True, hash: bool | None = None, compare: bool = True,
                 metadata: Mapping[Any, Any] | None = None, kw_only: Any = MISSING) -> None:
        self.name = ""
        self.type: Any = None
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.hash = hash
        self.compare = compare
        self.metadata = metadata
        self.kw_only = kw_only
        self.kind = _FIELD

    def __repr__(self) -> str:
        return (f"field(name={self.name!r}, default={self.default!r}, default_factory={self.default_factory!r}, "
                f"init={self.init}, repr={self.repr}, hash={self.hash}, compare={self.compare})")


if TYPE_CHECKING:  # the overloads are the type checker's; the function is below
    @overload
    def field(*, default: _T, init: bool = ..., repr: bool = ..., hash: bool | None = ...,
              compare: bool = ..., metadata: Mapping[Any, Any] | None = ...) -> _T: ...

    @overload
    def field(*, default_factory: Callable[[], _T], init: bool = ..., repr: bool = ...,
              hash: bool | None = ..., compare: bool = ..., metadata: Mapping[Any, Any] | None = ...) -> _T: ...

    @overload
    def field(*, init: bool = ..., repr: bool = ..., hash: bool | None = ...,
              compare: bool = ..., metadata: Mapping[Any, Any] | None = ...) -> Any: ...


def field(*, default: Any = MISSING, default_factory: Any = MISSING, init: bool = True,
          repr: bool = True, hash: bool | None = None, compare: bool = True,
          metadata: Mapping[Any, Any] | None = None) -> Any:
    """``dataclasses.field`` for a ``@record`` class (the same arguments but ``kw_only``)."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return _Spec(default, default_factory, init, repr, hash, compare, metadata)


if TYPE_CHECKING:  # the overloads are the type checker's; the function is below
    @overload
    def record(cls: type[_T], /) -> type[_T]: ...

    @overload
    def record(*, order: bool = False) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls: type[_T] | None = None, /, *, order: bool = False) -> Any:
    """``@record`` is ``@dataclass(frozen=True)``; ``@record(order=True)`` adds ``<``, ``<=``, ``>``, ``>=``."""
    if cls is None:
        return lambda c: _build(c, order)
    return _build(cls, order)


def replace(obj: _T, /, **changes: Any) -> _T:
    """``dataclasses.replace`` for a record (the same errors), without importing dataclasses; any other
    dataclass instance is handed to ``dataclasses.replace``."""
    specs: dict[str, _Spec] | None = getattr(type(obj), "__record_fields__", None)
    if specs is None:
        import dataclasses

        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    for spec in specs.values():
        if spec.kind is not _FIELD:
            continue
        if not spec.init:
            if spec.name in changes:
                raise ValueError(f"field {spec.name} is declared with init=False, it cannot be specified with "
                                 "replace()")
            continue
        if spec.name not in changes:
            changes[spec.name] = getattr(obj, spec.name)
    return obj.__class__(**changes)


def field_names(obj: Any) -> tuple[str, ...] | None:
    """The names ``dataclasses.fields(obj)`` would give for a record or dataclass instance (None for
    anything else, and for a class), without importing dataclasses for a record."""
    if isinstance(obj, type):
        return None
    names: tuple[str, ...] | None = getattr(type(obj), "__record_names__", None)
    if names is not None:
        return names
    dc = sys.modules.get("dataclasses")  # a dataclass instance implies dataclasses was imported
    if dc is not None and dc.is_dataclass(obj):
        return tuple(f.name for f in dc.fields(obj))
    return None


def _build(cls: type[_T], order: bool) -> type[_T]:
    # ~70 classes are built on every `check` start: one pass over the fields, no generator per property
    namespace = cls.__dict__
    fields = _inherited_fields(cls)
    annotations: dict[str, Any] = namespace.get("__annotations__", {})
    dc = sys.modules.get("dataclasses")  # a dataclasses.Field can only be in a body if it was imported
    for name, annotation in annotations.items():
        fields[name] = _own_field(cls, name, annotation, namespace.get(name, MISSING), dc)
    for name, value in namespace.items():
        if name not in annotations and (type(value) is _Spec or (dc is not None and isinstance(value, dc.Field))):
            raise TypeError(f"{name!r} is a field but has no type annotation")

    real: list[_Spec] = []
    init: list[_Spec] = []
    shown: list[str] = []
    compared: list[str] = []
    hashed: list[str] = []
    for f in fields.values():
        if f.kind is not _FIELD:
            continue
        real.append(f)
        if f.init:
            init.append(f)
        if f.repr:
            shown.append(f.name)
        if f.compare:
            compared.append(f.name)
        if f.compare if f.hash is None else f.hash:
            hashed.append(f.name)
    _check_default_order(init)
    qualname = cls.__qualname__
    names = tuple([f.name for f in real])

    _put(cls, "__init__", _make_init(cls, real, init))
    _put(cls, "__repr__", _make_repr(cls, tuple(shown)))
    key = _key(tuple(compared))
    _put(cls, "__eq__", _make_eq(qualname, key))
    if order:
        for name, method in _make_order(qualname, key):
            if _put(cls, name, method):
                raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}. "
                                "Consider using functools.total_ordering")
    for name, method in _make_frozen(cls, names):
        if _put(cls, name, method):
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    class_hash = namespace.get("__hash__", MISSING)
    if class_hash is MISSING or (class_hash is None and "__eq__" in namespace):  # no explicit __hash__
        cls.__hash__ = _make_hash(qualname, key if hashed == compared else _key(tuple(hashed)))  # type: ignore[method-assign]
    _put(cls, "__match_args__", tuple([f.name for f in init]))
    if sys.version_info >= (3, 13):
        _put(cls, "__replace__", replace)
    if "__signature__" not in namespace:
        cls.__signature__ = _LazySignature(fields)  # type: ignore[attr-defined]
    if not namespace.get("__doc__"):
        cls.__doc__ = _LazyDoc()  # type: ignore[assignment]
    cls.__record_fields__ = fields  # type: ignore[attr-defined]
    cls.__record_names__ = names  # type: ignore[attr-defined]
    cls.__dataclass_fields__ = _ForDataclasses(cls, "__dataclass_fields__")  # type: ignore[attr-defined]
    cls.__dataclass_params__ = _ForDataclasses(cls, "__dataclass_params__", order)  # type: ignore[attr-defined]
    if isinstance(cls, abc.ABCMeta):
        abc.update_abstractmethods(cls)
    return cls


class _ForDataclasses:
    """``__dataclass_fields__`` or ``__dataclass_params__`` of a record: what the ``dataclasses`` module
    reads, built on first read (only code that imported ``dataclasses`` asks) and then kept on the class."""

    def __init__(self, cls: type, attr: str, order: bool = False) -> None:
        self.cls = cls
        self.attr = attr
        self.order = order

    def __get__(self, obj: Any, owner: type) -> Any:
        import dataclasses

        if self.attr == "__dataclass_params__":
            kwargs = {"init": True, "repr": True, "eq": True, "order": self.order, "unsafe_hash": False,
                      "frozen": True}
            if sys.version_info >= (3, 12):
                kwargs.update(match_args=True, kw_only=False, slots=False, weakref_slot=False)
            value: Any = dataclasses._DataclassParams(**kwargs)  # type: ignore[attr-defined]
        else:
            specs: dict[str, _Spec] = self.cls.__record_fields__  # type: ignore[attr-defined]
            value = {name: _to_dataclass_field(spec) for name, spec in specs.items()}
        setattr(self.cls, self.attr, value)
        return value


def _to_dataclass_field(spec: _Spec) -> dataclasses.Field[Any]:
    import dataclasses

    f: dataclasses.Field[Any] = dataclasses.field(
        default=dataclasses.MISSING if spec.default is MISSING else spec.default,
        default_factory=dataclasses.MISSING if spec.default_factory is MISSING else spec.default_factory,
        init=spec.init, repr=spec.repr, hash=spec.hash, compare=spec.compare, metadata=spec.metadata)
    f.name = spec.name
    f.type = spec.type
    f.kw_only = False
    f._field_type = (dataclasses._FIELD if spec.kind is _FIELD  # type: ignore[attr-defined]
                     else dataclasses._FIELD_CLASSVAR)  # type: ignore[attr-defined]
    return f


def _from_dataclass_field(f: Any) -> _Spec:
    """A ``dataclasses.Field`` (from ``dataclasses.field()`` in a body, or a dataclass base) as a spec."""
    import dataclasses

    def own(value: Any) -> Any:
        return MISSING if value is dataclasses.MISSING else value

    spec = _Spec(own(f.default), own(f.default_factory), f.init, f.repr, f.hash, f.compare,
                 f.metadata or None, own(f.kw_only))
    spec.name = f.name
    spec.type = f.type
    if getattr(f, "_field_type", None) is dataclasses._FIELD_CLASSVAR:  # type: ignore[attr-defined]
        spec.kind = _CLASSVAR
    return spec


def _inherited_fields(cls: type) -> dict[str, _Spec]:
    fields: dict[str, _Spec] = {}
    for base in cls.__mro__[-1:0:-1]:
        own = base.__dict__
        if "__record_fields__" in own:
            fields.update(own["__record_fields__"])
        elif "__dataclass_fields__" in own:  # a stdlib dataclass base
            if not base.__dataclass_params__.frozen:  # type: ignore[attr-defined]
                raise TypeError("cannot inherit frozen dataclass from a non-frozen one")
            fields.update((name, _from_dataclass_field(f)) for name, f in own["__dataclass_fields__"].items())
    return fields


def _own_field(cls: type, name: str, annotation: Any, default: Any, dc: Any) -> _Spec:
    # Under `from __future__ import annotations` every annotation is a string, and a string naming none
    # of the markers holds no "Var" nor "KW_ONLY": most fields skip _special's parsing.
    marker = None if type(annotation) is str and "Var" not in annotation and "KW_ONLY" not in annotation \
        else _special(annotation)
    if marker in ("InitVar", "KW_ONLY"):
        raise TypeError(f"{cls.__qualname__}.{name}: @record does not support {marker}; use @dataclass")
    from_field = False  # the class attribute is a field() (ours or dataclasses'): replaced by its default
    if type(default) is _Spec:
        f = default
        from_field = True
    elif dc is not None and isinstance(default, dc.Field):
        f = _from_dataclass_field(default)
        from_field = True
    else:
        f = _Spec(default)
    if f.kw_only is True:
        raise TypeError(f"{cls.__qualname__}.{name}: @record does not support kw_only fields; use @dataclass")
    f.name = name
    f.type = annotation
    f.kw_only = False
    if marker == "ClassVar":
        if f.default_factory is not MISSING:
            raise TypeError(f"field {name} cannot have a default factory")
        f.kind = _CLASSVAR
        return f
    f.kind = _FIELD
    if f.default is not MISSING and type(f.default).__hash__ is None:
        raise ValueError(f"mutable default {type(f.default)} for field {name} is not allowed: use default_factory")
    # The class attribute is the default, as with dataclasses; a default_factory leaves none.
    if from_field:
        if f.default is MISSING:
            delattr(cls, name)
        else:
            setattr(cls, name, f.default)
    return f


def _special(annotation: Any) -> str | None:
    """``ClassVar``, ``InitVar`` or ``KW_ONLY`` when the annotation is one (also as a string, as every
    annotation is under ``from __future__ import annotations``)."""
    if isinstance(annotation, str):
        head = annotation.partition("[")[0].strip().rpartition(".")[2]
        return head if head in ("ClassVar", "InitVar", "KW_ONLY") else None
    dc = sys.modules.get("dataclasses")
    if dc is not None:
        if annotation is dc.KW_ONLY:
            return "KW_ONLY"
        if annotation is dc.InitVar or type(annotation) is dc.InitVar:
            return "InitVar"
    typing = sys.modules.get("typing")
    if typing is not None and (annotation is typing.ClassVar
                               or getattr(annotation, "__origin__", None) is typing.ClassVar):
        return "ClassVar"
    return None


def _check_default_order(init: list[_Spec]) -> None:
    seen: _Spec | None = None
    for f in init:
        if f.default is not MISSING or f.default_factory is not MISSING:
            seen = f
        elif seen is not None:
            if sys.version_info >= (3, 13):
                raise TypeError(f"non-default argument {f.name!r} follows default argument {seen.name!r}")
            raise TypeError(f"non-default argument {f.name!r} follows default argument")


def _put(cls: type, name: str, value: Any) -> bool:
    """Set ``name`` unless the class body defines it (as dataclasses do); True when it does."""
    if name in cls.__dict__:
        return True
    setattr(cls, name, value)
    return False


def _method(fn: Any, qualname: str, name: str) -> Any:
    fn.__name__ = name
    fn.__qualname__ = f"{qualname}.{name}"
    return fn


# --------------------------------------------------------------------------------------------------
# __init__
# --------------------------------------------------------------------------------------------------

def _make_init(cls: type, real: list[_Spec], init: list[_Spec]) -> Any:
    qualname = cls.__qualname__
    names = tuple([f.name for f in init])
    count = len(names)
    # The instance's __dict__ starts as a copy of this template, in field order: the defaults, a marker
    # for a factory and for a required argument. As with dataclasses, an init=False field is set only
    # by its factory: one with a plain default reads the class attribute, one with neither stays unset.
    template: dict[str, Any] = {}
    factories: list[tuple[str, Any]] = []
    for f in real:
        if f.default_factory is not MISSING:
            template[f.name] = _FACTORY
            factories.append((f.name, f.default_factory))
        elif f.init:
            template[f.name] = _REQUIRED if f.default is MISSING else f.default
    size = len(template)
    factory_items = tuple(factories)
    required = tuple([f.name for f in init if f.default is MISSING and f.default_factory is MISSING])
    # the required arguments a call with i positional arguments must name as keywords
    # made on first use for each count (a class with n fields would otherwise build n + 1 sets at import)
    needed: dict[int, frozenset[str]] = {}
    allowed = frozenset(names)
    hidden = len(real) != count  # init=False fields: a keyword naming one is as unknown as a typo
    post_init = hasattr(cls, "__post_init__")
    setdict = object.__setattr__

    hidden_factories = tuple([(name, factory) for name, factory in factories if name not in allowed])

    def __init__(self: Any, /, *args: Any, **kwargs: Any) -> None:
        values = template.copy()
        given = len(args)
        if given == count and not kwargs:  # every argument by position: nothing can be wrong or missing
            values.update(zip(names, args, strict=True))
            for name, factory in hidden_factories:
                values[name] = factory()
        else:
            if given:
                if given > count:
                    _bind_error(qualname, init, args, kwargs)
                values.update(zip(names, args, strict=False))  # fewer args than names
                if kwargs:
                    if not kwargs.keys().isdisjoint(names[:given]):
                        _bind_error(qualname, init, args, kwargs)
                    values.update(kwargs)
            elif kwargs:
                values.update(kwargs)
            if len(values) != size or (hidden and kwargs and not kwargs.keys() <= allowed) \
                    or not kwargs.keys() >= (needed[given] if given in needed else _needed(needed, required, names, given)):
                _bind_error(qualname, init, args, kwargs)
            for name, factory in factory_items:
                if values[name] is _FACTORY:
                    values[name] = factory()
        setdict(self, "__dict__", values)
        if post_init:
            self.__post_init__()

    return _method(__init__, qualname, "__init__")


def _needed(cache: dict[int, frozenset[str]], required: tuple[str, ...], names: tuple[str, ...],
            given: int) -> frozenset[str]:
    """The required arguments a call with ``given`` positional arguments must name as keywords."""
    found = cache[given] = frozenset(required) - frozenset(names[:given])
    return found


def _bind_error(qualname: str, init: list[_Spec], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Raise the ``TypeError`` the interpreter raises for a generated ``__init__(self, a, b=...)``,
    checking in its order: keywords, the number of positional arguments, the missing ones."""
    names = [f.name for f in init]
    given = len(args)
    for key in kwargs:
        if key not in names:
            raise TypeError(f"{qualname}.__init__() got an unexpected keyword argument {key!r}")
        if names.index(key) < given:
            raise TypeError(f"{qualname}.__init__() got multiple values for argument {key!r}")
    if given > len(names):
        defaults = sum(1 for f in init if f.default is not MISSING or f.default_factory is not MISSING)
        most = len(names) + 1
        takes = f"from {most - defaults} to {most}" if defaults else str(most)
        plural = "s" if defaults or most != 1 else ""
        raise TypeError(f"{qualname}.__init__() takes {takes} positional argument{plural} "
                        f"but {given + 1} were given")
    missing = [repr(f.name) for i, f in enumerate(init) if i >= given and f.name not in kwargs
               and f.default is MISSING and f.default_factory is MISSING]
    if len(missing) == 1:
        listed = missing[0]
    elif len(missing) == 2:
        listed = f"{missing[0]} and {missing[1]}"
    else:
        listed = ", ".join(missing[:-1]) + f", and {missing[-1]}"
    plural = "" if len(missing) == 1 else "s"
    raise TypeError(f"{qualname}.__init__() missing {len(missing)} required positional argument{plural}: {listed}")


# --------------------------------------------------------------------------------------------------
# The other methods
# --------------------------------------------------------------------------------------------------

def _key(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of these attributes (what dataclasses compare and hash)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        name = names[0]
        return lambda obj: (getattr(obj, name),)
    return lambda obj: ()


_repr_running: set[tuple[int, int]] = set()


def _make_repr(cls: type, names: tuple[str, ...]) -> Any:
    def __repr__(self: Any) -> str:
        # dataclasses' guard against a value that holds the instance itself
        key = (id(self), get_ident())
        if key in _repr_running:
            return "..."
        _repr_running.add(key)
        try:
            inner = ", ".join([f"{name}={getattr(self, name)!r}" for name in names])
        finally:
            _repr_running.discard(key)
        return f"{self.__class__.__qualname__}({inner})"

    return _method(__repr__, cls.__qualname__, "__repr__")


def _make_eq(qualname: str, key: Callable[[Any], tuple[Any, ...]]) -> Any:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented

    return _method(__eq__, qualname, "__eq__")


def _make_order(qualname: str, key: Callable[[Any], tuple[Any, ...]]) -> list[tuple[str, Any]]:
    def __lt__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return key(self) < key(other)
        return NotImplemented

    def __le__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return key(self) <= key(other)
        return NotImplemented

    def __gt__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return key(self) > key(other)
        return NotImplemented

    def __ge__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return key(self) >= key(other)
        return NotImplemented

    return [(fn.__name__, _method(fn, qualname, fn.__name__)) for fn in (__lt__, __le__, __gt__, __ge__)]


def _make_hash(qualname: str, key: Callable[[Any], tuple[Any, ...]]) -> Any:
    def __hash__(self: Any) -> int:
        return hash(key(self))

    return _method(__hash__, qualname, "__hash__")


def _make_frozen(cls: Any, names: tuple[str, ...]) -> list[tuple[str, Any]]:
    fields = frozenset(names)

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in fields:
            from dataclasses import FrozenInstanceError  # only on this error: the import costs ~9 ms

            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in fields:
            from dataclasses import FrozenInstanceError

            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return [(fn.__name__, _method(fn, cls.__qualname__, fn.__name__)) for fn in (__setattr__, __delattr__)]


class _LazySignature:
    """``inspect.signature(cls)``: the fields as parameters, built (and ``inspect`` used) on first read.
    Only the class has it: an instance (a callable one's ``__call__``) keeps its own."""

    def __init__(self, fields: dict[str, _Spec]) -> None:
        self.fields = fields
        self.signature: Any = None

    def __get__(self, obj: Any, owner: type) -> Any:
        if obj is not None:
            raise AttributeError("__signature__")
        if self.signature is not None:
            return self.signature
        import inspect

        params = []
        for f in self.fields.values():
            if f.kind is not _FIELD or not f.init:
                continue
            default = _FACTORY if f.default_factory is not MISSING else f.default
            params.append(inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                            default=inspect.Parameter.empty if default is MISSING else default,
                                            annotation=f.type))
        self.signature = inspect.Signature(params, return_annotation=None)  # as dataclasses' __init__ has
        return self.signature


class _LazyDoc:
    """The docstring dataclasses give a class without one: ``Name(field: type = default, ...)``."""

    def __get__(self, obj: Any, owner: type) -> str:
        text = owner.__name__ + str(owner.__signature__).replace(" -> None", "")  # type: ignore[attr-defined]
        if owner.__dict__.get("__doc__") is self:
            owner.__doc__ = text
        return text
