//! Versions and version ranges with the grammar and messages of `blang/semver` v4, which is
//! what upstream uses to check bundle versions (`Parse`) and channel-entry `skipRange`s
//! (`ParseRange`). Error texts are part of the validation messages catalog authors see, so
//! they are reproduced word for word, quirks included.
use std::cmp::Ordering;
use std::fmt;

/// A strict semantic version (`MAJOR.MINOR.PATCH[-PRE][+BUILD]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub pre: Vec<Prerelease>,
    pub build: Vec<String>,
}

/// One dot-separated pre-release identifier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prerelease {
    Numeric(u64),
    Alphanumeric(String),
}

impl Version {
    /// Parses a strict semantic version.
    pub fn parse(s: &str) -> Result<Version, String> {
        if s.is_empty() {
            return Err("Version string empty".to_owned());
        }
        let mut parts = s.splitn(3, '.');
        let (Some(major), Some(minor), Some(rest)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err("No Major.Minor.Patch elements found".to_owned());
        };
        let major = number(major, "major")?;
        let minor = number(minor, "minor")?;
        let (rest, build) = match rest.split_once('+') {
            Some((rest, build)) => (rest, Some(build)),
            None => (rest, None),
        };
        let (patch, pre) = match rest.split_once('-') {
            Some((patch, pre)) => (patch, Some(pre)),
            None => (rest, None),
        };
        if !patch.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "Invalid character(s) found in patch number {patch:?}"
            ));
        }
        if has_leading_zero(patch) {
            return Err(format!(
                "Patch number must not contain leading zeroes {patch:?}"
            ));
        }
        let patch = parse_uint(patch)?;
        let pre = match pre {
            Some(pre) => pre
                .split('.')
                .map(Prerelease::parse)
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        let mut build_ids = Vec::new();
        for id in build.map(|b| b.split('.')).into_iter().flatten() {
            if id.is_empty() {
                return Err("Build meta data is empty".to_owned());
            }
            if !id.bytes().all(is_alphanumeric) {
                return Err(format!(
                    "Invalid character(s) found in build meta data {id:?}"
                ));
            }
            build_ids.push(id.to_owned());
        }
        Ok(Version {
            major,
            minor,
            patch,
            pre,
            build: build_ids,
        })
    }
}

impl Version {
    /// Parses as blang's `ParseTolerant` (classic bundle versions, CEL `semver_compare`,
    /// maxOpenShiftVersion): surrounding whitespace and one leading `v` are dropped, leading
    /// zeros are stripped from each of the first three dot parts, and missing minor/patch
    /// parts become `0`. A part that is left empty or does not start with a digit gets a
    /// `0` prefix, which is why `bad_version` reports `"0bad_version"` (upstream quirk).
    pub fn parse_tolerant(s: &str) -> Result<Version, String> {
        let s = s.trim();
        let s = s.strip_prefix('v').unwrap_or(s);
        let mut parts: Vec<String> = s
            .splitn(3, '.')
            .map(|part| {
                if part.len() <= 1 {
                    return part.to_owned();
                }
                let trimmed = part.trim_start_matches('0');
                if trimmed.starts_with(|c: char| c.is_ascii_digit()) {
                    trimmed.to_owned()
                } else {
                    format!("0{trimmed}")
                }
            })
            .collect();
        if parts.len() < 3 {
            if parts.last().is_some_and(|p| p.contains(['-', '+'])) {
                return Err("Short version cannot contain PreRelease/Build meta data".to_owned());
            }
            parts.resize(3, "0".to_owned());
        }
        Version::parse(&parts.join("."))
    }
}

impl Prerelease {
    /// Parses one pre-release identifier (also the grammar of each part of a bundle
    /// `release`).
    pub(crate) fn parse(s: &str) -> Result<Prerelease, String> {
        if s.is_empty() {
            return Err("Prerelease is empty".to_owned());
        }
        if s.bytes().all(|b| b.is_ascii_digit()) {
            if has_leading_zero(s) {
                return Err(format!(
                    "Numeric PreRelease version must not contain leading zeroes {s:?}"
                ));
            }
            return parse_uint(s).map(Prerelease::Numeric);
        }
        if s.bytes().all(is_alphanumeric) {
            return Ok(Prerelease::Alphanumeric(s.to_owned()));
        }
        Err(format!("Invalid character(s) found in prerelease {s:?}"))
    }
}

