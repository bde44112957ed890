# mongo-schema-testkit: mongod's rules in SecantusDB's command handling.
#
# Written by the testkit next to its SecantusDB config and run in place of `secantusd-py`:
#
#     <venv>/bin/python <this file> --config ... --host 127.0.0.1 --port N --storage-path ...
#
# It installs the rules below into the server process, then runs SecantusDB's own command line
# (`secantus.cli.main`). A command mongod refuses is answered with mongod's error (ok: 0, code,
# codeName, errmsg as mongod words it, or a write error for one statement of a batch); every
# other command passes through unchanged. Each rule names the mongod source or jstest it comes
# from. The rules hold for the pinned SecantusDB version only: `install()` refuses to run on
# another one (the hooks below reach into SecantusDB's internals), so the server does not start
# rather than start without its rules.
#
# `MONGO_SCHEMA_TESTKIT_RULES_OFF=name,name` (set by the testkit for a test that turns rules
# off by name) leaves those rules out. Nothing here reads or writes anything but the server's
# own state.

from __future__ import annotations

import contextvars
import dataclasses
import logging
import os
import sys
import uuid as _uuid
from collections.abc import Mapping
from typing import Any

PINNED_SECANTUS = "0.7.0b3"

# The rules, by the names a test turns them off with, and what each enforces.
RULES: dict[str, str] = {
    "parallel-arrays": "a write or index build that puts two arrays under one compound index (171)",
    "id-index": "a second index on { _id: 1 }, or an _id index that is sparse, partial, "
    "non-unique or of another collation than the collection's (85, 67, 2); an _id equal under "
    "the collection's collation to a stored one (11000)",
    "collation-locale": "a collation whose locale mongod does not know or whose options are "
    "out of range (2, 9, 14, 161); an index type that takes no collation (67)",
    "default-collation": "the collection's default collation applied to a command sent without "
    "one (find, aggregate, count, distinct, update, delete, findAndModify, createIndexes)",
    "timeseries-transaction": "a write to a time series collection, or its creation, inside a "
    "transaction (263)",
    "timeseries-options": "options a time series collection cannot have at create or collMod: "
    "pre- and post-images, a validator, ... (72)",
    "timeseries-change-stream": "change streams do not show a time series collection's writes; "
    "none can be opened on one (166)",
    "timeseries-geonear": "$geoNear on a time series collection without 'key', with 'query' or "
    "'includeLocs' (5892921, 1938439, 5860207, 5860208)",
    "timeseries-measurement-size": "a time series measurement whose bucket (the meta field once, "
    "every other field three times) passes 16 MiB (10334)",
    "timeseries-update": "an update of a time series collection beyond mongod 7.0's: not multi, "
    "an upsert, a replacement or pipeline, a condition or a change outside the metaField (72)",
    "geonear-key": "$geoNear without 'key' on a collection with more than one 2dsphere (or 2d) "
    "index (27)",
    "array-conditions": "conditions on a multikey index's paths outside $elemMatch answered as "
    "mongod answers them: each may hold for another element of the array (no bounds "
    "intersected or compounded across elements)",
    "change-stream-match-first": "a change stream's events of collections its first $match leaves "
    "out (by ns.coll) are never projected: no post-image lookup, no missing-image error",
    "change-stream-clock": "a change stream's resume token that marks a position without an event "
    "(the post-batch token of a reply, the token of an opening) carries the time of the oplog "
    "entry at that position, never a later one",
}

OFF_ENV = "MONGO_SCHEMA_TESTKIT_RULES_OFF"

_log = logging.getLogger("mongo_schema_testkit.rules")
_OFF: frozenset[str] = frozenset()


def _on(rule: str) -> bool:
    return rule not in _OFF


# ---------------------------------------------------------------------------------------------
# Errors and mongod's way of printing BSON in them
# ---------------------------------------------------------------------------------------------


def _code_name(code: int) -> str:
    from secantus import mongod_codes

    return mongod_codes.code_name(code)


