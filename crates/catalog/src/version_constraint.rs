//! The Masterminds v3 constraint grammar used by the OLM v1 `version` field (resolution spec
//! §5.1). It differs from the blang ranges of `catalog::semver` on purpose: wildcards, `~`,
//! `^`, hyphen ranges and commas are legal here, and pre-releases are hidden unless the
//! OR-group asks for them.
use std::cmp::Ordering;

use crate::semver::{Prerelease, Version};

/// A parsed constraint: an OR of AND-groups of terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionConstraint {
    groups: Vec<Vec<Term>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Term {
    op: Op,
    level: Level,
    /// The term's version with wildcards zeroed; the pre-release is kept, build dropped.
    base: Version,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    Tilde,
    Caret,
}

/// How much of the term's version was given; the operator tables of §5.1.2 are per level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    /// `*`, `x`: the major part is a wildcard.
    Any,
    /// `1`, `1.x`.
    MinorWild,
    /// `1.2`, `1.2.x`.
    PatchWild,
    Exact,
}

/// Longest spellings first so `>=` is not read as `>` followed by `=`.
const OPERATORS: [(&str, Op); 12] = [
    ("!=", Op::Ne),
    (">=", Op::Ge),
    ("=>", Op::Ge),
    ("<=", Op::Le),
    ("=<", Op::Le),
    ("~>", Op::Tilde),
    ("=", Op::Eq),
    (">", Op::Gt),
    ("<", Op::Lt),
    ("~", Op::Tilde),
    ("^", Op::Caret),
    ("", Op::Eq),
];

impl VersionConstraint {
    /// Parses a constraint; every malformed OR-group fails with
    /// `improper constraint: "<group>"`, quoting the group as split (spaces included).
    pub fn parse(s: &str) -> Result<VersionConstraint, String> {
        let rewritten = rewrite_hyphen_ranges(s);
        let groups = rewritten
            .split("||")
            .map(|group| {
                parse_group(group).ok_or_else(|| format!("improper constraint: {group:?}"))
            })
            .collect::<Result<_, _>>()?;
        Ok(VersionConstraint { groups })
    }

    /// Whether `v` satisfies the constraint. A pre-release version is only considered by a
    /// group that has a pre-release in one of its own terms (§5.1.4).
    pub fn matches(&self, v: &Version) -> bool {
        self.groups.iter().any(|group| {
            (v.pre.is_empty() || group.iter().any(|t| !t.base.pre.is_empty()))
                && group.iter().all(|t| t.matches(v))
        })
    }

    /// The ClusterExtension admission check on `spec.source.catalog.version` (§3.1, R07):
    /// at most 64 characters and stricter than the parser, rejecting hyphen ranges, numeric
    /// parts with leading zeros, and anything after a wildcard major (`*.*.*`).
    pub fn admit(s: &str) -> Result<VersionConstraint, String> {
        const INVALID: &str = "invalid version expression";
        if s.len() > 64 || rewrite_hyphen_ranges(s) != s {
            return Err(INVALID.to_owned());
        }
        let strict = s.split("||").all(|group| {
            split_terms(group).is_some_and(|terms| {
                terms.iter().all(|term| {
                    let (_, version) = split_operator(term);
                    admissible_version(version)
                })
            })
        });
        if !strict {
            return Err(INVALID.to_owned());
        }
        VersionConstraint::parse(s).map_err(|_| INVALID.to_owned())
    }
}

/// No leading zeros in numeric parts, and nothing after a wildcard major.
fn admissible_version(version: &str) -> bool {
    let core = version.strip_prefix('v').unwrap_or(version);
    let core = core.split(['-', '+']).next().unwrap_or(core);
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() > 1 && is_wildcard(parts[0]) {
        return false;
    }
    parts
        .iter()
        .all(|p| is_wildcard(p) || !(p.len() > 1 && p.starts_with('0')))
}

