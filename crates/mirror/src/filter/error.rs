//! Why a catalog cannot be filtered as asked: every problem of one `operators[]` entry, each
//! naming the package and channel it is about.

/// All problems found while filtering one catalog; nothing is returned when there is one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("filtering catalog {catalog:?}: {}", listed(problems))]
pub struct FilterError {
    /// The `operators[].catalog` reference the filter was applied to.
    pub(crate) catalog: String,
    pub problems: Vec<FilterProblem>,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FilterProblem {
    #[error("package {package:?} is not in the catalog")]
    UnknownPackage { package: String },
    #[error("package {package:?} has no channel {channel:?} (its channels: {})", available.join(", "))]
    UnknownChannel {
        package: String,
        channel: String,
        /// The package's channels in the catalog, sorted.
        available: Vec<String>,
    },
    #[error("package {package:?} is listed twice")]
    DuplicatePackage { package: String },
    /// `minVersion`/`maxVersion` on the package and on one of its channels.
    #[error(
        "package {package:?} channel {channel:?}: a channel minVersion/maxVersion cannot be combined with the package's"
    )]
    RangeOnBothLevels { package: String, channel: String },
    /// `minVersion`/`maxVersion` (of the package, or of one of its channels) together with
    /// `full: true`.
    #[error(
        "{}: minVersion/maxVersion cannot be combined with full: true",
        scope(package, channel)
    )]
    RangeWithFull {
        package: String,
        channel: Option<String>,
    },
    #[error("{at}: invalid {field} {value:?}: {reason}")]
    InvalidVersion {
        /// `package "p"` or `package "p" channel "c"`.
        at: String,
        field: &'static str,
        value: String,
        reason: String,
    },
    /// A channel-level range selects no bundle of that channel, or a package-level range
    /// selects no bundle of any channel.
    #[error(
        "{}: no bundle of {} is in {range}",
        scope(package, channel),
        if channel.is_some() { "the channel" } else { "any channel" }
    )]
    RangeKeepsNothing {
        package: String,
        channel: Option<String>,
        range: String,
    },
    /// The filter removed the package's default channel and no `defaultChannel` names another.
    #[error(
        "package {package:?}: the filter removes the default channel {default_channel:?}; set defaultChannel to one of the kept channels ({})",
        kept.join(", ")
    )]
    DefaultChannelFilteredOut {
        package: String,
        default_channel: String,
        kept: Vec<String>,
    },
    /// `defaultChannel` names a channel that is not in the filtered package.
    #[error(
        "package {package:?}: defaultChannel {requested:?} is not among the kept channels ({})",
        kept.join(", ")
    )]
    DefaultChannelNotKept {
        package: String,
        requested: String,
        kept: Vec<String>,
    },
    /// The source channel's graph has no single head, so there is nothing to follow.
    #[error("package {package:?} channel {channel:?} in the source catalog: {problem}")]
    ChannelGraph {
        package: String,
        channel: String,
        problem: String,
    },
    /// The filtered catalog does not validate (the source catalog was already invalid, or a
    /// range cut the graph where OLM cannot use it); the validator's report.
    #[error("the filtered catalog does not validate: {report}")]
    InvalidResult { report: String },
}

/// `package "p"`, or `package "p" channel "c"` for a problem about one of its channels.
fn scope(package: &str, channel: &Option<String>) -> String {
    match channel {
        Some(channel) => format!("package {package:?} channel {channel:?}"),
        None => format!("package {package:?}"),
    }
}

/// One problem on the heading's line; several counted, one per line below it.
fn listed(problems: &[FilterProblem]) -> String {
    match problems {
        [one] => one.to_string(),
        many => {
            let lines: String = many.iter().map(|p| format!("\n  {p}")).collect();
            format!("{} problems:{lines}", many.len())
        }
    }
}
