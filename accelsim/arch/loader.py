"""Reading architecture configs: YAML (safe loader only), ``extends``, ``--set`` overrides,
and validation errors turned into one located line.

``load_spec(name_or_path, overrides)`` is the entry point. A name is looked up among
the built-in configs (``arch_configs/**.yaml``, file stem = ``name``); anything that
looks like a path is read as a file.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from accelsim.arch import schema
from accelsim.arch.clock_domains import l2_after_clock_overrides
from accelsim.errors import InputError, format_path, read_text_file, shown, shown_text

Path_ = tuple[object, ...]

MODELS: dict[str, type[BaseModel]] = {
    "chip": schema.ChipSpec,
    "node": schema.NodeSpec,
    "cluster": schema.ClusterSpec,
    "torus": schema.TorusSpec,
    "multislice": schema.MultisliceSpec,
}

class OverrideError(InputError):
    """An override's fault (its path, or its value for that field), located by the field
    path alone: the layer that took the overrides says where they came from (the CLI's
    ``--set``, a sweep spec's parameter, a record's conditions)."""


def builtin_dir() -> Path:
    """The shipped configs: inside the installed wheel, or the repository's ``arch_configs/``."""
    here = Path(__file__).resolve().parent.parent
    packaged = here / "_builtin_arch_configs"
    if packaged.is_dir():
        return packaged
    return here.parent / "arch_configs"


def builtin_paths() -> list[Path]:
    return sorted(builtin_dir().rglob("*.yaml"))


@lru_cache(maxsize=1)
def _builtin_index() -> dict[str, Path]:
    """Built-in config names (file stems) and their aliases -> file."""
    index = {path.stem: path for path in builtin_paths()}
    for path in builtin_paths():
        data, _ = read_yaml(path)  # a file there that does not parse is named in one line
        aliases = data.get("aliases", [])
        for alias in aliases if isinstance(aliases, list) else []:
            index.setdefault(str(alias), path)
    return index


def builtin_names() -> list[str]:
    """Names of the built-in configs (file stems), without aliases."""
    return sorted(path.stem for path in builtin_paths())


def builtin_aliases() -> dict[str, str]:
    """Each alias of a built-in config -> the name (file stem) of the config it names."""
    return {name: path.stem for name, path in _builtin_index().items() if name != path.stem}


def find_config(name_or_path: str, *, referenced_from: str | None = None, field: str | None = None) -> Path:
    """Resolve a built-in name or a file path to a file, or raise a located InputError."""
    looks_like_path = name_or_path.endswith((".yaml", ".yml")) or "/" in name_or_path
    if looks_like_path:
        path = Path(name_or_path)
        if referenced_from and not path.is_absolute():
            path = Path(referenced_from).parent / path
        if path.is_file():
            return path
        if path.is_dir():
            raise InputError(f"{shown(str(path))} is a folder; expected a config file", source=referenced_from, field=field)
        raise InputError(f"no such config file {shown(str(path))}", source=referenced_from, field=field)
    if not name_or_path.strip():
        raise InputError("the config name is empty; expected a chip or system name (see 'accelsim arch list') "
                         "or a file path", source=referenced_from, field=field)
    index = _builtin_index()
    if name_or_path in index:
        return index[name_or_path]
    nearest = nearest_names(name_or_path)
    every = f"'accelsim arch list' shows all {len(builtin_names())}"
    raise InputError(
        f"unknown config {shown(name_or_path)}; did you mean {', '.join(nearest)}? ({every}; a file path works too)"
        if nearest else f"unknown config {shown(name_or_path)}; expected a file path or a built-in name ({every})",
        source=referenced_from,
        field=field,
    )


SUGGESTED = 4
"""Names an unknown config name's error suggests, at most."""


def nearest_names(name: str) -> list[str]:
    """The built-in names (an alias as ``alias (name)``) closest to a mistyped one: by
    spelling (difflib's ratio, case ignored), then those that contain it (``v5p``)."""
    index = _builtin_index()
    by_lower = {key.lower(): key for key in sorted(index)}
    typed = name.strip().lower()
    close = difflib.get_close_matches(typed, list(by_lower), n=SUGGESTED, cutoff=0.6)
    containing = [key for key in by_lower if typed and typed in key]
    shown: dict[Path, str] = {}  # one suggestion per config, under the name closest to what was typed
    for key in dict.fromkeys([*close, *containing]):
        path = index[by_lower[key]]
        shown.setdefault(path, by_lower[key] if path.stem == by_lower[key] else f"{by_lower[key]} ({path.stem})")
    return list(shown.values())[:SUGGESTED]