/// Rewrites every `A - B` (whitespace on both sides of the dash) into `>= A, <= B `, the
/// way upstream does before splitting, so the rewritten text is what errors quote.
fn rewrite_hyphen_ranges(s: &str) -> String {
    let tokens: Vec<(usize, &str)> = whitespace_tokens(s);
    let mut out = String::with_capacity(s.len() + 8);
    let mut copied = 0;
    let mut i = 0;
    while i + 2 < tokens.len() {
        let (start, left) = tokens[i];
        let (_, dash) = tokens[i + 1];
        let (right_start, right) = tokens[i + 2];
        if dash == "-" && parse_version_part(left).is_some() && parse_version_part(right).is_some()
        {
            // Upstream's pattern also swallows the whitespace around the range.
            let lead = s[copied..start].trim_end_matches(is_space);
            out.push_str(lead);
            out.push_str(&format!(">= {left}, <= {right} "));
            let end = right_start + right.len();
            copied = end + s[end..].len() - s[end..].trim_start_matches(is_space).len();
            i += 3;
        } else {
            i += 1;
        }
    }
    out.push_str(&s[copied..]);
    out
}

fn whitespace_tokens(s: &str) -> Vec<(usize, &str)> {
    let mut tokens = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        match (is_space(c), start) {
            (true, Some(b)) => {
                tokens.push((b, &s[b..i]));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(b) = start {
        tokens.push((b, &s[b..]));
    }
    tokens
}

/// Go's `\s`: space, tab, newline, form feed, carriage return.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0c' | '\r')
}

fn parse_group(group: &str) -> Option<Vec<Term>> {
    split_terms(group)?
        .into_iter()
        .map(|term| {
            let (op, version) = split_operator(term);
            let (level, base) = parse_version_part(version)?;
            Some(Term { op, level, base })
        })
        .collect()
}

/// Splits a group into `OP WS* version` terms separated by whitespace or one comma
/// (with optional whitespace around it). `None` when the group is not of that shape.
fn split_terms(group: &str) -> Option<Vec<&str>> {
    let mut terms = Vec::new();
    let mut rest = group.trim_start_matches(is_space);
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let (op, after_op) = OPERATORS
            .iter()
            .find_map(|(text, _)| rest.strip_prefix(text).map(|r| (text.len(), r)))?;
        let after_ws = after_op.trim_start_matches(is_space);
        let version_len = after_ws
            .find(|c: char| is_space(c) || c == ',')
            .unwrap_or(after_ws.len());
        if version_len == 0 {
            return None;
        }
        let term_len = op + (after_op.len() - after_ws.len()) + version_len;
        terms.push(&rest[..term_len]);
        let after_term = &rest[term_len..];
        let sep = after_term.trim_start_matches(is_space);
        let sep = match sep.strip_prefix(',') {
            Some(s) => s.trim_start_matches(is_space),
            None if sep.len() == after_term.len() && !sep.is_empty() => return None,
            None => sep,
        };
        rest = sep;
    }
    Some(terms)
}

fn split_operator(term: &str) -> (Op, &str) {
    OPERATORS
        .iter()
        .find_map(|(text, op)| {
            term.strip_prefix(text)
                .map(|r| (*op, r.trim_start_matches(is_space)))
        })
        .unwrap_or((Op::Eq, term))
}

fn is_wildcard(part: &str) -> bool {
    matches!(part, "x" | "X" | "*")
}

