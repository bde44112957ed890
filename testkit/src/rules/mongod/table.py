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


