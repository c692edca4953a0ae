//! Why a resolution has no answer at all (an unsatisfiable request is an answer, with its
//! explanation), by the kind a caller reports: the gRPC service turns each into its status
//! code, the command into its message.

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The request is malformed or names what cannot be read as it is written (a field, a
    /// catalog directory or image that is not a catalog).
    #[error("{0}")]
    InvalidRequest(String),
    /// A catalog the whole resolution needs cannot be read now (not loaded yet, its server
    /// or registry unreachable): another try later may succeed.
    #[error("{0}")]
    CatalogUnavailable(String),
    /// The catalogs or installed operators rule out an answer as OLM would (a channel that
    /// cannot be ordered, a malformed dependency property): the request is fine, the state
    /// it is resolved against is not.
    #[error("{0}")]
    Unresolvable(String),
    /// A fault of ours.
    #[error("{0}")]
    Internal(String),
}

impl Error {
    /// The same kind, its message prefixed with where it happened.
    pub fn context(self, what: &str) -> Error {
        self.reworded(format!("{what}: {self}"))
    }

    /// The same kind with another message (a caller's wording of this error).
    pub(crate) fn reworded(&self, message: String) -> Error {
        match self {
            Error::InvalidRequest(_) => Error::InvalidRequest(message),
            Error::CatalogUnavailable(_) => Error::CatalogUnavailable(message),
            Error::Unresolvable(_) => Error::Unresolvable(message),
            Error::Internal(_) => Error::Internal(message),
        }
    }
}
