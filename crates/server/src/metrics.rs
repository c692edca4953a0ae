//! What `serve --metrics-addr` exposes: per-call gRPC figures under go-grpc-prometheus's
//! names and labels (so existing Grafana dashboards work unchanged), catalog facts,
//! resolution outcomes and remote catalog reads; process figures come from [`super::process`].
//! The catalogd HTTP API gets catalogd's request duration histogram here too, on the same
//! registry and the same pre-created-handle scheme.
//!
//! The hot path never takes a lock: every series a call can touch is created when the
//! server starts (one handle per method, and per method and code), and a call only bumps
//! atomics through those handles. The per-label lookup of a metric vector takes a lock, so it
//! is kept to start-up.
use prometheus::{
    Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry,
};
use prost::Message;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// client_golang's default buckets, which go-grpc-prometheus uses for
/// `grpc_server_handling_seconds`: dashboards compute quantiles over these bounds.
const GRPC_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Resolution ranges from a millisecond (a cached catalog, one package) to minutes (remote
/// catalogs, a large classic namespace).
const RESOLUTION_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// catalogd's buckets for `catalogd_http_request_duration_seconds` (catalogd-http.md §7).
const CATALOGD_HTTP_BUCKETS: &[f64] = &[
    0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.2, 1.6, 2.0, 2.4, 2.8, 3.2, 3.6, 4.0, 10.0,
];

/// The status codes the catalogd API answers with.
const CATALOGD_HTTP_CODES: [u16; 11] = [200, 206, 301, 304, 400, 404, 405, 412, 416, 500, 503];

/// Every gRPC status code, in the order of their numbers, as grpc-go spells them.
const CODES: [&str; 17] = [
    "OK",
    "Canceled",
    "Unknown",
    "InvalidArgument",
    "DeadlineExceeded",
    "NotFound",
    "AlreadyExists",
    "PermissionDenied",
    "ResourceExhausted",
    "FailedPrecondition",
    "Aborted",
    "OutOfRange",
    "Unimplemented",
    "Internal",
    "Unavailable",
    "DataLoss",
    "Unauthenticated",
];

/// The handles one gRPC method's calls update.
pub(crate) struct MethodMetrics {
    started: IntCounter,
    handled: [IntCounter; CODES.len()],
    seconds: Histogram,
    pub(super) msg_sent: IntCounter,
}

impl MethodMetrics {
    pub(super) fn start(&self) {
        self.started.inc();
    }

    pub(super) fn finish(&self, code: i32, took: Duration) {
        self.handled[code_index(code)].inc();
        self.seconds.observe(took.as_secs_f64());
    }
}

/// A grpc-status number outside the known range counts as Unknown.
fn code_index(code: i32) -> usize {
    usize::try_from(code)
        .ok()
        .filter(|&i| i < CODES.len())
        .unwrap_or(tonic::Code::Unknown as usize)
}

/// The name grpc-go gives a grpc-status number, as the metrics and logs spell it.
pub(super) fn code_name(code: i32) -> &'static str {
    CODES[code_index(code)]
}

/// How a resolution request ended, as the metrics count it.
#[derive(Clone, Copy)]
pub(crate) enum ResolutionOutcome {
    Resolved,
    /// The request was valid; no consistent set of bundles exists (or some request in it
    /// could not be met).
    Unsatisfiable,
    /// The request itself was wrong (INVALID_ARGUMENT).
    Invalid,
    /// Anything else: a catalog that could not be read, an internal failure.
    Failed,
}

impl ResolutionOutcome {
    fn label(self) -> &'static str {
        match self {
            ResolutionOutcome::Resolved => "resolved",
            ResolutionOutcome::Unsatisfiable => "unsatisfiable",
            ResolutionOutcome::Invalid => "invalid",
            ResolutionOutcome::Failed => "failed",
        }
    }
}

/// What is known about a loaded catalog.
pub(crate) struct CatalogFacts {
    pub(crate) digest: String,
    pub(crate) packages: i64,
    pub(crate) channels: i64,
    pub(crate) bundles: i64,
    pub(crate) index_bytes: i64,
    /// The index was reused from the cache directory (no ingest).
    pub(crate) warm: bool,
    pub(crate) load: Duration,
}

