"""Options that several commands share, declared once as a dataclass of typer options (an option
group: the storage, a study's options) and taken by a command as one parameter.

    @app.command()
    @option_groups
    def create(study: StudyOpt, spec: StudyOptions, storage: StorageChoice) -> None: ...

`option_groups` puts each group's fields in the group parameter's place in the command's signature
(so --help lists them there, with their own help) and hands the command the group built from the
values given. Adding an option to a group adds it to every command that takes the group. A group
parameter has no default: a command that takes one starts its parameters with `*,`, so that the
group may follow options that have one.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from typing import Any, Callable


class OptionGroup:
    """Marks a dataclass whose fields are typer options (`name: Annotated[type, typer.Option(...)] =
    default`), taken by a command as one parameter (option_groups)."""


def group_fields(group: type) -> list[inspect.Parameter]:
    """A group's fields as the keyword parameters typer reads: name, Annotated option, default."""
    hints = typing.get_type_hints(group, include_extras=True)
    return [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, annotation=hints[f.name], default=f.default)
            for f in dataclasses.fields(group)]


def option_groups(command: Callable[..., Any]) -> Callable[..., Any]:
    """`command` with each parameter whose type is an OptionGroup replaced, in its place, by the
    group's options; the command is called with the group built from them."""
    hints = typing.get_type_hints(command, include_extras=True)
    groups: dict[str, type] = {}
    parameters: list[inspect.Parameter] = []
    for parameter in inspect.signature(command).parameters.values():
        kind = hints.get(parameter.name, parameter.annotation)
        if isinstance(kind, type) and issubclass(kind, OptionGroup):
            groups[parameter.name] = kind
            parameters += group_fields(kind)
        else:
            parameters.append(parameter.replace(annotation=kind, kind=inspect.Parameter.KEYWORD_ONLY))
    names = [p.name for p in parameters]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise TypeError(f"{command.__name__}: options {clash} are declared twice (a group and the command)")

    @functools.wraps(command)
    def with_groups(**values: Any) -> Any:
        for name, group in groups.items():
            values[name] = group(**{f.name: values.pop(f.name) for f in dataclasses.fields(group)})
        return command(**values)

    setattr(with_groups, "__signature__", inspect.Signature(parameters))  # what typer reads
    with_groups.__annotations__ = {p.name: p.annotation for p in parameters}
    return with_groups
