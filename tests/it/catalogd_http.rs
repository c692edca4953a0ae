//! The catalogd (OLM v1) HTTP API of `serve --http-addr`, through the real binary on loopback
//! with a real HTTP client: the acceptance vectors of catalogd-http.md §11, a real catalog's
//! `/all` against an independent parse of its files, metas against an independent filter,
//! validators, compression, readiness and a graceful stop during a download.
use crate::common::pki::Pki;
use crate::common::{self, Server, fixture};
use reqwest::header::{self, HeaderMap};
use reqwest::{Method, StatusCode};
use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

/// How long a catalog may take to be served (a bound, not a sleep).
const PATIENCE: Duration = Duration::from_secs(60);

/// The spec's `tiny` catalog as catalogd stores it (§11), F1…F8.
const F: [&str; 8] = [
    "{\"defaultChannel\":\"stable\",\"name\":\"alpha-op\",\"schema\":\"olm.package\"}\n",
    "{\"entries\":[{\"name\":\"alpha-op.v1.0.0\"},{\"name\":\"alpha-op.v1.1.0\",\"replaces\":\"alpha-op.v1.0.0\"}],\"name\":\"stable\",\"package\":\"alpha-op\",\"schema\":\"olm.channel\"}\n",
    "{\"image\":\"quay.io/example/alpha-op-bundle:v1.0.0\",\"name\":\"alpha-op.v1.0.0\",\"package\":\"alpha-op\",\"properties\":[{\"type\":\"olm.package\",\"value\":{\"packageName\":\"alpha-op\",\"version\":\"1.0.0\"}}],\"schema\":\"olm.bundle\"}\n",
    "{\"image\":\"quay.io/example/alpha-op-bundle:v1.1.0\",\"name\":\"alpha-op.v1.1.0\",\"package\":\"alpha-op\",\"properties\":[{\"type\":\"olm.package\",\"value\":{\"packageName\":\"alpha-op\",\"version\":\"1.1.0\"}}],\"schema\":\"olm.bundle\"}\n",
    "{\"entries\":[{\"message\":\"alpha-op.v1.0.0 is deprecated, use >=1.1.0\",\"reference\":{\"name\":\"alpha-op.v1.0.0\",\"schema\":\"olm.bundle\"}}],\"package\":\"alpha-op\",\"schema\":\"olm.deprecations\"}\n",
    "{\"defaultChannel\":\"fast\",\"name\":\"beta-op\",\"schema\":\"olm.package\"}\n",
    "{\"entries\":[{\"name\":\"beta-op.v0.1.0\"}],\"name\":\"fast\",\"package\":\"beta-op\",\"schema\":\"olm.channel\"}\n",
    "{\"image\":\"quay.io/example/beta-op-bundle:v0.1.0\",\"name\":\"beta-op.v0.1.0\",\"package\":\"beta-op\",\"properties\":[{\"type\":\"olm.package\",\"value\":{\"packageName\":\"beta-op\",\"version\":\"0.1.0\"}}],\"schema\":\"olm.bundle\"}\n",
];

pub(crate) fn lines(which: &[usize]) -> String {
    which.iter().map(|i| F[i - 1]).collect()
}

/// A server of `catalog` with the catalogd API on, and the API's base address.
async fn serve(catalog: &Path, extra: &[&str]) -> (Server, String) {
    let mut flags = vec!["--http-addr", "127.0.0.1:0"];
    flags.extend_from_slice(extra);
    let server = Server::serving(catalog, &flags).await;
    let base = api_base(&server).await;
    (server, base)
}

/// `scheme://host:port` of the catalogd API, from the log line that announces it.
pub(crate) async fn api_base(server: &Server) -> String {
    server.wait_for_log("serving the catalogd API on ").await;
    let log = server.log();
    let line = log
        .lines()
        .find(|l| l.contains("serving the catalogd API on "))
        .unwrap();
    let url = line.split("serving the catalogd API on ").nth(1).unwrap();
    let (scheme, rest) = url.split_once("://").unwrap();
    format!("{scheme}://{}", rest.split('/').next().unwrap())
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: header::HeaderName) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }

    /// The body decoded as its `Content-Encoding` says.
    fn decoded(&self) -> String {
        let mut text = String::new();
        match self.header(header::CONTENT_ENCODING) {
            Some("gzip") => {
                flate2::read::GzDecoder::new(&self.body[..])
                    .read_to_string(&mut text)
                    .unwrap();
            }
            Some("zstd") => {
                text = String::from_utf8(zstd::decode_all(&self.body[..]).unwrap()).unwrap()
            }
            None => text = self.text(),
            Some(other) => panic!("unexpected Content-Encoding {other}"),
        }
        text
    }
}

