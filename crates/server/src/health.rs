//! `grpc.health.v1.Health`. Unlike tonic-health's reporter, every service name gets the
//! server's status (upstream answers SERVING for any name, and OLM asks for "Registry"):
//! NOT_SERVING while the catalog loads and while shutting down, SERVING in between.
use std::pin::Pin;
use tokio::sync::watch;
use tokio_stream::{Stream, StreamExt, wrappers::WatchStream};
use tonic::{Request, Response, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_server::Health;
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};

pub(crate) struct HealthService {
    status: watch::Receiver<ServingStatus>,
}

pub(crate) fn health() -> (watch::Sender<ServingStatus>, HealthService) {
    let (tx, rx) = watch::channel(ServingStatus::NotServing);
    (tx, HealthService { status: rx })
}

fn response(status: ServingStatus) -> HealthCheckResponse {
    HealthCheckResponse {
        status: status as i32,
    }
}

#[tonic::async_trait]
impl Health for HealthService {
    async fn check(
        &self,
        _: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        Ok(Response::new(response(*self.status.borrow())))
    }

    type WatchStream = Pin<Box<dyn Stream<Item = Result<HealthCheckResponse, Status>> + Send>>;

    async fn watch(
        &self,
        _: Request<HealthCheckRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        // The current status first, then each change.
        let updates = WatchStream::new(self.status.clone()).map(|s| Ok(response(s)));
        Ok(Response::new(Box::pin(updates)))
    }
}