fn number(s: &str, which: &str) -> Result<u64, String> {
    if !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "Invalid character(s) found in {which} number {s:?}"
        ));
    }
    if has_leading_zero(s) {
        let which = format!("{}{}", which[..1].to_ascii_uppercase(), &which[1..]);
        return Err(format!(
            "{which} number must not contain leading zeroes {s:?}"
        ));
    }
    parse_uint(s)
}

/// Go's `strconv.ParseUint(s, 10, 64)` on a string of ASCII digits (possibly empty).
fn parse_uint(s: &str) -> Result<u64, String> {
    if s.is_empty() {
        return Err(format!("strconv.ParseUint: parsing {s:?}: invalid syntax"));
    }
    s.parse()
        .map_err(|_| format!("strconv.ParseUint: parsing {s:?}: value out of range"))
}

fn has_leading_zero(s: &str) -> bool {
    s.len() > 1 && s.starts_with('0')
}

fn is_alphanumeric(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        for (i, p) in self.pre.iter().enumerate() {
            f.write_str(if i == 0 { "-" } else { "." })?;
            match p {
                Prerelease::Numeric(n) => write!(f, "{n}")?,
                Prerelease::Alphanumeric(s) => f.write_str(s)?,
            }
        }
        for (i, b) in self.build.iter().enumerate() {
            f.write_str(if i == 0 { "+" } else { "." })?;
            f.write_str(b)?;
        }
        Ok(())
    }
}

