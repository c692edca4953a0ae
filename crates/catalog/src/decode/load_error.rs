//! What a catalog that cannot be read reports: one error per file or document.
use std::fmt;

/// A document or file that could not be read or decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    /// The file, relative to the catalog root; empty when the error is not about one file.
    pub file: String,
    /// 1-based line of the offending document (of the syntax error itself for malformed
    /// JSON/YAML); 0 when the error concerns the whole file.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.file.is_empty(), self.line) {
            (true, _) => f.write_str(&self.message),
            (false, 0) => write!(f, "{}: {}", self.file, self.message),
            (false, line) => write!(f, "{}:{line}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for LoadError {}

/// All the load errors of a catalog as one message, one per line.
pub fn describe_load_errors(errors: &[LoadError]) -> String {
    let mut message = format!("the catalog has {} unreadable document(s):", errors.len());
    for e in errors {
        message.push_str(&format!("\n  {e}"));
    }
    message
}
