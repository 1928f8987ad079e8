#!/usr/bin/env python3
"""Writes docs/openapi.yaml, seqd's HTTP API in OpenAPI 3, from the tables
below: one row per family of leases, as the daemon's route table has them.
Run it after changing the API (needs PyYAML); TestOpenAPIMatchesHandler
(sequencer/) holds the result against the real handler, route by route,
status by status, code by code.

Usage: scripts/openapi.py > docs/openapi.yaml
"""
import sys

import yaml

DURATION = {"type": "string", "description": "a Go duration such as 15s or 1m30s"}
TOKEN = {"type": "integer", "format": "uint64", "minimum": 1,
         "description": "a 64-bit unsigned integer: parse it exactly (above 2^53 a float loses it)"}
LEASE_ID = {"type": "string", "pattern": "^[0-9a-f]{32}$"}
NAME = {"type": "string", "description": "segments of [A-Za-z0-9._-] joined by /, at most 256 bytes"}


def ref(name):
    return {"$ref": "#/components/schemas/" + name}


def obj(props, required=(), strict=True, description=None):
    o = {"type": "object", "properties": props}
    if required:
        o["required"] = list(required)
    if strict:
        o["additionalProperties"] = False
    if description:
        o["description"] = description
    return o


SCHEMAS = {
    "AcquireRequest": obj({
        "owner": {"type": "string", "maxLength": 256, "description": "who asks: a label shown by status reads, not a proof"},
        "lease_id": dict(LEASE_ID, description="an idempotent retry: a live lease's id returns it (every other field given must be the lease's, ttl aside); a new id grants under it"),
        "ttl": dict(DURATION, description="1s..1h, default 15s; a retry without it keeps the lease's"),
        "wait": dict(DURATION, description="0..10m; absent or 0s tries once"),
        "lock_delay": dict(DURATION, description="0..1m; default the daemon's --lock-delay"),
        "mode": {"type": "string", "enum": ["exclusive", "shared"]},
    }, ["owner"]),
    "SemaphoreAcquireRequest": obj({
        "owner": {"type": "string", "maxLength": 256},
        "lease_id": LEASE_ID,
        "ttl": DURATION,
        "wait": DURATION,
        "limit": {"type": "integer", "minimum": 1, "maximum": 65536,
                  "description": "every holder names the same: the first records it; another is 409 limit_mismatch. A retry with a lease_id may leave it out"},
    }, ["owner"]),
    "CampaignRequest": obj({
        "owner": {"type": "string", "maxLength": 256},
        "value": {"type": "string", "maxLength": 4096, "description": "what the leader publishes; default the owner"},
        "lease_id": LEASE_ID,
        "ttl": DURATION,
        "wait": DURATION,
    }, ["owner"]),
    "ProclaimRequest": obj({"lease_id": LEASE_ID, "token": TOKEN, "value": {"type": "string", "maxLength": 4096}},
                           ["lease_id", "token"]),
    "LeaseRequest": obj({"lease_id": LEASE_ID, "token": TOKEN,
                         "ttl": dict(DURATION, description="renew only: the new TTL; a release or resign with a ttl is 400")},
                        ["lease_id", "token"]),
    "RenewManyRequest": obj({
        "leases": {"type": "array", "minItems": 1, "maxItems": 500,
                   "items": obj({"name": NAME, "lease_id": LEASE_ID, "token": TOKEN}, ["name", "lease_id", "token"])},
        "ttl": DURATION,
    }, ["leases"]),
    "RenewManyResponse": obj({"results": {"type": "array", "items": obj({
        "name": NAME,
        "status": {"type": "integer", "description": "200, or the status the lease's own renew would have had"},
        "lease": ref("Lease"),
        "error": {"type": "string"},
        "code": {"type": "string"},
        "current_token": TOKEN,
    }, strict=False)}}, ["results"], strict=False),
    "CheckRequest": obj({
        "sequencer": {"type": "string", "description": "[kind:]name@token, plain or signed (.kid.sig), as a holder sends it"},
        "name": NAME,
        "token": TOKEN,
    }, description="either sequencer, or an exclusive lock's name and token"),
    "CheckResponse": obj({
        "valid": {"type": "boolean"},
        "current_token": {"type": "integer", "format": "uint64"},
        "code": {"type": "string", "enum": ["stale_token", "not_held"]},
        "error": {"type": "string"},
    }, ["valid", "current_token"], strict=False),
    "Lease": obj({
        "name": NAME,
        "token": TOKEN,
        "sequencer": {"type": "string", "description": "[kind:]name@token (kinds shared, semaphore, election; none for an exclusive lock), signed (.kid.sig) when the daemon signs; a listing's is never signed"},
        "lease_id": dict(LEASE_ID, description="absent from listings"),
        "owner": {"type": "string"},
        "ttl": DURATION,
        "expires_at": {"type": "string", "format": "date-time"},
        "term": dict(TOKEN, description="elections: the leadership's term (the token)"),
        "limit": {"type": "integer", "description": "semaphores: the limit"},
        "mode": {"type": "string", "enum": ["shared"], "description": "a shared lease"},
    }, ["name", "token", "sequencer", "owner", "ttl", "expires_at"], strict=False),
    "ReleaseResponse": obj({"released": {"type": "boolean"}}, ["released"], strict=False),
    "MultiAcquireRequest": obj({
        "names": {"type": "array", "minItems": 1, "maxItems": 64, "items": NAME,
                  "description": "distinct exclusive locks, taken all at once or not at all; a retry names them in the same order"},
        "owner": {"type": "string", "maxLength": 256},
        "ttl": DURATION,
        "wait": DURATION,
        "lease_id": LEASE_ID,
        "lock_delay": DURATION,
    }, ["names", "owner"]),
    "LockRef": obj({"name": NAME, "token": TOKEN}, ["name", "token"]),
    "MultiLeaseRequest": obj({
        "lease_id": LEASE_ID,
        "locks": {"type": "array", "items": ref("LockRef"), "description": "the lease's locks with their tokens, in its order"},
        "ttl": dict(DURATION, description="renew only"),
    }, ["lease_id", "locks"]),
    "MultiLease": obj({
        "locks": {"type": "array", "items": obj({"name": NAME, "token": TOKEN, "sequencer": {"type": "string"}},
                                                 ["name", "token", "sequencer"], strict=False)},
        "lease_id": LEASE_ID,
        "owner": {"type": "string"},
        "ttl": DURATION,
        "expires_at": {"type": "string", "format": "date-time"},
        "safe_for_ms": {"type": "integer", "description": "status read only"},
        "index": {"type": "integer", "format": "uint64", "description": "status read only"},
    }, ["locks", "owner", "ttl", "expires_at"], strict=False),
    "Contender": obj({
        "node": {"type": "string"},
        "client": {"type": "string", "enum": ["seqd", "kazoo", "curator", "zk.Lock", "planted", "unknown"]},
        "owner": {"type": "string"},
        "daemon": {"type": "string"},
        "command": {"type": "string"},
        "mode": {"type": "string", "enum": ["exclusive", "shared"]},
        "value": {"type": "string"},
        "since": {"type": "string", "format": "date-time", "description": "when it queued (its node's creation)"},
        "token": dict(TOKEN, description="holders only"),
        "expires_at": {"type": "string", "format": "date-time"},
    }, ["node", "client", "since"], strict=False, description="a holder or a waiter, as far as its node tells"),
    "BreakRequest": obj({
        "reason": {"type": "string", "maxLength": 1024, "description": "why; recorded in the audit log and told to the broken holder"},
        "token": dict(TOKEN, description="the holder to break, only if it still holds (required: a replayed break then breaks no other holder)"),
    }, ["reason", "token"]),
    "BreakResponse": obj({
        "broken": {"type": "boolean"},
        "token": TOKEN,
        "holder": ref("Contender"),
        "reason": {"type": "string"},
    }, ["broken", "token", "holder", "reason"], strict=False),
    "LockStatus": obj({
        "name": NAME,
        "held": {"type": "boolean"},
        "token": {"type": "integer", "format": "uint64"},
        "owner": {"type": "string"},
        "command": {"type": "string"},
        "expires_at": {"type": "string", "format": "date-time", "nullable": True},
        "waiters": {"type": "integer"},
        "safe_for_ms": {"type": "integer", "description": "with ?lease_id= of this daemon's lease on the lock"},
        "blocked_by": {"type": "string"},
        "owner_rewritten": {"type": "boolean"},
        "index": {"type": "integer", "format": "uint64"},
        "holding": {"type": "array", "items": ref("Contender"), "description": "the holder(s), oldest first"},
        "queue": {"type": "array", "items": ref("Contender"), "description": "the waiters, in the order they would be granted"},
        "unread": {"type": "integer", "description": "contenders past the 1000 listed"},
    }, ["name", "held", "token", "owner", "expires_at", "waiters", "index", "holding", "queue"], strict=False),
    "SemaphoreStatus": obj({
        "name": NAME,
        "holders": {"type": "integer", "description": "an acquirer waiting for a slot is not counted"},
        "limit": {"type": "integer", "description": "the recorded limit; 0 when nobody holds it"},
        "index": {"type": "integer", "format": "uint64"},
        "safe_for_ms": {"type": "integer"},
        "holding": {"type": "array", "items": ref("Contender"), "description": "the holder(s), oldest first"},
        "queue": {"type": "array", "items": ref("Contender"), "description": "the waiters, in the order they would be granted"},
        "unread": {"type": "integer", "description": "contenders past the 1000 listed"},
    }, ["name", "holders", "limit", "index", "holding", "queue"], strict=False),
    "LeaderView": obj({
        "owner": {"type": "string"},
        "value": {"type": "string"},
        "term": {"type": "integer", "format": "uint64"},
        "since": {"type": "string", "format": "date-time"},
    }, ["owner", "value", "term", "since"], strict=False),
    "ElectionStatus": obj({
        "name": NAME,
        "leader": dict(ref("LeaderView"), nullable=True),
        "candidates": {"type": "integer"},
        "index": {"type": "integer", "format": "uint64"},
        "self": {"type": "boolean"},
        "safe_for_ms": {"type": "integer"},
        "holding": {"type": "array", "items": ref("Contender"), "description": "the holder(s), oldest first"},
        "queue": {"type": "array", "items": ref("Contender"), "description": "the waiters, in the order they would be granted"},
        "unread": {"type": "integer", "description": "contenders past the 1000 listed"},
    }, ["name", "leader", "candidates", "index", "self", "holding", "queue"], strict=False),
    "ProbeResponse": obj({"status": {"type": "string", "enum": ["ok", "ready"]}}, ["status"], strict=False),
    "Error": obj({
        "error": {"type": "string", "description": "a sentence for people"},
        "code": {"type": "string", "description": "a word for programs"},
        "current_token": {"type": "integer", "format": "uint64", "description": "409: the current token, where known"},
        "limit": {"type": "integer", "description": "limit_mismatch: the recorded limit"},
        "reason": {"type": "string", "description": "broken: the reason the break gave"},
    }, ["error", "code"], strict=False),
}

