//! The solver's input: named boolean variables, each with applied constraints (resolution
//! spec §2.5), and the errors a solve can end with (§2.11, §7).
use std::fmt;

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
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SolveError {
    /// No selection satisfies the constraints; `messages` is a minimal conflicting set,
    /// sorted.
    Unsatisfiable {
        messages: Vec<String>,
    },
    DuplicateIdentifier(String),
    /// Constraints name variables that are not in the input (each reference, in problem
    /// order): a bug in whoever built the problem, not a property of the catalog.
    UnknownIdentifiers(Vec<String>),
    /// varisat itself failed.
    Internal(String),
}

impl fmt::Display for SolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SolveError::Unsatisfiable { messages } if messages.is_empty() => {
                f.write_str("constraints not satisfiable")
            }
            SolveError::Unsatisfiable { messages } => {
                write!(f, "constraints not satisfiable: {}", messages.join(", "))
            }
            SolveError::DuplicateIdentifier(id) => {
                write!(f, "duplicate identifier {id:?} in input")
            }
            SolveError::UnknownIdentifiers(ids) => {
                let each: Vec<String> = ids
                    .iter()
                    .map(|id| format!("variable {id:?} referenced but not provided"))
                    .collect();
                write!(f, "{} errors encountered: {}", each.len(), each.join(", "))
            }
            SolveError::Internal(cause) => write!(f, "internal solver failure: {cause}"),
        }
    }
}

impl std::error::Error for SolveError {}
