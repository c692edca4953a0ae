//! Why a mirror run stopped, by what failed: the flags, the ImageSetConfiguration, an image
//! or catalog it names, a filter, the copy, or local files. Every message names what it is
//! about.
use super::filter::FilterError;
use catalog::decode::LoadError;
use std::fmt::Display;
use std::io;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The flags ask for what cannot be done (`--to`, `--from`, `--config`).
    #[error("{0}")]
    Usage(String),
    /// The ImageSetConfiguration is not YAML of its shape.
    #[error("{file}: {source}")]
    ConfigSyntax {
        file: String,
        source: serde_yaml::Error,
    },
    /// The ImageSetConfiguration asks for what cannot be done: every problem, with its path
    /// in the file.
    #[error("{file}: invalid {kind}:{}", indented(problems))]
    Config {
        file: String,
        /// ImageSetConfiguration or DeleteImageSetConfiguration.
        kind: &'static str,
        problems: Vec<String>,
    },
    /// An image the configuration or a catalog names, written as no registry reference.
    #[error("invalid image reference {image:?}: {source}")]
    Reference {
        image: String,
        source: oci_client::ParseError,
    },
    #[error(transparent)]
    Image(#[from] image::Error),
    #[error(transparent)]
    Source(#[from] source::Error),
    /// A catalog whose documents cannot be read: every one that cannot.
    #[error("catalog {catalog}:{}", indented(errors))]
    Catalog {
        catalog: String,
        errors: Vec<LoadError>,
    },
    #[error(transparent)]
    Filter(#[from] FilterError),
    /// Images whose tags could not be resolved to digests, one line each.
    #[error("{}", .0.join("\n"))]
    Unresolved(Vec<String>),
    /// A signature or referrer that claims another manifest than the one it is attached to
    /// (found while planning, so nothing was copied).
    #[error(
        "{attachment} is attached to {subject} but its payload names {claimed}: a signature \
         or referrer that does not match its image; nothing was copied"
    )]
    Mismatch {
        attachment: String,
        subject: String,
        claimed: String,
    },
    /// Images that were not copied; the others were.
    #[error(
        "{} of {total} images were not mirrored (a rerun copies only what is missing):{}",
        failures.len(),
        indented(failures)
    )]
    Incomplete { total: usize, failures: Vec<String> },
    /// Repositories a delete could not finish, one line each; the others were handled.
    #[error(
        "not everything planned was deleted (a rerun deletes what is left):{}",
        indented(.0)
    )]
    NotDeleted(Vec<String>),
    /// `--from` names a directory without the plan of a mirror to disk.
    #[error(
        "{}: {source} (is this a directory written by `mirror --to file://…`?)",
        path.display()
    )]
    NoPlan { path: PathBuf, source: io::Error },
    /// The plan of an archive cannot be read or written as JSON.
    #[error("{}: {source}", path.display())]
    Plan {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// A file of an archive to disk that cannot be used (a tar segment, the record of
    /// archives written, a manifest in the archive), and why.
    #[error("{}: {problem}", path.display())]
    Archive { path: PathBuf, problem: String },
    /// Segments of a tar archive that its directory lacks.
    #[error(
        "{}: archive {archive} has {total} segments, but {} missing (carry every mirror_*.tar of an archive together)",
        dir.display(),
        missing_names(missing)
    )]
    MissingSegments {
        dir: PathBuf,
        archive: String,
        total: u32,
        missing: Vec<String>,
    },
    #[error("writing YAML: {0}")]
    Yaml(serde_yaml::Error),
    /// Local files and directories; `what` names the file, or what it was for.
    #[error("{what}: {source}")]
    Io { what: String, source: io::Error },
    /// A task of the run panicked.
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),
}

impl Error {
    /// An I/O error about `what` (a path, or what the file was for).
    pub(crate) fn io(what: impl Display) -> impl FnOnce(io::Error) -> Error {
        move |source| Error::Io {
            what: what.to_string(),
            source,
        }
    }
}

/// Lines below a heading, each on its own line, indented.
fn indented(lines: &[impl Display]) -> String {
    lines.iter().map(|l| format!("\n  {l}")).collect()
}

fn missing_names(missing: &[String]) -> String {
    match missing {
        [one] => format!("{one} is"),
        many => format!("{} are", many.join(", ")),
    }
}