# The families, as the daemon's route table has them: the grant and end
# actions, the grant's body, the status read, the list key, and the 409
# codes of each action.
FAMILIES = [
    {"name": "locks", "noun": "lock", "grant": "acquire", "end": "release", "request": "AcquireRequest",
     "status": "LockStatus", "grant409": ["held"], "renew409": ["stale_token", "lost", "broken"]},
    {"name": "semaphores", "noun": "semaphore", "grant": "acquire", "end": "release", "request": "SemaphoreAcquireRequest",
     "status": "SemaphoreStatus", "grant409": ["held", "limit_mismatch"], "renew409": ["lost", "broken"]},
    {"name": "elections", "noun": "election", "grant": "campaign", "end": "resign", "request": "CampaignRequest",
     "status": "ElectionStatus", "grant409": ["held"], "renew409": ["stale_token", "lost", "broken"], "extra": {"proclaim": "ProclaimRequest"}},
]


def json_body(schema):
    return {"required": True, "content": {"application/json": {"schema": ref(schema)}}}


def answer(description, schema, codes=None):
    r = {"description": description, "content": {"application/json": {"schema": ref(schema)}}}
    if codes:
        r["x-codes"] = codes
    return r


def errors(*statuses, conflict=None, forbidden=None):
    out = {}
    for s in statuses:
        if s == 400:
            out["400"] = answer("a malformed or out-of-range request; nothing changed", "Error", ["bad_request"])
        elif s == 401:
            out["401"] = answer("a missing or wrong bearer token (with --api-token-file)", "Error", ["unauthorized"])
        elif s == 403:
            out["403"] = answer(forbidden[0], "Error", [forbidden[1]])
        elif s == 409:
            out["409"] = answer("refused: " + ", ".join(conflict), "Error", conflict)
        elif s == 503:
            out["503"] = answer("ZooKeeper cannot be reached or trusted now; try again", "Error", ["unavailable"])
    return out