/// Parses `[v]part[.part[.part]][-pre][+build]`; parts are digits (leading zeros allowed)
/// or a wildcard, and everything after a wildcard part is ignored.
fn parse_version_part(text: &str) -> Option<(Level, Version)> {
    let text = text.strip_prefix('v').unwrap_or(text);
    let (text, build) = match text.split_once('+') {
        Some((t, b)) => (t, Some(b)),
        None => (text, None),
    };
    if build.is_some_and(|b| !valid_identifiers(b)) {
        return None;
    }
    let (core, pre) = match text.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (text, None),
    };
    let pre: Vec<Prerelease> = match pre {
        Some(p) if valid_identifiers(p) => p
            .split('.')
            .map(Prerelease::parse)
            .collect::<Result<_, _>>()
            .ok()?,
        Some(_) => return None,
        None => Vec::new(),
    };
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() > 3 {
        return None;
    }
    let mut numbers = [0u64; 3];
    let mut level = Level::Exact;
    for (i, part) in parts.iter().enumerate() {
        if is_wildcard(part) {
            if level == Level::Exact {
                level = [Level::Any, Level::MinorWild, Level::PatchWild][i];
            }
        } else if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
            if level == Level::Exact {
                numbers[i] = part.parse().ok()?;
            }
        } else {
            return None;
        }
    }
    if level == Level::Exact && parts.len() < 3 {
        level = [Level::MinorWild, Level::PatchWild][parts.len() - 1];
    }
    let [major, minor, patch] = numbers;
    Some((
        level,
        Version {
            major,
            minor,
            patch,
            pre,
            build: Vec::new(),
        },
    ))
}

fn valid_identifiers(s: &str) -> bool {
    s.split('.')
        .all(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
}

fn release(major: u64, minor: u64, patch: u64) -> Version {
    Version {
        major,
        minor,
        patch,
        pre: Vec::new(),
        build: Vec::new(),
    }
}

impl Term {
    /// The operator tables of §5.1.2, quirks included.
    fn matches(&self, v: &Version) -> bool {
        let b = &self.base;
        let order = v.cmp(b);
        let next_minor = || release(b.major, b.minor.saturating_add(1), 0);
        let next_major = || release(b.major.saturating_add(1), 0, 0);
        match (self.op, self.level) {
            (Op::Eq, Level::Exact) => order == Ordering::Equal,
            (Op::Eq | Op::Tilde, _) => self.tilde(v),
            (Op::Ne, Level::Exact | Level::Any) => order != Ordering::Equal,
            (Op::Ne, Level::MinorWild) => v.major != b.major,
            // Upstream compares only the pre-release once major and minor agree.
            (Op::Ne, Level::PatchWild) => {
                v.major != b.major || v.minor != b.minor || v.pre != b.pre
            }
            (Op::Gt, Level::Exact | Level::Any) => order == Ordering::Greater,
            (Op::Gt, Level::PatchWild) => *v >= next_minor(),
            (Op::Gt, Level::MinorWild) => *v >= next_major(),
            (Op::Ge, _) => order != Ordering::Less,
            (Op::Lt, Level::Any) => false,
            (Op::Lt, _) => order == Ordering::Less,
            (Op::Le, Level::Exact) => order != Ordering::Greater,
            (Op::Le, Level::PatchWild) => *v < next_minor(),
            (Op::Le, Level::MinorWild) => *v < next_major(),
            (Op::Le, Level::Any) => *v < release(0, 1, 0),
            (Op::Caret, Level::Any) => *v == release(0, 0, 0),
            (Op::Caret, level) => {
                order != Ordering::Less
                    && v.major == b.major
                    && (b.major > 0
                        || level == Level::MinorWild
                        || (v.minor == b.minor
                            && (b.minor > 0 || level == Level::PatchWild || v.patch == b.patch)))
            }
        }
    }

    /// `~`: at least the base, same major, and same minor unless the minor was a wildcard;
    /// an exact or fully wild `0.0.0` base accepts everything.
    fn tilde(&self, v: &Version) -> bool {
        let b = &self.base;
        if matches!(self.level, Level::Exact | Level::Any)
            && (b.major, b.minor, b.patch) == (0, 0, 0)
        {
            return true;
        }
        *v >= *b && v.major == b.major && (self.level == Level::MinorWild || v.minor == b.minor)
    }
}

#[cfg(test)]
mod tests;
