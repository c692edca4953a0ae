use super::Format;
use bundle::migrate::{MigrationLevel, migrate};
use catalog::{self, DeclarativeConfig};
use clap::Args;
use source::disk::Local;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Convert a catalog to a file-based catalog directory, one `<package>/catalog.<ext>` per
/// package.
///
/// The input is an FBC directory, a legacy package-manifest tree, a legacy SQLite index
/// database or a bundle directory. The output directory must be empty or absent; it is
/// written completely or not at all.
#[derive(Args)]
pub struct MigrateArgs {
    /// The catalog to convert.
    reference: String,
    /// The directory to write the file-based catalog to.
    output_dir: PathBuf,
    #[arg(short, long, value_enum, default_value = "json")]
    output: Format,
    #[command(flatten)]
    migrations: MigrationFlags,
}

/// `--migrate-level` / `--migrate`, as render and migrate take them.
#[derive(Args)]
pub struct MigrationFlags {
    /// Run migrations up to and including this one: `none`, `bundle-object-to-csv-metadata`.
    #[arg(long, conflicts_with = "migrate")]
    migrate_level: Option<String>,
    /// Run all migrations.
    #[arg(long)]
    migrate: bool,
}

impl MigrationFlags {
    pub fn level(&self) -> Result<MigrationLevel, String> {
        MigrationLevel::from_flags(self.migrate_level.as_deref(), self.migrate)
    }
}

pub fn run(args: MigrateArgs) -> i32 {
    super::exit_code(run_migrate(&args))
}

fn run_migrate(args: &MigrateArgs) -> Result<(), String> {
    let level = args.migrations.level()?;
    let out = &args.output_dir;
    let out_is_empty = match std::fs::read_dir(out) {
        Ok(mut entries) => entries.next().is_none(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => return Err(format!("output dir {:?}: {e}", out.display().to_string())),
    };
    if !out_is_empty {
        return Err(format!(
            "output dir {:?} must be empty",
            out.display().to_string()
        ));
    }
    tracing::info!(
        "rendering catalog {:?} as file-based catalog",
        args.reference
    );
    let mut dc = Local::detect(&args.reference)
        .and_then(|local| local.load(None))
        .map_err(|e| e.to_string())?;
    migrate(&mut dc, level).map_err(|e| e.to_string())?;
    write_tree(dc, out, args.output)?;
    tracing::info!(
        "wrote rendered file-based catalog to {:?}",
        out.display().to_string()
    );
    Ok(())
}

/// Writes one file per package, plus `catalog.<ext>` at the top for documents that belong to
/// no package, into a scratch directory beside `out` that is renamed into place at the end.
fn write_tree(dc: DeclarativeConfig, out: &Path, format: Format) -> Result<(), String> {
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent).map_err(|e| format!("creating {}: {e}", parent.display()))?;
    let scratch = tempfile::Builder::new()
        .prefix(".migrate-")
        .tempdir_in(parent)
        .map_err(|e| format!("creating a scratch directory in {}: {e}", parent.display()))?;
    let ext = match format {
        Format::Json => "json",
        Format::Yaml => "yaml",
    };
    for (package, part) in split_by_package(dc) {
        let dir = if package.is_empty() {
            scratch.path().to_path_buf()
        } else {
            if package.contains(['/', '\\']) || package == "." || package == ".." {
                return Err(format!(
                    "package name {package:?} cannot be used as a directory name"
                ));
            }
            scratch.path().join(&package)
        };
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let file = dir.join(format!("catalog.{ext}"));
        let mut w = std::io::BufWriter::new(
            std::fs::File::create(&file)
                .map_err(|e| format!("creating {}: {e}", file.display()))?,
        );
        match format {
            Format::Json => catalog::write::write_json(&part, &mut w),
            Format::Yaml => catalog::write::write_yaml(&part, &mut w),
        }
        .and_then(|()| w.flush())
        .map_err(|e| format!("writing {}: {e}", file.display()))?;
    }
    // `out` is absent or an empty directory (checked before loading).
    if out.exists() {
        std::fs::remove_dir(out).map_err(|e| format!("replacing {}: {e}", out.display()))?;
    }
    let scratch = scratch.keep();
    std::fs::rename(&scratch, out).map_err(|e| {
        let _ = std::fs::remove_dir_all(&scratch);
        format!("moving the catalog into {}: {e}", out.display())
    })
}

/// The documents of each package (`""`: documents of no package).
fn split_by_package(dc: DeclarativeConfig) -> BTreeMap<String, DeclarativeConfig> {
    let mut parts: BTreeMap<String, DeclarativeConfig> = BTreeMap::new();
    for p in dc.packages {
        parts.entry(p.name.clone()).or_default().packages.push(p);
    }
    for c in dc.channels {
        parts.entry(c.package.clone()).or_default().channels.push(c);
    }
    for b in dc.bundles {
        parts.entry(b.package.clone()).or_default().bundles.push(b);
    }
    for d in dc.deprecations {
        parts
            .entry(d.package.clone())
            .or_default()
            .deprecations
            .push(d);
    }
    for m in dc.others {
        parts.entry(m.package.clone()).or_default().others.push(m);
    }
    parts
}
