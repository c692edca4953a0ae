// Compiles proto/ (the `api` package and `olmregistry.resolution.v1`) with protox (no
// system protoc needed) into two generated modules:
// `client` holds every message type and the clients; `server` holds only the service
// traits, wired to those message types except the large responses (api.Bundle and
// google.protobuf.Struct), which the server sends as bytes encoded once at ingest time.
use std::{env, fs, path::PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=proto");
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    let fds =
        protox::compile(["registry.proto", "resolution.proto"], ["proto"]).expect("compile proto/");
    fs::write(
        out.join("registry_descriptor.bin"),
        prost::Message::encode_to_vec(&fds),
    )
    .expect("write descriptor set");

    let client_dir = out.join("client");
    let server_dir = out.join("server");
    fs::create_dir_all(&client_dir).unwrap();
    fs::create_dir_all(&server_dir).unwrap();

    tonic_prost_build::configure()
        .build_server(false)
        .build_client(true)
        .out_dir(&client_dir)
        .compile_fds(fds.clone())
        .expect("generate messages and clients");

    tonic_prost_build::configure()
        .build_server(true)
        .build_client(false)
        .out_dir(&server_dir)
        .extern_path(".api", "crate")
        .extern_path(".olmregistry.resolution.v1", "crate::resolution")
        .extern_path(".api.Bundle", "crate::RawMessage")
        .extern_path(".google.protobuf.Struct", "crate::RawMessage")
        .compile_fds(fds)
        .expect("generate servers");
}
