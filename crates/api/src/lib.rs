//! The generated `api` package: message types and clients, plus the server traits.
//!
//! The server traits send `api.Bundle` and `google.protobuf.Struct` as [`RawMessage`]: bytes
//! already encoded by the store, so serving a bundle never decodes or re-encodes it.
#![allow(clippy::all, missing_docs)]

include!(concat!(env!("OUT_DIR"), "/client/api.rs"));

pub mod server {
    include!(concat!(env!("OUT_DIR"), "/server/api.rs"));
}

/// `olmregistry.resolution.v1`: the resolution service's messages, client and server.
pub mod resolution {
    include!(concat!(
        env!("OUT_DIR"),
        "/client/olmregistry.resolution.v1.rs"
    ));

    pub mod server {
        include!(concat!(
            env!("OUT_DIR"),
            "/server/olmregistry.resolution.v1.rs"
        ));
    }
}

/// The encoded descriptor set of `proto/` (both packages), served by reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/registry_descriptor.bin"));

mod raw;
pub use raw::RawMessage;
