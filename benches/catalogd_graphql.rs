//! catalogd GraphQL benchmark (issue #22): the real server's `POST …/api/v1/graphql` under
//! 32 concurrent clients, on each catalog given: queries/s, p50/p99 latency and the server's
//! RSS, for three queries — one package's bundles (a page of `olmbundles` at the package's
//! offset, with names, images and properties: catalogd has no filter argument, so a client
//! that knows where a package is asks for that page), the summary, and a standard client's
//! full introspection query. Also the RSS once loaded, and the first query's latency (the
//! catalog's GraphQL schema is derived from the index then) with the RSS after it.
//!
//!   python3 ../shared/tools/gen_catalog.py --packages 400 --bundles 20 --seed 1 --out /tmp/synth-large
//!   cargo bench --bench catalogd_graphql -- [CATALOG_DIR ...] [--seconds 8] [--clients 32]
//!
//! Default catalogs: /tmp/synth-large and ../shared/testdata/real/community-catalog-v4.20.
//! The HTTP client is reqwest (one connection per client, HTTP/1.1, identity encoding) in
//! this process: it shares the machine's cores with the server under test.
#[path = "common/load.rs"]
mod load;
#[path = "common/server.rs"]
mod server;

use load::Load;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The catalog name the server is started with.
const NAME: &str = "bench";

/// The introspection query standard clients send (graphql-js's `getIntrospectionQuery`
/// shape: every type with its fields, arguments and type references nine levels deep).
const INTROSPECTION: &str = "query IntrospectionQuery { __schema { queryType { name } mutationType { name } subscriptionType { name } types { ...FullType } directives { name description locations args { ...InputValue } } } }
fragment FullType on __Type { kind name description fields(includeDeprecated: true) { name description args { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason } inputFields { ...InputValue } interfaces { ...TypeRef } enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason } possibleTypes { ...TypeRef } }
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } } } }";

const SUMMARY: &str = "{ summary { totalSchemas schemas { name totalObjects totalFields } } }";

struct Options {
    catalogs: Vec<PathBuf>,
    seconds: u64,
    clients: usize,
}

fn options() -> Options {
    let mut opts = Options {
        catalogs: Vec::new(),
        seconds: 8,
        clients: 32,
    };
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--seconds" => opts.seconds = value().parse().expect("--seconds N"),
            "--clients" => opts.clients = value().parse().expect("--clients N"),
            path => opts.catalogs.push(PathBuf::from(path)),
        }
    }
    if opts.catalogs.is_empty() {
        opts.catalogs = vec![
            PathBuf::from("/tmp/synth-large"),
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../shared/testdata/real/community-catalog-v4.20"),
        ];
    }
    for catalog in &opts.catalogs {
        if !catalog.is_dir() {
            eprintln!(
                "{} is not a catalog directory (the synthetic one: python3 ../shared/tools/gen_catalog.py --packages 400 --bundles 20 --seed 1 --out /tmp/synth-large)",
                catalog.display()
            );
            std::process::exit(2);
        }
    }
    opts
}

/// One query's answer, checked to be a 200 without errors.
async fn query(
    client: &reqwest::Client,
    url: &str,
    text: &str,
) -> Result<serde_json::Value, String> {
    let body = serde_json::json!({ "query": text }).to_string();
    let response = client
        .post(url)
        .body(body)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let bytes = response.bytes().await.map_err(|e| e.to_string())?;
    let answer: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| format!("{status}: {e}"))?;
    if status != 200 || answer.get("errors").is_some() {
        return Err(format!(
            "{status}: {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
        ));
    }
    Ok(answer)
}

/// Each package's bundles as a page: (offset, count), read by paging through all bundles.
async fn package_pages(url: &str) -> Vec<(usize, usize)> {
    let client = server::http_client();
    let mut packages: Vec<String> = Vec::new();
    loop {
        let text = format!(
            "{{ olmbundles(limit: 100, offset: {}) {{ package }} }}",
            packages.len()
        );
        let answer = query(&client, url, &text)
            .await
            .expect("paging through the bundles");
        let page = answer["data"]["olmbundles"].as_array().unwrap().clone();
        if page.is_empty() {
            break;
        }
        packages.extend(
            page.iter()
                .map(|b| b["package"].as_str().unwrap_or("").to_owned()),
        );
    }
    let mut pages: Vec<(usize, usize)> = Vec::new();
    for (i, package) in packages.iter().enumerate() {
        match pages.last_mut() {
            Some((start, count)) if packages[*start] == *package && *count < 100 => *count += 1,
            _ => pages.push((i, 1)),
        }
    }
    pages
}

