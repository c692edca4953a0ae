//! What a catalog that cannot be read reports: one error per file or document.

/// A document or file that could not be read or decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", place(file, *line))]
pub struct LoadError {
    /// The file, relative to the catalog root; empty when the error is not about one file.
    pub file: String,
    /// 1-based line of the offending document (of the syntax error itself for malformed
    /// JSON/YAML); 0 when the error concerns the whole file.
    pub line: usize,
    pub message: String,
}

/// What a [`LoadError`]'s message is prefixed with: `file:line: `, `file: ` for a whole
/// file, nothing when no file is concerned.
fn place(file: &str, line: usize) -> String {
    match (file.is_empty(), line) {
        (true, _) => String::new(),
        (false, 0) => format!("{file}: "),
        (false, line) => format!("{file}:{line}: "),
    }
}

/// All the load errors of a catalog as one message, one per line.
pub fn describe_load_errors(errors: &[LoadError]) -> String {
    let mut message = format!("the catalog has {} unreadable document(s):", errors.len());
    for e in errors {
        message.push_str(&format!("\n  {e}"));
    }
    message
}
