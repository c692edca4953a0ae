//! `api.ExperimentalRegistry` (registry-api.md §7): custom-schema documents by schema and
//! package, only for callers that acknowledge the API is experimental.
use super::connection::Peer;
use super::serving::{ServedCatalog, bounded};
use api::server::experimental_registry_server::ExperimentalRegistry;
use api::{ExperimentalListPackageCustomSchemasRequest, RawMessage};
use std::pin::Pin;
use std::sync::Arc;
use store::ingest::is_simple_name;
use store::query;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

const ACK_HEADER: &str = "x-acknowledge-experimental";

pub(crate) struct ExperimentalService {
    pub(crate) catalog: ServedCatalog,
}

type Streamed = Pin<Box<dyn Stream<Item = Result<RawMessage, Status>> + Send>>;

#[tonic::async_trait]
impl ExperimentalRegistry for ExperimentalService {
    type ExperimentalListPackageCustomSchemasStream = Streamed;

    async fn experimental_list_package_custom_schemas(
        &self,
        req: Request<ExperimentalListPackageCustomSchemasRequest>,
    ) -> Result<Response<Streamed>, Status> {
        // Callers that do not know about this API see an empty answer, not an error.
        let acknowledged = req
            .metadata()
            .get_all(ACK_HEADER)
            .iter()
            .next()
            .is_some_and(|v| v.as_bytes() == b"true");
        if !acknowledged {
            return Ok(Response::new(Box::pin(tokio_stream::empty())));
        }
        let peer = req.extensions().get::<Peer>().cloned();
        let r = req.into_inner();
        if r.schema.is_empty() {
            return Err(Status::invalid_argument("schema is required"));
        }
        for (what, value) in [("schema", &r.schema), ("packageName", &r.package_name)] {
            if !value.is_empty() && !is_simple_name(value) {
                return Err(Status::invalid_argument(bounded(format!(
                    "invalid custom schema query: invalid {what} {}: must match ^[a-zA-Z0-9][a-zA-Z0-9._-]*$",
                    query::go_quote(value)
                ))));
            }
        }
        let rx = self
            .catalog
            .stream(
                peer,
                Arc::new(move |conn, after, send| {
                    query::custom_documents(conn, &r.schema, &r.package_name, after, send)
                }),
            )
            .await
            .map_err(|s| {
                if s.code() == tonic::Code::Unknown {
                    Status::internal(s.message())
                } else {
                    s
                }
            })?;
        Ok(Response::new(Box::pin(rx)))
    }
}