async fn request(method: Method, url: &str, headers: &[(&str, &str)]) -> Answer {
    send(client(None), method, url, headers).await
}

/// A client trusting the system roots, or only `ca` (PEM).
pub(crate) fn client(ca: Option<&[u8]>) -> reqwest::Client {
    // reqwest is built without a TLS provider of its own; plain HTTP still wants one set.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
    if let Some(ca) = ca {
        builder = builder.tls_certs_only([reqwest::Certificate::from_pem(ca).unwrap()]);
    }
    builder.build().unwrap()
}

async fn send(
    client: reqwest::Client,
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
) -> Answer {
    let mut req = client.request(method, url);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let response = req.send().await.unwrap();
    Answer {
        status: response.status(),
        headers: response.headers().clone(),
        body: response.bytes().await.unwrap().to_vec(),
    }
}

async fn get(url: &str, headers: &[(&str, &str)]) -> Answer {
    request(Method::GET, url, headers).await
}

fn assert_error(a: &Answer, status: StatusCode, body: &str) {
    assert_eq!(a.status, status, "{}", a.text());
    assert_eq!(a.text(), body);
    assert_eq!(
        a.header(header::CONTENT_TYPE),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(a.header(header::X_CONTENT_TYPE_OPTIONS), Some("nosniff"));
    assert_eq!(a.header(header::VARY), Some("Accept-Encoding"));
}

#[tokio::test]
async fn acceptance_vectors_of_the_spec() {
    let (server, base) = serve(&fixture("catalogd/tiny"), &[]).await;
    let all = format!("{base}/catalogs/tiny/api/v1/all");
    let metas = |query: &str| format!("{base}/catalogs/tiny/api/v1/metas{query}");

    // 1
    let a = get(&all, &[]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.text(), lines(&[1, 2, 3, 4, 5, 6, 7, 8]));
    assert_eq!(a.body.len(), 1196);
    assert_eq!(a.header(header::CONTENT_TYPE), Some("application/jsonl"));
    assert_eq!(a.header(header::CONTENT_LENGTH), Some("1196"));
    assert_eq!(a.header(header::ACCEPT_RANGES), Some("bytes"));
    assert_eq!(a.header(header::VARY), Some("Accept-Encoding"));
    let t = a.header(header::LAST_MODIFIED).unwrap().to_owned();
    assert!(t.ends_with(" GMT") && t.len() == 29, "{t}");
    let etag = a.header(header::ETAG).unwrap().to_owned();
    assert!(
        etag.starts_with('"') && etag.ends_with('"') && etag.len() == 34,
        "{etag}"
    );
    let before_t = httpdate::fmt_http_date(
        httpdate::parse_http_date(&t).unwrap() - std::time::Duration::from_secs(1),
    );

    // 2
    let a = get(&all, &[("Accept-Encoding", "gzip")]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.header(header::CONTENT_ENCODING), Some("gzip"));
    assert_eq!(a.header(header::CONTENT_LENGTH), None);
    assert_eq!(a.header(header::ACCEPT_RANGES), None);
    assert_eq!(a.header(header::VARY), Some("Accept-Encoding"));
    assert_eq!(a.decoded(), lines(&[1, 2, 3, 4, 5, 6, 7, 8]));

    // 3
    let a = request(Method::HEAD, &all, &[("Accept-Encoding", "gzip")]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.header(header::CONTENT_LENGTH), Some("1196"));
    assert_eq!(a.header(header::CONTENT_ENCODING), None);
    assert_eq!(a.header(header::LAST_MODIFIED), Some(t.as_str()));
    assert!(a.body.is_empty());

    // 4
    let a = get(&all, &[("If-Modified-Since", &t)]).await;
    assert_eq!(a.status, StatusCode::NOT_MODIFIED);
    assert_eq!(a.header(header::LAST_MODIFIED), Some(t.as_str()));
    assert_eq!(a.header(header::CONTENT_TYPE), None);
    assert_eq!(a.header(header::CONTENT_LENGTH), None);
    assert_eq!(a.header(header::VARY), Some("Accept-Encoding"));
    assert!(a.body.is_empty());
    let a = get(&all, &[("If-Modified-Since", &before_t)]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.text(), lines(&[1, 2, 3, 4, 5, 6, 7, 8]));

    // 5
    let a = get(&all, &[("Range", "bytes=0-68")]).await;
    assert_eq!(a.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(a.header(header::CONTENT_RANGE), Some("bytes 0-68/1196"));
    assert_eq!(a.header(header::CONTENT_LENGTH), Some("69"));
    assert_eq!(a.text(), F[0]);

    // 6
    let a = get(&metas("?schema=olm.package"), &[]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.header(header::CONTENT_TYPE), Some("application/jsonl"));
    assert_eq!(a.header(header::LAST_MODIFIED), Some(t.as_str()));
    assert_eq!(a.header(header::ACCEPT_RANGES), None);
    assert_eq!(a.text(), lines(&[1, 6]));

    // 7
    let a = get(&metas("?package=alpha-op"), &[("Accept-Encoding", "gzip")]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.header(header::CONTENT_ENCODING), None);
    assert_eq!(a.text(), lines(&[2, 3, 4, 5]));
    assert_eq!(a.body.len(), 758);

    // 8
    let a = get(
        &metas("?schema=olm.bundle&package=alpha-op&name=alpha-op.v1.1.0"),
        &[],
    )
    .await;
    assert_eq!(a.text(), lines(&[4]));

    // 9
    assert_eq!(get(&metas("?name=alpha-op"), &[]).await.text(), lines(&[1]));
    let a = get(&metas("?package=alpha-op&name=alpha-op"), &[]).await;
    assert_eq!((a.status, a.text()), (StatusCode::OK, String::new()));
    assert_eq!(get(&metas("?name=stable"), &[]).await.text(), lines(&[2]));

    // 10
    for query in [
        "?schema=olm.package&name=gamma-op",
        "?schema=no.such.schema",
    ] {
        let a = get(&metas(query), &[]).await;
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(a.header(header::CONTENT_TYPE), Some("application/jsonl"));
        assert_eq!(a.text(), "");
    }

    // 11
    let a = get(&metas("?schema=&package=beta-op&package=alpha-op"), &[]).await;
    assert_eq!(a.text(), lines(&[7, 8]));
    let a = get(&metas(""), &[]).await;
    assert_eq!(a.text(), lines(&[1, 2, 3, 4, 5, 6, 7, 8]));

    // 12
    for url in [
        metas("?version=1.0.0"),
        metas("?Schema=olm.package"),
        format!("{base}/catalogs/missing/api/v1/metas?bad=1"),
    ] {
        assert_error(
            &get(&url, &[]).await,
            StatusCode::BAD_REQUEST,
            "400 Bad Request\n",
        );
    }

    // 13
    let a = get(&metas("?schema=olm.package"), &[("If-Modified-Since", &t)]).await;
    assert_eq!(a.status, StatusCode::NOT_MODIFIED);
    assert!(a.body.is_empty());
    let a = request(Method::HEAD, &metas("?package=beta-op"), &[]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.header(header::CONTENT_TYPE), Some("application/jsonl"));
    assert_eq!(a.header(header::LAST_MODIFIED), Some(t.as_str()));
    assert!(a.body.is_empty());
    for method in [Method::POST, Method::PUT, Method::DELETE] {
        assert_error(
            &request(method, &metas(""), &[]).await,
            StatusCode::METHOD_NOT_ALLOWED,
            "Method Not Allowed\n",
        );
    }
    let a = request(Method::PATCH, &all, &[]).await;
    assert_eq!(a.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(a.header(header::ALLOW), None);

    // 14
    assert_error(
        &get(&format!("{base}/catalogs/missing/api/v1/all"), &[]).await,
        StatusCode::NOT_FOUND,
        "404 Not Found\n",
    );
    assert_error(
        &get(&format!("{base}/catalogs/Tiny/api/v1/all"), &[]).await,
        StatusCode::BAD_REQUEST,
        "invalid catalog name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')\n",
    );

    // 15
    for path in [
        "/catalogs/tiny/",
        "/catalogs/tiny/api/v1/all/",
        "/catalogs/tiny.jsonl",
        "/",
    ] {
        assert_error(
            &get(&format!("{base}{path}"), &[]).await,
            StatusCode::NOT_FOUND,
            "404 page not found\n",
        );
    }
    // The query string is not part of the route.
    assert_eq!(
        get(&format!("{all}?foo=1"), &[]).await.text(),
        lines(&[1, 2, 3, 4, 5, 6, 7, 8])
    );
    drop(server);
    let (_server, base) = serve(&fixture("catalogd/tiny"), &["--http-disable-metas"]).await;
    assert_error(
        &get(
            &format!("{base}/catalogs/tiny/api/v1/metas?schema=olm.package"),
            &[],
        )
        .await,
        StatusCode::NOT_FOUND,
        "404 page not found\n",
    );
}

/// Beyond the vectors: ETag validators, ranges, redirects of non-canonical paths.
#[tokio::test]
async fn validators_ranges_and_redirects() {
    let (_server, base) = serve(&fixture("catalogd/tiny"), &[]).await;
    let all = format!("{base}/catalogs/tiny/api/v1/all");
    let first = get(&all, &[]).await;
    let etag = first.header(header::ETAG).unwrap().to_owned();
    let t = first.header(header::LAST_MODIFIED).unwrap().to_owned();

    let a = get(&all, &[("If-None-Match", &etag)]).await;
    assert_eq!(a.status, StatusCode::NOT_MODIFIED);
    assert_eq!(a.header(header::ETAG), Some(etag.as_str()));
    assert!(a.body.is_empty());
    let metas = format!("{base}/catalogs/tiny/api/v1/metas?package=beta-op");
    assert_eq!(
        get(&metas, &[("If-None-Match", &etag)]).await.status,
        StatusCode::NOT_MODIFIED
    );
    // Another tag: the content, whatever If-Modified-Since says.
    let a = get(
        &all,
        &[("If-None-Match", "\"old\""), ("If-Modified-Since", &t)],
    )
    .await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.body.len(), 1196);
    assert_eq!(
        get(&all, &[("If-Match", "\"old\"")]).await.status,
        StatusCode::PRECONDITION_FAILED
    );
    assert_eq!(
        get(&all, &[("If-Match", &etag)]).await.status,
        StatusCode::OK
    );
    // A bad date is ignored by both routes.
    assert_eq!(
        get(&metas, &[("If-Modified-Since", "yesterday")])
            .await
            .text(),
        lines(&[7, 8])
    );

    // Ranges: a suffix, one crossing lines, If-Range, unsatisfiable, several.
    let a = get(&all, &[("Range", "bytes=-206")]).await;
    assert_eq!(a.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(a.header(header::CONTENT_RANGE), Some("bytes 990-1195/1196"));
    assert_eq!(a.text(), F[7]);
    let a = get(
        &all,
        &[("Range", "bytes=60-80"), ("Accept-Encoding", "gzip")],
    )
    .await;
    assert_eq!(a.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(a.header(header::CONTENT_ENCODING), None);
    assert_eq!(a.text(), &lines(&[1, 2, 3, 4, 5, 6, 7, 8])[60..81]);
    let a = get(&all, &[("Range", "bytes=0-68"), ("If-Range", "\"old\"")]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.body.len(), 1196);
    let a = get(&all, &[("Range", "bytes=0-68"), ("If-Range", &etag)]).await;
    assert_eq!(a.status, StatusCode::PARTIAL_CONTENT);
    let a = get(&all, &[("Range", "bytes=1196-")]).await;
    assert_eq!(a.status, StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(a.header(header::CONTENT_RANGE), Some("bytes */1196"));
    let a = get(&all, &[("Range", "bytes=0-1,5-9")]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.body.len(), 1196);

    // Non-canonical paths are redirected to their cleaned form, query kept.
    let a = get(&format!("{base}/catalogs//tiny/./api/v1/all?x=1"), &[]).await;
    assert_eq!(a.status, StatusCode::MOVED_PERMANENTLY);
    assert_eq!(
        a.header(header::LOCATION),
        Some("/catalogs/tiny/api/v1/all?x=1")
    );
    assert_eq!(a.header(header::VARY), Some("Accept-Encoding"));
}

/// Documents as an independent reader finds them: each YAML or JSON file under `root` in walk
/// order (recursive, names in byte order), each document as a JSON value.
fn documents_of(root: &Path) -> Vec<serde_json::Value> {
    let mut entries: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    let mut docs = Vec::new();
    for path in entries {
        if path.is_dir() {
            docs.extend(documents_of(&path));
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        if text.trim_start().starts_with('{') {
            for doc in serde_json::Deserializer::from_str(&text).into_iter() {
                docs.push(doc.unwrap());
            }
        } else {
            for doc in serde_yaml::Deserializer::from_str(&text) {
                let value: serde_yaml::Value = serde::Deserialize::deserialize(doc).unwrap();
                if !value.is_null() {
                    docs.push(serde_json::to_value(value).unwrap());
                }
            }
        }
    }
    docs
}

/// Numbers as float64, as catalogd's encoding holds them.
fn as_go(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Number(n) => serde_json::json!(n.as_f64().unwrap()),
        Value::Array(items) => Value::Array(items.into_iter().map(as_go).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, as_go(v))).collect()),
        other => other,
    }
}

#[tokio::test]
async fn a_real_catalog_served_whole_and_filtered() {
    let catalog = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/testdata/real/community-catalog-v4.20");
    assert!(
        catalog.is_dir(),
        "{} is needed by this test",
        catalog.display()
    );
    let expected = documents_of(&catalog);
    let (_server, base) = serve(&catalog, &["--catalog-name", "community"]).await;
    let all = get(&format!("{base}/catalogs/community/api/v1/all"), &[]).await;
    assert_eq!(all.status, StatusCode::OK);
    let text = all.text();
    assert!(text.ends_with('\n'));
    let served: Vec<&str> = text.lines().collect();
    assert_eq!(served.len(), expected.len());
    for (i, (line, want)) in served.iter().zip(&expected).enumerate() {
        let got: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(as_go(got), as_go(want.clone()), "document {i}");
    }

    // Each compression of the whole inflates to the same bytes.
    for coding in ["gzip", "zstd"] {
        let a = get(
            &format!("{base}/catalogs/community/api/v1/all"),
            &[("Accept-Encoding", coding)],
        )
        .await;
        assert_eq!(a.header(header::CONTENT_ENCODING), Some(coding));
        assert!(a.body.len() < text.len() / 2, "{coding}: {}", a.body.len());
        assert_eq!(a.decoded(), text, "{coding}");
    }

    // Metas against a filter computed here.
    let field =
        |v: &serde_json::Value, key: &str| v.get(key).and_then(|s| s.as_str()).map(String::from);
    let package = field(&expected[0], "name").unwrap();
    // (schema, package) filters; None matches anything.
    let filters = [
        (None, Some(package.as_str())),
        (Some("olm.bundle"), Some(package.as_str())),
        (Some("olm.channel"), None),
    ];
    for (schema, pkg) in filters {
        let keep = |doc: &serde_json::Value| {
            schema.is_none_or(|s| field(doc, "schema").as_deref() == Some(s))
                && pkg.is_none_or(|p| field(doc, "package").as_deref() == Some(p))
        };
        let query: Vec<String> = [("schema", schema), ("package", pkg)]
            .iter()
            .filter_map(|(k, v)| v.map(|v| format!("{k}={v}")))
            .collect();
        let query = query.join("&");
        let want: String = served
            .iter()
            .zip(&expected)
            .filter(|(_, doc)| keep(doc))
            .map(|(line, _)| format!("{line}\n"))
            .collect();
        assert!(!want.is_empty(), "{query}");
        // Compressed on the fly, from catalogd's threshold on.
        for coding in ["gzip", "zstd"] {
            let a = get(
                &format!("{base}/catalogs/community/api/v1/metas?{query}"),
                &[("Accept-Encoding", coding)],
            )
            .await;
            let expected_coding = (want.len() >= 1024).then_some(coding);
            assert_eq!(
                a.header(header::CONTENT_ENCODING),
                expected_coding,
                "{query} {}",
                want.len()
            );
            assert_eq!(a.decoded(), want, "{query} {coding}");
        }
    }
}

/// Compressed responses are compressed a bounded number at a time (one per core): more of
/// them at once than that wait for their turn and then arrive whole, in either coding, while
/// identity downloads go on beside them.
#[tokio::test]
async fn more_compressed_downloads_than_cores_all_arrive_whole() {
    let (_server, base) = serve(&fixture("catalogd/tiny"), &["--catalog-name", "tiny"]).await;
    let all = format!("{base}/catalogs/tiny/api/v1/all");
    let identity = get(&all, &[]).await.text();
    assert_eq!(identity, lines(&[1, 2, 3, 4, 5, 6, 7, 8]));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut downloads = tokio::task::JoinSet::new();
    for i in 0..cores * 4 + 2 {
        let coding = ["gzip", "zstd", "identity"][i % 3];
        let all = all.clone();
        downloads.spawn(async move { (coding, get(&all, &[("Accept-Encoding", coding)]).await) });
    }
    let mut seen = 0;
    while let Some(done) = downloads.join_next().await {
        let (coding, a) = done.unwrap();
        assert_eq!(a.status, StatusCode::OK);
        let expected = (coding != "identity").then_some(coding);
        assert_eq!(a.header(header::CONTENT_ENCODING), expected);
        assert_eq!(a.decoded(), identity, "{coding}");
        seen += 1;
    }
    assert_eq!(seen, cores * 4 + 2);
}

/// zstd as catalogd (gzhttp since v1.18.4) negotiates it: preferred at equal q-values, the
/// higher q-value winning otherwise, refused by `q=0`; never for HEAD, ranges or small bodies.
#[tokio::test]
async fn zstd_negotiated_as_catalogd_does() {
    let (_server, base) = serve(&fixture("catalogd/tiny"), &[]).await;
    let all = format!("{base}/catalogs/tiny/api/v1/all");
    let whole = lines(&[1, 2, 3, 4, 5, 6, 7, 8]);
    let cases = [
        ("zstd", Some("zstd")),
        ("gzip, zstd", Some("zstd")),
        ("zstd;q=0.5, gzip;q=0.5", Some("zstd")),
        ("gzip;q=1, zstd;q=0.5", Some("gzip")),
        ("gzip;q=0.2, zstd;q=0.9", Some("zstd")),
        ("zstd;q=0", None),
        ("gzip, zstd;q=0", Some("gzip")),
        ("identity", None),
    ];
    for (accept, coding) in cases {
        let a = get(&all, &[("Accept-Encoding", accept)]).await;
        assert_eq!(a.status, StatusCode::OK, "{accept}");
        assert_eq!(a.header(header::CONTENT_ENCODING), coding, "{accept}");
        assert_eq!(a.header(header::VARY), Some("Accept-Encoding"));
        let length = coding.is_none().then_some("1196");
        assert_eq!(a.header(header::CONTENT_LENGTH), length, "{accept}");
        assert_eq!(a.decoded(), whole, "{accept}");
    }

    let a = request(Method::HEAD, &all, &[("Accept-Encoding", "gzip, zstd")]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.header(header::CONTENT_ENCODING), None);
    assert_eq!(a.header(header::CONTENT_LENGTH), Some("1196"));
    assert!(a.body.is_empty());

    let a = get(
        &all,
        &[("Range", "bytes=60-80"), ("Accept-Encoding", "zstd")],
    )
    .await;
    assert_eq!(a.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(a.header(header::CONTENT_ENCODING), None);
    assert_eq!(a.text(), &whole[60..81]);

    // Metas under 1024 bytes go out as they are; without a filter they are the whole.
    let metas = format!("{base}/catalogs/tiny/api/v1/metas");
    let a = get(
        &format!("{metas}?package=alpha-op"),
        &[("Accept-Encoding", "zstd")],
    )
    .await;
    assert_eq!(a.header(header::CONTENT_ENCODING), None);
    assert_eq!(a.header(header::CONTENT_LENGTH), Some("758"));
    assert_eq!(a.text(), lines(&[2, 3, 4, 5]));
    let a = get(&metas, &[("Accept-Encoding", "zstd")]).await;
    assert_eq!(a.header(header::CONTENT_ENCODING), Some("zstd"));
    assert_eq!(a.decoded(), whole);
}

/// Until the catalog is loaded its routes answer 503 (other names 404); SIGTERM then stops.
#[tokio::test]
async fn unavailable_while_loading() {
    let host = common::silent_registry();
    let image = format!("{host}/catalogs/stuck:v1");
    let mut server = Server::start(
        Path::new(&image),
        &[
            "--insecure-registry",
            &host,
            "--http-addr",
            "127.0.0.1:0",
            "--shutdown-grace",
            "1s",
        ],
    );
    server.wait_for_log("pulling catalog image").await;
    let base = api_base(&server).await;
    // The default name is the image's repository name.
    for path in ["all", "metas?schema=olm.package"] {
        assert_error(
            &get(&format!("{base}/catalogs/stuck/api/v1/{path}"), &[]).await,
            StatusCode::SERVICE_UNAVAILABLE,
            "503 Service Unavailable: catalog \"stuck\" is still loading\n",
        );
    }
    assert_error(
        &get(&format!("{base}/catalogs/other/api/v1/all"), &[]).await,
        StatusCode::NOT_FOUND,
        "404 Not Found\n",
    );
    server.signal("TERM");
    assert!(server.wait().await.success());
}

/// Several catalogs in one process (`serve --catalog NAME=REF …`, no SOURCE): each under its
/// own name from its own index, one still loading answers 503 while the others serve, and the
/// gRPC API serves the first.
#[tokio::test]
async fn several_catalogs_in_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let beta = dir.path().join("beta");
    common::write(&beta.join("catalog.json"), &lines(&[6, 7, 8]));
    let host = common::silent_registry();
    let tiny = fixture("catalogd/tiny");
    let catalogs = [
        format!("tiny={}", tiny.display()),
        format!("beta={}", beta.display()),
        format!("stuck={host}/catalogs/stuck:v1"),
        format!("twin={}", tiny.display()),
    ];
    let mut flags = vec!["--http-addr", "127.0.0.1:0", "--insecure-registry", &host];
    for c in &catalogs {
        flags.extend(["--catalog", c]);
    }
    flags.extend(["--shutdown-grace", "1s"]);
    let mut server = Server::start_without_source(&flags);
    server
        .wait_for_status(tonic_health::pb::health_check_response::ServingStatus::Serving)
        .await;
    let base = api_base(&server).await;
    let all = |name: &str| format!("{base}/catalogs/{name}/api/v1/all");
    for (name, want) in [
        ("tiny", lines(&[1, 2, 3, 4, 5, 6, 7, 8])),
        ("beta", lines(&[6, 7, 8])),
        ("twin", lines(&[1, 2, 3, 4, 5, 6, 7, 8])),
    ] {
        let a = common::kube::eventually(&format!("{name} served"), PATIENCE, || async {
            let a = get(&all(name), &[("Accept-Encoding", "gzip")]).await;
            (a.status == StatusCode::OK).then_some(a)
        })
        .await;
        assert_eq!(a.decoded(), want, "{name}");
    }
    let metas = get(
        &format!("{base}/catalogs/beta/api/v1/metas?schema=olm.package"),
        &[],
    )
    .await;
    assert_eq!(metas.text(), lines(&[6]));
    assert_error(
        &get(&all("stuck"), &[]).await,
        StatusCode::SERVICE_UNAVAILABLE,
        "503 Service Unavailable: catalog \"stuck\" is still loading\n",
    );
    assert_error(
        &get(&all("missing"), &[]).await,
        StatusCode::NOT_FOUND,
        "404 Not Found\n",
    );
    let mut client = server.client().await;
    assert_eq!(
        common::package_names(&mut client).await,
        ["alpha-op", "beta-op"]
    );
    server.signal("TERM");
    assert!(server.wait().await.success());
}

/// `--catalog` flags that cannot be served are refused before anything starts, naming the flag.
#[test]
fn catalog_flags_are_checked() {
    let tiny = fixture("catalogd/tiny");
    let tiny = tiny.to_str().unwrap();
    for (args, message) in [
        (
            vec!["--catalog", "Tiny=/x", "--http-addr", "127.0.0.1:0"],
            "invalid catalog name \"Tiny\" (from --catalog \"Tiny=/x\"): a lowercase RFC 1123 subdomain",
        ),
        (
            vec!["--catalog", "tiny", "--http-addr", "127.0.0.1:0"],
            "invalid --catalog \"tiny\": expected NAME=REF",
        ),
        (
            vec![
                tiny,
                "--catalog",
                &format!("tiny={tiny}"),
                "--http-addr",
                "127.0.0.1:0",
            ],
            "catalog name \"tiny\" is given twice",
        ),
        (
            vec!["--catalog", &format!("tiny={tiny}")],
            "the following required arguments were not provided:\n  --http-addr <HOST:PORT>",
        ),
    ] {
        let mut all = vec!["serve", "-t", "/dev/null"];
        all.extend(args.iter().copied());
        let (code, _, stderr) = common::run(&all);
        assert_ne!(code, 0, "{all:?}");
        assert!(stderr.contains(message), "{all:?}: {stderr}");
    }
}

/// SIGTERM while a client is downloading a large `/all` slowly: the download completes, new
/// connections are refused, and the process then exits cleanly.
#[tokio::test]
async fn sigterm_lets_a_download_finish() {
    let dir = tempfile::tempdir().unwrap();
    common::generated_catalog(dir.path(), 1000, 20_000);
    let (mut server, base) = serve(
        dir.path(),
        &["--catalog-name", "big", "--shutdown-grace", "120s"],
    )
    .await;
    let addr = base.trim_start_matches("http://").to_owned();
    let expected = get(&format!("{base}/catalogs/big/api/v1/all"), &[])
        .await
        .body;
    assert!(expected.len() > 24 << 20, "{}", expected.len());

    // Ask, read only the first bytes, and stop reading.
    let mut conn = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        conn,
        "GET /catalogs/big/api/v1/all HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut head = [0u8; 1024];
    let n = conn.read(&mut head).unwrap();
    assert!(head[..n].starts_with(b"HTTP/1.1 200 OK\r\n"));

    server.signal("TERM");
    server.wait_for_log("received SIGTERM").await;
    // The listening socket closes: connecting fails from some moment on.
    let refused = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while std::net::TcpStream::connect(&addr).is_ok() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(refused.is_ok(), "still accepting after SIGTERM");

    // The slow reader now takes the rest, which is all there.
    let mut rest = head[..n].to_vec();
    let reader = tokio::task::spawn_blocking(move || {
        conn.read_to_end(&mut rest).unwrap();
        rest
    });
    let response = reader.await.unwrap();
    let split = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&response[..split]).to_lowercase();
    assert!(
        head.contains(&format!("content-length: {}\r\n", expected.len())),
        "{head}"
    );
    assert!(response[split..] == expected[..], "the body differs");
    assert!(server.wait().await.success());
}

/// With a certificate pair the API is HTTPS (HTTP/1.1), and a client trusting the CA reads
/// the catalog; a pair given half is refused at start.
#[tokio::test]
async fn https_with_a_certificate_pair() {
    let pki = Pki::get();
    let (cert, key) = (pki.file("one.crt"), pki.file("one.key"));
    let (_server, base) = serve(
        &fixture("catalogd/tiny"),
        &[
            "--tls-cert-file",
            cert.to_str().unwrap(),
            "--tls-key-file",
            key.to_str().unwrap(),
        ],
    )
    .await;
    assert!(base.starts_with("https://127.0.0.1:"), "{base}");
    let ca = std::fs::read(pki.file("ca.crt")).unwrap();
    let a = send(
        client(Some(&ca)),
        Method::GET,
        &format!("{base}/catalogs/tiny/api/v1/all"),
        &[],
    )
    .await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.text(), lines(&[1, 2, 3, 4, 5, 6, 7, 8]));

    let (code, _, stderr) = common::run(&[
        "serve",
        fixture("catalogd/tiny").to_str().unwrap(),
        "-p",
        "127.0.0.1:0",
        "-t",
        "/dev/null",
        "--http-addr",
        "127.0.0.1:0",
        "--tls-cert-file",
        cert.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("--tls-cert-file and --tls-key-file must be used together"),
        "{stderr}"
    );
}

/// catalogd's request duration histogram, by code, on the metrics listener.
#[tokio::test]
async fn request_durations_are_counted_by_code() {
    let (server, base) = serve(
        &fixture("catalogd/tiny"),
        &["--metrics-addr", "127.0.0.1:0"],
    )
    .await;
    server.wait_for_log("serving metrics on http://").await;
    let log = server.log();
    let metrics = log
        .lines()
        .find_map(|l| l.split("serving metrics on ").nth(1))
        .unwrap()
        .trim_end_matches('"')
        .to_owned();
    get(&format!("{base}/catalogs/tiny/api/v1/all"), &[]).await;
    get(&format!("{base}/catalogs/tiny/api/v1/all"), &[]).await;
    get(&format!("{base}/catalogs/nope/api/v1/all"), &[]).await;
    let text = get(&metrics, &[]).await.text();
    for (code, count) in [("200", 2), ("404", 1), ("304", 0)] {
        let line =
            format!("catalogd_http_request_duration_seconds_count{{code=\"{code}\"}} {count}");
        assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
    }
    assert!(
        text.contains("catalogd_http_request_duration_seconds_bucket{code=\"200\",le=\"0.1\"}")
    );
}

/// The catalogd content is built only for a server that answers HTTP: a cache built without
/// it is rebuilt by such a server, and the rebuilt index then serves a gRPC-only server too.
#[tokio::test]
async fn the_http_content_is_in_the_index_only_when_asked_for() {
    let catalog = fixture("catalogd/tiny");
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_str().unwrap();
    let index = cache.path().join("olm-registry.v1/index.db");
    let content_rows = || {
        let conn = rusqlite::Connection::open(&index).unwrap();
        let lines: i64 = conn
            .query_row("SELECT count(*) FROM content_line", [], |r| r.get(0))
            .unwrap();
        let marked: i64 = conn
            .query_row(
                "SELECT count(*) FROM info WHERE key = 'catalogd_content'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        (lines, marked)
    };

    let (code, _, stderr) = common::run(&[
        "serve",
        catalog.to_str().unwrap(),
        "--cache-only",
        "--cache-dir",
        cache_dir,
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(content_rows(), (0, 0));

    let (server, base) = serve(&catalog, &["--cache-dir", cache_dir]).await;
    server
        .wait_for_log("the cached index holds no catalogd HTTP content")
        .await;
    let all = get(&format!("{base}/catalogs/tiny/api/v1/all"), &[]).await;
    assert_eq!(all.status, StatusCode::OK);
    assert_eq!(
        String::from_utf8(all.body).unwrap(),
        lines(&[1, 2, 3, 4, 5, 6, 7, 8])
    );
    drop(server);
    assert_eq!(content_rows(), (8, 1));

    let grpc_only = Server::serving(&catalog, &["--cache-dir", cache_dir]).await;
    grpc_only.wait_for_log("catalog unchanged").await;
}