# ---------------------------------------------------------------- YAML with line numbers


_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_YAML_DEPTH = 100
"""Deepest nesting of lists and mappings a YAML input may have (configs and sweep specs
nest under ten). Checked on the parser's events before composing: libyaml's composer
recurses in C, and some 30,000 nested ``[`` crash the interpreter (a segfault, no error)."""
_YAML_CACHE: dict[tuple[str, int, int], tuple[dict[str, Any], dict[Path_, int]]] = {}


def read_yaml(path: Path) -> tuple[dict[str, Any], dict[Path_, int]]:
    """Parse a YAML mapping safely; return it with the line of every key path.

    Parsed files are cached by path, modification time and size (sweeps load the same
    configs thousands of times); callers get their own copy to change."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror}", source=str(path)) from None
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    if key not in _YAML_CACHE:
        _YAML_CACHE[key] = _parse_yaml(path)
    data, lines = _YAML_CACHE[key]
    return copy.deepcopy(data), dict(lines)


def too_deep_line(text: str) -> int | None:
    """The line (1-based) where ``text``'s YAML nests lists and mappings deeper than
    :data:`MAX_YAML_DEPTH`, or None; a syntax error is left for the composer to report."""
    loader = _SAFE_LOADER(text)
    depth = 0
    try:
        while (event := loader.get_event()) is not None:
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    return event.start_mark.line + 1
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                depth -= 1
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()
    return None


def _parse_yaml(path: Path) -> tuple[dict[str, Any], dict[Path_, int]]:
    text = read_text_file(path, "YAML file")
    deep = too_deep_line(text)
    if deep is not None:
        raise InputError(f"lists and mappings nested more than {MAX_YAML_DEPTH} deep", source=str(path), line=deep)
    try:
        loader = _SAFE_LOADER(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(
            f"YAML syntax error: {problem}",
            source=str(path),
            line=mark.line + 1 if mark else None,
        ) from None
    except ValueError as exc:  # an integer past Python's 4300-digit conversion limit
        raise InputError(f"a value cannot be read: {exc}", source=str(path)) from None
    except RecursionError:
        raise InputError("nested too deeply to read", source=str(path)) from None
    if not isinstance(data, dict):
        raise InputError("expected a YAML mapping at the top level", source=str(path), line=1)
    lines: dict[Path_, int] = {}
    try:
        _collect_lines(node, (), lines, set(), str(path))
    except RecursionError:
        raise InputError("nested too deeply to read", source=str(path)) from None
    return data, lines


def _collect_lines(node: yaml.Node, prefix: Path_, out: dict[Path_, int], seen: set[int], source: str) -> None:
    """Line of every key path. A node met twice is an alias (``*name``): refused, since
    nested aliases expand exponentially (a "billion laughs" file) and configs need none."""
    if id(node) in seen:
        owner = prefix[:-1] if prefix and isinstance(prefix[-1], int) else prefix  # the alias's own line
        raise InputError("YAML aliases (*name) are not supported in these files; write the value out",
                         source=source, line=out.get(owner), field=prefix)
    if isinstance(node, yaml.MappingNode):
        seen.add(id(node))
        keys: set = set()
        for key, value in node.value:
            path = prefix + (key.value,)
            if key.value in keys:  # YAML keeps the last silently: a typo'd copy would win unseen
                raise InputError(f"key {shown(key.value)} appears twice in this mapping", source=source,
                                 line=key.start_mark.line + 1, field=path)
            keys.add(key.value)
            out[path] = key.start_mark.line + 1
            _collect_lines(value, path, out, seen, source)
    elif isinstance(node, yaml.SequenceNode):
        seen.add(id(node))
        for i, item in enumerate(node.value):
            out[prefix + (i,)] = item.start_mark.line + 1
            _collect_lines(item, prefix + (i,), out, seen, source)


# ---------------------------------------------------------------- raw configs with origins


@dataclass
class RawConfig:
    """A config as merged dictionaries, with where each key path came from."""

    data: dict[str, Any]
    path: Path
    origins: dict[Path_, tuple[str, int | None]] = field(default_factory=dict)
    files: tuple[Path, ...] = ()
    """The files read: this one, then those it ``extends``."""

    def locate(self, loc: Sequence[object]) -> tuple[str, int | None]:
        """File and line of the deepest known prefix of ``loc``."""
        for n in range(len(loc), 0, -1):
            hit = self.origins.get(tuple(loc[:n]))
            if hit:
                return hit
        return str(self.path), None


MAX_EXTENDS_DEPTH = 64
"""Files one ``extends`` chain may hold (published configs use 2 or 3)."""


def load_raw(name_or_path: str, *, _chain: tuple[Path, ...] = (), _referrer: str | None = None) -> RawConfig:
    """Read a config and everything it ``extends``, merged (later files win)."""
    path = find_config(name_or_path, referenced_from=_referrer, field="extends" if _referrer else None)
    resolved = path.resolve()
    if resolved in _chain:
        cycle = " -> ".join(p.name for p in _chain + (resolved,))
        raise InputError(f"'extends' forms a cycle: {shown_text(cycle)}", source=str(path), field="extends")
    if len(_chain) >= MAX_EXTENDS_DEPTH:
        raise InputError(f"'extends' chains more than {MAX_EXTENDS_DEPTH} files (from {_chain[0].name}); a what-if "
                         "overlay extends a published config, an overlay of an overlay at most a few",
                         source=_referrer, field="extends")
    data, lines = read_yaml(path)
    origins = {p: (str(path), line) for p, line in lines.items()}
    parent_name = data.pop("extends", None)
    if parent_name is None:
        return RawConfig(data, path, origins, (path,))
    if not isinstance(parent_name, str):
        raise InputError(
            "expected the name or path of the config to extend",
            source=str(path),
            line=lines.get(("extends",)),
            field="extends",
        )
    parent = load_raw(parent_name, _chain=_chain + (resolved,), _referrer=str(path))
    parent.data.pop("aliases", None)  # a name belongs to one config, not to what extends it
    unvalued = _source_without_value(parent.data, data)
    if unvalued:
        raise InputError(f"gives a {unvalued[1]} but no value: the value would come from {parent_name}, shown with "
                         f"this file's {unvalued[1]}; give the value too", source=str(path),
                         line=lines.get(unvalued[0]), field=".".join(unvalued[0]))
    merged = deep_merge(parent.data, data)
    return RawConfig(merged, path, {**parent.origins, **origins}, (path, *parent.files))


def _source_without_value(base: Mapping[str, Any], override: Mapping[str, Any],
                          at: tuple[str, ...] = ()) -> tuple[tuple[str, ...], str] | None:
    """Where ``override`` cites a value of ``base`` (a ``source`` or ``basis``) without giving
    the value, and which key it gives: merged, the parent's number would carry this citation."""
    for key, value in override.items():
        if not isinstance(value, Mapping) or not isinstance(base.get(key), Mapping):
            continue
        if _is_cited(base[key]) and not _is_cited(value):
            given = next((k for k in ("source", "basis") if k in value), None)
            if given:
                return (*at, key), given
            continue
        found = _source_without_value(base[key], value, (*at, key))
        if found:
            return found
    return None


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Mappings merge key by key; anything else in ``override`` replaces ``base``.
    A bare value replacing a cited ``{value: ...}`` keeps nothing of the old citation."""
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping) and not _is_cited(value):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _is_cited(value: Any) -> bool:
    return isinstance(value, Mapping) and "value" in value


# ---------------------------------------------------------------- --set overrides


@dataclass(frozen=True)
class Override:
    """A value for the config field at ``path``: as the user wrote it (``value`` is what
    YAML reads from the text after ``=``) or as code computed it."""

    path: tuple[str, ...]
    value: Any
    text: str
    """What the override says, for messages (``hbm.bandwidth=8 TB/s``)."""
    cited_as: str = ""
    """The source a cited field set by it records (default: ``text``)."""


def parse_override(text: str) -> Override:
    """``hbm.bandwidth=8 TB/s`` -> Override(("hbm", "bandwidth"), "8 TB/s").
    The right-hand side is read as a YAML scalar or flow list (safe loader)."""
    key, sep, raw_value = text.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")):
        raise OverrideError(f"expected PATH=VALUE (e.g. hbm.bandwidth='8 TB/s'), got {shown(text)}")
    try:
        value = _override_value(raw_value, key) if raw_value.strip() else None
    except yaml.YAMLError:
        value = raw_value.strip()
    except ValueError as exc:  # an integer past Python's 4300-digit conversion limit
        raise OverrideError(f"the value cannot be read: {exc}", field=key) from None
    if value is None:
        raise OverrideError(f"missing value after '=' in {shown(text)}", field=key)
    return Override(tuple(key.split(".")), value, text, cited_as=f"--set {text}")


def _override_value(text: str, key: str) -> Any:
    """An override's value as YAML (safe loader), refusing aliases (``*name``) as config
    files do: nested aliases expand exponentially (9 levels exhaust the memory), and
    nesting deeper than config files may (:func:`too_deep_line`)."""
    if too_deep_line(text) is not None:
        raise OverrideError(f"lists and mappings nested more than {MAX_YAML_DEPTH} deep in the value", field=key)
    loader = _SAFE_LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _holds_alias(node):
            raise OverrideError("YAML aliases (*name) are not supported in a value; write the value out",
                                field=key)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _holds_alias(root: yaml.Node) -> bool:
    """Is a list or mapping node reached twice below ``root`` (an alias)? Walked without recursion."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if not isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            continue
        if id(node) in seen:
            return True
        seen.add(id(node))
        stack.extend(node.value if isinstance(node, yaml.SequenceNode) else (v for _, v in node.value))
    return False


