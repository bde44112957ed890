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