NAME_PARAM = {"name": "name", "in": "path", "required": True, "schema": NAME,
              "description": "may hold '/': each segment path-escaped"}
QUERY = [
    {"name": "index", "in": "query", "schema": {"type": "integer", "format": "uint64"},
     "description": "a blocking read: answer once the state's index differs from this one"},
    {"name": "wait", "in": "query", "schema": DURATION, "description": "with index: how long to wait (default 5m, at most 10m)"},
    {"name": "lease_id", "in": "query", "schema": LEASE_ID, "description": "this daemon's lease: adds safe_for_ms"},
]


def family_paths(f):
    n, paths = f["name"], {}
    post = lambda summary, req, ok, c409: {"post": {
        "summary": summary, "parameters": [NAME_PARAM], "requestBody": json_body(req),
        "responses": dict({"200": ok}, **errors(400, 401, 409, 503, conflict=c409))}}
    paths[f"/v1/{n}/{{name}}/{f['grant']}"] = post(
        f"grant a lease on the {f['noun']} NAME, waiting up to wait", f["request"],
        answer("the lease (a new one, or a live lease this request retries)", "Lease"), f["grant409"])
    paths[f"/v1/{n}/{{name}}/renew"] = post(
        "renew a lease, keeping its token", "LeaseRequest", answer("the lease, with its new expiry", "Lease"), f["renew409"])
    paths[f"/v1/{n}/{{name}}/{f['end']}"] = post(
        "end a lease" + (": the next candidate is elected at once" if n == "elections" else ""), "LeaseRequest",
        answer("ended", "ReleaseResponse"), f["renew409"])
    for action, req in f.get("extra", {}).items():
        paths[f"/v1/{n}/{{name}}/{action}"] = post(
            "change the value the leader publishes, keeping its term", req, answer("the lease", "Lease"), f["renew409"])
    paths[f"/v1/{n}/{{name}}"] = {"get": {
        "summary": f"the {f['noun']}'s state, read from ZooKeeper (any daemon's holders); a blocking read with index",
        "parameters": [NAME_PARAM] + QUERY,
        "responses": dict({"200": dict(answer("the state; its index is also in the X-Seqd-Index header", f["status"]))},
                          **errors(400, 401, 503))}}
    paths[f"/v1/{n}/{{name}}/break"] = {"post": {
        "summary": f"break the {f['noun']}'s holder named by its token, only if it still holds: its contender is deleted, the next "
                   "grant has a higher token, its renew answers 409 broken; needs the admin token",
        "parameters": [NAME_PARAM], "requestBody": json_body("BreakRequest"),
        "responses": dict({"200": answer("broken (the audit line is written first)", "BreakResponse")},
                          **errors(400, 401, 403, 409, 503, conflict=["not_held"],
                                   forbidden=("no admin token sent, or the daemon has none", "forbidden")))}}
    paths[f"/v1/{n}"] = {"get": {
        "summary": f"without a query: the live {n} leases of this daemon, without lease ids or signed sequencers; with "
                   f"all=1: the state of every {f['noun']} under the daemon's root (holders and queues), a blocking read with index",
        "parameters": [
            {"name": "all", "in": "query", "schema": {"type": "integer", "enum": [1]}},
            {"name": "index", "in": "query", "schema": {"type": "integer", "format": "uint64"}, "description": "with all=1"},
            {"name": "wait", "in": "query", "schema": DURATION, "description": "with all=1 and index"},
        ],
        "responses": dict({"200": {"description": f'{{"{n}":[Lease…]}}, or with all=1 {{"family","{n}":[status…],"more","index"}}',
                                   "content": {"application/json": {"schema": {"type": "object", "properties": {
                                       n: {"type": "array", "items": {}}, "family": {"type": "string"},
                                       "more": {"type": "boolean"}, "index": {"type": "integer"}}, "required": [n]}}}}},
                          **errors(400, 401))}}
    return paths


