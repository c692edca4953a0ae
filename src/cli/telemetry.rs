//! OpenTelemetry traces over OTLP/gRPC, on when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (the
//! exporter reads it and the other standard `OTEL_*` variables itself) and absent otherwise:
//! no exporter, no span is even created.
//! Spans meant only for traces (one per gRPC call, the load phases) use
//! [`store::SPAN_TARGET`].
use opentelemetry::trace::TracerProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;

/// Spans are handed to a batch exporter on a thread of its own; the gRPC client that sends
/// them needs a Tokio runtime of its own too, as a command's runtime may be gone when the
/// last batch is flushed at exit.
pub struct Telemetry {
    provider: SdkTracerProvider,
    _runtime: tokio::runtime::Runtime,
}

impl Telemetry {
    /// None when the endpoint is not set; an error when it is and cannot be used.
    pub fn from_env() -> Option<Result<Telemetry, String>> {
        let endpoint = std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").unwrap_or_default();
        if endpoint.trim().is_empty() {
            return None;
        }
        Some(Telemetry::start())
    }

    fn start() -> Result<Telemetry, String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("otlp-export")
            .enable_all()
            .build()
            .map_err(|e| format!("starting the trace exporter's runtime: {e}"))?;
        let _within = runtime.enter();
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .build()
            .map_err(|e| format!("OTLP trace exporter: {e}"))?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(
                opentelemetry_sdk::Resource::builder()
                    .with_service_name(env!("CARGO_PKG_NAME"))
                    .build(),
            )
            .build();
        Ok(Telemetry {
            provider,
            _runtime: runtime,
        })
    }

    pub fn layer<S>(&self) -> impl tracing_subscriber::Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        tracing_opentelemetry::layer().with_tracer(self.provider.tracer(env!("CARGO_PKG_NAME")))
    }

    /// Sends what is still buffered.
    pub fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            eprintln!("warning: flushing traces: {e}");
        }
    }
}