/// `clients` clients sending the queries round robin for `seconds`.
async fn load(url: &str, queries: Arc<Vec<String>>, clients: usize, seconds: u64) -> Load {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..clients {
        let (client, queries, url) = (server::http_client(), queries.clone(), url.to_owned());
        tasks.spawn(async move {
            let (mut latencies, mut errors, mut bytes, mut n) = (Vec::new(), 0, 0, c * 7919);
            while Instant::now() < deadline {
                let t = Instant::now();
                match query(&client, &url, &queries[n % queries.len()]).await {
                    Ok(answer) => {
                        latencies.push(t.elapsed());
                        bytes += answer.to_string().len();
                    }
                    Err(e) => {
                        if errors == 0 {
                            eprintln!("error: {e}");
                        }
                        errors += 1;
                    }
                }
                n += 1;
            }
            (latencies, errors, bytes)
        });
    }
    load::total(tasks.join_all().await)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn bench(catalog: &Path, opts: &Options) {
    let cache = tempfile::tempdir().unwrap();
    let (running, http) = server::start_http(catalog, cache.path(), NAME).await;
    let pid = running.child.id();
    let url = format!("http://{http}/catalogs/{NAME}/api/v1/graphql");
    println!("\n== {}", catalog.display());
    let (hwm, rss) = server::memory(pid);
    println!("loaded: RSS {rss:.1} MiB (peak {hwm:.1} MiB, the ingest's)");
    let t = Instant::now();
    query(&server::http_client(), &url, "{ summary { totalSchemas } }")
        .await
        .expect("the first query");
    let (_, rss) = server::memory(pid);
    println!(
        "first query (derives the GraphQL schema from the index): {:.0} ms; RSS after {rss:.1} MiB",
        ms(t.elapsed())
    );
    let pages = package_pages(&url).await;
    let bundles = Arc::new(
        pages
            .iter()
            .map(|(offset, count)| {
                format!("{{ olmbundles(limit: {count}, offset: {offset}) {{ name package image properties {{ type value }} }} }}")
            })
            .collect::<Vec<_>>(),
    );
    println!(
        "{} packages' pages of bundles; {} clients, {} s each",
        pages.len(),
        opts.clients,
        opts.seconds
    );
    println!(
        "{:<28} {:>9} {:>8} {:>9} {:>9} {:>10} {:>9}",
        "query", "queries/s", "errors", "p50 ms", "p99 ms", "MB/s", "RSS MiB"
    );
    let workloads: [(&str, Arc<Vec<String>>); 3] = [
        ("one package's bundles", bundles),
        ("summary", Arc::new(vec![SUMMARY.to_owned()])),
        (
            "full introspection",
            Arc::new(vec![INTROSPECTION.to_owned()]),
        ),
    ];
    for (name, queries) in workloads {
        let l = load(&url, queries, opts.clients, opts.seconds).await;
        let (_, rss) = server::memory(pid);
        let secs = opts.seconds as f64;
        let (p50, p99) = if l.latencies.is_empty() {
            (0.0, 0.0)
        } else {
            (
                ms(server::percentile(&l.latencies, 0.5)),
                ms(server::percentile(&l.latencies, 0.99)),
            )
        };
        println!(
            "{name:<28} {:>9.0} {:>8} {p50:>9.2} {p99:>9.2} {:>10.1} {rss:>9.1}",
            l.requests as f64 / secs,
            l.errors,
            l.bytes as f64 / secs / 1e6
        );
    }
    let (hwm, rss) = server::memory(pid);
    println!("after: RSS {rss:.1} MiB (peak {hwm:.1} MiB)");
}

#[tokio::main]
async fn main() {
    let opts = options();
    // reqwest is built without a crypto provider of its own (plain HTTP here, but it asks).
    let _ = rustls::crypto::ring::default_provider().install_default();
    for catalog in &opts.catalogs {
        bench(catalog, &opts).await;
    }
}
