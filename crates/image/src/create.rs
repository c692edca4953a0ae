//! Building images without a container engine: gzip tar layers made from directories, files
//! and links, a config carrying the labels (and, for an image that runs, its command), an OCI
//! manifest. Layers are reproducible (sorted entries, zero times and owners), so building the
//! same content twice gives the same digests — and the same layer in two images is stored
//! once by a registry.
use super::error::{Error, ErrorKind};
use super::layout::digest_of;
use flate2::Compression;
use flate2::write::GzEncoder;
use oci_client::manifest::{
    IMAGE_CONFIG_MEDIA_TYPE, IMAGE_LAYER_GZIP_MEDIA_TYPE, OCI_IMAGE_MEDIA_TYPE,
};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// An image ready to be pushed or written to a layout.
pub struct BuiltImage {
    pub config: Vec<u8>,
    /// The layers of the base image (none without one), below ours.
    pub base_layers: Vec<BaseLayer>,
    /// Our compressed layers, bottom first.
    pub layers: Vec<Vec<u8>>,
    pub manifest: Vec<u8>,
}

/// An image to build on (`--base-image`): its config as it is, and its layers as pulled.
pub struct BaseImage {
    pub config: serde_json::Value,
    pub layers: Vec<BaseLayer>,
}

impl BaseImage {
    /// Where `/dir` (e.g. `/bin`) really is in the base: the target of the link the topmost
    /// layer that names it makes (`/usr/bin` in Debian, Fedora and UBI images), or `/dir`
    /// itself. A layer of ours must put files there, not under `/dir`: laid over a link, a
    /// directory of a higher layer hides it (and every file of the base behind it).
    pub fn real_dir(&self, dir: &str) -> Result<String, Error> {
        let name = dir.trim_matches('/');
        let mut found = None;
        for layer in &self.layers {
            let file = std::fs::File::open(&layer.path).map_err(|e| io(layer.path.display(), e))?;
            let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
            let entries = tar.entries().map_err(|e| io(&layer.digest, e))?;
            for entry in entries {
                let entry = entry.map_err(|e| io(&layer.digest, e))?;
                let path = entry.path().map_err(|e| io(&layer.digest, e))?;
                if path
                    .to_string_lossy()
                    .trim_start_matches("./")
                    .trim_end_matches('/')
                    != name
                {
                    continue;
                }
                found = match entry.link_name().map_err(|e| io(&layer.digest, e))? {
                    Some(target) if entry.header().entry_type().is_symlink() => {
                        let target = target.to_string_lossy().into_owned();
                        Some(match target.strip_prefix('/') {
                            Some(absolute) => format!("/{absolute}"),
                            None => format!("/{target}"),
                        })
                    }
                    _ => None,
                };
            }
        }
        Ok(found.unwrap_or_else(|| format!("/{name}")))
    }
}

/// One layer of a base image, in the local blob cache.
pub struct BaseLayer {
    pub media_type: String,
    pub digest: String,
    pub size: i64,
    pub path: PathBuf,
}

impl BuiltImage {
    #[cfg(test)]
    fn manifest_digest(&self) -> String {
        digest_of(&self.manifest)
    }
}

/// What an image runs, and as whom: the parts of an OCI image config beyond its labels.
#[derive(Clone, Debug, Default)]
pub struct RunConfig {
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    /// `NAME=VALUE` entries.
    pub env: Vec<String>,
    /// `UID[:GID]`, or empty for the runtime's default.
    pub user: String,
    /// `PORT/PROTO` entries, e.g. `50051/tcp`.
    pub exposed_ports: Vec<String>,
}

/// One compressed layer and the digest of its uncompressed tar (the config's `diff_id`).
pub struct Layer {
    pub blob: Vec<u8>,
    pub diff_id: String,
}

/// Builds one layer, entry by entry. Owners are root and times zero, so the content alone
/// decides the digest; the caller adds a directory before what it holds.
pub struct LayerBuilder {
    tar: tar::Builder<Vec<u8>>,
}

impl Default for LayerBuilder {
    fn default() -> Self {
        let mut tar = tar::Builder::new(Vec::new());
        tar.follow_symlinks(false);
        LayerBuilder { tar }
    }
}

