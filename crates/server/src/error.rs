//! Why a server stopped with a failure, by its cause: the catalog that would not load, the
//! server's own set-up, or its transport.
use super::listen::ListenError;
use store::cache::CacheError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The index could not be opened or built, or read once open.
    #[error(transparent)]
    Catalog(#[from] CacheError),
    /// The catalog's input could not be acquired (an image that could not be pulled).
    #[error(transparent)]
    Source(#[from] source::Error),
    /// The reflection service could not be built from the descriptors.
    #[error("reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    /// The gRPC transport failed while serving.
    #[error(transparent)]
    Transport(#[from] tonic::transport::Error),
    /// A task of the server ended without its result (it panicked).
    #[error("{0}")]
    Task(String),
    /// An address could not be listened on.
    #[error(transparent)]
    Listen(#[from] ListenError),
    /// A catalog served beside the server's own (`--catalog NAME=REF`) could not be loaded.
    #[error("catalog {name:?}: {source}")]
    Named { name: String, source: Box<Error> },
    /// The stop came before the cache was built (`--cache-only`).
    #[error("stopped before the cache was built")]
    Stopped,
}
