//! catalogd's GraphQL endpoint (`POST /catalogs/NAME/api/v1/graphql`) of `serve --http-addr`,
//! through the real binary on loopback: the acceptance vectors of catalogd-graphql.md §4 byte
//! for byte (with our one departure: lists of plain values are answered), its HTTP-level
//! vectors, and a standard GraphQL client (Python's graphql-core) that builds its schema from
//! our answer to its full introspection query and validates every vector's query against it.
use crate::catalogd_http::{api_base, client};
use crate::common::{Server, fixture, shared_testdata};
use reqwest::StatusCode;
use reqwest::header;
use std::io::Write;
use std::process::{Command, Stdio};

async fn serve(extra: &[&str]) -> (Server, String) {
    let mut flags = vec!["--http-addr", "127.0.0.1:0", "--catalog-name", "gqltiny"];
    flags.extend_from_slice(extra);
    let server = Server::serving(&fixture("catalogd/gqltiny"), &flags).await;
    let base = api_base(&server).await;
    (server, base)
}

struct Answer {
    status: StatusCode,
    headers: header::HeaderMap,
    /// The body as text (lossy when compressed).
    body: String,
    body_bytes: Vec<u8>,
}

impl Answer {
    fn header(&self, name: header::HeaderName) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }
}

async fn send(
    method: reqwest::Method,
    url: &str,
    body: Vec<u8>,
    headers: &[(&str, &str)],
) -> Answer {
    let mut req = client(None).request(method, url).body(body);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let response = req.send().await.unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    let body_bytes = response.bytes().await.unwrap().to_vec();
    Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&body_bytes).into_owned(),
        body_bytes,
    }
}

async fn post(url: &str, body: &str) -> Answer {
    send(reqwest::Method::POST, url, body.as_bytes().to_vec(), &[]).await
}

/// `{"query": text}` as a client would encode it.
fn body_of(query: &str) -> String {
    serde_json::json!({ "query": query }).to_string()
}