impl LayerBuilder {
    /// A directory at `path` (absolute in the image) with `mode` (e.g. 0o1777 for `/tmp`).
    pub fn dir(&mut self, path: &str, mode: u32) -> Result<(), Error> {
        let mut header = header(tar::EntryType::Directory, mode, 0);
        let name = format!("{}/", path.trim_matches('/'));
        self.tar
            .append_data(&mut header, &name, std::io::empty())
            .map_err(|e| io(format_args!("adding {path} to the layer"), e))
    }

    /// A regular file at `path` holding `data`.
    pub fn file(&mut self, path: &str, data: &[u8], mode: u32) -> Result<(), Error> {
        let mut header = header(tar::EntryType::Regular, mode, data.len() as u64);
        self.tar
            .append_data(&mut header, path.trim_start_matches('/'), data)
            .map_err(|e| io(format_args!("adding {path} to the layer"), e))
    }

    /// A symbolic link at `path` pointing to `target`.
    pub fn symlink(&mut self, path: &str, target: &str) -> Result<(), Error> {
        let mut header = header(tar::EntryType::Symlink, 0o777, 0);
        self.tar
            .append_link(&mut header, path.trim_start_matches('/'), target)
            .map_err(|e| io(format_args!("adding {path} to the layer"), e))
    }

    /// The directory `source` and everything under it at `target`: directories 0755, files
    /// 0644 (what they hold is data), symbolic links followed.
    pub fn tree(&mut self, source: &Path, target: &str) -> Result<(), Error> {
        append_dir(&mut self.tar, source, target.trim_matches('/'))
    }

    /// The finished layer, compressed.
    pub fn finish(self) -> Result<Layer, Error> {
        let tar = self
            .tar
            .into_inner()
            .map_err(|e| io("building the layer", e))?;
        let diff_id = format!("sha256:{:x}", Sha256::digest(&tar));
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(&tar)
            .map_err(|e| io("compressing the layer", e))?;
        let blob = gz.finish().map_err(|e| io("compressing the layer", e))?;
        Ok(Layer { blob, diff_id })
    }
}

fn header(kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_size(size);
    header.set_mtime(0);
    header
}

/// Builds an image whose one layer holds each `(source directory, path in the image)`.
pub fn build_image(
    contents: &[(&Path, &str)],
    labels: &BTreeMap<String, String>,
) -> Result<BuiltImage, Error> {
    let mut layer = LayerBuilder::default();
    for (source, target) in contents {
        layer.tree(source, target)?;
    }
    Ok(assemble(
        None,
        vec![layer.finish()?],
        labels,
        &RunConfig::default(),
    ))
}

