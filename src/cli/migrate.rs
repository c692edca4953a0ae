use super::Format;
use author::layout::FileFormat;
use author::migrate::migrate_catalog;
use bundle::migrate::MigrationLevel;
use clap::Args;
use std::path::PathBuf;

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
    pub(crate) fn level(&self) -> Result<MigrationLevel, String> {
        MigrationLevel::from_flags(self.migrate_level.as_deref(), self.migrate)
    }
}

pub fn run(args: MigrateArgs) -> i32 {
    super::exit_code(run_migrate(&args))
}

fn run_migrate(args: &MigrateArgs) -> Result<(), String> {
    let level = args.migrations.level()?;
    let format = match args.output {
        Format::Json => FileFormat::Json,
        Format::Yaml => FileFormat::Yaml,
    };
    migrate_catalog(&args.reference, &args.output_dir, format, level).map_err(|e| e.to_string())
}