def _cited(annotation: Any) -> bool:
    """A cited field, optional or not (``Cited[X] | None``)."""
    from typing import get_args

    if isinstance(annotation, type):
        return issubclass(annotation, schema.Cited)
    return any(_cited(arg) for arg in get_args(annotation))


def check_override_path(model: type[BaseModel], path: Sequence[str], text: str) -> None:
    """Does ``path`` name a field of ``model`` that an override may set? An
    :class:`OverrideError` if not."""
    current: Any = model
    if path and path[0] == "family_values":
        raise OverrideError("family_values are per-family values a calibration wrote; an override of the path itself "
                            "(e.g. cores.program_overhead) sets it for every family, over them",
                            field=format_path(path))
    for i, part in enumerate(path):
        fields = _fields_of(current)
        if fields is None:
            raise OverrideError(
                f"cannot set below {format_path(path[:i])!r}, which is not a section (in {shown(text)})",
                field=format_path(path),
            )
        if isinstance(fields, _AnyKey):
            current = fields.value
            continue
        if part not in fields:
            raise OverrideError(
                f"unknown {'key' if isinstance(fields, _Keys) else 'field'} {shown(part)}; expected one of: "
                f"{', '.join(fields)}",
                field=format_path(path),
            )
        current = fields[part]
    if isinstance(current, type) and issubclass(current, BaseModel) and not issubclass(current, schema.Cited):
        raise OverrideError(
            f"{format_path(path)!r} is a section; set one of its fields: {', '.join(current.model_fields)}",
            field=format_path(path),
        )