pub(crate) struct Metrics {
    registry: Registry,
    /// Keyed by the request path, `/package.Service/Method`.
    methods: HashMap<String, Arc<MethodMetrics>>,
    catalog: CatalogGauges,
    resolution: ResolutionMetrics,
    remote: RemoteReads,
    catalogd_http: CatalogdHttp,
}

/// A registration that fails is a programming error (a duplicate or invalid name), found by
/// the first test that starts a server with metrics.
fn registered<C: prometheus::core::Collector + Clone + 'static>(registry: &Registry, c: C) -> C {
    registry
        .register(Box::new(c.clone()))
        .expect("metric names are unique and valid");
    c
}

fn counter_vec(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    registered(
        registry,
        IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric"),
    )
}

fn histogram_vec(
    registry: &Registry,
    name: &str,
    help: &str,
    buckets: &[f64],
    labels: &[&str],
) -> HistogramVec {
    registered(
        registry,
        HistogramVec::new(
            HistogramOpts::new(name, help).buckets(buckets.to_vec()),
            labels,
        )
        .expect("valid metric"),
    )
}

fn int_gauge(registry: &Registry, name: &str, help: &str) -> IntGauge {
    registered(registry, IntGauge::new(name, help).expect("valid metric"))
}

impl Metrics {
    /// `descriptor_sets` are the encoded `FileDescriptorSet`s of every service served: each
    /// of their methods gets its series at once, as go-grpc-prometheus's InitializeMetrics
    /// does, so that rates start from zero instead of from the first call.
    pub(crate) fn new(descriptor_sets: &[&[u8]]) -> Metrics {
        let registry = Registry::new();
        let methods = method_metrics(&registry, descriptor_sets);
        let catalog = CatalogGauges::new(&registry);
        let resolution = ResolutionMetrics::new(&registry);
        let remote = RemoteReads::new(&registry);
        let catalogd_http = CatalogdHttp::new(&registry);
        registry
            .register(Box::new(super::process::ProcessCollector::new()))
            .expect("process metric names are unique");
        Metrics {
            registry,
            methods,
            catalog,
            resolution,
            remote,
            catalogd_http,
        }
    }

    /// The handles of the method a request path names; none for a path no service has
    /// (those are not counted, so that a client cannot grow the label space).
    pub(super) fn method(&self, path: &str) -> Option<Arc<MethodMetrics>> {
        self.methods.get(path).cloned()
    }

    pub(super) fn catalog_loaded(&self, facts: &CatalogFacts) {
        self.catalog.set(facts);
    }

    pub(super) fn resolution(&self, mode: &str, outcome: ResolutionOutcome, took: Duration) {
        self.resolution.record(mode, outcome, took);
    }

    /// A catalogd API request answered with `code`, `took` from its arrival to its last byte.
    pub(super) fn catalogd_http_request(&self, code: u16, took: Duration) {
        self.catalogd_http.observe(code, took);
    }

    /// The text exposition format (version 0.0.4).
    pub(super) fn exposition(&self) -> String {
        let mut text = String::new();
        if let Err(e) =
            prometheus::TextEncoder::new().encode_utf8(&self.registry.gather(), &mut text)
        {
            tracing::warn!("encoding metrics: {e}");
        }
        text
    }
}

