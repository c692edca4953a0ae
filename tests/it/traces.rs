//! OpenTelemetry: with `OTEL_EXPORTER_OTLP_ENDPOINT` set, `serve` sends its spans (each gRPC
//! call, the load phases) over OTLP/gRPC; here to a receiver the test runs on loopback,
//! which answers as a collector does.

use crate::common::{Server, fixture};
use api::GetPackageRequest;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use std::process::Command;
use tokio::sync::mpsc;
use tonic_health::pb::health_check_response::ServingStatus;

struct Receiver(mpsc::UnboundedSender<ExportTraceServiceRequest>);

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let _ = self.0.send(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

fn int_attribute(span: &Span, key: &str) -> Option<i64> {
    span.attributes.iter().find(|a| a.key == key).and_then(|a| {
        match a.value.as_ref()?.value.as_ref()? {
            Value::IntValue(v) => Some(*v),
            _ => None,
        }
    })
}

#[tokio::test]
async fn spans_of_calls_and_load_phases_reach_an_otlp_receiver() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let (tx, mut rx) = mpsc::unbounded_channel();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(Receiver(tx)))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );

    let mut command = Command::new(crate::common::BIN);
    command.env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint);
    let mut server = Server::start_with(command, &fixture("resolution/primary"), &[]);
    server.wait_for_status(ServingStatus::Serving).await;
    let mut client = server.client().await;
    for name in ["a", "no-such-package"] {
        let _ = client
            .get_package(GetPackageRequest { name: name.into() })
            .await;
    }
    drop(client);
    server.signal("TERM");
    assert!(server.wait().await.success(), "{}", server.log());

    // The exit flushed every span, and each export was answered only once received.
    let mut spans = Vec::new();
    while let Ok(request) = rx.try_recv() {
        for resource in request.resource_spans {
            for scope in resource.scope_spans {
                spans.extend(scope.spans);
            }
        }
    }
    let mut names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "/api.Registry/GetPackage",
            "/api.Registry/GetPackage",
            "/grpc.health.v1.Health/Watch",
            // A cold start digests the catalog as it ingests it: no phase of its own.
            "catalog.ingest",
            "catalog.load",
        ]
    );
    let mut codes: Vec<Option<i64>> = spans
        .iter()
        .filter(|s| s.name == "/api.Registry/GetPackage")
        .map(|s| int_attribute(s, "rpc.grpc.status_code"))
        .collect();
    codes.sort();
    assert_eq!(codes, [Some(0), Some(2)]);
    let load = spans.iter().find(|s| s.name == "catalog.load").unwrap();
    let ingest = spans.iter().find(|s| s.name == "catalog.ingest").unwrap();
    assert_eq!(
        (&ingest.trace_id, &ingest.parent_span_id),
        (&load.trace_id, &load.span_id),
        "the ingest is a phase of the load"
    );
}
