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