/// go-grpc-prometheus's server metrics, with the handles of every method of the services
/// in `descriptor_sets`, by request path.
fn method_metrics(
    registry: &Registry,
    descriptor_sets: &[&[u8]],
) -> HashMap<String, Arc<MethodMetrics>> {
    let grpc_labels = ["grpc_type", "grpc_service", "grpc_method"];
    let started = counter_vec(
        registry,
        "grpc_server_started_total",
        "Total number of RPCs started on the server.",
        &grpc_labels,
    );
    let handled = counter_vec(
        registry,
        "grpc_server_handled_total",
        "Total number of RPCs completed on the server, regardless of success or failure.",
        &["grpc_type", "grpc_service", "grpc_method", "grpc_code"],
    );
    let seconds = histogram_vec(
        registry,
        "grpc_server_handling_seconds",
        "Histogram of response latency (seconds) of gRPC that had been application-level handled by the server.",
        GRPC_BUCKETS,
        &grpc_labels,
    );
    let msg_sent = counter_vec(
        registry,
        "grpc_server_msg_sent_total",
        "Total number of gRPC stream messages sent by the server.",
        &grpc_labels,
    );
    let mut methods = HashMap::new();
    for (service, method, kind) in grpc_methods(descriptor_sets) {
        let labels = [kind, service.as_str(), method.as_str()];
        let handle = MethodMetrics {
            started: started.with_label_values(&labels),
            handled: CODES.map(|code| {
                handled.with_label_values(&[kind, service.as_str(), method.as_str(), code])
            }),
            seconds: seconds.with_label_values(&labels),
            msg_sent: msg_sent.with_label_values(&labels),
        };
        methods.insert(format!("/{service}/{method}"), Arc::new(handle));
    }
    methods
}

/// The served catalog's facts, set at each load.
struct CatalogGauges {
    info: IntGaugeVec,
    packages: IntGauge,
    channels: IntGauge,
    bundles: IntGauge,
    index_bytes: IntGauge,
    loaded_at: IntGauge,
    load_seconds: prometheus::Gauge,
}

impl CatalogGauges {
    fn new(registry: &Registry) -> CatalogGauges {
        let packages = int_gauge(
            registry,
            "olm_registry_catalog_packages",
            "Packages in the served catalog.",
        );
        let channels = int_gauge(
            registry,
            "olm_registry_catalog_channels",
            "Channels in the served catalog.",
        );
        let bundles = int_gauge(
            registry,
            "olm_registry_catalog_bundles",
            "Bundles in the served catalog.",
        );
        let index_bytes = int_gauge(
            registry,
            "olm_registry_catalog_index_bytes",
            "Size of the serving index on disk.",
        );
        let loaded_at = int_gauge(
            registry,
            "olm_registry_catalog_last_load_timestamp_seconds",
            "When the served catalog finished loading (Unix time).",
        );
        let load_seconds = registered(
            registry,
            prometheus::Gauge::new(
                "olm_registry_catalog_load_duration_seconds",
                "How long the served catalog took to load (pull, ingest or cache check, open).",
            )
            .expect("valid metric"),
        );
        let info = registered(
            registry,
            IntGaugeVec::new(
                Opts::new(
                    "olm_registry_catalog_info",
                    "The served catalog: its content digest, and whether the start was warm (index reused from the cache directory) or cold (ingested). Always 1.",
                ),
                &["digest", "start"],
            )
            .expect("valid metric"),
        );
        CatalogGauges {
            info,
            packages,
            channels,
            bundles,
            index_bytes,
            loaded_at,
            load_seconds,
        }
    }

    fn set(&self, facts: &CatalogFacts) {
        self.info.reset();
        self.info
            .with_label_values(&[
                facts.digest.as_str(),
                if facts.warm { "warm" } else { "cold" },
            ])
            .set(1);
        self.packages.set(facts.packages);
        self.channels.set(facts.channels);
        self.bundles.set(facts.bundles);
        self.index_bytes.set(facts.index_bytes);
        self.load_seconds.set(facts.load.as_secs_f64());
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        self.loaded_at
            .set(i64::try_from(now.as_secs()).unwrap_or(i64::MAX));
    }
}

/// Resolution requests: how they ended and how long they took, by mode.
struct ResolutionMetrics {
    requests: IntCounterVec,
    seconds: HistogramVec,
}