def multilock_paths():
    post = lambda summary, req, ok, c409: {"post": {
        "summary": summary, "requestBody": json_body(req),
        "responses": dict({"200": ok}, **errors(400, 401, 409, 503, conflict=c409))}}
    return {
        "/v1/multilocks/acquire": post(
            "take every lock of names in one ZooKeeper transaction: all or nothing, and never a deadlock, whatever sets "
            "others ask for", "MultiAcquireRequest", answer("one lease, a token and a sequencer per lock", "MultiLease"), ["held"]),
        "/v1/multilocks/renew": post("renew the lease of every lock at once", "MultiLeaseRequest",
                                     answer("the lease, with its new expiry", "MultiLease"), ["stale_token", "lost"]),
        "/v1/multilocks/release": post("release every lock at once", "MultiLeaseRequest",
                                       answer("released", "ReleaseResponse"), ["stale_token", "lost"]),
        "/v1/multilocks/{lease_id}": {"get": {
            "summary": "a live multi-lock lease of this daemon, as its holder sees it; a blocking read with index",
            "parameters": [{"name": "lease_id", "in": "path", "required": True, "schema": LEASE_ID}] + QUERY[:2],
            "responses": dict({"200": answer("the lease", "MultiLease")}, **errors(400, 401, 409, conflict=["lost"]))}},
        "/v1/multilocks": {"get": {
            "summary": "the live multi-lock leases of this daemon, without lease ids or signed sequencers",
            "responses": dict({"200": {"description": '{"multilocks":[MultiLease…]}', "content": {"application/json": {"schema": {
                "type": "object", "properties": {"multilocks": {"type": "array", "items": ref("MultiLease")}}, "required": ["multilocks"]}}}}},
                **errors(400, 401))}},
    }


