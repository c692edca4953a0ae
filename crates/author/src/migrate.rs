//! `migrate`: a catalog on disk of any kind converted to a new file-based catalog directory
//! in the one-file-per-package layout, written completely or not at all.
use super::layout::{self, FileFormat, LayoutError};
use catalog::file::ReadLimits;
use source::render::{MigrationLevel, render_local};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error("output dir {:?}: {source}", path.display().to_string())]
    OutputDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("output dir {:?} must be empty", .0.display().to_string())]
    NotEmpty(PathBuf),
    #[error(transparent)]
    Load(#[from] source::Error),
    #[error(transparent)]
    Layout(#[from] LayoutError),
}

/// Converts `reference` (FBC, package-manifest tree, index.db or bundle directory),
/// migrated to `level`, into the directory `out`, which must be empty or absent.
pub fn migrate_catalog(
    reference: &str,
    out: &Path,
    format: FileFormat,
    level: MigrationLevel,
) -> Result<(), MigrateError> {
    let out_is_empty = match std::fs::read_dir(out) {
        Ok(mut entries) => entries.next().is_none(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(source) => {
            let path = out.to_owned();
            return Err(MigrateError::OutputDir { path, source });
        }
    };
    if !out_is_empty {
        return Err(MigrateError::NotEmpty(out.to_owned()));
    }
    tracing::info!("rendering catalog {reference:?} as file-based catalog");
    // `migrate` has no --max-file-size: the catalog is read within the default cap.
    let dc = render_local(reference, ReadLimits::DEFAULT, level)?;
    layout::write_tree(dc, out, format)?;
    tracing::info!(
        "wrote rendered file-based catalog to {:?}",
        out.display().to_string()
    );
    Ok(())
}
