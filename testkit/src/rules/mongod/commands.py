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


