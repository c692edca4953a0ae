//! The gRPC check: `grpc.health.v1.Health/Check` of `-service` at `-addr`.
use super::Failure;
use super::flags::Probe;
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// `SERVING`, or the failure with its exit code (2 no connection, 3 the call failed, 4 not
/// serving).
pub(super) async fn check(probe: &Probe) -> Result<String, Failure> {
    let mut client = HealthClient::new(connect(probe).await?);
    let request = HealthCheckRequest {
        service: probe.service.clone(),
    };
    let response = client
        .check(request)
        .await
        .map_err(|e| Failure::error(3, format_args!("health rpc failed: {e}")))?;
    let status = response.get_ref().status;
    if status == ServingStatus::Serving as i32 {
        return Ok("SERVING".to_owned());
    }
    let status = ServingStatus::try_from(status).map_or("UNKNOWN", |s| s.as_str_name());
    Err(Failure {
        code: 4,
        message: format!("service unhealthy (responded with {status:?})"),
    })
}

async fn connect(probe: &Probe) -> Result<Channel, Failure> {
    let endpoint = Endpoint::from_shared(format!("http://{}", probe.addr))
        .map_err(|e| Failure::error(1, format_args!("invalid -addr {:?}: {e}", probe.addr)))?
        .connect_timeout(probe.connect_timeout)
        .timeout(probe.rpc_timeout);
    match tokio::time::timeout(probe.connect_timeout, endpoint.connect()).await {
        Ok(Ok(channel)) => Ok(channel),
        Ok(Err(e)) => Err(Failure::error(
            2,
            format_args!("failed to connect service at {:?}: {e}", probe.addr),
        )),
        Err(_) => Err(Failure {
            code: 2,
            message: format!(
                "timeout: failed to connect service {:?} within {:?}",
                probe.addr, probe.connect_timeout
            ),
        }),
    }
}
