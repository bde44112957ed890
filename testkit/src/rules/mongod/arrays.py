# ---------------------------------------------------------------------------------------------
# Parallel arrays (rule "parallel-arrays")
#
# mongod generates the keys of a btree index for a document with
# `BtreeKeyGenerator::_getKeysWithArray` (src/mongo/db/index/btree_key_generator.cpp): walking
# every field of the key pattern, it expands one array at a time; reaching a second, different
# array it fails with `assertParallelArrays`: "cannot index parallel arrays [<this>] [<first>]",
# CannotIndexParallelArrays (171). This is that walk, keys left out. A path is followed with
# `extractElementAtPathOrArrayAlongPath` (src/mongo/db/bson/dotted_path_support.cpp), which stops
# at the first array along it; positional components (`a.0.b`) are followed as mongod does.
# ---------------------------------------------------------------------------------------------

_MISSING = object()


class ParallelArrays(Exception):
    def __init__(self, this: str, first: str) -> None:
        super().__init__(f"cannot index parallel arrays [{this}] [{first}]")


def _get_field(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, _MISSING)
    if isinstance(obj, list):
        if name.isdigit() and (name == "0" or not name.startswith("0")):
            i = int(name)
            if i < len(obj):
                return obj[i]
        return _MISSING
    return _MISSING


def _extract(obj: Any, path: str) -> tuple[str, Any, str]:
    """`extractElementAtPathOrArrayAlongPath`: (field name, value or _MISSING, rest of path).
    Stops at the first array along the path; the rest is what follows it."""
    while True:
        head, dot, rest = path.partition(".")
        sub = _get_field(obj, head)
        if sub is _MISSING:
            return head, _MISSING, ""
        if isinstance(sub, list) or not dot:
            return head, sub, rest
        if isinstance(sub, Mapping):
            obj, path = sub, rest
            continue
        return head, _MISSING, ""


class _Positional:
    __slots__ = ("elt", "remaining", "dotted")

    def __init__(self, elt: Any, remaining: str, dotted: tuple[str, Any]) -> None:
        self.elt = elt
        self.remaining = remaining
        self.dotted = dotted


def _walk(fields: list[str], obj: Any, positional: list[_Positional | None]) -> None:
    names = list(fields)
    first: tuple[str, list] | None = None
    for i, field in enumerate(names):
        if not field:
            continue
        head = field.split(".", 1)[0]
        pos = positional[i]
        if _get_field(obj, head) is not _MISSING or pos is None:
            name, value, rest = _extract(obj, field)
        else:
            (name, value), rest = pos.dotted, pos.remaining
        if value is _MISSING:
            names[i] = ""
        elif isinstance(value, list):
            if first is None:
                first = (name, value)
            elif value is not first[1]:
                raise ParallelArrays(name, first[0])
            names[i] = rest
        else:
            names[i] = ""
    if first is None or not first[1]:
        # No array, or an empty one (its keys are `undefined`; nothing below it).
        return
    array = first[1]
    sub: list[_Positional | None] = [None] * len(names)
    for i, field in enumerate(names):
        if not field:
            continue
        head = field.split(".", 1)[0]
        elt = _get_field(array, head)
        if elt is _MISSING:
            continue
        name, value, rest = _extract(array, field)
        sub[i] = _Positional(elt, rest, (name, value))
    for element in array:
        _walk(names, element if isinstance(element, Mapping) else {}, sub)


def parallel_arrays(doc: Mapping[str, Any], key: Mapping[str, Any]) -> str | None:
    """mongod's error message if `doc` puts two arrays under the btree key pattern `key`."""
    fields = list(key)
    if len(fields) < 2:
        return None
    try:
        _walk(fields, doc, [None] * len(fields))
    except ParallelArrays as e:
        return str(e)
    return None


def _has_string(value: Any) -> bool:
    if isinstance(value, str):
        return True
    if isinstance(value, Mapping):
        return any(_has_string(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_string(v) for v in value)
    return False


def _is_btree(key: Mapping[str, Any]) -> bool:
    return all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in key.values()
    ) and not any(str(k).endswith("$**") for k in key)


#: The comparison operators that give index bounds (`index_bounds_builder.cpp` `translate`).
_BOUND_OPS = frozenset(("$eq", "$gt", "$gte", "$lt", "$lte", "$in"))


def _bounds_of(value: Any) -> int:
    """How many bound-generating conditions a filter field's value holds: an operator document's
    comparisons each, a plain value (an equality) one."""
    if isinstance(value, Mapping) and value and all(str(k).startswith("$") for k in value):
        return sum(1 for k in value if k in _BOUND_OPS)
    return 1


def across_elements(filter: Mapping[str, Any], multikey_paths: set[str]) -> bool:
    """Whether mongod may match `filter` with its conditions on different elements of one
    array, where an index scan that intersects or compounds their bounds would not: two bounds
    on one path of a multikey index, or conditions on two such paths under the same first field,
    outside `$elemMatch`.

    mongod assigns a multikey index at most one of the predicates on paths under one array
    unless they share an `$elemMatch` (`plan_enumerator.cpp` `getPossibleFirstAssignments` and
    `canAssignPredToIndex`; jstests/core/index13.js, SERVER-958 and SERVER-3104): the others are
    filtered on the fetched documents, each of which may match on another element, so
    `{ "a.b": { $gte: 10, $lt: 20 } }` finds `{ a: [{ b: 5 }, { b: 100 }] }`. SecantusDB's
    index scan intersects the two bounds and misses it (its matcher alone is right)."""
    roots: dict[str, int] = {}
    for field, value in filter.items():
        if str(field).startswith("$") or field not in multikey_paths:
            continue
        bounds = _bounds_of(value)
        if bounds > 1:
            return True
        root = str(field).split(".", 1)[0]
        roots[root] = roots.get(root, 0) + bounds
        if roots[root] > 1:
            return True
    return False


# The storage's write paths report an index that cannot take a document as `GeoExtractError`
# (a write error of that statement: inserts, updates, upserts, replacements, findAndModify);
# ours carries a marker the dispatch wrapper turns into mongod's code and words.
_MARK = "[mongod-rules 171] "


def _parallel_error_class():
    from secantus.storage import GeoExtractError

    class ParallelArraysWrite(GeoExtractError):
        def __init__(self, message: str) -> None:
            Exception.__init__(self, _MARK + message)

    return ParallelArraysWrite


