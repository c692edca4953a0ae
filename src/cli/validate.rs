use super::Format;
use catalog::decode::describe_load_errors;
use catalog::substitutes::SubstitutesFor;
use catalog::{self, model::Model};
use clap::Args;
use std::path::PathBuf;

/// Validate a file-based catalog: every problem is listed, with its file and object.
#[derive(Args)]
pub struct ValidateArgs {
    /// The FBC root directory.
    directory: PathBuf,
    /// Print the result as a JSON or YAML document `{passed, error: {message}}` instead of logging it.
    #[arg(short, long, value_enum)]
    output: Option<Format>,
    #[command(flatten)]
    read_limits: super::ReadLimitArgs,
}

pub fn run(args: ValidateArgs) -> i32 {
    let result = catalog::walk::load_dir(&args.directory, args.read_limits.limits())
        .map_err(|errors| describe_load_errors(&errors))
        .and_then(|dc| {
            // opm v1.73 accepts a catalog whose substitutesFor links form a cycle: a warning.
            for cycle in SubstitutesFor::of_bundles(&dc.bundles).cycles() {
                tracing::warn!(package = %cycle.package, "{cycle}");
            }
            Model::build(dc).map(drop).map_err(|e| e.to_string())
        });
    match args.output {
        None => match result {
            Ok(()) => 0,
            Err(message) => {
                eprintln!("{message}");
                1
            }
        },
        Some(format) => {
            let mut report = serde_json::json!({ "passed": result.is_ok() });
            if let Err(message) = &result {
                report["error"] = serde_json::json!({ "message": message });
            }
            let text = match format {
                Format::Json => serde_json::to_string_pretty(&report).unwrap_or_default(),
                Format::Yaml => serde_yaml::to_string(&report).unwrap_or_default(),
            };
            println!("{}", text.trim_end());
            i32::from(result.is_err())
        }
    }
}