/// The §4.2 vectors: the request body and the answer, byte for byte (without its `\n`).
/// V7 and V9 are our departure: catalogd answers `null` and an `expected iterable` error.
fn vectors() -> Vec<(&'static str, String, &'static str)> {
    let q = |query: &str| body_of(query);
    vec![
        ("V2", q("{ __schema { queryType { fields { name description } } } }"),
         r#"{"data":{"__schema":{"queryType":{"fields":[{"description":"","name":"acmesupporttiers"},{"description":"","name":"olmbundles"},{"description":"","name":"olmchannels"},{"description":"","name":"olmdeprecationss"},{"description":"","name":"olmpackages"},{"description":"","name":"summary"}]}}}}"#),
        ("V3", q("{ olmpackages { name defaultChannel description icon } }"),
         r#"{"data":{"olmpackages":[{"defaultChannel":"stable","description":"Alpha \u003cdemo\u003e \u0026 co","icon":"{\"base64data\":\"PHN2Zy8+\",\"mediatype\":\"image/svg+xml\"}","name":"alpha-op"},{"defaultChannel":"fast","description":null,"icon":null,"name":"beta-op"}]}}"#),
        ("V4", q("{ olmbundles(limit: 2) { name properties { type value } } }"),
         r#"{"data":{"olmbundles":[{"name":"alpha-op.v1.0.0","properties":[{"type":"olm.package","value":"{\"packageName\":\"alpha-op\",\"version\":\"1.0.0\"}"},{"type":"olm.gvk","value":"{\"group\":\"example.com\",\"kind\":\"Widget\",\"version\":\"v1\"}"},{"type":"olm.package.required","value":"{\"packageName\":\"beta-op\",\"versionRange\":\"\\u003e=0.1.0\"}"}]},{"name":"alpha-op.v1.1.0","properties":[{"type":"olm.package","value":"{\"packageName\":\"alpha-op\",\"version\":\"1.1.0\"}"},{"type":"olm.gvk","value":"{\"group\":\"example.com\",\"kind\":\"Widget\",\"version\":\"v1\"}"},{"type":"olm.bundle.mediatype","value":"plain+v0"}]}]}}"#),
        ("V5", q("{ a: olmbundles(limit: 0) { name } b: olmbundles(limit: 1, offset: 2) { name } c: olmpackages(offset: 5) { name } d: olmchannels(limit: -1, offset: -3) { name } e: olmbundles(limit: 1000, offset: 1) { name } }"),
         r#"{"data":{"a":[{"name":"alpha-op.v1.0.0"},{"name":"alpha-op.v1.1.0"},{"name":"beta-op.v0.1.0"}],"b":[{"name":"beta-op.v0.1.0"}],"c":[],"d":[{"name":"stable"},{"name":"fast"}],"e":[{"name":"alpha-op.v1.1.0"},{"name":"beta-op.v0.1.0"}]}}"#),
        ("V6", q("{ acmesupporttiers { __typename name package tierLevel slaHours active } }"),
         r#"{"data":{"acmesupporttiers":[{"__typename":"AcmeSupportTier","active":true,"name":"alpha-op-gold","package":"alpha-op","slaHours":4.5,"tierLevel":3}]}}"#),
        ("V7", q("{ acmesupporttiers { name regions } }"),
         r#"{"data":{"acmesupporttiers":[{"name":"alpha-op-gold","regions":["us","eu"]}]}}"#),
        ("V8", q("{ olmchannels { name package entries { name replaces skipRange } } }"),
         r#"{"data":{"olmchannels":[{"entries":[{"name":"alpha-op.v1.0.0","replaces":null,"skipRange":null},{"name":"alpha-op.v1.1.0","replaces":"alpha-op.v1.0.0","skipRange":"\u003c1.1.0"}],"name":"stable","package":"alpha-op"},{"entries":[{"name":"beta-op.v0.1.0","replaces":null,"skipRange":null}],"name":"fast","package":"beta-op"}]}}"#),
        ("V9", q("{ olmchannels(offset: 1) { entries { name skips } } }"),
         r#"{"data":{"olmchannels":[{"entries":[{"name":"beta-op.v0.1.0","skips":["beta-op.v0.0.9"]}]}]}}"#),
        ("V10", q("{ olmdeprecationss { package entries { message reference } } }"),
         r#"{"data":{"olmdeprecationss":[{"entries":[{"message":"alpha-op.v1.0.0 is deprecated","reference":"{\"name\":\"alpha-op.v1.0.0\",\"schema\":\"olm.bundle\"}"}],"package":"alpha-op"}]}}"#),
        ("V11", q(r#"{ __type(name: "OlmBundle") { name kind fields { name type { kind name ofType { kind name } } } } }"#),
         r#"{"data":{"__type":{"fields":[{"name":"image","type":{"kind":"SCALAR","name":"String","ofType":null}},{"name":"name","type":{"kind":"SCALAR","name":"String","ofType":null}},{"name":"package","type":{"kind":"SCALAR","name":"String","ofType":null}},{"name":"properties","type":{"kind":"LIST","name":null,"ofType":{"kind":"OBJECT","name":"OlmBundleProperties"}}},{"name":"schema","type":{"kind":"SCALAR","name":"String","ofType":null}}],"kind":"OBJECT","name":"OlmBundle"}}}"#),
        ("V12a", q("{ bundles { name } }"),
         r#"{"data":null,"errors":[{"message":"Cannot query field \"bundles\" on type \"Query\". Did you mean \"olmbundles\"?","locations":[{"line":1,"column":3}]}]}"#),
        ("V12b", q("{ olmchannels { name package entries } }"),
         r#"{"data":null,"errors":[{"message":"Field \"entries\" of type \"[OlmChannelEntries]\" must have a sub selection.","locations":[{"line":1,"column":30}]}]}"#),
        ("V12c", q(r#"{ olmpackages(limit: "2") { name } }"#),
         r#"{"data":null,"errors":[{"message":"Argument \"limit\" has invalid value \"2\".\nExpected type \"Int\", found \"2\".","locations":[{"line":1,"column":22}]}]}"#),
        ("V13a", q("{ a { a { a { a { a { a { a { a { a { a { b } } } } } } } } } } }"),
         r#"{"data":null,"errors":[{"message":"query exceeds maximum depth of 10","locations":[]}]}"#),
        ("V13b", r#"{"query":"{"}"#.to_owned(),
         r#"{"data":null,"errors":[{"message":"query parse error: Syntax Error GraphQL (1:2) Expected Name, found EOF\n\n1: {\n    ^\n","locations":[]}]}"#),
        ("V13c", r#"{"query":"query A { summary { totalSchemas } } query B { summary { totalSchemas } }","operationName":"A"}"#.to_owned(),
         r#"{"data":null,"errors":[{"message":"Must provide operation name if query contains multiple operations.","locations":[]}]}"#),
        ("V13d", r#"{"query":" "}"#.to_owned(),
         r#"{"data":null,"errors":[{"message":"Must provide an operation.","locations":[]}]}"#),
        ("V14a", r#"{"query":"query ($n: Int = 1) { olmpackages(limit: $n) { name } }","variables":{"n":2}}"#.to_owned(),
         r#"{"data":{"olmpackages":[{"name":"alpha-op"}]}}"#),
        ("V14b", r#"{"query":"query ($n: Int!) { olmpackages(limit: $n) { name } }","variables":{"n":2}}"#.to_owned(),
         r#"{"data":null,"errors":[{"message":"Variable \"$n\" of required type \"Int!\" was not provided.","locations":[{"line":1,"column":8}]}]}"#),
        ("V15", r#"{"QUERY":"{ summary { totalSchemas } }"}"#.to_owned(),
         r#"{"data":{"summary":{"totalSchemas":5}}}"#),
    ]
}

#[tokio::test]
async fn query_vectors_of_the_spec() {
    let (_server, base) = serve(&[]).await;
    let url = format!("{base}/catalogs/gqltiny/api/v1/graphql");
    for (name, body, expected) in vectors() {
        let a = post(&url, &body).await;
        assert_eq!(a.status, StatusCode::OK, "{name}: {}", a.body);
        assert_eq!(
            a.header(header::CONTENT_TYPE),
            Some("application/json"),
            "{name}"
        );
        assert_eq!(a.header(header::VARY), Some("Accept-Encoding"), "{name}");
        assert_eq!(a.body, format!("{expected}\n"), "{name}");
    }
    // V1: the order of `schemas` is unspecified (ours is the catalog's).
    let v1 = post(
        &url,
        &body_of("{ summary { totalSchemas schemas { name totalObjects totalFields } } }"),
    )
    .await;
    assert_eq!(
        v1.body,
        concat!(
            r#"{"data":{"summary":{"schemas":[{"name":"olm.package","totalFields":5,"totalObjects":2},"#,
            r#"{"name":"olm.channel","totalFields":4,"totalObjects":2},{"name":"olm.bundle","totalFields":5,"totalObjects":3},"#,
            r#"{"name":"olm.deprecations","totalFields":3,"totalObjects":1},{"name":"acme.support-tier","totalFields":7,"totalObjects":1}],"totalSchemas":5}}}"#,
            "\n"
        )
    );
    // V13a is answered before the catalog is looked for.
    let missing = post(
        &format!("{base}/catalogs/missing/api/v1/graphql"),
        &body_of("{ a { a { a { a { a { a { a { a { a { a { b } } } } } } } } } } }"),
    )
    .await;
    assert_eq!(missing.status, StatusCode::OK);
    assert_eq!(
        missing.body,
        "{\"data\":null,\"errors\":[{\"message\":\"query exceeds maximum depth of 10\",\"locations\":[]}]}\n"
    );
}

#[tokio::test]
async fn http_vectors_and_bad_input() {
    let (_server, base) = serve(&[]).await;
    let url = format!("{base}/catalogs/gqltiny/api/v1/graphql");
    let plain = |a: &Answer, status: StatusCode, body: &str| {
        assert_eq!(a.status, status, "{}", a.body);
        assert_eq!(a.body, body);
        assert_eq!(
            a.header(header::CONTENT_TYPE),
            Some("text/plain; charset=utf-8")
        );
        assert_eq!(a.header(header::X_CONTENT_TYPE_OPTIONS), Some("nosniff"));
    };
    // H1
    for method in [
        reqwest::Method::GET,
        reqwest::Method::PUT,
        reqwest::Method::OPTIONS,
    ] {
        let a = send(method, &url, Vec::new(), &[]).await;
        plain(&a, StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed\n");
    }
    let head = send(reqwest::Method::HEAD, &url, Vec::new(), &[]).await;
    assert_eq!(head.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(head.body, "");
    // H2, H3
    let beyond_limit = format!("{{\"query\":\"{}\"}}", "a".repeat(1 << 20));
    for body in [
        "{invalid json",
        "{\"query\": 5}",
        "",
        "[]",
        beyond_limit.as_str(),
    ] {
        let a = post(&url, body).await;
        plain(&a, StatusCode::BAD_REQUEST, "Invalid request body\n");
    }
    // H4
    for body in ["{\"query\": \"\"}", "{}", "{\"query\": null}", "null"] {
        let a = post(&url, body).await;
        plain(&a, StatusCode::BAD_REQUEST, "Query cannot be empty\n");
    }
    // H5: 100 001 bytes are too many; 100 000 reach the parser.
    let a = post(&url, &body_of(&"a".repeat(100_001))).await;
    plain(&a, StatusCode::BAD_REQUEST, "Query too large\n");
    let a = post(&url, &body_of(&"a".repeat(100_000))).await;
    assert_eq!(a.status, StatusCode::OK);
    assert!(
        a.body.starts_with("{\"data\":null,\"errors\":[{\"message\":\"query parse error: Syntax Error GraphQL (1:1) Unexpected Name \\\""),
        "{}",
        &a.body[..200]
    );
    // H6, H7, H8
    let summary = body_of("{ summary { totalSchemas } }");
    let a = post(&format!("{base}/catalogs/missing/api/v1/graphql"), &summary).await;
    plain(&a, StatusCode::NOT_FOUND, "404 Not Found\n");
    let a = post(&format!("{base}/catalogs/GQLTINY/api/v1/graphql"), &summary).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert!(
        a.body
            .starts_with("invalid catalog name: a lowercase RFC 1123 subdomain")
    );
    let a = post(&format!("{url}/"), &summary).await;
    plain(&a, StatusCode::NOT_FOUND, "404 page not found\n");
    // H9: small answers go as they are, larger ones compressed.
    let v4 = body_of("{ olmbundles(limit: 2) { name properties { type value } } }");
    let a = send(
        reqwest::Method::POST,
        &url,
        v4.into_bytes(),
        &[("Accept-Encoding", "gzip")],
    )
    .await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.header(header::CONTENT_ENCODING), None);
    assert_eq!(a.header(header::VARY), Some("Accept-Encoding"));
    let big = body_of(
        "{ a: olmbundles { name image properties { type value } } b: olmbundles { name image properties { type value } } c: olmpackages { name icon } }",
    );
    let a = send(
        reqwest::Method::POST,
        &url,
        big.clone().into_bytes(),
        &[("Accept-Encoding", "gzip")],
    )
    .await;
    assert_eq!(a.header(header::CONTENT_ENCODING), Some("gzip"));
    let plain_big = post(&url, &big).await;
    assert!(plain_big.body.len() >= 1024);
    let mut inflated = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(a.body_bytes.as_slice()),
        &mut inflated,
    )
    .unwrap();
    assert_eq!(inflated, plain_big.body);
    // Limits: aliases, fields; an unknown field; mutations.
    let aliases: String = (0..51)
        .map(|i| format!("a{i}: summary {{ totalSchemas }} "))
        .collect();
    let a = post(&url, &body_of(&format!("{{ {aliases} }}"))).await;
    assert_eq!(
        a.body,
        "{\"data\":null,\"errors\":[{\"message\":\"query exceeds maximum alias count of 50\",\"locations\":[]}]}\n"
    );
    let fields = "__typename ".repeat(501);
    let a = post(&url, &body_of(&format!("{{ {fields} }}"))).await;
    assert_eq!(
        a.body,
        "{\"data\":null,\"errors\":[{\"message\":\"query exceeds maximum field count of 500\",\"locations\":[]}]}\n"
    );
    let a = post(&url, &body_of("{ olmpackages { name channels { name } } }")).await;
    assert_eq!(
        a.body,
        "{\"data\":null,\"errors\":[{\"message\":\"Cannot query field \\\"channels\\\" on type \\\"OlmPackage\\\".\",\"locations\":[{\"line\":1,\"column\":22}]}]}\n"
    );
    let a = post(&url, &body_of("mutation { summary { totalSchemas } }")).await;
    assert_eq!(
        a.body,
        "{\"data\":null,\"errors\":[{\"message\":\"Schema is not configured for mutations\",\"locations\":[{\"line\":1,\"column\":1}]}]}\n"
    );
    // A deeply nested query is refused by the limit, not by a stack overflow.
    let deep = format!("{}x{}", "{ a ".repeat(12_000), " }".repeat(12_000));
    let a = post(&url, &body_of(&deep)).await;
    assert_eq!(
        a.body,
        "{\"data\":null,\"errors\":[{\"message\":\"query exceeds maximum depth of 10\",\"locations\":[]}]}\n"
    );
    // Fragments, inline fragments, directives and variable defaults.
    let a = post(
        &url,
        &body_of("query ($skip: Boolean = true) { olmpackages(limit: 1) { ...P ... on OlmPackage { defaultChannel @skip(if: $skip) } icon @include(if: false) } } fragment P on OlmPackage { name }"),
    )
    .await;
    assert_eq!(
        a.body,
        "{\"data\":{\"olmpackages\":[{\"name\":\"alpha-op\"}]}}\n"
    );
}

#[tokio::test]
async fn the_endpoint_can_be_turned_off() {
    let (_server, base) = serve(&["--http-disable-graphql"]).await;
    let a = post(
        &format!("{base}/catalogs/gqltiny/api/v1/graphql"),
        &body_of("{ summary { totalSchemas } }"),
    )
    .await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    assert_eq!(a.body, "404 page not found\n");
}

#[tokio::test]
async fn a_standard_client_introspects_and_validates_every_vector() {
    let (_server, base) = serve(&[]).await;
    let url = format!("{base}/catalogs/gqltiny/api/v1/graphql");
    let queries: Vec<String> = vectors()
        .into_iter()
        .filter(|(name, _, _)| !matches!(*name, "V13b" | "V13c" | "V13d"))
        .map(|(_, body, _)| {
            let body: serde_json::Value = serde_json::from_str(&body).unwrap();
            let (_, query) = body
                .as_object()
                .unwrap()
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("query"))
                .unwrap();
            query.as_str().unwrap().to_owned()
        })
        .collect();
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/graphql_client.py");
    let url_for_python = url.clone();
    let input = serde_json::to_vec(&queries).unwrap();
    let output = tokio::task::spawn_blocking(move || {
        let mut child = Command::new("python3")
            .arg(script)
            .arg(url_for_python)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        child.stdin.take().unwrap().write_all(&input).unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "graphql-core client failed (scripts/test.sh installs graphql-core): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["introspection_errors"], serde_json::json!([]));
    let sdl = result["sdl"].as_str().unwrap();
    for ty in [
        "type Query {\n  acmesupporttiers(\n    \"\"\"Maximum number of items to return\"\"\"\n    limit: Int = 100\n\n    \"\"\"Number of items to skip\"\"\"\n    offset: Int = 0\n  ): [AcmeSupportTier]\n",
        "type OlmChannelEntries {\n  name: String\n  replaces: String\n  skipRange: String\n  skips: [String]\n}",
        "type AcmeSupportTier {\n  active: Boolean\n  name: String\n  package: String\n  regions: [String]\n  schema: String\n  slaHours: Float\n  tierLevel: Int\n}",
        "type CatalogSummary {\n  schemas: [SchemaSummary]\n  totalSchemas: Int\n}",
    ] {
        assert!(sdl.contains(ty), "{ty}\nnot in\n{sdl}");
    }
    let names: Vec<&str> = vectors()
        .into_iter()
        .filter(|(name, _, _)| !matches!(*name, "V13b" | "V13c" | "V13d"))
        .map(|(name, _, _)| name)
        .collect();
    let validation = result["validation"].as_array().unwrap();
    for (name, messages) in names.iter().zip(validation) {
        let messages = messages.as_array().unwrap();
        // The client refuses what we refuse, and accepts what we answer.
        let refused = matches!(*name, "V12a" | "V12b" | "V12c" | "V13a");
        assert_eq!(!messages.is_empty(), refused, "{name}: {messages:?}");
    }
}

/// A catalog of the spec's fixture plus `extra` documents, in a temporary directory.
fn fixture_plus(extra: &[serde_json::Value]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut text = std::fs::read_to_string(fixture("catalogd/gqltiny/catalog.json")).unwrap();
    for doc in extra {
        text.push_str(&doc.to_string());
        text.push('\n');
    }
    std::fs::write(dir.path().join("catalog.json"), text).unwrap();
    dir
}

#[tokio::test]
async fn answers_are_bounded_and_an_unbuildable_schema_fails_only_graphql() {
    let big: Vec<serde_json::Value> = (0..100)
        .map(|i| serde_json::json!({"schema": "big.doc", "name": format!("d{i}"), "text": "x".repeat(4000)}))
        .collect();
    let catalog = fixture_plus(&big);
    let server = Server::serving(
        catalog.path(),
        &["--http-addr", "127.0.0.1:0", "--catalog-name", "big"],
    )
    .await;
    let url = format!("{}/catalogs/big/api/v1/graphql", api_base(&server).await);
    // Three pages of 100 documents of 4 KB: answered.
    let three: String = (0..3)
        .map(|i| format!("a{i}: bigdocs {{ text }} "))
        .collect();
    let a = post(&url, &body_of(&format!("{{ {three} }}"))).await;
    let answer: serde_json::Value = serde_json::from_str(&a.body).unwrap();
    assert_eq!(answer["data"]["a2"].as_array().unwrap().len(), 100);
    assert_eq!(
        answer["data"]["a2"][99]["text"].as_str().unwrap().len(),
        4000
    );
    // Fifty of them would be 20 MB.
    let fifty: String = (0..50)
        .map(|i| format!("a{i}: bigdocs {{ text }} "))
        .collect();
    let a = post(&url, &body_of(&format!("{{ {fifty} }}"))).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(
        a.body,
        "{\"data\":null,\"errors\":[{\"message\":\"response exceeds maximum size of 16777216 bytes; ask for fewer objects or fields (limit, offset)\",\"locations\":[]}]}\n"
    );
    drop(server);

    // Two schemas catalogd maps to one type name: GraphQL is refused, the rest is served.
    let catalog = fixture_plus(&[
        serde_json::json!({"schema": "acme.tier", "name": "a"}),
        serde_json::json!({"schema": "acme-tier", "name": "b"}),
    ]);
    let server = Server::serving(
        catalog.path(),
        &["--http-addr", "127.0.0.1:0", "--catalog-name", "clash"],
    )
    .await;
    let base = api_base(&server).await;
    let a = post(
        &format!("{base}/catalogs/clash/api/v1/graphql"),
        &body_of("{ summary { totalSchemas } }"),
    )
    .await;
    assert_eq!(a.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(a.body, "500 Internal Server Error\n");
    server
        .wait_for_log(
            r#"type name collision: schemas "acme.tier" and "acme-tier" both sanitize to GraphQL type "AcmeTier""#,
        )
        .await;
    let all = send(
        reqwest::Method::GET,
        &format!("{base}/catalogs/clash/api/v1/all"),
        Vec::new(),
        &[],
    )
    .await;
    assert_eq!(all.status, StatusCode::OK);
    assert_eq!(all.body.lines().count(), 11);
}

#[tokio::test]
async fn a_real_catalog_is_summarised_and_paged() {
    let Some(root) = shared_testdata("real/community-catalog-v4.20") else {
        return;
    };
    // An independent count of the documents per schema, from the files (YAML streams).
    let mut counts: std::collections::BTreeMap<String, u64> = Default::default();
    for entry in ignore::WalkBuilder::new(&root).build() {
        let entry = entry.unwrap();
        if entry.path().extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).unwrap();
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let doc = <serde_yaml::Value as serde::Deserialize>::deserialize(doc).unwrap();
            let schema = doc.get("schema").and_then(|s| s.as_str()).unwrap_or("");
            *counts.entry(schema.to_owned()).or_default() += 1;
        }
    }
    assert_eq!(counts.values().sum::<u64>(), 925, "the corpus changed");
    let server = Server::serving(
        &root,
        &["--http-addr", "127.0.0.1:0", "--catalog-name", "community"],
    )
    .await;
    let url = format!(
        "{}/catalogs/community/api/v1/graphql",
        api_base(&server).await
    );
    let a = post(
        &url,
        &body_of("{ summary { schemas { name totalObjects } } }"),
    )
    .await;
    let answer: serde_json::Value = serde_json::from_str(&a.body).unwrap();
    let summarised: std::collections::BTreeMap<String, u64> = answer["data"]["summary"]["schemas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_owned(),
                s["totalObjects"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(summarised, counts);
    // Paging through every bundle gives each once, in order.
    let mut names = Vec::new();
    loop {
        let text = format!(
            "{{ olmbundles(offset: {}) {{ name relatedImages {{ image }} }} }}",
            names.len()
        );
        let a = post(&url, &body_of(&text)).await;
        let answer: serde_json::Value = serde_json::from_str(&a.body).unwrap();
        assert!(
            answer.get("errors").is_none(),
            "{}",
            &a.body[..a.body.len().min(500)]
        );
        let page = answer["data"]["olmbundles"].as_array().unwrap();
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 100);
        names.extend(page.iter().map(|b| b["name"].as_str().unwrap().to_owned()));
    }
    assert_eq!(names.len() as u64, counts["olm.bundle"]);
}
