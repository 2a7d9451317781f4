"""Typed job arguments: handler parameters annotated with a dataclass or a pydantic model.

Theory of operation: `typed_arguments(func)` reads the handler's signature once, at
registration, and finds the parameters whose annotation is a dataclass, a pydantic model
(anything with pydantic v2's `model_validate`, `model_dump` and `model_fields`: pydantic
itself is never imported here), `X | None` of one, or `list[X]` of one (nested: `list[X]
| None`, `list[list[X]]`). None when there is none: plain handlers pay nothing.

At enqueue (`ArgumentTypes.to_json`), each typed argument given as an instance or a dict
is validated and turned into plain JSON values:
- a dataclass from a dict: every key must be one of its `__init__` fields and every field
  without a default must be there (`TypeError` otherwise, naming the argument and the
  fields); the instance is then built, so its `__post_init__` runs (a `ValueError` or
  `TypeError` it raises names the argument). Its fields are stored by name; fields that
  are themselves typed (a dataclass, a model, an optional or a list of one) go the same
  way, recursively. Other field values are stored as they are and must be JSON values
  (a `datetime` is refused by the JSON check: JSON has none; store an ISO string, or use a
  pydantic model, which writes and reads datetimes itself). Field types are not checked
  (dataclasses never check them); a pydantic model checks its own.
- a pydantic model from a dict: `model_validate`, whose `ValidationError` (a `ValueError`)
  is raised naming the argument; an instance is taken as it is. Stored as
  `model_dump(mode="json")`.
At run time (`ArgumentTypes.from_json`), the stored JSON is turned back into instances
before the handler is called: a dataclass by `cls(**fields)`, a model by `model_validate`.
A stored value that no longer fits (the class changed since the enqueue) fails the attempt
like an exception of the handler (retried by its RetryPolicy).

Not converted: `*args` and `**kwargs` parameters; `dict[str, X]`, `tuple[X, ...]`, unions
of two classes. An annotation Python cannot resolve (a name imported under
`TYPE_CHECKING` only; under `from __future__ import annotations`, a class defined inside a
function) leaves that parameter plain.

Pure: no I/O. Imports only the standard library.
"""

from __future__ import annotations

import dataclasses
import inspect
import operator
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol


class Codec(Protocol):
    """How one annotated value goes to JSON and back."""

    def build(self, value: object, where: str) -> object:
        """`value` (an instance or its JSON form) as the annotated type, validated.
        Raises TypeError or ValueError naming the argument by its path `where`
        ("order", "order.lines[1]")."""
        ...

    def dump(self, value: Any) -> object:
        """A built value as plain JSON values."""
        ...


def _same_kind(error: Exception, message: str) -> Exception:
    """A plain ValueError or TypeError, as `error` is one, with `message` (a subclass, such
    as pydantic's ValidationError, may not take a message alone)."""
    return ValueError(message) if isinstance(error, ValueError) else TypeError(message)


def _kind_name(value: object) -> str:
    return type(value).__name__