class _Keys(dict):
    """A mapping's allowed keys (a ``Literal`` key type), each to the value type."""


@dataclass(frozen=True)
class _AnyKey:
    """A mapping with free keys (``uncertainty.FAMILY``): any key, each holding ``value``."""

    value: Any


def _fields_of(annotation: Any) -> dict[str, Any] | _AnyKey | None:
    """Sub-fields reachable below a schema annotation, looking through Cited and Optional:
    a model's fields, a mapping's allowed keys (a ``Literal`` key type) with its value type,
    or :class:`_AnyKey` for a mapping with free keys."""
    from typing import get_args

    if isinstance(annotation, type) and issubclass(annotation, schema.Cited):
        return _fields_of(annotation.model_fields["value"].annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {name: f.annotation for name, f in annotation.model_fields.items()}
    args = get_args(annotation)
    if getattr(annotation, "__origin__", None) is dict and len(args) == 2:
        keys = get_args(args[0])
        return _Keys({key: args[1] for key in keys}) if keys else _AnyKey(args[1])
    for arg in args:
        found = _fields_of(arg)
        if found is not None:
            return found
    return None


def put(tree: dict[str, Any], path: Sequence[str], value: Any) -> None:
    """``tree[path[0]][path[1]]... = value``, making the mappings on the way."""
    for part in path[:-1]:
        tree = tree.setdefault(part, {})
    tree[path[-1]] = value


# ---------------------------------------------------------------- typed overrides


def with_values(spec: BaseModel, overrides: Sequence[Override]) -> BaseModel:
    """``spec`` (a validated config) with each override's value set at its path: typed, as
    the schema types that field, and every section on the way validated again with its new
    contents (its own checks run), all overrides at once (later ones win on a path). A cited
    field set whole gets the override's citation; setting a key below a cited field keeps
    only the value, as the YAML overlay does. Nothing is read again from a file. Raises an
    :class:`OverrideError` whose field is the override's path (or the section whose own
    check failed, naming the overrides below it) and that names no source: the caller knows
    where the values came from (the CLI's ``--set``, a sweep's point, a calibration step)."""
    tree: dict[str, Any] = {}
    for override in overrides:
        check_override_path(type(spec), override.path, override.text)
        _check_section_given(spec, override)
        node = tree
        for depth, part in enumerate(override.path[:-1]):
            below = node.get(part)
            if isinstance(below, _Leaf):  # an earlier override gave the section a plain value
                raise OverrideError(f"cannot set below {format_path(override.path[:depth + 1])!r}, which holds "
                                    f"{shown(below.override.value)}, not a section", field=format_path(override.path))
            node[part] = node = below if isinstance(below, dict) else {}
        node[override.path[-1]] = _Leaf(override)
    rebuilt = _rebuilt(spec, tree, ())
    if isinstance(spec, schema.ChipSpec):
        from accelsim.arch.peak import peak_after_overrides  # it reads the config that gives the peak with load_raw

        rebuilt = l2_after_clock_overrides(spec, peak_after_overrides(spec, rebuilt, overrides), overrides)
    return rebuilt


def _check_section_given(spec: BaseModel, override: Override) -> None:
    """A field below a section the config leaves out (a TPU's ``shared_cache``) is set
    with the whole section: its other fields have no values to keep."""
    head = override.path[0]
    if len(override.path) > 1 and getattr(spec, head, None) is None:
        raise OverrideError(f"{shown(getattr(spec, 'name', 'the config'))} has no {head!r} section to set a field "
                            f"of (set the whole section: '{head}={{...}}')", field=format_path(override.path))


@dataclass(frozen=True)
class _Leaf:
    override: Override


def _rebuilt(node: Any, tree: dict[str, Any], at: tuple[str, ...]) -> Any:
    """``node`` with the values of ``tree`` (path part -> subtree or :class:`_Leaf`) set below it."""
    if isinstance(node, schema.Cited):
        return _validated(type(node), {"value": _rebuilt(node.value, tree, at), "basis": "override"}, tree, at)
    if isinstance(node, dict):
        return {**node, **{key: _new_child(node.get(key), sub, (*at, key), cited=False) for key, sub in tree.items()}}
    if not isinstance(node, BaseModel):
        raise OverrideError(f"cannot set below {format_path(at)!r}, which holds {shown(node)}, not a section",
                            field=format_path((*at, next(iter(tree)))))
    fields = type(node).model_fields
    updates = {key: _new_child(getattr(node, key), sub, (*at, key), cited=_cited(fields[key].annotation))
               for key, sub in tree.items()}
    return _validated(type(node), {**{k: getattr(node, k) for k in node.model_fields_set}, **updates}, tree, at)


def _validated(model: type[BaseModel], data: dict[str, Any], tree: dict[str, Any], at: tuple[str, ...]) -> BaseModel:
    """``model`` of ``data``, the section at ``at`` with the overrides of ``tree`` set in it;
    its refusal as one :class:`OverrideError`."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        message = error["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
        if error["type"] not in ("value_error", "assertion_error") and "input" in error:
            message += f" (got {shown(error['input'])})"
        where = (*at, *_user_loc(error["loc"]))
        given = _leaf_paths(tree, at)
        if where not in given:  # a check of the section the overrides are in
            message += f" (after {', '.join(sorted(format_path(path) for path in given))})"
        raise OverrideError(message, field=format_path(where)) from None


def _leaf_paths(tree: dict[str, Any], at: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The paths the overrides of ``tree`` (below ``at``) set."""
    return [path for key, sub in tree.items()
            for path in ([(*at, key)] if isinstance(sub, _Leaf) else _leaf_paths(sub, (*at, key)))]


def _new_child(child: Any, sub: Any, at: tuple[str, ...], *, cited: bool) -> Any:
    if not isinstance(sub, _Leaf):
        if child is None:
            raise OverrideError(f"the config has no {format_path(at)!r} section to set a field of (set the whole "
                                "section)", field=format_path((*at, next(iter(sub)))))
        return _rebuilt(child, sub, at)
    override = sub.override
    source = override.cited_as or override.text
    return {"value": override.value, "basis": "override", "source": source} if cited else override.value


# ---------------------------------------------------------------- validation


def validate(raw: RawConfig) -> BaseModel:
    """Validate merged data against the model its ``kind`` names."""
    kind = raw.data.get("kind")
    if not isinstance(kind, str) or kind not in MODELS:
        file, line = raw.locate(("kind",))
        raise InputError(
            f"expected 'kind' to be one of: {', '.join(MODELS)}; got {shown(kind)}",
            source=file,
            line=line,
            field="kind",
        )
    model = MODELS[kind]
    try:
        spec = model.model_validate(raw.data)
    except ValidationError as exc:
        raise _located(exc, raw, model) from None
    if isinstance(spec, schema.ChipSpec):
        from accelsim.arch.peak import with_derived_peak  # it reads the config that gives the peak with load_raw

        spec = with_derived_peak(spec, raw)
    return spec


def _located(exc: ValidationError, raw: RawConfig, model: type[BaseModel]) -> InputError:
    error = exc.errors(include_url=False)[0]
    loc = _user_loc(error["loc"])
    file, line = raw.locate(loc)
    kind = error["type"]
    if kind == "missing":
        message = "missing required field"
    elif kind == "extra_forbidden":
        expected = _fields_of(_annotation_at(model, loc[:-1]))
        names = ", ".join(expected) if isinstance(expected, dict) else ""
        message = f"unknown field; expected one of: {names}" if names else "unknown field"
    else:
        message = error["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
        if kind not in ("value_error", "assertion_error") and "input" in error:
            message += f" (got {shown(error['input'])})"
    return InputError(message, source=file, line=line, field=loc or None)


def _user_loc(loc: Sequence[object]) -> tuple[object, ...]:
    """The path as the user thinks of it: without the ``value`` step of a cited number
    (no schema section has a field of that name) or pydantic's ``[key]`` marker."""
    return tuple(part for part in loc if part not in ("value", "[key]"))


def _annotation_at(model: type[BaseModel], loc: Sequence[object]) -> Any:
    current: Any = model
    for part in loc:
        fields = _fields_of(current)
        if isinstance(fields, _AnyKey):
            current = fields.value
            continue
        if not isinstance(fields, dict) or part not in fields:
            return None
        current = fields[part]
    return current


def load_spec(name_or_path: str, overrides: Sequence[str] = ()) -> tuple[BaseModel, RawConfig]:
    """Load, merge, override and validate one config. Raises InputError on any bad input."""
    raw = load_raw(name_or_path)
    return with_values(validate(raw), [parse_override(o) for o in overrides]), raw


def is_calibration(data: dict[str, Any]) -> bool:
    """Does a config file's own mapping make it a calibration of the config it extends:
    an ``uncertainty`` section or a fitted value, as ``accelsim calibrate`` writes (no
    published config holds either)?"""
    def fitted(node: Any) -> bool:
        if isinstance(node, dict):
            return node.get("basis") == "fitted" or any(fitted(v) for v in node.values())
        return isinstance(node, list) and any(fitted(v) for v in node)

    return "extends" in data and ("uncertainty" in data or fitted(data))


def measured_config(name_or_path: str) -> str:
    """The config whose measurements a config is checked against: itself, or for a
    calibration overlay (:func:`is_calibration`, whatever its name) the config it extends,
    followed up through overlays of overlays."""
    path = find_config(name_or_path)
    seen = {path.resolve()}
    while True:
        data, _ = read_yaml(path)
        if not is_calibration(data):
            return str(data.get("name", path.stem))
        path = find_config(str(data["extends"]), referenced_from=str(path), field="extends")
        if path.resolve() in seen:
            raise InputError("'extends' forms a cycle", source=str(path), field="extends")
        seen.add(path.resolve())