impl ResolutionMetrics {
    fn new(registry: &Registry) -> ResolutionMetrics {
        let requests = counter_vec(
            registry,
            "olm_registry_resolution_requests_total",
            "Resolution requests by mode (classic, v1) and outcome (resolved, unsatisfiable, invalid, failed).",
            &["mode", "outcome"],
        );
        let seconds = histogram_vec(
            registry,
            "olm_registry_resolution_duration_seconds",
            "Time to answer a resolution request, catalog reads included.",
            RESOLUTION_BUCKETS,
            &["mode"],
        );
        // Every outcome from zero, so that a rate or an alert on "error" works before the
        // first one.
        for mode in ["classic", "v1"] {
            for outcome in [
                ResolutionOutcome::Resolved,
                ResolutionOutcome::Unsatisfiable,
                ResolutionOutcome::Invalid,
                ResolutionOutcome::Failed,
            ] {
                requests.with_label_values(&[mode, outcome.label()]);
            }
        }
        ResolutionMetrics { requests, seconds }
    }

    fn record(&self, mode: &str, outcome: ResolutionOutcome, took: Duration) {
        self.requests
            .with_label_values(&[mode, outcome.label()])
            .inc();
        self.seconds
            .with_label_values(&[mode])
            .observe(took.as_secs_f64());
    }
}

/// Catalogs read from other catalog servers for resolution.
struct RemoteReads {
    fetches: IntCounterVec,
    cache_hits: IntCounter,
}

impl RemoteReads {
    fn new(registry: &Registry) -> RemoteReads {
        let fetches = counter_vec(
            registry,
            "olm_registry_remote_catalog_fetches_total",
            "Catalogs read from other catalog servers for resolution, by outcome (ok, error).",
            &["outcome"],
        );
        let cache_hits = registered(
            registry,
            IntCounter::new(
                "olm_registry_remote_catalog_cache_hits_total",
                "Resolution catalogs of other servers answered from the cache.",
            )
            .expect("valid metric"),
        );
        // From zero, as the resolution outcomes.
        for outcome in ["ok", "error"] {
            fetches.with_label_values(&[outcome]);
        }
        RemoteReads {
            fetches,
            cache_hits,
        }
    }
}

/// catalogd's request duration histogram for the catalogd HTTP API.
struct CatalogdHttp {
    seconds: HistogramVec,
    /// Pre-created series of `seconds`, by code.
    codes: HashMap<u16, Histogram>,
}

impl CatalogdHttp {
    fn new(registry: &Registry) -> CatalogdHttp {
        let seconds = histogram_vec(
            registry,
            "catalogd_http_request_duration_seconds",
            "Time to answer a request of the catalogd HTTP API, body included, by status code.",
            CATALOGD_HTTP_BUCKETS,
            &["code"],
        );
        let codes = CATALOGD_HTTP_CODES
            .iter()
            .map(|code| (*code, seconds.with_label_values(&[&code.to_string()])))
            .collect();
        CatalogdHttp { seconds, codes }
    }

    fn observe(&self, code: u16, took: Duration) {
        match self.codes.get(&code) {
            Some(histogram) => histogram.observe(took.as_secs_f64()),
            None => self
                .seconds
                .with_label_values(&[&code.to_string()])
                .observe(took.as_secs_f64()),
        }
    }
}

/// (service, method, grpc_type) of every method in the descriptor sets.
fn grpc_methods(descriptor_sets: &[&[u8]]) -> Vec<(String, String, &'static str)> {
    let mut methods = Vec::new();
    for encoded in descriptor_sets {
        let Ok(set) = prost_types::FileDescriptorSet::decode(*encoded) else {
            tracing::warn!("a descriptor set does not decode; its methods are not counted");
            continue;
        };
        for file in set.file {
            let package = file.package();
            for service in &file.service {
                let full = if package.is_empty() {
                    service.name().to_owned()
                } else {
                    format!("{package}.{}", service.name())
                };
                for m in &service.method {
                    let kind = match (m.client_streaming(), m.server_streaming()) {
                        (false, false) => "unary",
                        (false, true) => "server_stream",
                        (true, false) => "client_stream",
                        (true, true) => "bidi_stream",
                    };
                    methods.push((full.clone(), m.name().to_owned(), kind));
                }
            }
        }
    }
    methods
}

impl source::remote::ReadCounter for Metrics {
    fn cache_hit(&self) {
        self.remote.cache_hits.inc();
    }

    fn fetched(&self, ok: bool) {
        self.remote
            .fetches
            .with_label_values(&[if ok { "ok" } else { "error" }])
            .inc();
    }
}