@dataclasses.dataclass(eq=False)
class _Dataclass:
    cls: type
    _fields: dict[str, Codec | None] | None = None
    _required: frozenset[str] = frozenset()
    _typed: tuple[tuple[str, Codec], ...] = ()  # the fields with a codec

    def fields(self) -> dict[str, Codec | None]:
        """The `__init__` fields, each with its codec (None: stored as it is); resolved on
        first use, so a dataclass that refers to itself (a tree) does not loop."""
        if self._fields is None:
            hints = _hints(self.cls)
            init = [f for f in dataclasses.fields(self.cls) if f.init]
            self._required = frozenset(
                f.name for f in init if f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING)
            fields = {f.name: codec_for(hints.get(f.name, f.type)) for f in init}
            self._typed = tuple((key, codec) for key, codec in fields.items()
                                if codec is not None)
            self._fields = fields
        return self._fields

    def build(self, value: object, where: str) -> object:
        fields = self.fields()
        name = self.cls.__name__
        if isinstance(value, self.cls):
            # Its typed fields may hold dicts (a dataclass never checks): build those, and
            # a copy of it around them; the caller's instance is never changed.
            changed: dict[str, object] = {}
            for key, codec in self._typed:
                inner = getattr(value, key)
                built = codec.build(inner, f"{where}.{key}")
                if built is not inner:
                    changed[key] = built
            if not changed:
                return value
            return dataclasses.replace(value, **changed)  # type: ignore[type-var]
        if type(value) is not dict and not isinstance(value, Mapping):
            raise TypeError(
                f"argument {where!r} must be an instance of {name} or a dict of its "
                f"fields; got {_kind_name(value)}")
        keys = value.keys()
        if not keys <= fields.keys():
            unknown = sorted(str(key) for key in keys if key not in fields)
            raise TypeError(
                f"argument {where!r}: {name} has no field(s) "
                f"{', '.join(map(repr, unknown))}; its fields are "
                f"{', '.join(map(repr, fields))}")
        if not self._required <= keys:
            missing = sorted(self._required - keys)
            raise TypeError(
                f"argument {where!r}: {name} is missing the field(s) "
                f"{', '.join(map(repr, missing))}")
        given = dict(value)
        for key, codec in self._typed:
            if key in given:
                given[key] = codec.build(given[key], f"{where}.{key}")
        try:
            return self.cls(**given)
        except (TypeError, ValueError) as error:
            raise _same_kind(
                error, f"argument {where!r}: {name}({', '.join(given)}) refused: {error}"
            ) from None

    def dump(self, value: Any) -> object:
        fields = self.fields()
        out = {key: getattr(value, key) for key in fields}
        for key, codec in self._typed:
            if out[key] is not None:
                out[key] = codec.dump(out[key])
        return out


@dataclasses.dataclass(eq=False)
class _Model:
    cls: Any  # a pydantic BaseModel subclass

    def build(self, value: object, where: str) -> object:
        name = self.cls.__name__
        if isinstance(value, self.cls):
            return value
        if type(value) is not dict and not isinstance(value, Mapping):
            raise TypeError(
                f"argument {where!r} must be an instance of {name} or a dict of its "
                f"fields; got {_kind_name(value)}")
        try:
            return self.cls.model_validate(dict(value))
        except ValueError as error:  # pydantic's ValidationError is a ValueError
            raise ValueError(f"argument {where!r} is not a valid {name}: {error}") from None

    def dump(self, value: Any) -> object:
        return value.model_dump(mode="json")


@dataclasses.dataclass(eq=False)
class _Optional:
    inner: Codec

    def build(self, value: object, where: str) -> object:
        return None if value is None else self.inner.build(value, where)

    def dump(self, value: Any) -> object:
        return None if value is None else self.inner.dump(value)


@dataclasses.dataclass(eq=False)
class _List:
    inner: Codec

    def build(self, value: object, where: str) -> object:
        if not isinstance(value, list | tuple):
            raise TypeError(f"argument {where!r} must be a list; got {_kind_name(value)}")
        built = [self.inner.build(item, f"{where}[{index}]") for index, item in enumerate(value)]
        if type(value) is list and all(map(operator.is_, built, value)):
            return value  # nothing to build: the same list, so its holder is not copied
        return built

    def dump(self, value: Any) -> object:
        return [self.inner.dump(item) for item in value]


def _is_model(annotation: object) -> bool:
    return isinstance(annotation, type) and all(
        hasattr(annotation, attribute)
        for attribute in ("model_validate", "model_dump", "model_fields"))