def _error(code: int, errmsg: str) -> dict[str, Any]:
    return {"ok": 0.0, "errmsg": errmsg, "code": code, "codeName": _code_name(code)}


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def fmt(value: Any) -> str:
    """A value as mongod's `BSONObj::toString` prints it: `{ locale: "xx_NOPE", strength: 2 }`."""
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{k}: {fmt(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        return "[ " + ", ".join(fmt(v) for v in value) + " ]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, float):
        if value == int(value) and abs(value) < 1e16:
            return f"{value:.1f}"
        return repr(value)
    return str(value)


def _bson_type_name(value: Any) -> str:
    # mongod's `typeName` for the types a collation field can have.
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "long" if abs(value) >= 2**31 else "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


def _ns(db: str, coll: str) -> str:
    return f"{db}.{coll}"


# ---------------------------------------------------------------------------------------------
# Collations (rule "collation-locale")
#
# mongod validates a collation with ICU: `CollatorFactoryICU::makeFromBSON`
# (src/mongo/db/query/collation/collator_factory_icu.cpp). A locale is valid when the collator
# ICU builds for it has exactly that locale as its valid locale (`validateLocaleID`), so the
# valid locales are those of the ICU data mongod ships: ICU 57.1 (src/third_party/icu4c-57.1),
# the locales its unit test creates one by one
# (src/mongo/db/query/collation/collator_factory_icu_locales_test.cpp) and the manual lists
# ("Collation Locales and Default Parameters"). Options are checked in `parseToCollationSpec`
# and `validateCollationSpec` of the same file.
# ---------------------------------------------------------------------------------------------

ICU_VERSION = "57.1"

LOCALES: frozenset[str] = frozenset(
    """
    af am ar as az be bg bn bo bs bs_Cyrl ca chr cs cy da de de_AT dsb dz ee el en en_US
    en_US_POSIX eo es et fa fa_AF fi fil fo fr fr_CA ga gl gu ha haw he hi hr hsb hu hy id ig
    is it ja ka kk kl km kn ko kok ky lb lkt ln lo lt lv mk ml mn mr ms mt my nb ne nl nn om or
    pa pl ps pt ro ru se si sk sl smn sq sr sr_Latn sv sw ta te th to tr ug uk ur vi wae yi yo
    zh zh_Hant zu
    """.split()
)

# `<locale>@collation=<variant>`: the variants the manual lists (ICU keyword values).
VARIANTS: frozenset[str] = frozenset(
    "big5han compat dictionary eor gb2312han phonebook phonetic pinyin reformed search "
    "searchjl standard stroke traditional unihan zhuyin".split()
)

_CASE_FIRST = ("upper", "lower", "off")
_ALTERNATE = ("non-ignorable", "shifted")
_MAX_VARIABLE = ("punct", "space")

# ICU's root defaults, what mongod reports for every field a collation leaves out (most locales;
# `fr_CA` compares accents backwards, `da` puts upper case first).
ROOT_DEFAULTS: dict[str, Any] = {
    "caseLevel": False,
    "caseFirst": "off",
    "strength": 3,
    "numericOrdering": False,
    "alternate": "non-ignorable",
    "maxVariable": "punct",
    "normalization": False,
    "backwards": False,
}
LOCALE_DEFAULTS: dict[str, dict[str, Any]] = {
    "fr_CA": {"backwards": True},
    "da": {"caseFirst": "upper"},
}


def _locale_suggestion(locale: str) -> str | None:
    # What ICU would have used: the longest known prefix of the locale's parts, the language
    # in lower case. mongod prints it as "Did you mean '...'?" unless it is ICU's root.
    base = locale.split("@", 1)[0]
    parts = base.replace("-", "_").split("_")
    if parts:
        parts[0] = parts[0].lower()
    for n in range(len(parts), 0, -1):
        candidate = "_".join(parts[:n])
        if candidate in LOCALES and candidate != locale:
            return candidate
    return None


def _locale_known(locale: str) -> bool:
    if locale in LOCALES:
        return True
    base, sep, keywords = locale.partition("@")
    if not sep or base not in LOCALES:
        return False
    key, eq, value = keywords.partition("=")
    return key == "collation" and bool(eq) and value in VARIANTS


def collation_error(spec: Any) -> dict[str, Any] | None:
    """mongod's error for a collation it refuses, `None` for one it takes (or a non-document,
    which the command's own parser judges)."""
    if not isinstance(spec, Mapping):
        return None
    shown = fmt(spec)
    if "locale" not in spec:
        return _error(4, 'Missing expected field "locale"')
    locale = spec["locale"]
    if not isinstance(locale, str):
        return _error(
            14,
            f'"locale" had the wrong type. Expected string, found {_bson_type_name(locale)}',
        )
    if "\0" in locale:
        return _error(2, f"Field 'locale' cannot contain null byte. Collation spec: {shown}")
    if locale == "simple":
        if len(spec) > 1:
            return _error(
                9, f"If locale=simple, no other fields should be present in: {shown}"
            )
        return None
    if locale == "":
        return _error(2, f"Field 'locale' cannot be the empty string in: {shown}")
    if not _locale_known(locale):
        message = f"Field 'locale' is invalid in: {shown}"
        suggestion = _locale_suggestion(locale)
        if suggestion is not None:
            message += f". Did you mean '{suggestion}'?"
        return _error(2, message)

    parsed = 1

    def want_bool(field: str) -> dict[str, Any] | None:
        value = spec[field]
        if not isinstance(value, bool):
            return _error(
                14,
                f'"{field}" had the wrong type. Expected bool, found {_bson_type_name(value)}',
            )
        return None

    def want_string(field: str) -> dict[str, Any] | None:
        value = spec[field]
        if not isinstance(value, str):
            return _error(
                14,
                f'"{field}" had the wrong type. Expected string, found {_bson_type_name(value)}',
            )
        return None

    if "caseLevel" in spec:
        parsed += 1
        if (e := want_bool("caseLevel")) is not None:
            return e
    if "caseFirst" in spec:
        parsed += 1
        if (e := want_string("caseFirst")) is not None:
            return e
        if spec["caseFirst"] not in _CASE_FIRST:
            return _error(
                9,
                "Field 'caseFirst' must be 'upper', 'lower', or 'off'. Got: "
                + spec["caseFirst"],
            )
    if "strength" in spec:
        parsed += 1
        strength = spec["strength"]
        if isinstance(strength, bool) or not isinstance(strength, (int, float)):
            return _error(
                14,
                '"strength" had the wrong type. Expected number, found '
                + _bson_type_name(strength),
            )
        if isinstance(strength, float) and strength != int(strength):
            return _error(
                2,
                'Expected field "strength" to have a value exactly representable as a 64-bit '
                f"integer, but found strength: {fmt(strength)}",
            )
        if int(strength) not in (1, 2, 3, 4, 5):
            return _error(
                9, f"Field 'strength' must be an integer 1 through 5. Got: {int(strength)}"
            )
    if "numericOrdering" in spec:
        parsed += 1
        if (e := want_bool("numericOrdering")) is not None:
            return e
    if "alternate" in spec:
        parsed += 1
        if (e := want_string("alternate")) is not None:
            return e
        if spec["alternate"] not in _ALTERNATE:
            return _error(
                9,
                "Field 'alternate' must be 'non-ignorable' or 'shifted'. Got: "
                + spec["alternate"],
            )
    if "maxVariable" in spec:
        parsed += 1
        if (e := want_string("maxVariable")) is not None:
            return e
        if spec["maxVariable"] not in _MAX_VARIABLE:
            return _error(
                9,
                "Field 'maxVariable' must be 'punct' or 'space'. Got: " + spec["maxVariable"],
            )
    if "normalization" in spec:
        parsed += 1
        if (e := want_bool("normalization")) is not None:
            return e
    if "backwards" in spec:
        parsed += 1
        if (e := want_bool("backwards")) is not None:
            return e
    if "version" in spec:
        if (e := want_string("version")) is not None:
            return e
        if spec["version"] != ICU_VERSION:
            return _error(
                161,
                f"Requested collation version {spec['version']} but the only available "
                f"collator version was {ICU_VERSION}. Requested collation spec: {shown}",
            )
        parsed += 1
    if parsed < len(spec):
        return _error(9, f"Collation spec contains unknown field. Collation spec: {shown}")

    full = expand(spec)
    if full["backwards"] and full["strength"] == 1:
        return _error(2, f"'backwards' is invalid with 'strength' of 1 in: {fmt(full)}")
    if full["caseFirst"] != "off" and not full["caseLevel"] and full["strength"] in (1, 2):
        return _error(
            2,
            "'caseFirst' is invalid unless 'caseLevel' is on or 'strength' is greater than 2 "
            f"in: {fmt(full)}",
        )
    return None


def expand(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A valid, non-simple collation with every option filled in, as mongod reports it."""
    locale = spec["locale"]
    full: dict[str, Any] = {"locale": locale}
    defaults = dict(ROOT_DEFAULTS)
    defaults.update(LOCALE_DEFAULTS.get(locale.split("@", 1)[0], {}))
    for field, default in defaults.items():
        value = spec.get(field, default)
        if field == "strength":
            value = int(value)
        full[field] = value
    full["version"] = ICU_VERSION
    return full


def _is_simple(spec: Any) -> bool:
    return spec is None or (isinstance(spec, Mapping) and spec.get("locale") == "simple")


def same_collation(a: Any, b: Any) -> bool:
    """Whether two collations (`None` or simple for the simple one) compare the same way."""
    if _is_simple(a) or _is_simple(b):
        return _is_simple(a) and _is_simple(b)
    return expand(a) == expand(b)


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


# ---------------------------------------------------------------------------------------------
# The dispatch wrapper
# ---------------------------------------------------------------------------------------------

_original_dispatch = None


#: The collation of the `$lookup` being run (`None`: the simple one), for the join's finds.
_LOOKUP_COLLATION: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "mongo_schema_lookup_collation", default=None
)


def _in_txn(body: Mapping[str, Any]) -> bool:
    return body.get("autocommit") is False


def _options(ctx: Any, db: str, coll: Any) -> dict[str, Any] | None:
    """The collection's options, `None` if it does not exist (or `coll` is no name)."""
    if not isinstance(coll, str) or not coll:
        return None
    storage = ctx.storage
    if not storage.collection_exists(db, coll):
        return None
    return storage.get_collection_options(db, coll)


def _default_collation(opts: Mapping[str, Any] | None) -> Any:
    if not opts or "viewOn" in opts:
        return None
    spec = opts.get("collation")
    if not isinstance(spec, Mapping) or _is_simple(spec):
        return None
    return dict(spec)


def _is_timeseries(opts: Mapping[str, Any] | None) -> bool:
    return bool(opts) and isinstance(opts.get("timeseries"), Mapping)


def _abort(body: Mapping[str, Any], ctx: Any) -> None:
    """mongod aborts a transaction on a command error inside it; so does the layer."""
    if not _in_txn(body) or body.get("startTransaction"):
        return
    abort = {"abortTransaction": 1, "autocommit": False, "$db": "admin"}
    for field in ("lsid", "txnNumber"):
        if field in body:
            abort[field] = body[field]
    try:
        _original_dispatch(abort, ctx)
    except Exception:  # the refusal stands whatever the abort says
        _log.exception("mongod rules: aborting the transaction failed")


def _refuse(rule: str, body: Mapping[str, Any], ctx: Any, reply: dict[str, Any]) -> dict:
    _log.info("mongod rules: %s refused %s: %s", rule, next(iter(body), "?"), reply["errmsg"])
    _abort(body, ctx)
    return reply


def _run_batch(
    body: Mapping[str, Any],
    ctx: Any,
    field: str,
    refused: dict[int, dict[str, Any]],
) -> dict[str, Any]:
    """Runs the statements of a write batch (`documents`, `updates`, `deletes`) that no rule
    refused and adds a write error for each refused one, as mongod reports a batch: an ordered
    batch stops at its first error."""
    items = list(body.get(field) or [])
    ordered = body.get("ordered", True) is not False
    if ordered:
        stop = min(refused)
        keep = list(range(stop))
    else:
        stop = None
        keep = [i for i in range(len(items)) if i not in refused]
    reply: dict[str, Any]
    if keep:
        sub = dict(body)
        sub[field] = [items[i] for i in keep]
        reply = dict(_original_dispatch(sub, ctx))
        if not reply.get("ok"):
            return reply
    else:
        reply = {"n": 0, "ok": 1.0}
        if field == "updates":
            reply["nModified"] = 0
    errors = []
    for e in reply.get("writeErrors") or []:
        e = dict(e)
        e["index"] = keep[e["index"]]
        errors.append(e)
    if "upserted" in reply:
        reply["upserted"] = [dict(u, index=keep[u["index"]]) for u in reply["upserted"]]
    if ordered:
        if not errors:
            errors.append(dict(refused[stop], index=stop))
    else:
        errors.extend(dict(e, index=i) for i, e in refused.items())
    errors.sort(key=lambda e: e["index"])
    reply["writeErrors"] = errors
    return reply


def _rewrite_marked(reply: Any, context: str) -> Any:
    """Turns the storage's marked `GeoExtractError` into mongod's CannotIndexParallelArrays."""
    if isinstance(reply, dict):
        errmsg = reply.get("errmsg")
        if isinstance(errmsg, str) and _MARK in errmsg:
            message = errmsg.split(_MARK, 1)[1]
            reply["errmsg"] = (
                f"Plan executor error during {context} :: caused by :: {message}"
                if context
                else message
            )
            reply["code"] = 171
            if "codeName" in reply:
                reply["codeName"] = _code_name(171)
        for value in reply.values():
            if isinstance(value, (dict, list)):
                _rewrite_marked(value, context)
    elif isinstance(reply, list):
        for value in reply:
            _rewrite_marked(value, context)
    return reply


# --- collation: validation and the collection's default --------------------------------------


def _check_top_collation(body: Mapping[str, Any]) -> dict[str, Any] | None:
    if _on("collation-locale") and "collation" in body:
        return collation_error(body["collation"])
    return None


def _with_default_collation(body: dict[str, Any], default: Any) -> dict[str, Any]:
    # mongod runs a command sent without a collation under the collection's default
    # (`CollectionImpl::getDefaultCollator`, used by `CanonicalQuery`/`ExpressionContext` when
    # the request's collation is empty: src/mongo/db/query/canonical_query.cpp,
    # src/mongo/db/pipeline/expression_context.cpp; jstests/core/query/collation/collation.js
    # "default collation ... is used for find/count/distinct/update/delete/findAndModify/
    # aggregate").
    if default is not None and _on("default-collation") and "collation" not in body:
        body = dict(body)
        body["collation"] = default
    return _simple_left_out(body)


def _simple_left_out(item: Any) -> Any:
    # `{ locale: "simple" }` is no collator to mongod (`CollatorFactoryICU::makeFromBSON`
    # returns a null collator for it: "A null CollatorInterface indicates simple binary
    # compare", src/mongo/db/query/collation/collator_factory_icu.cpp), so a command that
    # states it runs as one without a collation on a collection without a default, and an
    # index without a collation serves it. SecantusDB parses it as a collation of strength 3,
    # which uses no index of the simple collation: once the default is decided, the simple
    # collation is left out, which SecantusDB reads as the simple one (it ignores defaults).
    if (
        _on("default-collation")
        and isinstance(item, Mapping)
        and "collation" in item
        and isinstance(item["collation"], Mapping)
        and item["collation"].get("locale") == "simple"
        and len(item["collation"]) == 1
    ):
        item = dict(item)
        del item["collation"]
    return item


def _statements_with_default(
    body: dict[str, Any], field: str, default: Any
) -> dict[str, Any]:
    if not _on("default-collation"):
        return body
    items = body.get(field)
    if not isinstance(items, list):
        return body
    changed = False
    out = []
    for item in items:
        if default is not None and isinstance(item, Mapping) and "collation" not in item:
            item = dict(item)
            item["collation"] = default
            changed = True
        left = _simple_left_out(item)
        changed |= left is not item
        out.append(left)
    if not changed:
        return body
    body = dict(body)
    body[field] = out
    return body


def _statement_collation_errors(body: Mapping[str, Any], field: str) -> dict[int, dict]:
    refused: dict[int, dict] = {}
    if not _on("collation-locale"):
        return refused
    for i, item in enumerate(body.get(field) or []):
        if isinstance(item, Mapping) and "collation" in item:
            e = collation_error(item["collation"])
            if e is not None:
                refused[i] = {"index": i, "code": e["code"], "errmsg": e["errmsg"]}
    return refused


# --- time series -------------------------------------------------------------------------------


def _timeseries_txn_error(name: str, db: str, coll: str) -> dict[str, Any]:
    # src/mongo/db/commands/write_commands.cpp (7.0): inserts,
    # "Cannot insert into a time-series collection in a multi-document transaction: <ns>";
    # updates and deletes, "Cannot perform a multi-document transaction on a time-series
    # collection: <ns>"; OperationNotSupportedInTransaction (263).
    # jstests/core/txns/timeseries_insert_in_txn.js,
    # jstests/noPassthrough/timeseries/timeseries_delete_update_in_txn.js. (8.0 takes a single
    # update or delete of one measurement in a transaction; 7.0 takes none.)
    if name == "insert":
        return _error(
            263,
            "Cannot insert into a time-series collection in a multi-document transaction: "
            + _ns(db, coll),
        )
    return _error(
        263,
        "Cannot perform a multi-document transaction on a time-series collection: "
        + _ns(db, coll),
    )


# mongod has no limit of its own on a measurement: it refuses one whose bucket would pass the
# 16 MiB user BSON limit (BSONObjectTooLarge, 10334, the bucket document's insert:
# "object to insert too large. size in bytes: .., max size: 16777216"). A new bucket always
# takes its first measurement (bucket_catalog_internal.cpp, `addMeasurementToBatchAndBucket`
# with `isNewlyOpenedBucket`), and holds the meta field once (`meta`) and every other field
# three times (`control.min`, `control.max`, `data`):
# jstests/core/timeseries/write/timeseries_insert_respect_max_bson_size_too_big.js refuses a
# 16 MB meta and 8 MB of metrics ("too big due to total metric size being copied into control
# block"). The manual's "4 MB" (time series limitations) is not enforced by the server. This
# is the bound mongo-schema's `Schema::build` checks (`SizeBound::of_measurement`).
MAX_BUCKET = 16 * 1024 * 1024
BUCKET_COPIES = 3


def _bucket_size(doc: Mapping, meta: Any) -> int:
    """The size of the bucket of one measurement: the meta field once, the rest three times."""
    import bson

    whole = len(bson.encode(doc))
    meta_element = 0
    if isinstance(meta, str) and meta in doc:
        # type byte, key and NUL, value: the element as it is in the measurement
        meta_element = len(bson.encode({meta: doc[meta]})) - 5
    return meta_element + BUCKET_COPIES * (whole - meta_element)

# `create` options a time series collection cannot have: src/mongo/db/commands/create_command.cpp
# ("<ns>: 'timeseries' is not allowed with '<option>'", InvalidOptions),
# jstests/noPassthrough/change_stream_pre_and_post_images_option.js (5.1+: pre- and post-images).
_TS_CREATE_REFUSED = (
    "validator",
    "validationLevel",
    "validationAction",
    "changeStreamPreAndPostImages",
    "recordPreImages",
    "viewOn",
    "pipeline",
    "clusteredIndex",
    "idIndex",
    "autoIndexId",
    "size",
    "max",
)
# `collMod` options a time series collection cannot take: src/mongo/db/catalog/coll_mod.cpp,
# "option not supported on a time-series collection: <option>" (InvalidOptions).
_TS_COLLMOD_REFUSED = (
    "validator",
    "validationLevel",
    "validationAction",
    "changeStreamPreAndPostImages",
    "recordPreImages",
    "viewOn",
    "pipeline",
    "cappedSize",
    "cappedMax",
)


# --- the commands ------------------------------------------------------------------------------


def _create(body: dict[str, Any], ctx: Any) -> dict[str, Any] | None:
    if (e := _check_top_collation(body)) is not None:
        return _refuse("collation-locale", body, ctx, e)
    if "timeseries" in body:
        db, coll = ctx.db_name, body.get("create")
        if _on("timeseries-transaction") and _in_txn(body):
            # src/mongo/db/catalog/create_collection.cpp; jstests/core/txns/
            # time_series_create_in_txn.js.
            return _refuse(
                "timeseries-transaction",
                body,
                ctx,
                _error(
                    263,
                    "Cannot create a time-series collection in a multi-document transaction.",
                ),
            )
        if _on("timeseries-options"):
            for option in _TS_CREATE_REFUSED:
                if option in body:
                    return _refuse(
                        "timeseries-options",
                        body,
                        ctx,
                        _error(
                            72,
                            f"{_ns(db, coll)}: 'timeseries' is not allowed with '{option}'",
                        ),
                    )
            if body.get("capped"):
                return _refuse(
                    "timeseries-options",
                    body,
                    ctx,
                    _error(72, f"{_ns(db, coll)}: 'timeseries' is not allowed with 'capped'"),
                )
    return None


def _coll_mod(body: dict[str, Any], ctx: Any) -> dict[str, Any] | None:
    if not _on("timeseries-options"):
        return None
    opts = _options(ctx, ctx.db_name, body.get("collMod"))
    if _is_timeseries(opts):
        for option in _TS_COLLMOD_REFUSED:
            if option in body:
                return _refuse(
                    "timeseries-options",
                    body,
                    ctx,
                    _error(72, f"option not supported on a time-series collection: {option}"),
                )
    return None


def _read(name: str):
    """find, count, distinct: the collation is checked, the collection's default applied."""

    def handler(body: dict[str, Any], ctx: Any) -> dict[str, Any] | dict | None:
        if (e := _check_top_collation(body)) is not None:
            return _refuse("collation-locale", body, ctx, e)
        opts = _options(ctx, ctx.db_name, body.get(name))
        new = _with_default_collation(body, _default_collation(opts))
        return ("pass", new) if new is not body else None

    return handler


def _geo_near_error(
    spec: Mapping[str, Any], ctx: Any, db: str, coll: str, opts: Mapping[str, Any]
) -> tuple[str, dict[str, Any]] | None:
    if _is_timeseries(opts):
        if not _on("timeseries-geonear"):
            return None
        # src/mongo/db/pipeline/document_source_internal_unpack_bucket.cpp (the metaField path)
        # and document_source_geo_near.cpp (a metric); jstests/core/timeseries/
        # timeseries_geonear_measurements.js.
        key = spec.get("key")
        if not key:
            return (
                "timeseries-geonear",
                _error(5892921, "Must specify 'key' option for $geoNear on a time-series collection"),
            )
        meta = opts["timeseries"].get("metaField")
        on_meta = isinstance(key, str) and meta is not None and key.split(".", 1)[0] == meta
        query = spec.get("query")
        if isinstance(query, Mapping) and query:
            return (
                "timeseries-geonear",
                _error(
                    1938439 if on_meta else 5860207,
                    "Must not specify 'query' for $geoNear on a time-series collection; use "
                    "$match instead",
                ),
            )
        if not on_meta and spec.get("includeLocs"):
            return (
                "timeseries-geonear",
                _error(5860208, "$geoNear 'includeLocs' is not supported on time-series metrics"),
            )
        return None
    if not _on("geonear-key") or spec.get("key"):
        return None
    # src/mongo/db/pipeline/pipeline_d.cpp, `extractGeoNearFieldFromIndexes`: without 'key',
    # one 2d index is used, else one 2dsphere index; hidden indexes do not count; more than one
    # is IndexNotFound (27).
    indexes = [ix for ix in ctx.storage.list_indexes(db, coll) if not ix.get("hidden")]

    def of_type(kind: str) -> list:
        return [ix for ix in indexes if kind in (ix.get("key") or {}).values()]

    for kind in ("2d", "2dsphere"):
        found = of_type(kind)
        if len(found) > 1:
            return (
                "geonear-key",
                _error(
                    27,
                    f"There is more than one {kind} index on {_ns(db, coll)}; unsure which to "
                    "use for $geoNear",
                ),
            )
        if len(found) == 1:
            return None
    return None


def _aggregate(body: dict[str, Any], ctx: Any):
    if (e := _check_top_collation(body)) is not None:
        return _refuse("collation-locale", body, ctx, e)
    db, coll = ctx.db_name, body.get("aggregate")
    opts = _options(ctx, db, coll)
    pipeline = body.get("pipeline")
    first = pipeline[0] if isinstance(pipeline, list) and pipeline else None
    if isinstance(first, Mapping) and opts is not None:
        if "$changeStream" in first and _is_timeseries(opts) and _on("timeseries-change-stream"):
            # jstests/noPassthrough/timeseries/timeseries_change_stream.js (no change stream on
            # a time series collection: CommandNotSupportedOnView).
            return _refuse(
                "timeseries-change-stream",
                body,
                ctx,
                _error(166, f"Namespace {_ns(db, coll)} is a view, not a collection"),
            )
        if isinstance(first.get("$geoNear"), Mapping):
            found = _geo_near_error(first["$geoNear"], ctx, db, coll, opts)
            if found is not None:
                return _refuse(found[0], body, ctx, found[1])
    new = _with_default_collation(body, _default_collation(opts))
    return ("pass", new) if new is not body else None


def _find_and_modify(body: dict[str, Any], ctx: Any):
    if (e := _check_top_collation(body)) is not None:
        return _refuse("collation-locale", body, ctx, e)
    name = next(iter(body))
    db, coll = ctx.db_name, body.get(name)
    opts = _options(ctx, db, coll)
    if _is_timeseries(opts) and _in_txn(body) and _on("timeseries-transaction"):
        return _refuse(
            "timeseries-transaction", body, ctx, _timeseries_txn_error("update", db, coll)
        )
    new = _with_default_collation(body, _default_collation(opts))
    return ("pass", new) if new is not body else None


def _insert(body: dict[str, Any], ctx: Any):
    db, coll = ctx.db_name, body.get("insert")
    opts = _options(ctx, db, coll)
    if opts is None:
        return None
    if _is_timeseries(opts):
        return _insert_measurements(body, ctx, db, coll)
    default = _default_collation(opts)
    if default is None or not _on("id-index"):
        return None
    # The _id index has the collection's collation (`getDefaultIdIndexSpec`,
    # src/mongo/db/catalog/index_catalog_impl.cpp), so on a case-insensitive collection "abc"
    # is a duplicate of a stored "ABC" (DuplicateKey, 11000; the message names the index's
    # collation: `buildDupKeyErrorStatus`, src/mongo/db/storage/duplicate_key_error_info.cpp).
    # SecantusDB keys documents by the exact _id.
    from secantus.collation import cmp_key, parse

    collator = parse(default)
    if collator is None:
        return None
    refused: dict[int, dict] = {}
    seen: dict[Any, Any] = {}
    for i, doc in enumerate(body.get("documents") or []):
        if not isinstance(doc, Mapping) or not isinstance(doc.get("_id"), str):
            continue
        doc_id = doc["_id"]
        key = cmp_key(doc_id, collator)
        clash = key in seen and seen[key] != doc_id
        if not clash and key not in seen:
            stored = ctx.storage.find_matching(db, coll, {"_id": doc_id}, limit=1, collation=default)
            clash = bool(stored) and stored[0].get("_id") != doc_id
        seen.setdefault(key, doc_id)
        if clash:
            refused[i] = {
                "index": i,
                "code": 11000,
                "errmsg": f"E11000 duplicate key error collection: {_ns(db, coll)} index: _id_ "
                f"collation: {fmt(expand(default))} dup key: {{ _id: {fmt(doc_id)} }}",
                "keyPattern": {"_id": 1},
                "keyValue": {"_id": doc_id},
            }
    if not refused:
        return None
    _log.info("mongod rules: id-index refused %d duplicate _ids under the collation", len(refused))
    return ("reply", _run_batch(body, ctx, "documents", refused))


def _insert_measurements(body: dict[str, Any], ctx: Any, db: str, coll: str):
    if _in_txn(body) and _on("timeseries-transaction"):
        return _refuse("timeseries-transaction", body, ctx, _timeseries_txn_error("insert", db, coll))
    if _on("timeseries-measurement-size"):
        opts = _options(ctx, db, coll) or {}
        meta = (opts.get("timeseries") or {}).get("metaField")
        refused: dict[int, dict] = {}
        for i, doc in enumerate(body.get("documents") or []):
            if not isinstance(doc, Mapping):
                continue
            size = _bucket_size(doc, meta)
            if size > MAX_BUCKET:
                refused[i] = {
                    "index": i,
                    "code": 10334,
                    "errmsg": f"object to insert too large. size in bytes: {size}, max size: "
                    f"{MAX_BUCKET} (the bucket of this measurement: its meta field once, every "
                    "other field in control.min, control.max and data)",
                }
        if refused:
            _log.info(
                "mongod rules: timeseries-measurement-size refused %d measurements", len(refused)
            )
            return ("reply", _run_batch(body, ctx, "documents", refused))
    return None


def _meta_path(path: Any, meta: str) -> bool:
    return isinstance(path, str) and (path == meta or path.startswith(meta + "."))


def _query_on_meta(query: Any, meta: str) -> bool:
    if not isinstance(query, Mapping):
        return False
    for key, value in query.items():
        if key in ("$and", "$or", "$nor"):
            if not isinstance(value, list) or not all(_query_on_meta(q, meta) for q in value):
                return False
        elif key == "$comment":
            continue
        elif not _meta_path(key, meta):
            return False
    return True


def _timeseries_update_error(statement: Any, meta: Any) -> str | None:
    """mongod 7.0's limits on an update of a time series collection, in its order
    (`timeseries::...` in src/mongo/db/timeseries/timeseries_update_delete_util.cpp and
    src/mongo/db/commands/write_commands.cpp when `featureFlagTimeseriesUpdatesSupport` is off,
    as in 7.0; 8.0 lifts them): InvalidOptions (72)."""
    if not isinstance(statement, Mapping):
        return None
    if not isinstance(meta, str):
        return "Cannot perform an update on a time-series collection that does not have a metaField"
    if not statement.get("multi"):
        return "Cannot perform a non-multi update on a time-series collection"
    if statement.get("upsert"):
        return "Cannot perform an upsert on a time-series collection"
    if not _query_on_meta(statement.get("q") or {}, meta):
        return (
            "Cannot perform an update or delete on a time-series collection when querying on a "
            f"field that is not the metaField '{meta}'"
        )
    update = statement.get("u")
    if isinstance(update, list):
        return "Cannot perform an update on a time-series collection using a pipeline update"
    if not isinstance(update, Mapping) or not all(str(k).startswith("$") for k in update):
        return "Cannot perform an update on a time-series collection using a replacement document"
    for fields in update.values():
        paths = fields.keys() if isinstance(fields, Mapping) else []
        for path in paths:
            if not _meta_path(path, meta):
                return (
                    "Cannot perform an update on a time-series collection which updates a field "
                    f"that is not the metaField '{meta}'"
                )
    return None


def _write(field: str):
    """update and delete: time series in a transaction, each statement's collation, the
    collection's default."""

    def handler(body: dict[str, Any], ctx: Any):
        name = next(iter(body))
        db, coll = ctx.db_name, body.get(name)
        opts = _options(ctx, db, coll)
        if _is_timeseries(opts) and _in_txn(body) and _on("timeseries-transaction"):
            return _refuse("timeseries-transaction", body, ctx, _timeseries_txn_error(name, db, coll))
        new = _statements_with_default(body, field, _default_collation(opts))
        refused = _statement_collation_errors(new, field)
        if field == "updates" and _is_timeseries(opts) and _on("timeseries-update"):
            meta = opts["timeseries"].get("metaField")
            for i, statement in enumerate(new.get("updates") or []):
                if i not in refused and (message := _timeseries_update_error(statement, meta)):
                    refused[i] = {"index": i, "code": 72, "errmsg": message}
        if refused:
            _log.info("mongod rules: refused %d statements of %s", len(refused), name)
            return ("reply", _run_batch(new, ctx, field, refused))
        return ("pass", new) if new is not body else None

    return handler


def _create_indexes(body: dict[str, Any], ctx: Any):
    db, coll = ctx.db_name, body.get("createIndexes")
    specs = body.get("indexes")
    if not isinstance(specs, list):
        return None
    opts = _options(ctx, db, coll)
    default = _default_collation(opts)
    existing = {ix.get("name"): ix for ix in ctx.storage.list_indexes(db, coll)} if opts is not None else {}
    new_specs = []
    changed = False
    # 1. Each spec's collation, the collection's default added where it has none, the simple
    #    one left out (`CollectionImpl::addCollationDefaultsToIndexSpecsForCreate`,
    #    src/mongo/db/catalog/collection_impl.cpp), and the _id index held to the
    #    collection's collation there.
    from_default: set[int] = set()
    for spec in specs:
        if not isinstance(spec, Mapping):
            new_specs.append(spec)
            continue
        spec = dict(spec)
        key = spec.get("key") if isinstance(spec.get("key"), Mapping) else {}
        if "collation" in spec:
            if _on("collation-locale"):
                e = collation_error(spec["collation"])
                if e is not None:
                    return _refuse("collation-locale", body, ctx, e)
            effective = None if _is_simple(spec["collation"]) else spec["collation"]
            if effective is None and _on("default-collation"):
                del spec["collation"]
                changed = True
        else:
            effective = default
            if default is not None and _on("default-collation"):
                spec["collation"] = default
                from_default.add(len(new_specs))
                changed = True
        if _is_id_pattern(key) and _on("id-index") and not same_collation(effective, default):
            shown_index = (
                fmt(expand(effective)) if effective is not None else '{ locale: "simple" }'
            )
            shown_coll = fmt(expand(default)) if default is not None else '{ locale: "simple" }'
            return _refuse(
                "id-index",
                body,
                ctx,
                _error(
                    2,
                    "The _id index must have the same collation as the collection. Index "
                    f"collation: {shown_index}, collection collation: {shown_coll}",
                ),
            )
        new_specs.append(spec)
    # 2. Each spec on its own (`IndexCatalogImpl::_isSpecOk`,
    #    src/mongo/db/catalog/index_catalog_impl.cpp) and against the indexes there
    #    (`_doesSpecConflictWithExisting`, same file; `IndexDescriptor::compareIndexOptions`,
    #    src/mongo/db/index/index_descriptor.cpp: the key, unique, sparse, collation and partial
    #    filter identify an index, and every { _id: 1 } index is unique).
    for position, spec in enumerate(new_specs):
        if not isinstance(spec, Mapping):
            continue
        key = spec.get("key") if isinstance(spec.get("key"), Mapping) else {}
        collation = spec.get("collation")
        if collation is not None and not _is_simple(collation) and _on("collation-locale"):
            kinds = [
                v for v in key.values() if isinstance(v, str) and v not in ("2dsphere", "hashed")
            ]
            if kinds:
                # `_isSpecOk`: only btree, 2dsphere, hashed and wildcard indexes take a
                # collation; on a collection with a default one, a text or 2d index must say
                # { locale: "simple" }.
                rule = "default-collation" if position in from_default else "collation-locale"
                return _refuse(
                    rule,
                    body,
                    ctx,
                    _error(
                        67,
                        f"Index type '{kinds[0]}' does not support collation: "
                        f"{fmt(expand(collation))}",
                    ),
                )
        if _is_id_pattern(key) and _on("id-index"):
            if "unique" in spec and not spec["unique"]:
                return _refuse("id-index", body, ctx, _error(67, "_id index cannot be non-unique"))
            if "partialFilterExpression" in spec:
                return _refuse("id-index", body, ctx, _error(67, "_id index cannot be a partial index"))
            if spec.get("sparse"):
                return _refuse("id-index", body, ctx, _error(67, "_id index cannot be sparse"))
            name = spec.get("name")
            if name != "_id_" and name not in existing and _same_key(key, {"_id": 1}):
                shown = _spec_shown(spec)
                extra = {
                    k
                    for k in spec
                    if k
                    not in ("v", "key", "name", "unique", "sparse", "collation", "partialFilterExpression", "ns")
                }
                message = (
                    "An equivalent index already exists with a different name and options. "
                    f"Requested index: {shown}, existing index: "
                    + fmt({"v": 2, "key": {"_id": 1}, "name": "_id_"})
                    if extra
                    else "Index already exists with a different name: _id_"
                )
                return _refuse("id-index", body, ctx, _error(85, message))
    # 3. The index build over the stored documents (`MultiIndexBlock::insertAllDocumentsInCollection`
    #    generating each document's keys: btree_key_generator.cpp), for a new compound index.
    if _on("parallel-arrays") and opts is not None and not _is_timeseries(opts):
        builds = [
            s
            for s in new_specs
            if isinstance(s, Mapping)
            and isinstance(s.get("key"), Mapping)
            and len(s["key"]) > 1
            and _is_btree(s["key"])
            and s.get("name") not in existing
        ]
        if builds:
            from secantus.query import matches

            for doc in ctx.storage._all_docs(db, coll):
                for s in builds:
                    pf = s.get("partialFilterExpression")
                    if isinstance(pf, Mapping) and pf and not matches(doc, pf):
                        continue
                    message = parallel_arrays(doc, s["key"])
                    if message is not None:
                        coll_uuid = ctx.storage.collection_uuid(db, coll)
                        return _refuse(
                            "parallel-arrays",
                            body,
                            ctx,
                            _error(
                                171,
                                f"Index build failed: {_uuid.uuid4()}: Collection "
                                f"{_ns(db, coll)} ( {coll_uuid} ) :: caused by :: {message}",
                            ),
                        )
    if not changed:
        return None
    new = dict(body)
    new["indexes"] = new_specs
    return ("pass", new)


def _is_id_pattern(key: Mapping[str, Any]) -> bool:
    # `IndexDescriptor::isIdIndexPattern`: exactly { _id: 1 } or { _id: -1 }.
    if len(key) != 1 or "_id" not in key:
        return False
    v = key["_id"]
    return isinstance(v, (int, float)) and not isinstance(v, bool) and int(v) in (1, -1)


def _same_key(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return list(a.keys()) == list(b.keys()) and all(
        isinstance(a[k], (int, float)) and not isinstance(a[k], bool) and a[k] == b[k]
        for k in a
    )


def _spec_shown(spec: Mapping[str, Any]) -> str:
    shown: dict[str, Any] = {"v": 2}
    shown.update(spec)
    return fmt(shown)


def _explain(body: dict[str, Any], ctx: Any):
    # The explained command is judged as if it ran: mongod explains it under the same rules
    # (and the collection's default collation).
    inner = body.get("explain")
    if not isinstance(inner, Mapping) or not inner:
        return None
    name = next(iter(inner))
    if name not in ("find", "count", "distinct", "aggregate", "findAndModify", "update", "delete"):
        return None
    result = _PRE[name](dict(inner), ctx)
    if isinstance(result, tuple):
        kind, value = result
        if kind != "pass":
            return None  # a batch reply is not an explain
        new = dict(body)
        new["explain"] = value
        return ("pass", new)
    return result


_PRE = {
    "create": _create,
    "collMod": _coll_mod,
    "find": _read("find"),
    "count": _read("count"),
    "distinct": _read("distinct"),
    "aggregate": _aggregate,
    "findAndModify": _find_and_modify,
    "findandmodify": _find_and_modify,
    "insert": _insert,
    "update": _write("updates"),
    "delete": _write("deletes"),
    "createIndexes": _create_indexes,
    "explain": _explain,
}

_POST_CONTEXT = {
    "insert": "",
    "update": "update",
    "findAndModify": "findAndModify",
    "findandmodify": "findAndModify",
    "bulkWrite": "update",
}


def dispatch(body: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """SecantusDB's `dispatch` with mongod's rules in front."""
    name = next(iter(body), "") if isinstance(body, Mapping) else ""
    handler = _PRE.get(name)
    if handler is not None:
        try:
            result = handler(body, ctx)
        except Exception:
            # A rule that fails on a command it did not expect must not take the server down:
            # the command runs as SecantusDB would run it, and the log says so.
            _log.exception("mongod rules: a rule failed on %s; passing it through", name)
            result = None
        if isinstance(result, tuple):
            kind, value = result
            if kind == "reply":
                return _rewrite_marked(value, _POST_CONTEXT.get(name, ""))
            body = value
        elif result is not None:
            return result
    reply = _original_dispatch(body, ctx)
    if name in _POST_CONTEXT and isinstance(reply, dict):
        reply = _rewrite_marked(reply, _POST_CONTEXT[name])
    return reply


# ---------------------------------------------------------------------------------------------
# Change streams
# ---------------------------------------------------------------------------------------------

# The collections the change stream being served admits (`None`: any), while its command runs.
_STREAM_COLLECTIONS: contextvars.ContextVar[frozenset[str] | None] = contextvars.ContextVar(
    "stream_collections", default=None
)


def stream_collections(match: Mapping[str, Any]) -> frozenset[str] | None:
    """The collections a change stream's `$match` admits by its conditions on `ns.coll` (a
    string or a `$in` of strings, under `$and` and in every branch of an `$or`); `None` when
    it admits any."""
    found: list[frozenset[str]] = []
    for key, condition in match.items():
        if key == "ns.coll":
            if isinstance(condition, str):
                found.append(frozenset([condition]))
            elif (
                isinstance(condition, Mapping)
                and list(condition) == ["$in"]
                and isinstance(condition["$in"], list)
                and all(isinstance(c, str) for c in condition["$in"])
            ):
                found.append(frozenset(condition["$in"]))
        elif key == "$and" and isinstance(condition, list):
            for part in condition:
                if isinstance(part, Mapping):
                    admitted = stream_collections(part)
                    if admitted is not None:
                        found.append(admitted)
        elif key == "$or" and isinstance(condition, list) and condition:
            branches = [stream_collections(b) if isinstance(b, Mapping) else None for b in condition]
            if all(b is not None for b in branches):
                found.append(frozenset().union(*branches))
    if not found:
        return None
    return frozenset.intersection(*found)


# ---------------------------------------------------------------------------------------------
# Installing the hooks
# ---------------------------------------------------------------------------------------------


def install() -> None:
    """Installs the rules into SecantusDB's server; fails (and so the server does not start) if
    the installed SecantusDB is not the pinned version or lacks a hook."""
    global _OFF, _original_dispatch
    from importlib import metadata

    version = metadata.version("SecantusDB")
    if version != PINNED_SECANTUS:
        raise SystemExit(
            f"mongo-schema-testkit: the mongod rules are written for SecantusDB "
            f"{PINNED_SECANTUS}, found {version}"
        )
    off = {r.strip() for r in os.environ.get(OFF_ENV, "").split(",") if r.strip()}
    unknown = sorted(off - set(RULES))
    if unknown:
        raise SystemExit(
            f"mongo-schema-testkit: unknown mongod rules in {OFF_ENV}: {', '.join(unknown)} "
            f"(known: {', '.join(RULES)})"
        )
    _OFF = frozenset(off)

    import secantus.aggregate as aggregate
    import secantus.changestreams as changestreams
    import secantus.server as server
    from secantus.storage import Storage

    for owner, attr in (
        (server, "dispatch"),
        (Storage, "_validate_geo_indexes"),
        (Storage, "_all_docs"),
        (Storage, "list_indexes"),
        (Storage, "get_collection_options"),
        (Storage, "collection_exists"),
        (Storage, "collection_uuid"),
        (Storage, "_try_index_id_keys"),
        (changestreams, "project"),
        (changestreams, "make_resume_token"),
        (Storage, "read_oplog_scan"),
        (Storage, "current_cluster_time"),
        (aggregate, "_index_join_lookup"),
        (aggregate, "_foreign_field_has_simple_index"),
    ):
        if not callable(getattr(owner, attr, None)):
            raise SystemExit(
                f"mongo-schema-testkit: SecantusDB {version} has no {owner.__name__}.{attr}; "
                "the mongod rules cannot be installed"
            )

    _original_dispatch = server.dispatch
    server.dispatch = dispatch

    if _on("parallel-arrays"):
        error_class = _parallel_error_class()
        validate = Storage._validate_geo_indexes

        def _validate_indexes(self, db, coll, doc, indexes, partials=None):
            validate(self, db, coll, doc, indexes, partials)
            compound = [ix for ix in indexes if len(ix[1]) > 1 and _is_btree(ix[1])]
            if not compound or self._is_timeseries(db, coll):
                return
            if partials is None:
                partials = self._partial_filters(db, coll)
            from secantus.query import matches

            for name, key, _sparse, _unique in compound:
                pf = partials.get(name)
                if pf is not None and not matches(doc, pf):
                    continue
                message = parallel_arrays(doc, key)
                if message is not None:
                    raise error_class(message)

        Storage._validate_geo_indexes = _validate_indexes

    if _on("default-collation"):
        try_index_id_keys = Storage._try_index_id_keys

        def _id_lookup_under_collation(self, db, coll, filter, *, collation=None):
            # SecantusDB answers an equality on `_id` alone from its primary key, comparing the
            # bytes whatever the query's collation; mongod's `_id` index has the collection's
            # collation, so `find({ _id: "abc" })` on a case-insensitive collection finds "ABC".
            # Under a collation, a string `_id` is matched by the scan, which honours it.
            if (
                collation is not None
                and len(filter) == 1
                and "_id" in filter
                and _has_string(filter["_id"])
            ):
                return None
            return try_index_id_keys(self, db, coll, filter, collation=collation)

        Storage._try_index_id_keys = _id_lookup_under_collation

        stages = getattr(aggregate, "_STAGES", None)
        if not isinstance(stages, dict) or not callable(stages.get("$lookup")):
            raise SystemExit(
                f"mongo-schema-testkit: SecantusDB {version} has no $lookup stage to wrap; "
                "the mongod rules cannot be installed"
            )
        stage_lookup = stages["$lookup"]
        has_index = aggregate._foreign_field_has_simple_index
        index_join = aggregate._index_join_lookup

        def _lookup_under_collation(spec, docs, ctx):
            # mongod compares a $lookup's localField and foreignField under the aggregation's
            # collation: the command's, or else the default of the collection the aggregate
            # runs on (jstests/aggregation/sources/lookup/collation_lookup.js: "the collation
            # either explicitly set on the aggregation operation, or the collation inherited
            # from the collection the aggregate command was performed on"), not the foreign
            # collection's. SecantusDB joins by exact value whatever the collation: under one,
            # the join is one collated find per document.
            collation = getattr(ctx, "collation", None)
            token = _LOOKUP_COLLATION.set(None if _is_simple(collation) else collation)
            try:
                return stage_lookup(spec, docs, ctx)
            finally:
                _LOOKUP_COLLATION.reset(token)

        def _has_index_or_collated(storage, db, coll, field):
            return _LOOKUP_COLLATION.get() is not None or has_index(storage, db, coll, field)

        def _join_under_collation(storage, db, coll, foreign_field, local_value):
            collation = _LOOKUP_COLLATION.get()
            if collation is None:
                return index_join(storage, db, coll, foreign_field, local_value)
            if isinstance(local_value, list):
                condition = {"$in": list(local_value)} if local_value else None
            else:
                condition = local_value
            return storage.find_matching(
                db, coll, {foreign_field: condition}, collation=collation
            )

        stages["$lookup"] = _lookup_under_collation
        aggregate._foreign_field_has_simple_index = _has_index_or_collated
        aggregate._index_join_lookup = _join_under_collation

    if _on("array-conditions"):
        try_index_keys = Storage._try_index_id_keys

        def _index_keys_per_element(self, db, coll, filter, *, collation=None):
            # Conditions mongod may match on different elements of an array: answered by the
            # scan and SecantusDB's matcher, which matches them as mongod does (an index must
            # change speed, never results). `explain` still shows the index mongod would pick.
            if filter and not any(str(f).startswith("$") for f in filter):
                multikey = self._multikey_index_names(db, coll)
                if multikey:
                    paths = {
                        str(path)
                        for name, key, _opts in self._iter_indexes(db, coll)
                        if name in multikey
                        for path in key
                    }
                    if across_elements(filter, paths):
                        return None
            return try_index_keys(self, db, coll, filter, collation=collation)

        Storage._try_index_id_keys = _index_keys_per_element

    if _on("timeseries-change-stream"):
        project = changestreams.project

        def _project(seq, oplog_entry, *, storage, **kwargs):
            # A time series collection's writes are writes to its buckets collection
            # (system.buckets.<name>), which change streams leave out
            # (src/mongo/db/pipeline/change_stream_filter_helpers.cpp matches no system
            # collection); a stream on the database or cluster never shows them.
            event, invalidates = project(seq, oplog_entry, storage=storage, **kwargs)
            if event is not None and event.get("operationType") in (
                "insert",
                "update",
                "replace",
                "delete",
            ):
                ns = event.get("ns") or {}
                db, coll = ns.get("db"), ns.get("coll")
                if isinstance(db, str) and isinstance(coll, str):
                    opts = storage.get_collection_options(db, coll)
                    if _is_timeseries(opts):
                        return None, False
            return event, invalidates

        changestreams.project = _project

    if _on("change-stream-clock"):
        make_resume_token = changestreams.make_resume_token
        read_oplog_scan = Storage.read_oplog_scan
        cluster_time = Storage.current_cluster_time
        storages: list[Any] = []

        def _current_cluster_time(self):
            if not storages:
                storages.append(self)
            return cluster_time(self)

        def _resume_token(data):
            # mongod's post-batch resume token is the position its scan of the oplog reached,
            # with that position's time (src/mongo/db/pipeline/
            # change_stream_post_batch_resume_token_tracking.md: "the highest oplog timestamp
            # scanned"). SecantusDB gives a token that marks a position without an event (its
            # `k` empty: a reply whose scan matched nothing, or the open of a stream) the time
            # it mints at that moment: later than an entry minted and not yet visible to the
            # scan, which a later reply then delivers. A reader that takes the token's time
            # for "every change up to here was delivered" (the sync worker's `caught_up`)
            # answered before that change was applied. Here it carries the time of the entry
            # at its position.
            if not data.document_key and not data.from_invalidate and storages and data.seq > 0:
                try:
                    rows, _ = read_oplog_scan(storages[0], start_seq=data.seq, limit=1)
                except Exception:  # the token as SecantusDB makes it
                    rows = []
                if rows and rows[0][0] == data.seq:
                    ts = rows[0][1].get("ts")
                    if ts is not None and ts < data.ts:
                        data = dataclasses.replace(data, ts=ts)
            return make_resume_token(data)

        Storage.current_cluster_time = _current_cluster_time
        changestreams.make_resume_token = _resume_token

    if _on("change-stream-match-first"):
        layered = server.dispatch
        project_all = changestreams.project
        streams: dict[int, frozenset[str]] = {}

        def _dispatch_streams(body, ctx):
            # mongod rewrites a change stream's $match on `ns` into its scan of the oplog
            # (src/mongo/db/pipeline/change_stream_rewrite_helpers.cpp), so an event of a
            # collection the $match leaves out never reaches the stages after it: neither the
            # post-image lookup (`fullDocument: "updateLookup"`, a read per event) nor the
            # "required" image's error. SecantusDB projects every event of the stream's scope,
            # with its lookup, before the $match: a database stream read past 100,000 writes of
            # another collection cost 100,000 lookups (the sync worker fell minutes behind a
            # large fan-out of its own).
            name = next(iter(body), "") if isinstance(body, Mapping) else ""
            colls = None
            if name == "aggregate":
                pipeline = body.get("pipeline") or []
                if (
                    len(pipeline) > 1
                    and isinstance(pipeline[0], Mapping)
                    and "$changeStream" in pipeline[0]
                    and isinstance(pipeline[1], Mapping)
                    and isinstance(pipeline[1].get("$match"), Mapping)
                ):
                    colls = stream_collections(pipeline[1]["$match"])
            elif name == "getMore":
                try:
                    colls = streams.get(int(body.get("getMore")))
                except (TypeError, ValueError):
                    colls = None
            token = _STREAM_COLLECTIONS.set(colls)
            try:
                reply = layered(body, ctx)
            finally:
                _STREAM_COLLECTIONS.reset(token)
            if name == "aggregate" and colls is not None and isinstance(reply, Mapping):
                cursor = reply.get("cursor")
                cursor_id = cursor.get("id") if isinstance(cursor, Mapping) else None
                if cursor_id:
                    streams[int(cursor_id)] = colls
                    while len(streams) > 10_000:  # cursors that died without a killCursors
                        streams.pop(next(iter(streams)))
            return reply

        def _project_matched(seq, oplog_entry, *, storage, **kwargs):
            colls = _STREAM_COLLECTIONS.get()
            if colls is not None and str(oplog_entry.get("op", "")) in ("i", "u", "d"):
                ns = str(oplog_entry.get("ns", ""))
                if ns.split(".", 1)[-1] not in colls:
                    return None, False
            return project_all(seq, oplog_entry, storage=storage, **kwargs)

        server.dispatch = _dispatch_streams
        changestreams.project = _project_matched

    on = [r for r in RULES if r not in _OFF]
    sys.stderr.write(
        f"mongo-schema-testkit: mongod rules installed in SecantusDB {version}: "
        f"{len(on)} on ({', '.join(on)})"
        + (f"; off: {', '.join(sorted(_OFF))}" if _OFF else "")
        + "\n"
    )
    sys.stderr.flush()


def main() -> int:
    install()
    from secantus.cli import main as secantus_main

    return secantus_main()


if __name__ == "__main__":
    raise SystemExit(main())
