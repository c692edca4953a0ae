//! Why a template could not be rendered or converted, or a graph drawn: the input's fault,
//! or a bundle the template names that the caller could not render.

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The template, the FBC stream or the catalog is not what it should be, or names what
    /// it does not hold (upstream's words).
    #[error("{0}")]
    Invalid(String),
    /// A bundle reference of the template that could not be rendered into one bundle (the
    /// renderer's message, or how many bundles it held).
    #[error("{0}")]
    Bundle(String),
    /// The converted template could not be encoded.
    #[error("{0}")]
    Encode(String),
}
