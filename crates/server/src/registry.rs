//! `api.Registry`: each RPC is a query on the index, run on a blocking thread; the point
//! lookups on the calling task when they cannot wait (see `ServedCatalog::lookup`).
use super::connection::Peer;
use super::serving::ServedCatalog;
use api::server::registry_server::Registry;
use api::{
    ChannelEntry, GetAllProvidersRequest, GetAllReplacementsRequest, GetBundleInChannelRequest,
    GetBundleRequest, GetDefaultProviderRequest, GetLatestProvidersRequest, GetPackageRequest,
    GetReplacementRequest, ListBundlesRequest, ListPackageRequest, PackageName, RawMessage,
};
use bytes::Bytes;
use std::pin::Pin;
use std::sync::Arc;
use store::query;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

type Streamed<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

pub(crate) struct RegistryService {
    pub(crate) catalog: ServedCatalog,
}

/// A stream of answers computed in full first: upstream sends nothing when the answer is an
/// error.
fn computed<T: Send + 'static>(items: Vec<T>) -> Response<Streamed<T>> {
    Response::new(Box::pin(tokio_stream::iter(items.into_iter().map(Ok))))
}

fn peer<T>(req: &Request<T>) -> Option<Peer> {
    req.extensions().get::<Peer>().cloned()
}

/// A bundle answer, its bytes held against the caller's connection until they are sent.
async fn answer(peer: Option<Peer>, bundle: Bytes) -> Response<RawMessage> {
    let reserved = match peer {
        Some(peer) => Some(peer.reserve(bundle.len()).await),
        None => None,
    };
    let mut response = Response::new(RawMessage(bundle));
    if let Some(reserved) = reserved {
        response.extensions_mut().insert(reserved);
    }
    response
}

#[tonic::async_trait]
impl Registry for RegistryService {
    type ListPackagesStream = Streamed<PackageName>;
    type GetChannelEntriesThatReplaceStream = Streamed<ChannelEntry>;
    type GetChannelEntriesThatProvideStream = Streamed<ChannelEntry>;
    type GetLatestChannelEntriesThatProvideStream = Streamed<ChannelEntry>;
    type ListBundlesStream = Streamed<RawMessage>;

    async fn list_packages(
        &self,
        _: Request<ListPackageRequest>,
    ) -> Result<Response<Self::ListPackagesStream>, Status> {
        let names = self.catalog.query(query::list_packages).await?;
        Ok(computed(
            names.into_iter().map(|name| PackageName { name }).collect(),
        ))
    }

    async fn get_package(
        &self,
        req: Request<GetPackageRequest>,
    ) -> Result<Response<api::Package>, Status> {
        let name = req.into_inner().name;
        let bytes = self
            .catalog
            .lookup(move |c| query::get_package(c, &name))
            .await?;
        // Packages are small; decoding keeps the generated Package type on the wire.
        let package = prost::Message::decode(bytes).map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(package))
    }

    async fn get_bundle(
        &self,
        req: Request<GetBundleRequest>,
    ) -> Result<Response<RawMessage>, Status> {
        let peer = peer(&req);
        let r = req.into_inner();
        let b = self
            .catalog
            .lookup(move |c| query::get_bundle(c, &r.pkg_name, &r.channel_name, &r.csv_name))
            .await?;
        Ok(answer(peer, b).await)
    }

    async fn get_bundle_for_channel(
        &self,
        req: Request<GetBundleInChannelRequest>,
    ) -> Result<Response<RawMessage>, Status> {
        let peer = peer(&req);
        let r = req.into_inner();
        let b = self
            .catalog
            .lookup(move |c| query::get_bundle_for_channel(c, &r.pkg_name, &r.channel_name))
            .await?;
        Ok(answer(peer, b).await)
    }

    async fn get_channel_entries_that_replace(
        &self,
        req: Request<GetAllReplacementsRequest>,
    ) -> Result<Response<Self::GetChannelEntriesThatReplaceStream>, Status> {
        let name = req.into_inner().csv_name;
        let entries = self
            .catalog
            .query(move |c| query::entries_that_replace(c, &name))
            .await?;
        Ok(computed(entries))
    }

    async fn get_bundle_that_replaces(
        &self,
        req: Request<GetReplacementRequest>,
    ) -> Result<Response<RawMessage>, Status> {
        let peer = peer(&req);
        let r = req.into_inner();
        let b = self
            .catalog
            .lookup(move |c| {
                query::bundle_that_replaces(c, &r.csv_name, &r.pkg_name, &r.channel_name)
            })
            .await?;
        Ok(answer(peer, b).await)
    }

    async fn get_channel_entries_that_provide(
        &self,
        req: Request<GetAllProvidersRequest>,
    ) -> Result<Response<Self::GetChannelEntriesThatProvideStream>, Status> {
        let r = req.into_inner();
        let entries = self
            .catalog
            .query(move |c| query::entries_that_provide(c, &r.group, &r.version, &r.kind))
            .await?;
        Ok(computed(entries))
    }

    async fn get_latest_channel_entries_that_provide(
        &self,
        req: Request<GetLatestProvidersRequest>,
    ) -> Result<Response<Self::GetLatestChannelEntriesThatProvideStream>, Status> {
        let r = req.into_inner();
        let entries = self
            .catalog
            .query(move |c| query::latest_entries_that_provide(c, &r.group, &r.version, &r.kind))
            .await?;
        Ok(computed(entries))
    }

    async fn get_default_bundle_that_provides(
        &self,
        req: Request<GetDefaultProviderRequest>,
    ) -> Result<Response<RawMessage>, Status> {
        let peer = peer(&req);
        let r = req.into_inner();
        let b = self
            .catalog
            .query(move |c| query::default_bundle_that_provides(c, &r.group, &r.version, &r.kind))
            .await?;
        Ok(answer(peer, b).await)
    }

    async fn list_bundles(
        &self,
        req: Request<ListBundlesRequest>,
    ) -> Result<Response<Self::ListBundlesStream>, Status> {
        let rx = self
            .catalog
            .stream(
                peer(&req),
                Arc::new(|conn, after, send| query::list_bundles(conn, after, send)),
            )
            .await?;
        Ok(Response::new(Box::pin(rx)))
    }
}