/// Semantic-version precedence; build metadata is ignored, so unequal versions can compare
/// equal.
impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| compare_prerelease(&self.pre, &other.pre))
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Orders pre-release lists; an empty list (a release) sorts after any pre-release.
pub(crate) fn compare_prerelease(a: &[Prerelease], b: &[Prerelease]) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        (false, false) => {}
    }
    for (x, y) in a.iter().zip(b) {
        let order = match (x, y) {
            (Prerelease::Numeric(x), Prerelease::Numeric(y)) => x.cmp(y),
            (Prerelease::Numeric(_), Prerelease::Alphanumeric(_)) => Ordering::Less,
            (Prerelease::Alphanumeric(_), Prerelease::Numeric(_)) => Ordering::Greater,
            (Prerelease::Alphanumeric(x), Prerelease::Alphanumeric(y)) => x.cmp(y),
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    a.len().cmp(&b.len())
}

/// Checks `s` as blang's `ParseRange` does; see [`Range::parse`].
pub fn validate_range(s: &str) -> Result<(), String> {
    Range::parse(s).map(|_| ())
}

/// A blang v4 range: an OR of AND-groups of comparisons. Used for `olm.skipRange` and
/// package requirements, where upstream evaluates it with blang (not Masterminds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Range {
    groups: Vec<Vec<Comparison>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Comparison {
    op: Comparator,
    version: Version,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Comparator {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

impl Range {
    /// Parses `s` with blang's `ParseRange` grammar: comparisons (`=`, `==`, `!=`, `!`,
    /// `>`, `>=`, `<`, `<=`, or none for equality) against strict versions, joined by spaces
    /// (AND) and `||` (OR), with `x` wildcards (`1.x`, `>=1.2.x`) expanded first. A space
    /// right after an operator is allowed (`< 0.6.0`); tokens of a single character are
    /// dropped, as upstream's tokenizer does.
    pub fn parse(s: &str) -> Result<Range, String> {
        let parts = split_and_trim(s);
        let or_parts = split_or(&parts)?;
        let mut groups = Vec::new();
        for and_parts in expand_wildcards(or_parts)? {
            let mut group = Vec::with_capacity(and_parts.len());
            for part in and_parts {
                let (op, version) = split_comparator(&part)?;
                group.push(
                    parse_comparison(op, version)
                        .map_err(|e| format!("Could not parse Range {part:?}: {e}"))?,
                );
            }
            groups.push(group);
        }
        Ok(Range { groups })
    }

    /// Whether `v` is in the range, by full precedence (build metadata ignored). Unlike
    /// Masterminds, blang does not hide pre-releases: `<1.0.0` contains `1.0.0-alpha`.
    pub fn contains(&self, v: &Version) -> bool {
        self.groups
            .iter()
            .any(|group| group.iter().all(|c| c.matches(v)))
    }
}

impl Comparison {
    fn matches(&self, v: &Version) -> bool {
        let order = v.cmp(&self.version);
        match self.op {
            Comparator::Eq => order == Ordering::Equal,
            Comparator::Ne => order != Ordering::Equal,
            Comparator::Gt => order == Ordering::Greater,
            Comparator::Ge => order != Ordering::Less,
            Comparator::Lt => order == Ordering::Less,
            Comparator::Le => order != Ordering::Greater,
        }
    }
}

fn split_and_trim(s: &str) -> Vec<String> {
    let bytes = s.as_bytes();
    let mut result = Vec::new();
    let mut last = 0;
    let mut last_char = 0u8;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b' ' && !matches!(last_char, b'>' | b'<' | b'=') {
            if last + 1 < i {
                result.push(s[last..i].replace(' ', ""));
            }
            last = i + 1;
        } else if b != b' ' {
            last_char = b;
        }
    }
    if last + 1 < bytes.len() {
        result.push(s[last..].replace(' ', ""));
    }
    result
}

fn split_or(parts: &[String]) -> Result<Vec<Vec<String>>, String> {
    let mut groups = Vec::new();
    let mut last = 0;
    for (i, p) in parts.iter().enumerate() {
        if p == "||" {
            if i == 0 {
                return Err("First element in range is '||'".to_owned());
            }
            groups.push(parts[last..i].to_vec());
            last = i + 1;
        }
    }
    if last == parts.len() {
        return Err("Last element in range is '||'".to_owned());
    }
    groups.push(parts[last..].to_vec());
    Ok(groups)
}

/// Rewrites every part containing an `x` into plain comparisons, textually, as upstream does
/// (so `1.0.0-x.y` is mangled exactly as there).
fn expand_wildcards(groups: Vec<Vec<String>>) -> Result<Vec<Vec<String>>, String> {
    let mut expanded = Vec::with_capacity(groups.len());
    for group in groups {
        let mut parts = Vec::with_capacity(group.len());
        for part in group {
            if !part.contains('x') {
                parts.push(part);
                continue;
            }
            let (op, version) = split_comparator(&part)?;
            let wildcard = wildcard_kind(version);
            let flat = flatten_wildcard(version);
            let (result_op, increment) = match op {
                ">" => (">=", true),
                ">=" => (">=", false),
                "<" => ("<", false),
                "<=" => ("<", true),
                "" | "=" | "==" => {
                    parts.push(format!(">={flat}"));
                    ("<", true)
                }
                "!=" | "!" => {
                    parts.push(format!("<{flat}"));
                    (">=", true)
                }
                _ => ("", false),
            };
            let result_version = match (increment, wildcard) {
                (false, _) => flat,
                (true, Wildcard::Patch) => increment_at(&flat, 1),
                (true, Wildcard::Minor) => increment_at(&flat, 0),
                (true, Wildcard::None) => String::new(),
            };
            parts.push(format!("{result_op}{result_version}"));
        }
        expanded.push(parts);
    }
    Ok(expanded)
}

#[derive(Clone, Copy)]
enum Wildcard {
    None,
    Minor,
    Patch,
}

fn wildcard_kind(version: &str) -> Wildcard {
    let parts: Vec<&str> = version.split('.').collect();
    match (parts.len(), parts.last()) {
        (2, Some(&"x")) => Wildcard::Minor,
        (3, Some(&"x")) => Wildcard::Patch,
        _ => Wildcard::None,
    }
}

fn flatten_wildcard(version: &str) -> String {
    let v = version.replacen(".x.x", ".x", 1).replacen(".x", ".0", 1);
    if v.split('.').count() == 2 {
        format!("{v}.0")
    } else {
        v
    }
}

/// Adds one to the dot-separated field `index`; the text is emptied if that field is not a
/// number (upstream ignores the conversion error and uses an empty string).
fn increment_at(version: &str, index: usize) -> String {
    let mut parts: Vec<String> = version.split('.').map(str::to_owned).collect();
    match parts
        .get(index)
        .and_then(|p| go_atoi(p))
        .and_then(|n| n.checked_add(1))
    {
        Some(n) => {
            parts[index] = n.to_string();
            parts.join(".")
        }
        None => String::new(),
    }
}

/// Go's `strconv.Atoi`: an optional sign, then decimal digits.
fn go_atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Splits `>=1.2.3` into the operator (text before the first digit, trimmed) and the version.
fn split_comparator(s: &str) -> Result<(&str, &str), String> {
    match s
        .char_indices()
        .find(|(_, c)| c.is_ascii_digit() || (!c.is_ascii() && c.is_numeric()))
    {
        Some((i, _)) => Ok((s[..i].trim(), &s[i..])),
        None => Err(format!("Could not get version from string: {s:?}")),
    }
}

fn parse_comparison(op_text: &str, version: &str) -> Result<Comparison, String> {
    let token = format!("{op_text}{version}");
    let op = match op_text {
        "" | "=" | "==" => Comparator::Eq,
        "!" | "!=" => Comparator::Ne,
        ">" => Comparator::Gt,
        ">=" => Comparator::Ge,
        "<" => Comparator::Lt,
        "<=" => Comparator::Le,
        _ => {
            return Err(format!(
                "Could not parse comparator {op_text:?} in {token:?}"
            ));
        }
    };
    let version = Version::parse(version)
        .map_err(|e| format!("Could not parse version {version:?} in {token:?}: {e}"))?;
    Ok(Comparison { op, version })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_versions_parse_with_blang_messages() {
        let v = Version::parse("1.2.3-alpha.10.x-y+build.001").expect("valid");
        assert_eq!((v.major, v.minor, v.patch), (1, 2, 3));
        assert_eq!(
            v.pre,
            vec![
                Prerelease::Alphanumeric("alpha".into()),
                Prerelease::Numeric(10),
                Prerelease::Alphanumeric("x-y".into())
            ]
        );
        assert_eq!(v.build, vec!["build", "001"]);
        assert_eq!(v.to_string(), "1.2.3-alpha.10.x-y+build.001");
        let err = |s: &str| Version::parse(s).expect_err(s);
        assert_eq!(err(""), "Version string empty");
        assert_eq!(err("1.0"), "No Major.Minor.Patch elements found");
        assert_eq!(
            err("v1.0.0"),
            r#"Invalid character(s) found in major number "v1""#
        );
        assert_eq!(
            err("01.0.0"),
            r#"Major number must not contain leading zeroes "01""#
        );
        assert_eq!(
            err("1.00.0"),
            r#"Minor number must not contain leading zeroes "00""#
        );
        assert_eq!(
            err("1.0.0.1"),
            r#"Invalid character(s) found in patch number "0.1""#
        );
        assert_eq!(
            err("1.0.01"),
            r#"Patch number must not contain leading zeroes "01""#
        );
        assert_eq!(
            err("1..0"),
            r#"strconv.ParseUint: parsing "": invalid syntax"#
        );
        assert_eq!(
            err("99999999999999999999.0.0"),
            r#"strconv.ParseUint: parsing "99999999999999999999": value out of range"#
        );
        assert_eq!(err("1.0.0-"), "Prerelease is empty");
        assert_eq!(
            err("1.0.0-01"),
            r#"Numeric PreRelease version must not contain leading zeroes "01""#
        );
        assert_eq!(
            err("1.0.0-a_b"),
            r#"Invalid character(s) found in prerelease "a_b""#
        );
        assert_eq!(err("1.0.0+"), "Build meta data is empty");
        assert_eq!(err("1.0.0+a..b"), "Build meta data is empty");
        assert_eq!(
            err("1.0.0+a$"),
            r#"Invalid character(s) found in build meta data "a$""#
        );
    }

    #[test]
    fn versions_order_by_precedence() {
        let mut vs: Vec<Version> = [
            "1.0.0",
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "0.9.0",
            "2.0.0",
        ]
        .iter()
        .map(|s| Version::parse(s).expect("valid"))
        .collect();
        vs.sort();
        let sorted: Vec<String> = vs.iter().map(ToString::to_string).collect();
        assert_eq!(
            sorted,
            [
                "0.9.0",
                "1.0.0-alpha",
                "1.0.0-alpha.1",
                "1.0.0-alpha.beta",
                "1.0.0-beta.2",
                "1.0.0-beta.11",
                "1.0.0-rc.1",
                "1.0.0",
                "2.0.0"
            ]
        );
        let a = Version::parse("1.0.0+a").expect("valid");
        let b = Version::parse("1.0.0+b").expect("valid");
        assert_eq!(a.cmp(&b), Ordering::Equal);
    }

    #[test]
    fn tolerant_parse_matches_blang() {
        let ok = |s: &str| Version::parse_tolerant(s).expect(s).to_string();
        assert_eq!(ok("v1.2"), "1.2.0");
        assert_eq!(ok("1"), "1.0.0");
        assert_eq!(ok("01.02.03"), "1.2.3");
        assert_eq!(ok(" 1.2.3 "), "1.2.3");
        assert_eq!(ok("4.8.0+b"), "4.8.0+b");
        assert_eq!(ok("1.00"), "1.0.0");
        let err = |s: &str| Version::parse_tolerant(s).expect_err(s);
        assert_eq!(
            err("1.2-rc"),
            "Short version cannot contain PreRelease/Build meta data"
        );
        assert_eq!(
            err("1.2.3.4"),
            r#"Invalid character(s) found in patch number "3.4""#
        );
        assert_eq!(
            err("1.0.0-01"),
            r#"Numeric PreRelease version must not contain leading zeroes "01""#
        );
        assert_eq!(
            err("bad_version"),
            r#"Invalid character(s) found in major number "0bad_version""#
        );
    }

    /// The §5.2.2 and §5.2.3 tables of the resolution spec.
    #[test]
    fn ranges_evaluate_as_blang() {
        let table: &[(&str, &[&str], &[&str])] = &[
            (
                "<1.0.0",
                &["0.9.9", "1.0.0-alpha", "0.5.0-beta"],
                &["1.0.0"],
            ),
            ("< 1.0.0", &["0.9.9", "1.0.0-alpha"], &["1.0.0"]),
            (
                ">=4.1.0 <4.1.2",
                &["4.1.0", "4.1.1", "4.1.1-rc.1", "4.1.2-rc.1"],
                &["4.1.2"],
            ),
            (">=1.0.0 <2.0.0", &["1.5.0", "2.0.0-rc.1"], &["2.0.0"]),
            ("< 1.0.0 !0.0.0", &["0.5.0"], &["0.0.0"]),
            ("<  1.0.0  !0.0.0", &["0.5.0"], &["0.0.0"]),
            (
                ">1.2.2 <1.2.5 !=1.2.4",
                &["1.2.3"],
                &["1.2.2", "1.2.4", "1.2.5"],
            ),
            (
                ">1.2.2 <1.2.4 || >=2.0.0",
                &["1.2.3", "2.0.0", "2.0.1"],
                &["1.2.4"],
            ),
            (
                ">=1.2.3 <2.0.0 || >=3.0.0",
                &["1.2.3", "1.9.9", "2.0.0-rc.1", "3.0.0"],
                &["2.0.0", "2.5.0", "3.0.0-rc.1"],
            ),
            (
                "1.x || >=2.0.x <2.2.x",
                &["1.2.2", "2.0.0", "2.1.8"],
                &["0.9.2", "2.2.0"],
            ),
            ("1.11.x", &["1.11.0", "1.11.9"], &["1.12.0"]),
            ("==1.0.0", &["1.0.0", "1.0.0+5"], &["1.0.1"]),
            ("=1.0.0", &["1.0.0", "1.0.0+5"], &["1.0.1"]),
            ("1.0.0", &["1.0.0", "1.0.0+5"], &["1.0.1"]),
            ("!1.0.0", &["1.0.1"], &["1.0.0"]),
            ("!=1.0.0", &["1.0.1"], &["1.0.0"]),
            ("! 1.0.0", &["1.0.0"], &["1.0.1"]),
            ("1.0.0 - 2.0.0", &[], &["1.0.0", "2.0.0"]),
            ("=1.0.0 =1.0.1", &[], &["1.0.0", "1.0.1"]),
            (">=1.0.0 <2.0.0 ||   >=3.0.0", &["3.0.0"], &[]),
            ("1.2.x", &["1.2.0", "1.2.9"], &["1.3.0"]),
            ("1.x", &["1.0.0", "1.9.0"], &["2.0.0"]),
            ("1.x.x", &["1.0.0"], &["1.1.0"]),
            (">=1.2.x", &["1.2.0"], &["1.1.9"]),
            (">=1.x", &["1.0.0"], &["0.9.9"]),
            (">1.2.x", &["1.3.0"], &["1.2.9"]),
            (">1.x", &["2.0.0"], &["1.9.9"]),
            ("<1.2.x", &["1.1.9"], &["1.2.0"]),
            ("<1.x", &["0.9.9"], &["1.0.0"]),
            ("<=1.2.x", &["1.2.9"], &["1.3.0"]),
            ("<=1.x", &["1.9.9"], &["2.0.0"]),
            ("<=2.x", &["2.9.9"], &["3.0.0"]),
            ("!=1.2.x", &[], &["1.1.0", "1.2.0", "1.3.0"]),
            ("!=1.x", &[], &["0.9.0", "1.0.0", "2.0.0"]),
            (">=1.0.0-xyz", &["1.0.0-xyz", "1.0.0"], &["1.0.0-abc"]),
        ];
        for (range, yes, no) in table {
            let r = Range::parse(range).expect(range);
            for v in *yes {
                assert!(r.contains(&Version::parse(v).expect(v)), "{range} ∋ {v}");
            }
            for v in *no {
                assert!(!r.contains(&Version::parse(v).expect(v)), "{range} ∌ {v}");
            }
        }
    }

    #[test]
    fn ranges_accepted_by_blang() {
        for r in [
            "< 0.6.0",
            ">=1.0.0 <2.0.0",
            ">= 4.1.0 < 4.2.0-0",
            "1.2.3",
            "=1.2.3",
            "==1.2.3",
            "!=1.2.3",
            "!1.2.3",
            ">1.0.0 <2.0.0 || >=3.0.0",
            "1.x",
            ">=1.2.x",
            "<=1.x.x",
            "!=2.x",
            "1.x || 3.x",
            ">=0.0.0-0",
            "a 1.0.0",
        ] {
            assert_eq!(validate_range(r), Ok(()), "{r}");
        }
    }

    #[test]
    fn ranges_rejected_with_blang_messages() {
        let err = |s: &str| validate_range(s).expect_err(s);
        assert_eq!(err(""), "Last element in range is '||'");
        assert_eq!(err("|| 1.0.0"), "First element in range is '||'");
        assert_eq!(err("1.0.0 ||"), "Last element in range is '||'");
        assert_eq!(
            err(">=1.2"),
            r#"Could not parse Range ">=1.2": Could not parse version "1.2" in ">=1.2": No Major.Minor.Patch elements found"#
        );
        assert_eq!(
            err("~1.2.3"),
            r#"Could not parse Range "~1.2.3": Could not parse comparator "~" in "~1.2.3""#
        );
        assert_eq!(
            err("^1.2.3"),
            r#"Could not parse Range "^1.2.3": Could not parse comparator "^" in "^1.2.3""#
        );
        assert_eq!(
            err(">=foo"),
            r#"Could not get version from string: ">=foo""#
        );
        assert_eq!(
            err("<= v1.0.0"),
            r#"Could not parse Range "<=v1.0.0": Could not parse comparator "<=v" in "<=v1.0.0""#
        );
        assert_eq!(err("*"), "Last element in range is '||'");
        assert_eq!(
            err("1.0.0-xyz.x"),
            r#"Could not get version from string: "<""#
        );
    }
}