def spec():
    paths = {}
    for f in FAMILIES:
        paths.update(family_paths(f))
    paths.update(multilock_paths())
    paths["/v1/check"] = {"post": {
        "summary": "is this token (this sequencer) its grant's current one? Chubby's CheckSequencer, read from ZooKeeper",
        "requestBody": json_body("CheckRequest"),
        "responses": dict({
            "200": answer("valid", "CheckResponse"),
            "409": dict(answer("not valid: stale (below the current token) or not held", "CheckResponse"), **{"x-codes": ["stale_token", "not_held"]}),
        }, **errors(400, 401, 403, 503, forbidden=("a signed sequencer whose signature does not check with the daemon's keys", "bad_signature")))}}
    paths["/v1/renew"] = {"post": {
        "summary": "renew many lock leases in one request, each answered as its own renew would be",
        "requestBody": json_body("RenewManyRequest"),
        "responses": dict({"200": answer("one result per lease, in order", "RenewManyResponse")}, **errors(400, 401))}}
    paths["/healthz"] = {"get": {"summary": "the process serves", "security": [],
                                 "responses": {"200": answer("ok", "ProbeResponse")}}}
    paths["/readyz"] = {"get": {"summary": "the ZooKeeper session is connected", "security": [],
                                "responses": dict({"200": answer("ready", "ProbeResponse")}, **errors(503))}}
    paths["/ui/"] = {"get": {"summary": "the status page (it asks for the API token and reads the API)", "security": [],
                             "responses": {"200": {"description": "one HTML page, no external assets", "content": {"text/html": {"schema": {"type": "string"}}}}}}}
    paths["/metrics"] = {"get": {"summary": "Prometheus text", "security": [],
                                 "responses": {"200": {"description": "the metrics", "content": {"text/plain": {"schema": {"type": "string"}}}}}}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "seqd HTTP API", "version": "1", "description": (
            "Fenced locks, semaphores and elections over ZooKeeper. Every lease carries a fencing token that is higher "
            "for every new grant; send it (or the sequencer) with every write and let the resource refuse lower ones. "
            "x-codes lists the error codes a response carries. Any other method on a documented path answers 405 "
            "method_not_allowed (an Error) with an Allow header; a POST to a path without an action is one to a status. "
            "Any path outside these answers 404 not_found, and a bug 500 internal (both Errors). Prose: http-api.md.")},
        "servers": [{"url": "http://127.0.0.1:7070"}],
        "security": [{"bearer": []}],
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "only with --api-token-file; /healthz, /readyz and /metrics need none"}},
            "schemas": SCHEMAS,
            "responses": {
                "NotFound": answer("no such endpoint", "Error", ["not_found"]),
                "MethodNotAllowed": answer("the method is not one of the path's (see Allow)", "Error", ["method_not_allowed"]),
                "Internal": answer("a bug: the daemon logs it", "Error", ["internal"]),
            },
        },
        "paths": paths,
    }


class NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data):
        return True


if __name__ == "__main__":
    sys.stdout.write("# seqd's HTTP API in OpenAPI 3, written by scripts/openapi.py; TestOpenAPIMatchesHandler (sequencer/) checks it against the handler.\n")
    yaml.dump(spec(), sys.stdout, Dumper=NoAliases, sort_keys=False, width=120, allow_unicode=True)
