//! This server's own catalog in the resolver's model: the same rows ListPackages,
//! GetPackage and ListBundles serve, read from the index and converted once per loaded
//! index; manifests are read from the index when the safety checks or the install plan ask.
use std::sync::Arc;

use prost::Message;

use resolve::service::{Catalog, Error, ManifestSource};
use source::remote::{from_api, objects_of};
use store::{QueryError, Store, query};

fn decode<M: Message + Default>(bytes: &[u8]) -> Result<M, QueryError> {
    M::decode(bytes).map_err(|e| QueryError::Storage(format!("decoding a stored message: {e}")))
}

/// This server's catalog, read from its index. Blocking. Whatever fails here is the index's
/// fault, not the request's.
pub(crate) fn from_store(store: Arc<Store>) -> Result<Catalog, Error> {
    let content = store
        .with_conn(|conn| {
            let packages = query::list_packages(conn)?
                .iter()
                .map(|name| decode(&query::get_package(conn, name)?))
                .collect::<Result<Vec<api::Package>, _>>()?;
            let mut bundles = Vec::new();
            let mut failure = None;
            query::list_bundles(conn, i64::MIN, |_, bytes| {
                match decode::<api::Bundle>(&bytes) {
                    Ok(b) => {
                        bundles.push(b);
                        true
                    }
                    Err(e) => {
                        failure = Some(e);
                        false
                    }
                }
            })?;
            match failure {
                Some(e) => Err(e),
                None => Ok(from_api(packages, bundles)),
            }
        })
        .map_err(|(QueryError::NotFound(m) | QueryError::Storage(m))| Error::Internal(m))?;
    Ok(Catalog::new(
        Arc::new(content),
        Some(Arc::new(StoreManifests(store))),
    ))
}

struct StoreManifests(Arc<Store>);

impl ManifestSource for StoreManifests {
    fn objects(&self, package: &str, channel: &str, bundle: &str) -> Result<Vec<String>, Error> {
        self.0
            .with_conn(|conn| decode(&query::get_bundle(conn, package, channel, bundle)?))
            .map(objects_of)
            .map_err(|e| match e {
                QueryError::NotFound(m) => Error::Unresolvable(m),
                QueryError::Storage(m) => Error::Internal(m),
            })
    }
}
