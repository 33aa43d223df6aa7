"""Fields declared once in a table, written out as a class a reader and a type checker see.

The training fields (FIELDS, lpstudy/training/fields.py) and the study options (OPTIONS,
lpstudy/design/options.py) are each declared once, one line a field, and the class made of them
(TrainConfig, StudySpec) takes its fields from that table when it is made. A type checker cannot
run that code, so the table is also written out as a dataclass, generated, never edited
(lpstudy/training/config_fields.py, lpstudy/design/spec_fields.py), which the class inherits where a
type checker reads it (`if TYPE_CHECKING`). One mechanism for both: adding a field is its line in the
table, then `python -m lpstudy.training.fields` or `python -m lpstudy.design.options` writes the class
again; tests/test_fields.py and tests/test_types.py fail until the written class agrees.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]  # the repository root: where the written files are named from


@dataclass(frozen=True)
class Written:
    """One field as the written class has it: `name: type_text = default_text`, its help above it."""

    name: str
    type_text: str
    default_text: str
    help: str


def type_text(annotation: Any) -> str:
    """A type as its source writes it: 'int', 'float | str | None'."""
    if isinstance(annotation, type):
        return annotation.__name__
    return " | ".join("None" if part is type(None) else part.__name__ for part in annotation.__args__)


def class_text(doc: list[str], imports: list[str], decorator: str, name: str, fields: Iterable[Written]) -> str:
    """The text of a generated module: its docstring's lines, its imports, and the class `name`
    under `decorator`, one field a line, each under its help."""
    lines = [f'"""{doc[0]}', *doc[1:-1], f'{doc[-1]}"""', "", "from __future__ import annotations", "",
             "from dataclasses import dataclass", "", *imports, *([""] if imports else []), "", decorator,
             f"class {name}:"]
    for field in fields:
        lines.append(f"    # {field.help}")
        lines.append(f"    {field.name}: {field.type_text} = {field.default_text}")
    return "\n".join(lines) + "\n"


def write(path: str, text: str) -> Path:
    """The generated module at `path` (from the repository root) written again."""
    target = ROOT / path
    target.write_text(text, encoding="utf-8")
    return target
