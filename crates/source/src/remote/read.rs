//! One read of another server's catalog: connect, list its packages and bundles within the
//! byte cap, convert off the runtime, and keep the connection for the manifests asked later.
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use prost::Message;
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

use super::content::{from_api, objects_of};
use super::{Cached, MakeCatalog, RemoteLimits, out_of_time};
use crate::Error;
use api::registry_client::RegistryClient;
use api::{GetBundleRequest, GetPackageRequest, ListBundlesRequest, ListPackageRequest};

/// How long connecting to a catalog server may take: a live server on the cluster network
/// answers in milliseconds, a dead one should not use up a request's whole budget.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The error with its causes, as tonic's transport errors say little on their own.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut last = text.clone();
    let mut source = e.source();
    while let Some(s) = source {
        // Layers that wrap an error often repeat their inner one's words.
        let said = s.to_string();
        if said != last {
            text.push_str(": ");
            text.push_str(&said);
        }
        last = said;
        source = s.source();
    }
    text
}

/// How much of its byte cap one catalog read has used.
struct Tally<'a> {
    address: &'a str,
    limits: &'a RemoteLimits,
    held: u64,
}

impl Tally<'_> {
    /// Counts a received message; an error once the catalog exceeds its cap.
    fn add<M: Message>(&mut self, m: &M) -> Result<(), Error> {
        self.held += (m.encoded_len() + std::mem::size_of::<M>()) as u64;
        if self.held > self.limits.max_catalog_bytes {
            return Err(Error::Unavailable(format!(
                "catalog server {} sent more than the {} bytes allowed for one catalog \
                 (--resolution-max-catalog-bytes)",
                self.address, self.limits.max_catalog_bytes
            )));
        }
        Ok(())
    }

    fn failed(&self, what: &str, e: tonic::Status) -> Error {
        if e.code() == tonic::Code::OutOfRange {
            // What tonic's decoder says of a message over max_decoding_message_size.
            return Error::Unavailable(format!(
                "catalog server {} sent a {what} message larger than the {} bytes allowed \
                 (--resolution-max-catalog-message)",
                self.address, self.limits.max_message_bytes
            ));
        }
        Error::Unavailable(format!(
            "catalog server {} failed {what}: {} ({:?})",
            self.address,
            e.message(),
            e.code()
        ))
    }
}

pub(super) async fn fetch<C: Send + 'static>(
    address: &str,
    limits: &RemoteLimits,
    make: MakeCatalog<C>,
) -> Result<Cached<C>, Error> {
    let unreachable = |e: &dyn std::error::Error| {
        Error::Unavailable(format!(
            "catalog server {address} cannot be reached: {}",
            chain(e)
        ))
    };
    let endpoint = Endpoint::from_shared(format!("http://{address}"))
        .map_err(|e| Error::Invalid(format!("catalog address {address:?} is invalid: {e}")))?
        .connect_timeout(CONNECT_TIMEOUT);
    let channel = endpoint.connect().await.map_err(|e| unreachable(&e))?;
    let mut client =
        RegistryClient::new(channel.clone()).max_decoding_message_size(limits.max_message_bytes);
    let connected = Arc::new(AtomicBool::new(true));
    watch_connection(channel.clone(), connected.clone());

    let mut tally = Tally {
        address,
        limits,
        held: 0,
    };
    let mut names = client
        .list_packages(ListPackageRequest {})
        .await
        .map_err(|e| tally.failed("ListPackages", e))?
        .into_inner();
    let mut packages = Vec::new();
    while let Some(p) = names
        .message()
        .await
        .map_err(|e| tally.failed("ListPackages", e))?
    {
        tally.add(&p)?;
        let package = client
            .get_package(GetPackageRequest { name: p.name })
            .await
            .map_err(|e| tally.failed("GetPackage", e))?
            .into_inner();
        tally.add(&package)?;
        packages.push(package);
    }
    let mut stream = client
        .list_bundles(ListBundlesRequest {})
        .await
        .map_err(|e| tally.failed("ListBundles", e))?
        .into_inner();
    let mut bundles = Vec::new();
    while let Some(b) = stream
        .message()
        .await
        .map_err(|e| tally.failed("ListBundles", e))?
    {
        tally.add(&b)?;
        bundles.push(b);
    }
    // Converting a catalog of hundreds of MiB is CPU work: off the runtime's workers.
    let manifests = RemoteManifests {
        address: address.to_owned(),
        client,
        budget: limits.budget,
        runtime: tokio::runtime::Handle::current(),
    };
    let catalog = tokio::task::spawn_blocking(move || make(from_api(packages, bundles), manifests))
        .await
        .map_err(|e| Error::Unavailable(format!("reading catalog server {address} failed: {e}")))?;
    Ok(Cached {
        catalog,
        fetched: Instant::now(),
        connected,
    })
}

/// Holds a health Watch open on the connection and clears `connected` when it ends, so
/// that the next resolution reconnects and reads the catalog again. A server without
/// Watch (opm answers UNIMPLEMENTED) leaves the flag set: its entry lives until the TTL.
fn watch_connection(channel: Channel, connected: Arc<AtomicBool>) {
    tokio::spawn(async move {
        let mut health = HealthClient::new(channel);
        let stream = health
            .watch(HealthCheckRequest {
                service: String::new(),
            })
            .await;
        let mut stream = match stream {
            Ok(s) => s.into_inner(),
            Err(e) if e.code() == tonic::Code::Unimplemented => return,
            Err(_) => {
                connected.store(false, Ordering::Release);
                return;
            }
        };
        while let Ok(Some(_)) = stream.message().await {}
        connected.store(false, Ordering::Release);
    });
}

/// The manifests of a catalog read from another server, asked for a bundle at a time over
/// the connection the catalog was read on.
pub struct RemoteManifests {
    address: String,
    client: RegistryClient<Channel>,
    budget: Duration,
    runtime: tokio::runtime::Handle,
}

impl RemoteManifests {
    /// A bundle's manifests as JSON texts (GetBundle). Blocking: called from a blocking
    /// thread (a resolution runs on one), never from the runtime.
    pub fn objects(
        &self,
        package: &str,
        channel: &str,
        bundle: &str,
    ) -> Result<Vec<String>, Error> {
        let mut client = self.client.clone();
        let request = GetBundleRequest {
            pkg_name: package.to_owned(),
            channel_name: channel.to_owned(),
            csv_name: bundle.to_owned(),
        };
        let call = async { tokio::time::timeout(self.budget, client.get_bundle(request)).await };
        match self.runtime.block_on(call) {
            Err(_) => Err(out_of_time(&self.address, self.budget)),
            Ok(Err(e)) => Err(Error::Unavailable(format!(
                "catalog server {} failed GetBundle: {}",
                self.address,
                e.message()
            ))),
            Ok(Ok(r)) => Ok(objects_of(r.into_inner())),
        }
    }
}
