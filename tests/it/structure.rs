//! DESIGN.md's size rules, kept by the suite: no source file over 800 lines, no function over
//! 150 lines outside tests, and `Result<_, String>` in at most 20 `pub fn` (leaf parsers).
//! Test code is exempt: files named `tests.rs` or `tests_*.rs`, files under a `tests/`
//! directory, and the bodies of `#[cfg(test)]` modules.
//!
//! Functions are found by a line scan that relies on rustfmt's layout (a function's closing
//! brace alone on a line at the indentation of its `fn` line), so the scan first checks that
//! every file is as rustfmt writes it.
use std::path::{Path, PathBuf};
use std::process::Command;

const MAX_FILE_LINES: usize = 800;
const MAX_FN_LINES: usize = 150;
const MAX_PUB_STRING_ERRORS: usize = 20;

/// A function the scan found: its name, first line (1-based), length in lines, and whether
/// it is `pub fn` (unrestricted) returning `Result<_, String>`.
#[derive(Debug, PartialEq, Eq)]
struct Function {
    name: String,
    line: usize,
    lines: usize,
    pub_string_error: bool,
}

/// Every `.rs` file under `crates/*/src` and `src/`, relative to the workspace root.
fn source_files(root: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![root.join("src")];
    for krate in std::fs::read_dir(root.join("crates")).expect("read crates/") {
        dirs.push(krate.expect("crates/ entry").path().join("src"));
    }
    let mut files = Vec::new();
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path.strip_prefix(root).expect("under root").to_owned());
            }
        }
    }
    files.sort();
    files
}

/// Test-only files, as the project's stop hook treats them.
fn is_test_file(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    name == "tests.rs"
        || name.starts_with("tests_")
        || path.components().any(|c| c.as_os_str() == "tests")
}

fn indentation(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The name of the function a line starts, if it starts one: optional visibility and
/// qualifiers, then `fn NAME`.
fn fn_header(line: &str) -> Option<(&str, bool)> {
    let mut rest = line.trim_start();
    let mut is_pub = false;
    if let Some(after) = rest.strip_prefix("pub ") {
        is_pub = true;
        rest = after;
    } else if rest.starts_with("pub(") {
        rest = &rest[rest.find(") ")? + 2..];
    }
    for qualifier in ["const ", "async ", "unsafe ", "extern \"C\" "] {
        rest = rest.strip_prefix(qualifier).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("fn ")?;
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| (&rest[..end], is_pub))
}

/// Whether a signature's return type is `Result<_, String>`.
fn returns_string_error(signature: &str) -> bool {
    let compact: String = signature.split_whitespace().collect();
    let Some((_, returned)) = compact.rsplit_once("->") else {
        return false;
    };
    let returned = returned.split("where").next().unwrap_or(returned);
    let returned = returned.trim_end_matches(['{', ';']);
    returned.starts_with("Result<") && returned.ends_with(",String>")
}

/// The functions of a rustfmt-formatted file, outside `#[cfg(test)]` modules.
fn functions(text: &str) -> Vec<Function> {
    let lines: Vec<&str> = text.lines().collect();
    let closing = |from: usize, indent: usize| {
        (from..lines.len())
            .find(|&j| lines[j].trim_start() == "}" && indentation(lines[j]) == indent)
            .unwrap_or(lines.len() - 1)
    };
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let next = lines.get(i + 1).map(|l| l.trim_start()).unwrap_or_default();
        if line.trim() == "#[cfg(test)]"
            && (next.starts_with("mod ") || next.starts_with("pub(crate) mod "))
            && next.ends_with('{')
        {
            i = closing(i + 1, indentation(lines[i + 1])) + 1;
            continue;
        }
        let Some((name, is_pub)) = fn_header(line) else {
            i += 1;
            continue;
        };
        // The signature runs to the line that opens the body (or ends a declaration).
        let Some(open) = (i..lines.len()).find(|&j| {
            let t = lines[j].trim_end();
            t.ends_with('{') || t.ends_with(';') || t.ends_with("{}")
        }) else {
            break;
        };
        let signature = lines[i..=open].join(" ");
        let declaration = lines[open].trim_end().ends_with(';');
        let end = if lines[open].trim_end().ends_with("{}") || declaration {
            open
        } else {
            closing(open + 1, indentation(line))
        };
        if !declaration {
            found.push(Function {
                name: name.to_owned(),
                line: i + 1,
                lines: end - i + 1,
                pub_string_error: is_pub && returns_string_error(&signature),
            });
        }
        // Functions nested in this one are scanned too.
        i += 1;
    }
    found
}

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_function_scan_counts_a_formatted_sample_right() {
    let sample = r#"
pub fn short() -> Result<u8, String> {
    Ok(1)
}

pub(crate) fn crate_only(
    a: u8,
    f: impl Fn() -> Result<(), String>,
) -> Result<Vec<u8>, String> {
    let nested = || {
        a
    };
    Ok(vec![nested()])
}

trait Shape {
    fn area(&self) -> f64;

    fn twice(&self) -> f64 {
        self.area() * 2.0
    }
}

pub fn typed() -> Result<(), Error> {}

#[cfg(test)]
mod tests {
    fn hidden() {
        let x = 1;
    }
}

pub async fn waits<T>(t: T) -> Result<T, String>
where
    T: Send,
{
    Ok(t)
}
"#;
    let got: Vec<(String, usize, usize, bool)> = functions(sample)
        .into_iter()
        .map(|f| (f.name, f.line, f.lines, f.pub_string_error))
        .collect();
    let expected = [
        ("short", 2, 3, true),
        ("crate_only", 6, 9, false),
        ("twice", 19, 3, false),
        ("typed", 24, 1, false),
        ("waits", 33, 6, true),
    ];
    let expected: Vec<(String, usize, usize, bool)> = expected
        .iter()
        .map(|&(n, l, c, p)| (n.to_owned(), l, c, p))
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn files_functions_and_string_errors_stay_within_designs_limits() {
    let root = workspace_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let fmt = Command::new(cargo)
        .args(["fmt", "--all", "--", "--check", "-l"])
        .current_dir(&root)
        .output()
        .expect("run cargo fmt");
    assert!(
        fmt.status.success(),
        "the size scan needs rustfmt's layout; run cargo fmt on:\n{}{}",
        String::from_utf8_lossy(&fmt.stdout),
        String::from_utf8_lossy(&fmt.stderr)
    );
    let mut problems = Vec::new();
    let mut string_errors = Vec::new();
    for path in source_files(&root) {
        if is_test_file(&path) {
            continue;
        }
        let text = std::fs::read_to_string(root.join(&path)).expect("read source file");
        let count = text.lines().count();
        if count > MAX_FILE_LINES {
            problems.push(format!(
                "{}: {count} lines, over {MAX_FILE_LINES} (split it by concern)",
                path.display()
            ));
        }
        for f in functions(&text) {
            if f.lines > MAX_FN_LINES {
                problems.push(format!(
                    "{}:{}: fn {} is {} lines, over {MAX_FN_LINES}",
                    path.display(),
                    f.line,
                    f.name,
                    f.lines
                ));
            }
            if f.pub_string_error {
                string_errors.push(format!("{}:{}: fn {}", path.display(), f.line, f.name));
            }
        }
    }
    if string_errors.len() > MAX_PUB_STRING_ERRORS {
        problems.push(format!(
            "{} `pub fn` return Result<_, String>, over {MAX_PUB_STRING_ERRORS} \
             (give new ones a typed error):\n  {}",
            string_errors.len(),
            string_errors.join("\n  ")
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