def codec_for(annotation: object) -> Codec | None:
    """The codec of a parameter's (or a field's) resolved annotation; None: a plain
    value."""
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return _Dataclass(annotation)
    if _is_model(annotation):
        return _Model(annotation)
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if origin is list and len(arguments) == 1:
        inner = codec_for(arguments[0])
        return None if inner is None else _List(inner)
    if origin in (typing.Union, types.UnionType) and type(None) in arguments:
        others = [argument for argument in arguments if argument is not type(None)]
        if len(others) == 1:
            inner = codec_for(others[0])
            return None if inner is None else _Optional(inner)
    return None


def _hints(obj: object) -> dict[str, Any]:
    """Resolved annotations of a function or class; those that cannot be resolved (a
    name imported under TYPE_CHECKING) are left out, one by one."""
    try:
        return typing.get_type_hints(obj)
    except Exception:  # any annotation Python cannot evaluate: resolve one by one
        pass
    raw: dict[str, Any] = dict(getattr(obj, "__annotations__", {}) or {})
    namespace = dict(getattr(obj, "__globals__", {}) or {})
    module = inspect.getmodule(obj)
    if module is not None:
        namespace = {**vars(module), **namespace}
    resolved: dict[str, Any] = {}
    for name, annotation in raw.items():
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, namespace)  # what get_type_hints does
            except Exception:
                continue
        resolved[name] = annotation
    return resolved


class ArgumentTypes:
    """The typed parameters of one handler (see the module docstring)."""

    def __init__(self, job: str, positional: Sequence[tuple[str, Codec | None]],
                 by_name: Mapping[str, Codec]) -> None:
        self.job = job
        self.positional = tuple(positional)  # by position: (parameter name, codec)
        self.by_name = dict(by_name)

    def _convert(self, args: Sequence[object], kwargs: Mapping[str, object],
                 step: Callable[[Codec, object, str], object]
                 ) -> tuple[list[object], dict[str, object]]:
        new_args = list(args)
        for index, (name, codec) in enumerate(self.positional[:len(new_args)]):
            if codec is not None:
                new_args[index] = step(codec, new_args[index], name)
        new_kwargs = dict(kwargs)
        for name, value in kwargs.items():
            codec = self.by_name.get(name)
            if codec is not None:
                new_kwargs[name] = step(codec, value, name)
        return new_args, new_kwargs

    def to_json(self, args: Sequence[object], kwargs: Mapping[str, object]
                ) -> tuple[list[object], dict[str, object]]:
        """The arguments with every typed one validated and as plain JSON values.

        Raises:
            TypeError: naming the job and the argument: not an instance nor a dict, an
                unknown or a missing field of a dataclass.
            ValueError: naming the job and the argument: a pydantic model's validation,
                or a dataclass's own `__post_init__` check.
        """
        def step(codec: Codec, value: object, where: str) -> object:
            try:
                return codec.dump(codec.build(value, where))
            except (TypeError, ValueError) as error:
                raise _same_kind(error, f"job {self.job!r}: {error}; nothing was stored"
                                 ) from None
        return self._convert(args, kwargs, step)

    def from_json(self, args: Sequence[object], kwargs: Mapping[str, object]
                  ) -> tuple[list[object], dict[str, object]]:
        """The stored arguments with every typed one as an instance, for the handler.

        Raises:
            TypeError, ValueError: a stored value that no longer fits its class.
        """
        return self._convert(args, kwargs, lambda codec, value, where: codec.build(
            value, where))


def typed_arguments(job: str, func: Callable[..., object]) -> ArgumentTypes | None:
    """The typed parameters of `func`, or None if it has none (or no readable
    signature)."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    hints = _hints(func)
    positional: list[tuple[str, Codec | None]] = []
    by_name: dict[str, Codec] = {}
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        codec = codec_for(hints.get(parameter.name, parameter.annotation))
        if parameter.kind is not parameter.KEYWORD_ONLY:
            positional.append((parameter.name, codec))
        if codec is not None and parameter.kind is not parameter.POSITIONAL_ONLY:
            by_name[parameter.name] = codec
    if not by_name and all(codec is None for _, codec in positional):
        return None
    return ArgumentTypes(job, positional, by_name)
