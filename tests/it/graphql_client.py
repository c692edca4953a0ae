"""A standard GraphQL client (graphql-core) against our GraphQL endpoint, over HTTP.

Usage: graphql_client.py URL < queries.json

Runs graphql-core's own introspection query (the full one GraphiQL and code generators
send) against URL, builds a client schema from the answer with build_client_schema, and
validates each query of the JSON array on stdin against it. Prints one JSON object: the
introspection answer's errors, the client schema in SDL (empty descriptions left out), and per query the messages of
graphql-core's validation (empty when valid).
"""
import json
import sys
import urllib.request

from graphql import (
    build_client_schema,
    get_introspection_query,
    parse,
    print_schema,
    validate,
)


def post(url, query):
    body = json.dumps({"query": query}).encode()
    req = urllib.request.Request(
        url, data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(req) as resp:
        return json.load(resp)


def without_empty_descriptions(value):
    """The introspection answer with every "" description made null, so that the printed
    schema shows the types (catalogd's generated types and fields have "" descriptions)."""
    if isinstance(value, dict):
        return {
            k: None if k == "description" and v == "" else without_empty_descriptions(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [without_empty_descriptions(v) for v in value]
    return value


def main():
    url = sys.argv[1]
    queries = json.load(sys.stdin)
    answer = post(url, get_introspection_query(descriptions=True))
    schema = build_client_schema(answer["data"])
    result = {
        "introspection_errors": answer.get("errors", []),
        "sdl": print_schema(build_client_schema(without_empty_descriptions(answer["data"]))),
        "validation": [
            [error.message for error in validate(schema, parse(q))] for q in queries
        ],
    }
    json.dump(result, sys.stdout)


main()
