"""Reading a config: YAML -> mapping (:func:`load_config`) -> validated :class:`Profile`
(:func:`parse_profile`), every problem named with the file and the key path as written in the YAML,
and an unknown key with the nearest valid one."""

from __future__ import annotations

import dataclasses
import difflib
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import TypeAdapter, ValidationError

from pacs.config.profile import RUN_META_KEYS, Profile
from pacs.config.sections import ConfigError
from pacs.methods import METHOD_NAMES, spec_class, spec_keys


def load_config(path: str | Path) -> dict[str, Any]:
    """Read a YAML profile config as a mapping (not validated); the file is named on error."""
    path = Path(path)
    with path.open() as fh:
        raw = yaml.safe_load(fh)
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{path}: expected a YAML mapping at the top level, got {type(raw).__name__}"
        )
    return raw


def load_profile(path: str | Path) -> Profile:
    """Read and validate a profile config file."""
    return parse_profile(load_config(path), source=str(path))


def parse_profile(raw: Mapping[str, Any], source: str = "<config>") -> Profile:
    """Validate a config mapping into a :class:`Profile`; raise :class:`ConfigError` naming
    ``source``, each bad key's path, and for an unknown key the nearest valid one."""
    problems = _unknown_keys(raw)
    if not problems:
        try:
            return TypeAdapter(Profile).validate_python(_spec_input(raw))
        except ValidationError as err:
            # A cross-field check reports several problems in one message, one per line.
            problems = [line for e in err.errors() for line in _describe(e, raw).splitlines()]
    unique = dict.fromkeys(problems)  # a bad method default is reported once, not once per run
    raise ConfigError("\n".join(f"{source}: {p}" for p in unique))


def _spec_input(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The raw config with each run merged over its method defaults, in the spec's shape."""
    data = dict(raw)
    defaults = data.get("method_defaults") or {}
    data["method_defaults"] = {m: {"name": m, **(k or {})} for m, k in defaults.items()}
    if not isinstance(data.get("runs"), Mapping):
        return data  # missing or not a mapping: the spec says so
    runs = {}
    for name, run in data["runs"].items():
        meta = {k: v for k, v in run.items() if k in RUN_META_KEYS}
        knobs = {k: v for k, v in run.items() if k not in RUN_META_KEYS and k != "method"}
        method = {"name": run["method"], **(defaults.get(run["method"]) or {}), **knobs}
        runs[name] = {"name": name, "label": name, **meta, "method": method}
    data["runs"] = runs
    return data


def _describe(error: dict, raw: Mapping[str, Any]) -> str:
    """One pydantic error as ``key.path: message``, the path as written in the YAML."""
    loc = [str(part) for part in error["loc"]]
    if loc[:1] == ["runs"] and loc[2:3] == ["method"]:
        # ('runs', run, 'method', <tag>, key): the key came from the run or its method defaults.
        run, key = loc[1], loc[4:5]
        own = raw["runs"][run]
        method = own.get("method")
        loc = (
            ["runs", run, *loc[4:]]
            if not key or key[0] in own
            else ["method_defaults", method, *loc[4:]]
        )
    elif loc[:1] == ["method_defaults"]:
        loc = loc[:2] + loc[3:]
    message = error["msg"].removeprefix("Value error, ")
    value = error.get("input")
    if loc and not isinstance(value, (dict, list)) and error["type"] != "missing":
        message += f" (got {value!r})"
    return f"{'.'.join(loc)}: {message}" if loc else message


# ------------------------------------------------------------------------------ unknown keys


# Keys that moved, with where they went: named instead of "unknown key".
MOVED_KEYS = {
    ("train", "grad_clip"): (
        "train.grad_clip: the gradient clip is each method's own, as the official code ran it "
        "(PACS: none; GRPO, PPO: 1.0): set method_defaults.<method>.grad_clip or a run's "
        "grad_clip (null: no clipping; docs/design.md#gradient-clipping)"
    ),
}


def _moved_keys(raw: Mapping[str, Any]) -> list[str]:
    return [
        message
        for (section, key), message in MOVED_KEYS.items()
        if isinstance(raw.get(section), Mapping) and key in raw[section]
    ]


def _unknown_keys(raw: Mapping[str, Any]) -> list[str]:
    """``path: unknown key; did you mean ...`` for every key the spec does not have."""
    moved = _moved_keys(raw)
    if moved:
        return moved
    problems = _walk(raw, Profile, [], skip=("runs", "method_defaults"))
    defaults = raw.get("method_defaults") or {}
    if not isinstance(defaults, Mapping):
        return [*problems, "method_defaults: expected a mapping of method -> knobs"]
    for method, knobs in defaults.items():
        if method not in METHOD_NAMES:
            problems.append(_unknown(["method_defaults"], method, METHOD_NAMES))
        elif not isinstance(knobs, Mapping | None):
            problems.append(f"method_defaults.{method}: expected a mapping of knobs")
        elif knobs:
            where = ["method_defaults", method]
            problems += _check_keys(knobs, spec_keys(spec_class(method)), where)
    runs = raw.get("runs") or {}
    for name, run in runs.items() if isinstance(runs, Mapping) else ():
        problems += _run_keys(name, run)
    return problems


def _run_keys(name: str, run: Any) -> list[str]:
    where = ["runs", str(name)]
    if not isinstance(run, Mapping) or "method" not in run:
        return [f"{'.'.join(where)}: needs `method` (one of {', '.join(METHOD_NAMES)})"]
    if run["method"] not in METHOD_NAMES:
        return [_unknown(where + ["method"], run["method"], METHOD_NAMES, what="method")]
    valid = ("method", *RUN_META_KEYS, *spec_keys(spec_class(run["method"])))
    return _check_keys(run, valid, where)


def _walk(node: Any, cls: type, where: list[str], skip: tuple[str, ...] = ()) -> list[str]:
    """Unknown keys of ``node`` against spec class ``cls`` and its nested spec classes."""
    if not isinstance(node, Mapping):
        return []
    hints = typing.get_type_hints(cls, include_extras=True)
    problems = _check_keys(node, tuple(hints), where)
    for key, value in node.items():
        if key in hints and key not in skip:
            problems += _walk_typed(value, hints[key], where + [str(key)])
    return problems


def _walk_typed(value: Any, hint: Any, where: list[str]) -> list[str]:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        return _walk_typed(value, args[0], where)
    if dataclasses.is_dataclass(hint):
        return _walk(value, hint, where)
    if origin is dict and isinstance(value, Mapping):
        return [p for k, v in value.items() for p in _walk_typed(v, args[1], where + [str(k)])]
    if args and isinstance(value, Mapping):  # Optional[Spec] / Literal | Spec
        specs = [a for a in args if dataclasses.is_dataclass(a)]
        return _walk(value, specs[0], where) if len(specs) == 1 else []
    return []


def _check_keys(node: Mapping, valid: tuple[str, ...], where: list[str]) -> list[str]:
    return [_unknown(where, key, valid) for key in node if key not in valid]


def _unknown(where: list[str], key: Any, valid: tuple[str, ...], what: str = "key") -> str:
    path = ".".join([*where, str(key)]) if what == "key" else ".".join(where)
    close = difflib.get_close_matches(str(key), valid, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}?" if close else f"valid: {', '.join(valid)}"
    shown = f" {key!r}" if what != "key" else ""
    return f"{path}: unknown {what}{shown}; {hint}"
