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
    catalog_info: IntGaugeVec,
    catalog_packages: IntGauge,
    catalog_channels: IntGauge,
    catalog_bundles: IntGauge,
    catalog_index_bytes: IntGauge,
    catalog_loaded_at: IntGauge,
    catalog_load_seconds: prometheus::Gauge,
    resolutions: IntCounterVec,
    resolution_seconds: HistogramVec,
    remote_fetches: IntCounterVec,
    remote_cache_hits: IntCounter,
    catalogd_http_seconds: HistogramVec,
    /// Pre-created series of `catalogd_http_seconds`, by code.
    catalogd_http_codes: HashMap<u16, Histogram>,
}

/// A registration that fails is a programming error (a duplicate or invalid name), found by
/// the first test that starts a server with metrics.
fn registered<C: prometheus::core::Collector + Clone + 'static>(registry: &Registry, c: C) -> C {
    registry
        .register(Box::new(c.clone()))
        .expect("metric names are unique and valid");
    c
}

impl Metrics {
    /// `descriptor_sets` are the encoded `FileDescriptorSet`s of every service served: each
    /// of their methods gets its series at once, as go-grpc-prometheus's InitializeMetrics
    /// does, so that rates start from zero instead of from the first call.
    pub(crate) fn new(descriptor_sets: &[&[u8]]) -> Metrics {
        let registry = Registry::new();
        let grpc_labels = ["grpc_type", "grpc_service", "grpc_method"];
        let started = registered(
            &registry,
            IntCounterVec::new(
                Opts::new(
                    "grpc_server_started_total",
                    "Total number of RPCs started on the server.",
                ),
                &grpc_labels,
            )
            .expect("valid metric"),
        );
        let handled = registered(
            &registry,
            IntCounterVec::new(
                Opts::new(
                    "grpc_server_handled_total",
                    "Total number of RPCs completed on the server, regardless of success or failure.",
                ),
                &["grpc_type", "grpc_service", "grpc_method", "grpc_code"],
            )
            .expect("valid metric"),
        );
        let seconds = registered(
            &registry,
            HistogramVec::new(
                HistogramOpts::new(
                    "grpc_server_handling_seconds",
                    "Histogram of response latency (seconds) of gRPC that had been application-level handled by the server.",
                )
                .buckets(GRPC_BUCKETS.to_vec()),
                &grpc_labels,
            )
            .expect("valid metric"),
        );
        let msg_sent = registered(
            &registry,
            IntCounterVec::new(
                Opts::new(
                    "grpc_server_msg_sent_total",
                    "Total number of gRPC stream messages sent by the server.",
                ),
                &grpc_labels,
            )
            .expect("valid metric"),
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

        let gauge = |name: &str, help: &str| {
            registered(&registry, IntGauge::new(name, help).expect("valid metric"))
        };
        let catalog_packages = gauge(
            "olm_registry_catalog_packages",
            "Packages in the served catalog.",
        );
        let catalog_channels = gauge(
            "olm_registry_catalog_channels",
            "Channels in the served catalog.",
        );
        let catalog_bundles = gauge(
            "olm_registry_catalog_bundles",
            "Bundles in the served catalog.",
        );
        let catalog_index_bytes = gauge(
            "olm_registry_catalog_index_bytes",
            "Size of the serving index on disk.",
        );
        let catalog_loaded_at = gauge(
            "olm_registry_catalog_last_load_timestamp_seconds",
            "When the served catalog finished loading (Unix time).",
        );
        let catalog_load_seconds = registered(
            &registry,
            prometheus::Gauge::new(
                "olm_registry_catalog_load_duration_seconds",
                "How long the served catalog took to load (pull, ingest or cache check, open).",
            )
            .expect("valid metric"),
        );
        let catalog_info = registered(
            &registry,
            IntGaugeVec::new(
                Opts::new(
                    "olm_registry_catalog_info",
                    "The served catalog: its content digest, and whether the start was warm (index reused from the cache directory) or cold (ingested). Always 1.",
                ),
                &["digest", "start"],
            )
            .expect("valid metric"),
        );
        let resolutions = registered(
            &registry,
            IntCounterVec::new(
                Opts::new(
                    "olm_registry_resolution_requests_total",
                    "Resolution requests by mode (classic, v1) and outcome (resolved, unsatisfiable, invalid, failed).",
                ),
                &["mode", "outcome"],
            )
            .expect("valid metric"),
        );
        let resolution_seconds = registered(
            &registry,
            HistogramVec::new(
                HistogramOpts::new(
                    "olm_registry_resolution_duration_seconds",
                    "Time to answer a resolution request, catalog reads included.",
                )
                .buckets(RESOLUTION_BUCKETS.to_vec()),
                &["mode"],
            )
            .expect("valid metric"),
        );
        let remote_fetches = registered(
            &registry,
            IntCounterVec::new(
                Opts::new(
                    "olm_registry_remote_catalog_fetches_total",
                    "Catalogs read from other catalog servers for resolution, by outcome (ok, error).",
                ),
                &["outcome"],
            )
            .expect("valid metric"),
        );
        let remote_cache_hits = registered(
            &registry,
            IntCounter::new(
                "olm_registry_remote_catalog_cache_hits_total",
                "Resolution catalogs of other servers answered from the cache.",
            )
            .expect("valid metric"),
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
                resolutions.with_label_values(&[mode, outcome.label()]);
            }
        }
        for outcome in ["ok", "error"] {
            remote_fetches.with_label_values(&[outcome]);
        }
        let catalogd_http_seconds = registered(
            &registry,
            HistogramVec::new(
                HistogramOpts::new(
                    "catalogd_http_request_duration_seconds",
                    "Time to answer a request of the catalogd HTTP API, body included, by status code.",
                )
                .buckets(CATALOGD_HTTP_BUCKETS.to_vec()),
                &["code"],
            )
            .expect("valid metric"),
        );
        let catalogd_http_codes = CATALOGD_HTTP_CODES
            .iter()
            .map(|code| {
                (
                    *code,
                    catalogd_http_seconds.with_label_values(&[&code.to_string()]),
                )
            })
            .collect();
        registry
            .register(Box::new(super::process::ProcessCollector::new()))
            .expect("process metric names are unique");
        Metrics {
            registry,
            methods,
            catalog_info,
            catalog_packages,
            catalog_channels,
            catalog_bundles,
            catalog_index_bytes,
            catalog_loaded_at,
            catalog_load_seconds,
            resolutions,
            resolution_seconds,
            remote_fetches,
            remote_cache_hits,
            catalogd_http_seconds,
            catalogd_http_codes,
        }
    }