/// The image made of `layers` (bottom first) on `base` (if any), with `labels` and what it
/// runs. On a base, its config is kept and ours laid over it: labels and exposed ports are
/// added, the entrypoint and command replaced, an environment variable or user the base sets
/// is left as the base has it (the base was chosen for them).
pub fn assemble(
    base: Option<BaseImage>,
    layers: Vec<Layer>,
    labels: &BTreeMap<String, String>,
    run: &RunConfig,
) -> BuiltImage {
    let (mut whole, base_layers) = match base {
        Some(b) => (b.config, b.layers),
        None => (json!({"architecture": "amd64", "os": "linux"}), Vec::new()),
    };
    let mut config = whole["config"].as_object().cloned().unwrap_or_default();
    let mut all_labels = config
        .get("Labels")
        .and_then(|l| l.as_object().cloned())
        .unwrap_or_default();
    all_labels.extend(labels.iter().map(|(k, v)| (k.clone(), json!(v))));
    config.insert("Labels".into(), all_labels.into());
    let base_env: Vec<String> = config
        .get("Env")
        .and_then(|e| serde_json::from_value(e.clone()).ok())
        .unwrap_or_default();
    let name = |e: &str| e.split('=').next().unwrap_or_default().to_owned();
    let mut env = base_env.clone();
    env.extend(
        run.env
            .iter()
            .filter(|e| !base_env.iter().any(|b| name(b) == name(e)))
            .cloned(),
    );
    let run = RunConfig {
        env,
        user: match config.get("User").and_then(|u| u.as_str()) {
            Some(user) if !user.is_empty() => user.to_owned(),
            _ => run.user.clone(),
        },
        ..run.clone()
    };
    let mut ports = config
        .get("ExposedPorts")
        .and_then(|p| p.as_object().cloned())
        .unwrap_or_default();
    ports.extend(run.exposed_ports.iter().map(|p| (p.clone(), json!({}))));
    if !run.entrypoint.is_empty() {
        config.insert("Entrypoint".into(), json!(run.entrypoint));
    }
    if !run.cmd.is_empty() {
        config.insert("Cmd".into(), json!(run.cmd));
    }
    if !run.env.is_empty() {
        config.insert("Env".into(), json!(run.env));
    }
    if !run.user.is_empty() {
        config.insert("User".into(), json!(run.user));
    }
    if !ports.is_empty() {
        config.insert("ExposedPorts".into(), ports.into());
    }
    let created_by = concat!("olm-registry ", env!("CARGO_PKG_VERSION"));
    let list = |v: &serde_json::Value| v.as_array().cloned().unwrap_or_default();
    let mut diff_ids = list(&whole["rootfs"]["diff_ids"]);
    diff_ids.extend(layers.iter().map(|l| json!(l.diff_id)));
    let mut history = list(&whole["history"]);
    history.extend(layers.iter().map(|_| json!({"created_by": created_by})));
    whole["config"] = config.into();
    whole["rootfs"] = json!({"type": "layers", "diff_ids": diff_ids});
    whole["history"] = history.into();
    let config = whole.to_string().into_bytes();
    let descriptors: Vec<_> = base_layers
        .iter()
        .map(|l| json!({"mediaType": l.media_type, "digest": l.digest, "size": l.size}))
        .chain(layers.iter().map(|l| {
            json!({"mediaType": IMAGE_LAYER_GZIP_MEDIA_TYPE, "digest": digest_of(&l.blob), "size": l.blob.len()})
        }))
        .collect();
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": OCI_IMAGE_MEDIA_TYPE,
        "config": {"mediaType": IMAGE_CONFIG_MEDIA_TYPE, "digest": digest_of(&config), "size": config.len()},
        "layers": descriptors,
    })
    .to_string()
    .into_bytes();
    BuiltImage {
        config,
        base_layers,
        layers: layers.into_iter().map(|l| l.blob).collect(),
        manifest,
    }
}

/// Reading the contents or writing the layer failed; `what` says which.
fn io(what: impl std::fmt::Display, e: std::io::Error) -> Error {
    Error::new(ErrorKind::Io, format!("{what}: {e}"))
}

fn append_dir(tar: &mut tar::Builder<Vec<u8>>, dir: &Path, prefix: &str) -> Result<(), Error> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| io(dir.display(), e))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Directory);
    header.set_mode(0o755);
    header.set_size(0);
    header.set_mtime(0);
    if !prefix.is_empty() {
        tar.append_data(&mut header, format!("{prefix}/"), std::io::empty())
            .map_err(|e| io(dir.display(), e))?;
    }
    for entry in entries {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let in_image = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        let meta = std::fs::metadata(&path).map_err(|e| io(path.display(), e))?;
        if meta.is_dir() {
            append_dir(tar, &path, &in_image)?;
        } else {
            let data = std::fs::read(&path).map_err(|e| io(path.display(), e))?;
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(tar::EntryType::Regular);
            header.set_mode(0o644);
            header.set_size(data.len() as u64);
            header.set_mtime(0);
            tar.append_data(&mut header, &in_image, data.as_slice())
                .map_err(|e| io(path.display(), e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_content_builds_the_same_image() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("pkg")).unwrap();
        std::fs::write(dir.path().join("pkg/catalog.json"), "{}").unwrap();
        let labels = BTreeMap::from([("k".to_string(), "v".to_string())]);
        let a = build_image(&[(dir.path(), "/configs")], &labels).unwrap();
        let b = build_image(&[(dir.path(), "/configs")], &labels).unwrap();
        assert_eq!(a.manifest_digest(), b.manifest_digest());
        let config: serde_json::Value = serde_json::from_slice(&a.config).unwrap();
        assert_eq!(config["config"]["Labels"]["k"], "v");

        let out = tempfile::tempdir().unwrap();
        super::super::unpack::unpack_layer(
            a.layers[0].as_slice(),
            out.path(),
            Default::default(),
            &mut Default::default(),
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(out.path().join("configs/pkg/catalog.json")).unwrap(),
            "{}"
        );
    }
}
