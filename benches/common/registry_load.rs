//! The gRPC load of the soak benchmark, shared with the benchmarks that measure the gRPC API
//! beside other work: what a catalog holds that requests can name, and callers that mix every
//! RPC of `api.Registry` (5% ListBundles) for a while, timing each call.
#![allow(dead_code)]

use api::registry_client::RegistryClient;
use api::{
    GetAllProvidersRequest, GetAllReplacementsRequest, GetBundleInChannelRequest, GetBundleRequest,
    GetLatestProvidersRequest, GetPackageRequest, GetReplacementRequest, ListBundlesRequest,
    ListPackageRequest,
};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tonic::transport::Channel;

pub type Client = RegistryClient<Channel>;

/// What the catalog holds that requests can name, each known to have an answer.
pub struct Keys {
    pub packages: Vec<String>,
    pub bundles: Vec<(String, String, String)>,
    /// (package, channel, replaced csv)
    pub replaced: Vec<(String, String, String)>,
    pub gvks: Vec<(String, String, String)>,
    /// The GVKs some channel head provides: the others have no latest provider, and asking
    /// for one is an error by design.
    pub latest_gvks: Vec<(String, String, String)>,
}

pub async fn keys(client: &mut Client) -> Keys {
    let mut stream = client
        .list_bundles(ListBundlesRequest {})
        .await
        .unwrap()
        .into_inner();
    let mut keys = Keys {
        packages: Vec::new(),
        bundles: Vec::new(),
        replaced: Vec::new(),
        gvks: Vec::new(),
        latest_gvks: Vec::new(),
    };
    while let Some(b) = stream.message().await.unwrap() {
        if !b.replaces.is_empty() {
            keys.replaced.push((
                b.package_name.clone(),
                b.channel_name.clone(),
                b.replaces.clone(),
            ));
        }
        for api in &b.provided_apis {
            keys.gvks
                .push((api.group.clone(), api.version.clone(), api.kind.clone()));
        }
        keys.bundles
            .push((b.package_name, b.channel_name, b.csv_name));
    }
    let mut packages = client
        .list_packages(ListPackageRequest {})
        .await
        .unwrap()
        .into_inner();
    while let Some(p) = packages.message().await.unwrap() {
        keys.packages.push(p.name);
    }
    keys.gvks.sort();
    keys.gvks.dedup();
    for (group, version, kind) in &keys.gvks {
        let latest = client
            .get_latest_channel_entries_that_provide(GetLatestProvidersRequest {
                group: group.clone(),
                version: version.clone(),
                kind: kind.clone(),
                plural: String::new(),
            })
            .await;
        if latest.is_ok() {
            keys.latest_gvks
                .push((group.clone(), version.clone(), kind.clone()));
        }
    }
    keys
}

/// One call, the `n`th of its caller: 5% ListBundles, the rest spread over the other RPCs.
/// Returns whether it was a ListBundles.
#[allow(deprecated)] // GetBundleForChannel is deprecated upstream, and still served.
pub async fn call(client: &mut Client, keys: &Keys, n: usize) -> Result<bool, tonic::Status> {
    let pick = |len: usize| (n.wrapping_mul(2654435761)) % len.max(1);
    if n.is_multiple_of(20) {
        let mut s = client
            .list_bundles(ListBundlesRequest {})
            .await?
            .into_inner();
        while s.message().await?.is_some() {}
        return Ok(true);
    }
    match n % 8 {
        0 => {
            let mut s = client
                .list_packages(ListPackageRequest {})
                .await?
                .into_inner();
            while s.message().await?.is_some() {}
        }
        1 => {
            let name = keys.packages[pick(keys.packages.len())].clone();
            client.get_package(GetPackageRequest { name }).await?;
        }
        2 | 3 => {
            let (p, c, b) = keys.bundles[pick(keys.bundles.len())].clone();
            client
                .get_bundle(GetBundleRequest {
                    pkg_name: p,
                    channel_name: c,
                    csv_name: b,
                })
                .await?;
        }
        4 => {
            let (p, c, _) = keys.bundles[pick(keys.bundles.len())].clone();
            client
                .get_bundle_for_channel(GetBundleInChannelRequest {
                    pkg_name: p,
                    channel_name: c,
                })
                .await?;
        }
        5 => {
            let (p, c, replaced) = keys.replaced[pick(keys.replaced.len())].clone();
            if n % 16 < 8 {
                let mut s = client
                    .get_channel_entries_that_replace(GetAllReplacementsRequest {
                        csv_name: replaced,
                    })
                    .await?
                    .into_inner();
                while s.message().await?.is_some() {}
            } else {
                client
                    .get_bundle_that_replaces(GetReplacementRequest {
                        csv_name: replaced,
                        pkg_name: p,
                        channel_name: c,
                    })
                    .await?;
            }
        }
        _ => {
            let latest = n % 16 >= 8;
            let gvks = if latest {
                &keys.latest_gvks
            } else {
                &keys.gvks
            };
            let (group, version, kind) = gvks[pick(gvks.len())].clone();
            let mut s = if !latest {
                client
                    .get_channel_entries_that_provide(GetAllProvidersRequest {
                        group,
                        version,
                        kind,
                        plural: String::new(),
                    })
                    .await?
                    .into_inner()
            } else {
                client
                    .get_latest_channel_entries_that_provide(GetLatestProvidersRequest {
                        group,
                        version,
                        kind,
                        plural: String::new(),
                    })
                    .await?
                    .into_inner()
            };
            while s.message().await?.is_some() {}
        }
    }
    Ok(false)
}

pub struct Phase {
    pub calls: usize,
    pub lists: usize,
    pub errors: Vec<String>,
    pub latencies: Vec<Duration>,
    pub elapsed: f64,
}

pub async fn phase(clients: &[Client], keys: Arc<Keys>, callers: usize, seconds: u64) -> Phase {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..callers {
        let mut client = clients[c % clients.len()].clone();
        let keys = keys.clone();
        tasks.spawn(async move {
            let (mut latencies, mut errors, mut lists) = (Vec::new(), Vec::new(), 0);
            let mut n = c * 7919;
            while Instant::now() < deadline {
                let t = Instant::now();
                match call(&mut client, &keys, n).await {
                    Ok(true) => lists += 1,
                    Ok(false) => latencies.push(t.elapsed()),
                    Err(e) => errors.push(format!("{:?}: {}", e.code(), e.message())),
                }
                n += 1;
            }
            (latencies, errors, lists)
        });
    }
    let mut phase = Phase {
        calls: 0,
        lists: 0,
        errors: Vec::new(),
        latencies: Vec::new(),
        elapsed: 0.0,
    };
    for (latencies, errors, lists) in tasks.join_all().await {
        phase.calls += latencies.len() + errors.len() + lists;
        phase.lists += lists;
        phase.latencies.extend(latencies);
        phase.errors.extend(errors);
    }
    phase.elapsed = started.elapsed().as_secs_f64();
    phase.latencies.sort();
    phase
}
