//! Why a catalog cannot be filtered as asked: every problem of one `operators[]` entry, each
//! naming the package and channel it is about.
use std::fmt;

/// All problems found while filtering one catalog; nothing is returned when there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterError {
    /// The `operators[].catalog` reference the filter was applied to.
    pub(crate) catalog: String,
    pub problems: Vec<FilterProblem>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FilterProblem {
    UnknownPackage {
        package: String,
    },
    UnknownChannel {
        package: String,
        channel: String,
        /// The package's channels in the catalog, sorted.
        available: Vec<String>,
    },
    DuplicatePackage {
        package: String,
    },
    /// `minVersion`/`maxVersion` on the package and on one of its channels.
    RangeOnBothLevels {
        package: String,
        channel: String,
    },
    /// `minVersion`/`maxVersion` (of the package, or of one of its channels) together with
    /// `full: true`.
    RangeWithFull {
        package: String,
        channel: Option<String>,
    },
    InvalidVersion {
        /// `package "p"` or `package "p" channel "c"`.
        at: String,
        field: &'static str,
        value: String,
        reason: String,
    },
    /// A channel-level range selects no bundle of that channel, or a package-level range
    /// selects no bundle of any channel.
    RangeKeepsNothing {
        package: String,
        channel: Option<String>,
        range: String,
    },
    /// The filter removed the package's default channel and no `defaultChannel` names another.
    DefaultChannelFilteredOut {
        package: String,
        default_channel: String,
        kept: Vec<String>,
    },
    /// `defaultChannel` names a channel that is not in the filtered package.
    DefaultChannelNotKept {
        package: String,
        requested: String,
        kept: Vec<String>,
    },
    /// The source channel's graph has no single head, so there is nothing to follow.
    ChannelGraph {
        package: String,
        channel: String,
        problem: String,
    },
    /// The filtered catalog does not validate (the source catalog was already invalid, or a
    /// range cut the graph where OLM cannot use it); the validator's report.
    InvalidResult {
        report: String,
    },
}

impl fmt::Display for FilterProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FilterProblem::UnknownPackage { package } => {
                write!(f, "package {package:?} is not in the catalog")
            }
            FilterProblem::UnknownChannel {
                package,
                channel,
                available,
            } => write!(
                f,
                "package {package:?} has no channel {channel:?} (its channels: {})",
                available.join(", ")
            ),
            FilterProblem::DuplicatePackage { package } => {
                write!(f, "package {package:?} is listed twice")
            }
            FilterProblem::RangeOnBothLevels { package, channel } => write!(
                f,
                "package {package:?} channel {channel:?}: a channel minVersion/maxVersion cannot be combined with the package's"
            ),
            FilterProblem::RangeWithFull {
                package,
                channel: None,
            } => write!(
                f,
                "package {package:?}: minVersion/maxVersion cannot be combined with full: true"
            ),
            FilterProblem::RangeWithFull {
                package,
                channel: Some(channel),
            } => write!(
                f,
                "package {package:?} channel {channel:?}: minVersion/maxVersion cannot be combined with full: true"
            ),
            FilterProblem::InvalidVersion {
                at,
                field,
                value,
                reason,
            } => write!(f, "{at}: invalid {field} {value:?}: {reason}"),
            FilterProblem::RangeKeepsNothing {
                package,
                channel: Some(channel),
                range,
            } => write!(
                f,
                "package {package:?} channel {channel:?}: no bundle of the channel is in {range}"
            ),
            FilterProblem::RangeKeepsNothing {
                package,
                channel: None,
                range,
            } => write!(
                f,
                "package {package:?}: no bundle of any channel is in {range}"
            ),
            FilterProblem::DefaultChannelFilteredOut {
                package,
                default_channel,
                kept,
            } => write!(
                f,
                "package {package:?}: the filter removes the default channel {default_channel:?}; set defaultChannel to one of the kept channels ({})",
                kept.join(", ")
            ),
            FilterProblem::DefaultChannelNotKept {
                package,
                requested,
                kept,
            } => write!(
                f,
                "package {package:?}: defaultChannel {requested:?} is not among the kept channels ({})",
                kept.join(", ")
            ),
            FilterProblem::ChannelGraph {
                package,
                channel,
                problem,
            } => write!(
                f,
                "package {package:?} channel {channel:?} in the source catalog: {problem}"
            ),
            FilterProblem::InvalidResult { report } => {
                write!(f, "the filtered catalog does not validate: {report}")
            }
        }
    }
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.problems.as_slice() {
            [one] => write!(f, "filtering catalog {:?}: {one}", self.catalog),
            many => {
                write!(
                    f,
                    "filtering catalog {:?}: {} problems:",
                    self.catalog,
                    many.len()
                )?;
                for p in many {
                    write!(f, "\n  {p}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for FilterError {}
