//! The solver's input: named boolean variables, each with applied constraints (resolution
//! spec §2.5), and the errors a solve can end with (§2.11, §7).

/// A problem variable: an identifier and the constraints applied with it as subject.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variable {
    pub id: String,
    pub constraints: Vec<Constraint>,
}

/// One applied constraint; `message` overrides the generic text in explanations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Constraint {
    pub(crate) kind: ConstraintKind,
    pub(crate) message: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConstraintKind {
    /// The subject must be selected; mandatory variables are the search's anchors.
    Mandatory,
    Prohibited,
    /// If the subject is selected, so is one of these; earlier ones are preferred.
    Dependency(Vec<String>),
    Conflict(String),
    /// At most `n` of these are selected, whatever the subject is.
    AtMost(usize, Vec<String>),
}

impl ConstraintKind {
    /// The variables the constraint names besides its subject.
    pub(crate) fn references(&self) -> &[String] {
        match self {
            ConstraintKind::Mandatory | ConstraintKind::Prohibited => &[],
            ConstraintKind::Dependency(ids) | ConstraintKind::AtMost(_, ids) => ids,
            ConstraintKind::Conflict(y) => std::slice::from_ref(y),
        }
    }
}

impl Constraint {
    pub fn new(kind: ConstraintKind) -> Constraint {
        Constraint {
            kind,
            message: None,
        }
    }

    pub(crate) fn with_message(kind: ConstraintKind, message: impl Into<String>) -> Constraint {
        Constraint {
            kind,
            message: Some(message.into()),
        }
    }

    /// The custom message, or the generic form of §7 for subject `x`.
    pub(crate) fn describe(&self, x: &str) -> String {
        if let Some(m) = &self.message {
            return m.clone();
        }
        match &self.kind {
            ConstraintKind::Mandatory => format!("{x} is mandatory"),
            ConstraintKind::Prohibited => format!("{x} is prohibited"),
            ConstraintKind::Dependency(ids) if ids.is_empty() => {
                format!("{x} has a dependency without any candidates to satisfy it")
            }
            ConstraintKind::Dependency(ids) => {
                format!("{x} requires at least one of {}", ids.join(", "))
            }
            ConstraintKind::Conflict(y) => format!("{x} conflicts with {y}"),
            ConstraintKind::AtMost(n, ids) => {
                format!("{x} permits at most {n} of {}", ids.join(", "))
            }
        }
    }
}

/// Why a solve produced no selection.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SolveError {
    /// No selection satisfies the constraints; `messages` is a minimal conflicting set,
    /// sorted.
    #[error("constraints not satisfiable{}", explanation(messages))]
    Unsatisfiable { messages: Vec<String> },
    #[error("duplicate identifier {0:?} in input")]
    DuplicateIdentifier(String),
    /// Constraints name variables that are not in the input (each reference, in problem
    /// order): a bug in whoever built the problem, not a property of the catalog.
    #[error("{} errors encountered: {}", .0.len(), unknown(.0))]
    UnknownIdentifiers(Vec<String>),
    /// varisat itself failed.
    #[error("internal solver failure: {0}")]
    Internal(String),
}

/// `: a, b` after "constraints not satisfiable", or nothing when there is no explanation.
fn explanation(messages: &[String]) -> String {
    if messages.is_empty() {
        String::new()
    } else {
        format!(": {}", messages.join(", "))
    }
}

/// One clause per identifier referenced but not provided, as upstream lists them.
fn unknown(ids: &[String]) -> String {
    let each: Vec<String> = ids
        .iter()
        .map(|id| format!("variable {id:?} referenced but not provided"))
        .collect();
    each.join(", ")
}