    /// The handles of the method a request path names; none for a path no service has
    /// (those are not counted, so that a client cannot grow the label space).
    pub(super) fn method(&self, path: &str) -> Option<Arc<MethodMetrics>> {
        self.methods.get(path).cloned()
    }

    pub(super) fn catalog_loaded(&self, facts: &CatalogFacts) {
        self.catalog_info.reset();
        self.catalog_info
            .with_label_values(&[
                facts.digest.as_str(),
                if facts.warm { "warm" } else { "cold" },
            ])
            .set(1);
        self.catalog_packages.set(facts.packages);
        self.catalog_channels.set(facts.channels);
        self.catalog_bundles.set(facts.bundles);
        self.catalog_index_bytes.set(facts.index_bytes);
        self.catalog_load_seconds.set(facts.load.as_secs_f64());
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        self.catalog_loaded_at
            .set(i64::try_from(now.as_secs()).unwrap_or(i64::MAX));
    }

    pub(super) fn resolution(&self, mode: &str, outcome: ResolutionOutcome, took: Duration) {
        self.resolutions
            .with_label_values(&[mode, outcome.label()])
            .inc();
        self.resolution_seconds
            .with_label_values(&[mode])
            .observe(took.as_secs_f64());
    }

    /// A catalogd API request answered with `code`, `took` from its arrival to its last byte.
    pub(super) fn catalogd_http_request(&self, code: u16, took: Duration) {
        match self.catalogd_http_codes.get(&code) {
            Some(histogram) => histogram.observe(took.as_secs_f64()),
            None => self
                .catalogd_http_seconds
                .with_label_values(&[&code.to_string()])
                .observe(took.as_secs_f64()),
        }
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
        self.remote_cache_hits.inc();
    }

    fn fetched(&self, ok: bool) {
        self.remote_fetches
            .with_label_values(&[if ok { "ok" } else { "error" }])
            .inc();
    }
}
